"""What every backend must do, run against the scripted server of its own wire format."""

from __future__ import annotations

import json

import pytest

from ollie.agent.cost import compute_cost
from ollie.backend.errors import StreamDropError
from ollie.backend.types import GenerationParams, Message, Usage
from ollie.testing import Reply

from .conftest import FORMATS, READ_TOOL, cancel_mid_reply, collect, joined

pytestmark = pytest.mark.parametrize("fmt", FORMATS)


async def test_plain_text_streams_in_several_deltas(connect, fmt):
    srv, backend = connect(fmt)
    # Paced like a model. How the deltas are grouped into events depends on the machine's speed: only the
    # text, its order and the one done event are what the user sees (a delta handed on at once: test_readahead).
    srv.script(Reply.text("Hello there, general Kenobi.", chunk_size=3, delay=0.01))
    events = await collect(backend)
    assert joined(events, "content") == "Hello there, general Kenobi."
    assert events[-1].done and not events[-1].tool_calls
    assert [e.done for e in events].count(True) == 1


async def test_a_burst_of_deltas_is_handed_on_joined_in_order(connect, fmt):
    srv, backend = connect(fmt)
    # Written at once (the network had it buffered): however they are grouped, the text is intact and in order.
    text = "".join(f"{i:04d}," for i in range(2000))
    srv.script(Reply(text=text, reasoning="think " * 50, chunk_size=5))
    events = await collect(backend)
    assert joined(events, "content") == text and joined(events, "reasoning") == "think " * 50
    assert not any(e.content and e.reasoning for e in events), "a joined event mixes kinds"
    last_reasoning = max(i for i, e in enumerate(events) if e.reasoning)
    assert last_reasoning < min(i for i, e in enumerate(events) if e.content), "the thinking came first"
    assert events[-1].done and [e.done for e in events].count(True) == 1


async def test_several_tool_calls_with_split_arguments(connect, fmt):
    srv, backend = connect(fmt)
    first = {"path": "src/main.py", "lines": [1, 2, 3]}
    second = {"pattern": "def \\w+", "glob": "**/*.py", "nested": {"deep": True}}
    srv.script(Reply.tool_calls(("file_read", first), ("file_grep", second), text="Looking.", chunk_size=2))
    events = await collect(backend, tools=[READ_TOOL])
    calls = events[-1].tool_calls
    assert [c.name for c in calls] == ["file_read", "file_grep"]
    assert [json.loads(c.arguments) for c in calls] == [first, second]
    assert all(c.id for c in calls) and calls[0].id != calls[1].id
    assert joined(events, "content") == "Looking."
    assert sum(len(e.tool_calls) for e in events) == 2, "each call is reported exactly once"


async def test_reasoning_arrives_as_reasoning_deltas(connect, fmt):
    srv, backend = connect(fmt)
    srv.script(Reply(text="42", reasoning="The user wants the answer to everything."))
    events = await collect(backend, params=GenerationParams(reasoning=2048, reasoning_effort="high"))
    assert joined(events, "reasoning") == "The user wants the answer to everything."
    assert joined(events, "content") == "42"
    first_reasoning = next(i for i, e in enumerate(events) if e.reasoning)
    first_content = next(i for i, e in enumerate(events) if e.content)
    assert first_reasoning < first_content


async def test_usage_is_reported_on_the_done_event(connect, fmt):
    srv, backend = connect(fmt)
    srv.script(Reply.text("ok", usage=Usage(input_tokens=1200, output_tokens=34)))
    events = await collect(backend)
    usage = events[-1].usage
    assert (usage.input_tokens, usage.output_tokens) == (1200, 34)
    assert usage.cost is None


async def test_dropped_stream_raises_stream_drop(connect, fmt):
    srv, backend = connect(fmt)
    srv.script(Reply.drop(after=3))
    seen = []
    with pytest.raises(StreamDropError):
        async for event in backend.stream([Message("user", "hi")], [], GenerationParams()):
            seen.append(event)
    assert not any(e.done for e in seen)


async def test_body_that_ends_cleanly_without_terminator_is_a_drop(connect, fmt):
    srv, backend = connect(fmt)
    srv.script(Reply.drop(after=4, abort=False), Reply.text("after the drop"))
    with pytest.raises(StreamDropError):
        await collect(backend)
    events = await collect(backend)  # the connection is still good for the next request
    assert joined(events, "content") == "after the drop"


async def test_list_models_and_context_length(connect, fmt):
    srv, backend = connect(fmt, models={"scripted-model": 65_536, "other-model": 8192})
    assert sorted(await backend.list_models()) == ["other-model", "scripted-model"]
    expected = 200_000 if fmt == "anthropic" else 65_536
    assert await backend.context_length() == expected
    before = len(srv.requests)
    assert await backend.context_length() == expected
    assert len(srv.requests) == before, "context length is cached"
    assert srv.chat_requests == [], "model look-ups do not consume the script"


async def test_cancelling_mid_stream_leaves_the_backend_usable(connect, fmt):
    srv, backend = connect(fmt)
    srv.script(Reply.text("x" * 40, chunk_size=1, delay=0.05), Reply.text("second"))
    await cancel_mid_reply(backend)
    events = await collect(backend)
    assert joined(events, "content") == "second"


async def test_cost_from_usage_via_pricing_table(connect, fmt):
    srv, backend = connect(fmt)
    srv.script(Reply.text("ok", usage=Usage(input_tokens=1_000_000, output_tokens=1_000_000)))
    events = await collect(backend)
    usage = events[-1].usage
    assert compute_cost("gpt-4o", usage) == pytest.approx(2.5 + 10.0)
    assert compute_cost(backend.model, usage) == 0.0  # an unknown (scripted/local) model costs nothing
