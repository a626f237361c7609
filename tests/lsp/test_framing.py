"""The daemon's framing: whole frames off a real pipe, handed to the loop in batches; bad framing answered."""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import struct
import termios
import tty

from ollie.stdio import INVALID_REQUEST, PARSE_ERROR, PipeWriter, open_writer
from ollie_lsp.framing import FrameParser, Item, Problem, decode
from ollie_lsp.stdio import StdinFrames
from tests.procs import wait_until


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def unread(fd: int) -> int:
    """Bytes written to the pipe but not yet read."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]


async def test_frames_that_come_while_the_loop_is_busy_reach_it_in_one_batch():
    read_end, write_end = os.pipe()
    batches: list[list[Item]] = []
    reader = StdinFrames(os.fdopen(read_end, "rb"))
    serving = asyncio.ensure_future(reader.run(lambda batch: batches.append(batch) or []))
    await asyncio.sleep(0)  # the reader thread starts
    # The loop is held (as by 20 sessions' events) while 50 requests come, each in its own write.
    for n in range(50):
        os.write(write_end, frame(b'{"id": %d}' % n))
        wait_until(lambda: unread(read_end) == 0, "the reader thread took the frame", timeout=30)
    while sum(map(len, batches)) < 50:
        await asyncio.sleep(0.01)
    # One hand-over for all of them (a second at most, for a frame read just as the loop took the first);
    # pygls' reader needed three loop turns per frame.
    assert len(batches) <= 2, [len(b) for b in batches]
    assert [decode(item)["id"] for batch in batches for item in batch] == list(range(50))  # type: ignore[arg-type]
    os.close(write_end)
    await asyncio.wait_for(serving, 10)  # end of input ends the reading


async def test_frames_the_loop_leaves_are_handed_over_first_a_pass_later_and_before_the_end():
    # The daemon handles a batch until a pass's CPU budget is spent (50 submits at once were one ~6 ms callback).
    read_end, write_end = os.pipe()
    loop = asyncio.get_running_loop()
    seen: list[object] = []

    def deliver(batch: list[Item]) -> list[Item]:
        seen.append(decode(batch[0])["id"])  # type: ignore[index]
        if len(seen) == 1:
            loop.call_soon(seen.append, "another callback")
        return batch[1:]  # one frame a pass

    reader = StdinFrames(os.fdopen(read_end, "rb"))
    os.write(write_end, b"".join(frame(b'{"id": %d}' % n) for n in range(3)))
    os.close(write_end)  # the input ends with them: the reading ends once all three are handled
    await asyncio.wait_for(reader.run(deliver), 10)
    assert seen == [0, "another callback", 1, 2]


def test_parser_splits_any_chunking_into_the_same_frames():
    data = frame(b'{"a": 1}') + b"\r\n" + b"Content-Type: x\r\n" + frame(b"[2]")
    for size in (1, 2, 7, len(data)):
        parser = FrameParser()
        items = [item for start in range(0, len(data), size) for item in parser.feed(data[start:start + size])]
        assert items == [b'{"a": 1}', b"[2]"], size


def test_parser_answers_bad_framing_and_finds_the_next_frame():
    parser = FrameParser()
    items = parser.feed(b"Content-Length: -1\r\n\r\n{garbage Content-Length in a string}" + frame(b"{}"))
    assert isinstance(items[0], Problem) and items[0].code == PARSE_ERROR
    assert items[-1] == b"{}"
    # Resyncing on the phrase inside the junk costs a second error, never the next real frame.
    assert all(isinstance(item, Problem) for item in items[:-1])


def test_parser_reports_a_stall_and_the_end_of_input():
    parser = FrameParser()
    assert parser.feed(b"Content-Length: 10\r\n\r\n{}") == []
    assert parser.end() is not None
    problem = parser.stalled()
    assert problem is not None and "said 10 bytes, only 2 came" in problem.message
    assert parser.stalled() is None and parser.feed(frame(b"{}")) == [b"{}"]


def test_decode_refuses_deep_nesting_with_the_id_and_keeps_shallow_json():
    deep = b'{"id": 3, "params": ' + b"[" * 100 + b"]" * 100 + b"}"
    problem = decode(deep)
    assert isinstance(problem, Problem) and problem.code == INVALID_REQUEST and problem.msg_id == 3
    assert decode(b'{"text": "' + b"[" * 1000 + b'"}') == {"text": "[" * 1000}
    assert isinstance(decode(b'"\xff"'), Problem)


async def test_closing_the_writer_gives_the_client_everything_unsent_first():
    """What the client has not read yet when the daemon ends goes out before the pipe closes: close returns once
    the client has taken it all (the reader here starts only after close began)."""
    read_fd, write_fd = os.pipe()
    writer = await open_writer(os.fdopen(write_fd, "wb", buffering=0))
    payload = os.urandom(1 << 20)  # far more than the pipe holds: most of it waits in the transport
    writer.write(payload)
    assert writer.backlog() > 0
    closing = asyncio.ensure_future(writer.close())
    await asyncio.sleep(0)  # one loop pass: close has begun, and waits for the reader
    assert not closing.done()
    received = await asyncio.to_thread(_read_to_end, read_fd)
    await closing
    assert received == payload and writer.backlog() == 0


async def test_read_by_client_returns_once_the_client_has_read_what_came_before_it(monkeypatch):
    """A code action's answer is read by Emacs before its question is sent (asking.answer_held): Emacs' jsonrpc
    left a question read together with the answer unhandled. What is written later is not waited for."""
    monkeypatch.setattr("ollie.stdio.FLUSH_ON_CLOSE_S", 60.0)  # a wait on "later" too fails below, not gives up
    read_fd, write_fd = os.pipe()
    writer = await open_writer(os.fdopen(write_fd, "wb", buffering=0))
    answer = os.urandom(200_000)  # more than the pipe holds: part of it waits in the transport
    writer.write(answer)
    read = asyncio.ensure_future(writer.read_by_client())
    await asyncio.sleep(0)  # the wait starts (noting what was written so far) before "later" is written
    writer.write(b"later")
    assert await asyncio.to_thread(_read_exactly, read_fd, len(answer) - 1) == answer[:-1]
    done, _ = await asyncio.wait({read}, timeout=0.2)  # ~40 looks into the pipe: one byte of it is still unread
    assert not done
    assert await asyncio.to_thread(_read_exactly, read_fd, 1) == answer[-1:]
    await asyncio.wait_for(read, 10)
    assert writer.backlog() + unread(read_fd) == len(b"later")  # written after: the wait did not need it read
    os.close(read_fd)


def _read_exactly(fd: int, size: int) -> bytes:
    chunks = []
    while size:
        chunk = os.read(fd, size)
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _read_to_end(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


async def test_frames_typed_in_a_terminal_are_read_whatever_its_writer_made_of_it():
    # `ollie-lsp` run in a shell exited at once, status 0: a terminal is one open file behind stdin and stdout, the
    # writer made stdout non-blocking, and stdin's read of nothing typed yet (EAGAIN) was taken for the end of input.
    master, terminal = pty.openpty()
    tty.setraw(terminal)  # the bytes as sent: no line editing
    batches: list[list[Item]] = []
    serving = asyncio.ensure_future(StdinFrames(os.fdopen(os.dup(terminal), "rb")).run(
        lambda batch: batches.append(batch) or []))
    writer = await open_writer(os.fdopen(os.dup(terminal), "wb"))
    assert isinstance(writer, PipeWriter)  # a terminal's writer is non-blocking
    for n in range(3):  # each typed once the one before was read: the reader waits on the keyboard
        os.write(master, frame(b'{"id": %d}' % n))
        while sum(map(len, batches)) <= n:
            assert not serving.done(), "the reading ended"
            await asyncio.sleep(0.01)
    os.close(master)  # the terminal closed: the end of the input
    await asyncio.wait_for(serving, 10)
    await writer.close()
    os.close(terminal)
