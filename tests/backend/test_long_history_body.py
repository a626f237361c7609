"""A long history's request body is built and encoded off the event loop, byte for byte as one json.dumps."""

from __future__ import annotations

import asyncio.selector_events
import gc
import json
import threading
from typing import Any

import pytest

from ollie.backend.stream import BODY_SLICE
from ollie.backend.types import Message, ToolCall
from ollie.jsonpieces import INLINE_MESSAGES, encode_chunks, encoded
from ollie.testing import Reply

from .conftest import FORMATS, READ_TOOL, collect

LONG = "é\"\\\n\u2028😀 a line of text " * 40_000  # over one encoding slice


def _reference(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


@pytest.mark.parametrize("value", [
    {"model": "m", "messages": [{"role": "user", "content": "hi"}] * 500, "stream": True, "temperature": 0.5},
    {"messages": [{"role": "tool", "content": LONG, "tool_calls": [{"id": "1", "arguments": LONG}]}], "n": None},
    [LONG, [LONG, {"k": (1, 2.5, False)}]], LONG, {}, [], "", 0,
], ids=["many messages", "long strings", "nested", "one long string", "empty dict", "empty list", "empty", "int"])
def test_encoded_in_pieces_is_byte_for_byte_one_dumps(value):
    assert b"".join(encode_chunks(value)) == _reference(value)


def test_nan_is_refused_as_json_dumps_refuses_it():
    with pytest.raises(ValueError):
        encode_chunks({"messages": [{"x": float("nan")}] * 300})


def test_no_cycle_collection_runs_while_a_long_body_is_built_and_only_its_bytes_are_kept():
    """A collection there stops every thread (the daemon's loop: ~200 ms at 100k messages); kept, the wire dicts
    would be walked by the next one while the reply streams."""
    starts: list[int] = []

    def watch(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            starts.append(info["generation"])

    value = {"messages": [{"role": "assistant", "tool_calls": [{"id": str(n)}]} for n in range(20_000)]}
    gc.callbacks.append(watch)
    try:
        body = encoded(lambda: {"model": "m", "messages": [dict(m) for m in value["messages"]]})
    finally:
        gc.callbacks.remove(watch)
    # At most the young collection due once the collector is on again, over what little is left, and one or two
    # an earlier test's threads still running may set off then (without the pause: ~80 while the dicts are made).
    assert len(starts) <= 3 and gc.isenabled(), starts
    assert body.encoded == _reference({"model": "m", **value}) and body == {}


def test_a_long_body_is_kept_as_chunks_and_what_it_was_built_from_is_freed_in_slices():
    """One join of a whole body (~100 ms at 100k messages) or one free of all its dicts (~40 ms) held the GIL."""
    built: list[dict[str, Any]] = []

    def build() -> dict[str, Any]:
        built.append({"model": "m", "messages": [{"role": "user", "content": f"line {n}"} for n in range(20_000)]})
        return built[0]

    body = encoded(build)
    reference = _reference({"model": "m", "messages": [{"role": "user", "content": f"line {n}"}
                                                       for n in range(20_000)]})
    assert len(body.chunks) > 2 and body.encoded == reference and body.length == len(reference)
    assert built[0]["messages"] == []  # released (a slice at a time), not left to be freed at once


def _history(count: int) -> list[Message]:
    out = [Message("system", "You are terse.")]
    for i in range(count // 2):
        out.append(Message("assistant", "", tool_calls=[ToolCall(f"c{i}", "file_read", '{"path": "a.txt"}')]))
        out.append(Message("tool", f"result {i} ü", tool_call_id=f"c{i}", name="file_read"))
    out.append(Message("user", "and now?"))
    return out


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_long_history_is_built_off_the_loop_and_sent_unchanged(connect, fmt, monkeypatch):
    srv, backend = connect(fmt)
    loop_thread = threading.current_thread()
    built_in: list[threading.Thread] = []
    build = type(backend).build_request

    def spy(self: Any, *args: Any) -> dict[str, Any]:
        built_in.append(threading.current_thread())
        return build(self, *args)

    monkeypatch.setattr(type(backend), "build_request", spy)
    long, short = _history(INLINE_MESSAGES * 4), _history(4)
    for history in (long, short):
        srv.script(Reply.text("ok"))
        await collect(backend, history, [READ_TOOL])
    assert built_in[0] is not loop_thread  # the long one: in a worker thread
    assert built_in[1] is loop_thread  # a short one stays inline (a thread hop would cost more)
    for request, history in zip(srv.chat_requests, (long, short), strict=True):
        assert request.raw == _reference(request.body)  # the bytes one json.dumps makes
        assert json.dumps(request.body).count("result ") == (len(history) - 2) // 2


async def test_a_long_body_is_written_a_slice_at_a_time_with_its_length_ahead(connect, monkeypatch):
    """Written whole, the transport copied what the socket did not take (MBs) into its buffer in one callback."""
    srv, backend = connect("openai")
    writes: list[int] = []
    write = asyncio.selector_events._SelectorSocketTransport.write

    def spy(self: Any, data: Any) -> None:
        writes.append(len(data))
        write(self, data)

    monkeypatch.setattr(asyncio.selector_events._SelectorSocketTransport, "write", spy)
    history = [Message("user", "x" * 1000 + str(n)) for n in range(INLINE_MESSAGES * 8)]  # ~2 MB
    srv.script(Reply.text("ok"))
    await collect(backend, history, [])
    request = srv.chat_requests[0]
    assert request.headers["content-length"] == str(len(request.raw)) and "transfer-encoding" not in request.headers
    assert request.raw == _reference(request.body) and len(request.body["messages"]) == len(history)
    assert sum(writes) > len(request.raw) > 4 * BODY_SLICE
    assert max(writes) <= BODY_SLICE + 4096  # a slice (the head goes apart or with the first)
