"""A spawned tool process: capped output collection, exit status, and killing its whole process group."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable
from contextlib import suppress
from contextvars import ContextVar


class _DoneOnClose(asyncio.Protocol):
    """A pipe protocol that resolves `done` when the pipe closes."""

    def __init__(self, done: asyncio.Future[None]) -> None:
        self._done = done

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._done.done():
            self._done.set_result(None)


# Who hears a process's output as it comes (stdout and stderr alike), in the context that reads it: the
# engine sets it around a command step so front ends can show the output live. It never changes what is kept.
output_tap: ContextVar[Callable[[bytes], None] | None] = ContextVar("output_tap", default=None)


class _CappedCollector(_DoneOnClose):
    """Keeps the first `limit` bytes of a pipe and drains the rest, so the writer never blocks."""

    def __init__(self, limit: int, done: asyncio.Future[None], tap: Callable[[bytes], None] | None = None) -> None:
        super().__init__(done)
        self.data = bytearray()
        self.limit = limit
        self.truncated = False
        self.tap = tap

    def data_received(self, data: bytes) -> None:
        if self.tap is not None:
            self.tap(data)
        room = self.limit - len(self.data)
        if len(data) > room:
            self.truncated = True
            data = data[: max(room, 0)]
        self.data += data


async def _collect(fd: int, limit: int, transports: list[asyncio.ReadTransport]) -> tuple[bytes, bool]:
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    tap = output_tap.get()
    transport, collector = await loop.connect_read_pipe(lambda: _CappedCollector(limit, done, tap),
                                                        os.fdopen(fd, "rb", buffering=0))
    transports.append(transport)
    try:
        await done
    finally:
        transport.close()
    return bytes(collector.data), collector.truncated


class SandboxedProcess:
    """A child in its own session (pgid = pid); read it with `communicate`, stop it with `kill_group`."""

    def __init__(self, *, pid: int, stdout_fd: int, stderr_fd: int, status: Awaitable[int],
                 warnings: list[str], stdin_writer: asyncio.Task[None] | None = None,
                 report: dict | None = None, stdin_fd: int | None = None) -> None:
        self.pid = pid
        # The write end of the child's stdin when spawned with `stdin_pipe` (the caller writes and closes it).
        self.stdin_fd = stdin_fd
        self.pgid = pid
        self.warnings = warnings
        # What its supervisor said besides the status, once known: {"oom": True} when its memory limit ended it,
        # {"orphaned": True} when the supervisor stopped it because the fork server died.
        self.report = report if report is not None else {}
        self._stdout_fd: int | None = stdout_fd
        self._stderr_fd: int | None = stderr_fd
        self._status = asyncio.ensure_future(status)
        self._stdin_writer = stdin_writer
        self._pipe_inodes = tuple(os.fstat(fd).st_ino for fd in (stdout_fd, stderr_fd))
        self._readers: list[asyncio.ReadTransport] = []

    @property
    def returncode(self) -> int | None:
        """The exit status once known (negative: killed by that signal), else None."""
        if self._status.done() and not self._status.cancelled() and self._status.exception() is None:
            return self._status.result()
        return None

    def kill_group(self) -> None:
        """SIGKILL every process of the child's group (idempotent; a group already gone is fine)."""
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, signal.SIGKILL)

    def kill_pipe_holders(self) -> int:
        """SIGKILL every process still holding this child's output pipes (one that left its group); how many."""
        wanted = {f"pipe:[{inode}]" for inode in self._pipe_inodes}
        killed = 0
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                fds = os.scandir(f"/proc/{entry.name}/fd")
                holds = any(os.readlink(fd.path) in wanted for fd in fds)
            except OSError:
                continue  # gone meanwhile, or not ours to look at
            if holds:
                with suppress(ProcessLookupError, PermissionError):
                    os.kill(int(entry.name), signal.SIGKILL)
                    killed += 1
        return killed

    def stop_reading(self) -> None:
        """End `communicate` now with what was read so far, even if some process still holds the pipes."""
        for transport in self._readers:
            transport.close()

    def on_status(self, callback: Callable[[], object]) -> None:
        """Call `callback` once the exit status is known (or its wait failed)."""
        self._status.add_done_callback(lambda _: callback())

    async def wait(self) -> int:
        """The exit status (negative: killed by that signal), known once every process of the step is dead.

        Cancelling it kills the group.
        """
        try:
            return await asyncio.shield(self._status)
        except asyncio.CancelledError:
            self.kill_group()
            raise

    async def communicate(self, *, limit_bytes: int = 1 << 20) -> tuple[bytes, bytes, bool]:
        """Stdout, stderr (each capped at `limit_bytes`) and whether either was cut; waits for exit (or its failure).

        Cancelling it (a timeout, an interrupt) kills the whole process group first.
        """
        stdout_fd, stderr_fd = self.take_output_fds()
        try:
            (out, out_cut), (err, err_cut) = await asyncio.gather(_collect(stdout_fd, limit_bytes, self._readers),
                                                                  _collect(stderr_fd, limit_bytes, self._readers))
            if self._stdin_writer is not None:
                await self._stdin_writer
            await asyncio.wait([self._status])  # its failure (a helper died) is `wait`'s to raise: the output stays
        except asyncio.CancelledError:
            self.kill_group()
            raise
        return out, err, out_cut or err_cut

    def take_output_fds(self) -> tuple[int, int]:
        """Stdout's and stderr's read ends, for a caller that reads them itself (instead of `communicate`)."""
        if self._stdout_fd is None or self._stderr_fd is None:
            raise RuntimeError("communicate() was already called")
        fds = self._stdout_fd, self._stderr_fd
        self._stdout_fd = self._stderr_fd = None
        return fds

    def close(self) -> None:
        """Close the output pipes if `communicate` never took them."""
        for fd in (self._stdout_fd, self._stderr_fd):
            if fd is not None:
                os.close(fd)
        self._stdout_fd = self._stderr_fd = None

    def __del__(self) -> None:
        self.close()


async def write_stdin(fd: int, data: bytes) -> None:
    """Write `data` to the pipe `fd` and close it; a child that exits without reading is fine."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    transport, _ = await loop.connect_write_pipe(lambda: _DoneOnClose(done), os.fdopen(fd, "wb", buffering=0))
    try:
        transport.write(data)
        transport.close()  # flushes what is buffered, then reports connection_lost
        await done
    finally:
        if not done.done():
            transport.abort()
