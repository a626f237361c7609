"""The read-ahead under every HTTP backend: joins what waited, keeps order and errors, closes the stream with it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator

import pytest

from ollie.backend.errors import StreamDropError
from ollie.backend.readahead import read_ahead
from ollie.backend.types import GenerationParams, Message, StreamEvent, ToolCall


async def _burst(events: list[StreamEvent], *, error: BaseException | None = None,
                 closed: list[bool] | None = None) -> AsyncGenerator[StreamEvent, None]:
    """`events` all at once (as bytes the network had buffered), then `error`; notes in `closed` that it ended."""
    try:
        for event in events:
            yield event
        if error is not None:
            raise error
    finally:
        if closed is not None:
            closed.append(True)


async def test_what_waited_is_joined_by_kind_in_order():
    call = ToolCall(id="c1", name="read", arguments="{}")
    source = [StreamEvent(reasoning="th"), StreamEvent(reasoning="ink"), StreamEvent(content="Hel"),
              StreamEvent(content="lo"), StreamEvent(content="!", reasoning="both"), StreamEvent(content=" more"),
              StreamEvent(tool_calls=[call]), StreamEvent(content="x"), StreamEvent(done=True, stop_reason="stop")]
    out = [e async for e in read_ahead(_burst(source))]
    assert out == [StreamEvent(reasoning="think"), StreamEvent(content="Hello"),
                   StreamEvent(content="!", reasoning="both"), StreamEvent(content=" more"),
                   StreamEvent(tool_calls=[call]), StreamEvent(content="x"), StreamEvent(done=True, stop_reason="stop")]


async def test_an_error_comes_after_the_deltas_before_it():
    got: list[StreamEvent] = []
    with pytest.raises(StreamDropError, match="dropped"):
        async for event in read_ahead(_burst([StreamEvent(content="a"), StreamEvent(content="b")],
                                             error=StreamDropError("dropped"))):
            got.append(event)
    assert got == [StreamEvent(content="ab")]


async def test_a_delta_is_handed_on_without_waiting_for_the_next():
    handed_on = asyncio.Event()

    async def paced() -> AsyncGenerator[StreamEvent, None]:
        yield StreamEvent(content="a")
        await handed_on.wait()  # the next delta comes only once the consumer has the first
        yield StreamEvent(content="b")

    stream = read_ahead(paced())
    assert (await asyncio.wait_for(anext(stream), 10)).content == "a"
    handed_on.set()
    assert [e.content async for e in stream] == ["b"]


async def test_closing_the_consumer_closes_the_stream_and_leaves_no_task():
    closed: list[bool] = []
    started = asyncio.Event()

    async def endless() -> AsyncGenerator[StreamEvent, None]:
        try:
            while True:
                started.set()
                await asyncio.sleep(0.01)
                yield StreamEvent(content="x")
        finally:
            closed.append(True)

    before = asyncio.all_tasks()
    stream = read_ahead(endless())
    assert (await anext(stream)).content == "x"
    await stream.aclose()
    assert closed == [True], "the source stream (the HTTP response) was not closed with its consumer"
    assert asyncio.all_tasks() - before == set(), "the reading task outlived its consumer"


async def test_cancelling_the_consumer_cancels_the_reading():
    closed: list[bool] = []
    reading = asyncio.Event()

    async def slow() -> AsyncGenerator[StreamEvent, None]:
        try:
            reading.set()
            await asyncio.sleep(30)
            yield StreamEvent(content="never")
        finally:
            closed.append(True)

    async def consume() -> list[StreamEvent]:
        return [e async for e in read_ahead(slow())]

    task = asyncio.create_task(consume())
    await asyncio.wait_for(reading.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert closed == [True]


async def test_streams_read_at_once_share_the_loop_slice_and_give_it_back_however_they_end(connect):
    """Each stream being read gives way after its share of a pass (_FAIR_SLICE_S / how many are read): the count
    must come back to zero whether a stream ends, or its reader stops part-way, or it is cancelled."""
    from ollie.backend import stream as stream_module
    from ollie.testing import Reply

    from .conftest import collect

    srv, backend = connect("openai")
    for _ in range(3):
        srv.script(Reply(text="word " * 400, chunk_size=5))
    before = stream_module._reading[0]

    async def stop_after_first() -> None:
        async with contextlib.aclosing(backend.stream([Message("user", "hi")], [], GenerationParams())) as events:
            async for _ in events:
                return

    whole = asyncio.ensure_future(collect(backend))
    cut = asyncio.ensure_future(stop_after_first())
    hung = asyncio.ensure_future(collect(backend))
    await asyncio.wait({whole, cut})
    hung.cancel()
    await asyncio.gather(hung, return_exceptions=True)
    assert "".join(e.content or "" for e in whole.result()) == "word " * 400
    assert stream_module._reading[0] == before
