"""A bound on every call to the store that neither keepalives nor `tcp_user_timeout` give: a server frozen on a host
that is up (a SIGSTOPped postgres) reads nothing, yet its kernel acknowledges every packet, so a call waited for good.

A call still running a third of a lease after it began has the server asked for a new connection; when that goes
unanswered too, the call's socket is shut down: the call fails at once, its connection is dropped (the pool opens
another) and the store is told the server is down; from then on it is asked again at every tick (a ninth of a
lease), and until it answers `silent` says so: the store's calls fail at once, not each after a connect timeout. A
server that answers (a long statement, a lock waited for) is left alone, however long its call takes.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import psycopg
from psycopg.errors import ConnectionTimeout


class Call:
    """One call under watch; `dropped` once the watchdog shut its connection down."""

    def __init__(self, conn: psycopg.Connection[Any], due: float) -> None:
        self.conn, self.due, self.dropped = conn, due, False


class Watchdog:
    """The calls of one store, watched from one thread (started by the first call, ended by `close`)."""

    def __init__(self, probe: Callable[[], None], after_s: float, on_silent: Callable[[], None]) -> None:
        self.after_s = after_s
        self._probe = probe  # connects anew: ConnectionTimeout when the server answers no one
        self._on_silent = on_silent
        self._calls: set[Call] = set()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.silent = False  # the last probe went unanswered

    @contextmanager
    def watching(self, conn: psycopg.Connection[Any]) -> Iterator[Call]:
        """Watch the calls made on `conn` inside the block."""
        call = Call(conn, time.monotonic() + self.after_s)
        with self._cond:
            self._calls.add(call)
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._run, name="ollie-store-watchdog", daemon=True)
                self._thread.start()
        try:
            yield call
        finally:
            with self._cond:
                self._calls.discard(call)

    def close(self) -> None:
        """End the thread (a probe under way finishes first, on its own)."""
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait(self.after_s / 3)
                if self._closed:
                    return
                overdue = [call for call in self._calls if call.due <= time.monotonic()]
            if not (overdue or self.silent):
                continue
            self.silent = self._silent()
            if not self.silent:
                for call in overdue:
                    call.due = time.monotonic() + self.after_s
                continue
            self._on_silent()
            with self._cond:  # a call still here has not returned its connection: it is still the call's
                for call in overdue:
                    if call in self._calls:
                        _shut(call)

    def _silent(self) -> bool:
        try:
            self._probe()
        except ConnectionTimeout:
            return True
        except Exception:  # noqa: BLE001 - it answered, if only to refuse (and the watchdog lives on)
            pass
        return False


def _shut(call: Call) -> None:
    """Shut the call's socket down (not closed: its descriptor stays the connection's, never another's)."""
    call.dropped = True
    with suppress(OSError, psycopg.Error), socket.socket(fileno=os.dup(call.conn.pgconn.socket)) as sock:
        sock.shutdown(socket.SHUT_RDWR)
