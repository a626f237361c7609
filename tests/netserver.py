"""A TCP server on the host's loopback standing in for a remote host in network tests (the machine has no internet)."""

from __future__ import annotations

import socket
import threading


class Listener(threading.Thread):
    """Answers any HTTP request with `answer` (`hello`); records every byte it receives and counts the connections."""

    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.received = bytearray()
        self.accepted = 0

    def run(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            with conn:
                conn.settimeout(5)
                try:
                    while chunk := conn.recv(65536):
                        self.received += chunk
                        if b"\r\n\r\n" in self.received:
                            conn.sendall(self.answer)
                            break
                except OSError:
                    pass
