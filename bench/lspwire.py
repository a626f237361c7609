"""A small, fast JSON-RPC/LSP client over a child's stdio, for benchmarks and the reliability suite.

It speaks LSP framing (`Content-Length` headers) with a reader thread that
stamps every message's arrival time (`time.perf_counter()`), so a benchmark
can tell when each notification came. `send_raw` writes any bytes at all,
which is what the fuzz tests need.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class RPCError(Exception):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.message = str(error.get("message", ""))
        self.data = error.get("data")


@dataclass
class Pending:
    """One request waiting for its answer."""

    done: threading.Event = field(default_factory=threading.Event)
    message: dict[str, Any] | None = None
    sent_at: float = 0.0
    answered_at: float = 0.0

    def result(self, timeout: float = 30.0) -> Any:
        """The result, or RPCError / TimeoutError."""
        if not self.done.wait(timeout):
            raise TimeoutError(f"no answer within {timeout} s")
        assert self.message is not None
        if "error" in self.message:
            raise RPCError(self.message["error"])
        return self.message.get("result")


def frame(payload: bytes) -> bytes:
    """One LSP frame around `payload`."""
    return b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload)


class LSPProcess:
    """A server started as a subprocess, talked to over its stdin/stdout."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        on_notification: Callable[[dict[str, Any], float], None] | None = None,
        preexec_fn: Callable[[], None] | None = None,
        keep_events: bool = True,
    ) -> None:
        self.started_at = time.perf_counter()
        self.proc = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env, cwd=cwd, preexec_fn=preexec_fn,
        )
        self.notifications: list[tuple[float, dict[str, Any]]] = []
        self.server_requests: list[dict[str, Any]] = []
        self._on_notification = on_notification
        # False: `ollie/event` notifications are read and dropped unparsed (a probe's answer is not stamped late
        # behind this process parsing a flood of them).
        self._keep_events = keep_events
        self._pending: dict[Any, Pending] = {}
        self.unmatched: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._write_lock = threading.Lock()
        self._notified = threading.Condition()
        # Cleared while the client plays a slow reader: the read loop waits and the server's pipe fills.
        self._reading = threading.Event()
        self._reading.set()
        self.stderr_lines: list[bytes] = []
        self._reader = threading.Thread(target=self._read_loop, name="lsp-reader", daemon=True)
        self._reader.start()
        self._err_reader = threading.Thread(target=self._read_stderr, name="lsp-stderr", daemon=True)
        self._err_reader.start()

    @property
    def pid(self) -> int:
        """The server's process id."""
        return self.proc.pid

    # -- sending ---------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        """Write bytes as they are (no framing added)."""
        assert self.proc.stdin is not None
        with self._write_lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        """Write one JSON-RPC message, framed."""
        self.send_raw(frame(json.dumps(message).encode()))

    def request_async(self, method: str, params: Any = None) -> Pending:
        """Send a request; the returned Pending resolves when the answer comes."""
        msg_id = next(self._ids)
        pending = Pending()
        self._pending[msg_id] = pending
        pending.sent_at = time.perf_counter()
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return pending

    def request(self, method: str, params: Any = None, *, timeout: float = 30.0) -> Any:
        """Send a request and wait for its result."""
        return self.request_async(method, params).result(timeout)

    def notify(self, method: str, params: Any = None) -> None:
        """Send a notification."""
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def initialize(self, root: Path, *, options: Any = None, timeout: float = 60.0,
                   process_id: int | None = None) -> Any:
        """`initialize` (its `processId` this process unless given) then `initialized`; returns the initialize result."""
        result = self.request("initialize", {
            "processId": os.getpid() if process_id is None else process_id, "rootUri": root.as_uri(), "capabilities": {},
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
            "initializationOptions": options,
        }, timeout=timeout)
        self.notify("initialized", {})
        return result

    # -- receiving -------------------------------------------------------------

    def pause_reading(self) -> None:
        """Stop reading the server's output (after the message being read): its pipe fills up."""
        self._reading.clear()

    def resume_reading(self) -> None:
        """Read the server's output again."""
        self._reading.set()

    def wait_for(self, predicate: Callable[[list[tuple[float, dict[str, Any]]]], bool], *, timeout: float = 30.0) -> None:
        """Block until the notifications received satisfy `predicate`."""
        deadline = time.monotonic() + timeout
        with self._notified:
            while not predicate(self.notifications):
                left = deadline - time.monotonic()
                if left <= 0 or not self.alive():
                    raise TimeoutError(f"condition not met; last notifications: {self.notifications[-5:]}")
                self._notified.wait(min(left, 0.2))

    def events(self, session: str | None = None) -> list[dict[str, Any]]:
        """The params of every ollie/event (of one session, when given)."""
        return [m["params"] for _, m in list(self.notifications)
                if m.get("method") == "ollie/event" and (session is None or m["params"]["session"] == session)]

    def _read_loop(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while True:
            self._reading.wait()
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self._fail_pending()
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("latin-1").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            if length is None:
                continue
            body = stream.read(length)
            stamp = time.perf_counter()
            if not self._keep_events and body.startswith(b'{"method": "ollie/event"'):
                continue
            try:
                message = json.loads(body)
            except ValueError:
                continue
            self._dispatch(message, stamp)

    def _dispatch(self, message: dict[str, Any], stamp: float) -> None:
        if "method" in message and "id" in message:
            # A server-to-client request (progress create, showMessageRequest...): answer null.
            self.server_requests.append(message)
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            return
        if "method" in message:
            if self._on_notification is not None:
                self._on_notification(message, stamp)
            with self._notified:
                self.notifications.append((stamp, message))
                self._notified.notify_all()
            return
        msg_id = message.get("id")
        # A fuzzed request's id may come back as a list or an object: no request of ours has one.
        pending = self._pending.pop(msg_id, None) if isinstance(msg_id, (int, str)) else None
        if pending is None:
            self.unmatched.append(message)  # e.g. an error answered with id null
        else:
            pending.message = message
            pending.answered_at = stamp
            pending.done.set()
        with self._notified:
            self._notified.notify_all()

    def _fail_pending(self) -> None:
        for msg_id, pending in list(self._pending.items()):
            pending.message = {"id": msg_id, "error": {"code": -32099, "message": "server exited"}}
            pending.done.set()
        self._pending.clear()
        with self._notified:
            self._notified.notify_all()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_lines.append(line)

    # -- ending ----------------------------------------------------------------

    def alive(self) -> bool:
        """Whether the server process still runs."""
        return self.proc.poll() is None

    def stderr_text(self) -> str:
        """Everything the server wrote to stderr so far."""
        return b"".join(self.stderr_lines).decode(errors="replace")

    def shutdown(self, *, timeout: float = 20.0) -> int | None:
        """`shutdown` + `exit`, then wait; kill if it does not go. Returns the exit status."""
        if self.alive():
            try:
                self.request("shutdown", None, timeout=timeout)
                self.notify("exit", None)
            except (OSError, TimeoutError, RPCError, ValueError):
                pass
        return self.close(timeout=timeout)

    def close(self, *, timeout: float = 10.0) -> int | None:
        """Close stdin and wait for the process; kill it when it lingers."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(10)

    def __enter__(self) -> LSPProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
