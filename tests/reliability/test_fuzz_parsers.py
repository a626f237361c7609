"""Fuzzing the stream parsers: random chunk boundaries and garbage give events or typed errors, nothing else."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ollie.backend.anthropic import AnthropicBackend
from ollie.backend.errors import BackendError
from ollie.backend.framing import NDJSONDecoder, SSEDecoder
from ollie.backend.ollama import OllamaBackend
from ollie.backend.openai import OpenAIBackend
from ollie.backend.types import GenerationParams, Message

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def _sse(obj: object, event: str = "") -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(obj)}\n\n".encode()


# Real frames of each vendor, to be mixed with garbage.
OPENAI_FRAMES = [
    _sse({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
    _sse({"choices": [{"index": 0, "delta": {"content": "hel"}}]}),
    _sse({"choices": [{"index": 0, "delta": {"reasoning": "think"}}]}),
    _sse({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                                              "function": {"name": "f", "arguments": ""}}]}}]}),
    _sse({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"a\""}}]}}]}),
    _sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    _sse({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}}),
    _sse({"error": {"message": "overloaded", "code": 529}}),
    b": OPENROUTER PROCESSING\n\n",
    b"data: [DONE]\n\n",
]
ANTHROPIC_FRAMES = [
    _sse({"type": "message_start", "message": {"usage": {"input_tokens": 5}}}, "message_start"),
    _sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
         "content_block_start"),
    _sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
         "content_block_delta"),
    _sse({"type": "content_block_start", "index": 1,
          "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {}}}, "content_block_start"),
    _sse({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"a"}},
         "content_block_delta"),
    _sse({"type": "content_block_stop", "index": 1}, "content_block_stop"),
    _sse({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}},
         "message_delta"),
    _sse({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "error"),
    _sse({"type": "ping"}, "ping"),
    _sse({"type": "message_stop"}, "message_stop"),
]
OLLAMA_FRAMES = [
    b'{"message": {"role": "assistant", "content": "he"}, "done": false}\n',
    b'{"message": {"role": "assistant", "thinking": "hm"}, "done": false}\n',
    b'{"message": {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": {}}}]},'
    b' "done": false}\n',
    b'{"error": "model not found"}\n',
    b'{"message": {"role": "assistant", "content": ""}, "done": true, "done_reason": "stop", '
    b'"prompt_eval_count": 3, "eval_count": 2}\n',
]


def garbage(sse: bool) -> st.SearchStrategy[bytes]:
    """Frames that are not what the vendor sends: wrong JSON shapes, invalid JSON, random bytes."""
    wrong_json = json_values.map(lambda v: _sse(v) if sse else json.dumps(v).encode() + b"\n")
    return st.one_of(wrong_json, st.binary(max_size=40),
                     st.text(max_size=30).map(lambda t: (f"data: {t}\n\n" if sse else t + "\n").encode()))


def stream_bodies(frames: list[bytes], *, sse: bool) -> st.SearchStrategy[tuple[bytes, list[int]]]:
    """A body of real and garbage frames, and where to cut it into chunks."""
    parts = st.lists(st.sampled_from(frames) | garbage(sse), min_size=0, max_size=12)
    return parts.map(b"".join).flatmap(
        lambda body: st.tuples(st.just(body), st.lists(st.integers(0, max(len(body), 1)), max_size=8)))


def chunks(body: bytes, cuts: list[int]) -> list[bytes]:
    """`body` cut at `cuts`."""
    points = sorted({0, len(body), *cuts})
    return [body[a:b] for a, b in itertools.pairwise(points) if b > a]


def run_backend(backend, body: bytes, cuts: list[int], content_type: str) -> None:
    """Stream `body` (in the given chunks) through the backend's real parsing; only typed errors may come out.

    httpx's MockTransport answers (no socket: the fuzzer runs thousands of cases), its body in those chunks.
    """
    async def pieces() -> AsyncIterator[bytes]:
        for piece in chunks(body, cuts):
            yield piece

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": content_type}, content=pieces())

    async def consume() -> None:
        await backend.aclose()
        backend._client = httpx.AsyncClient(base_url=backend.base_url, transport=httpx.MockTransport(answer))
        try:
            async for _ in backend.stream([Message("user", "hi")], [], GenerationParams()):
                pass
        except BackendError:
            pass
        finally:
            await backend.aclose()

    asyncio.run(consume())


@FUZZ
@given(stream_bodies(OPENAI_FRAMES, sse=True))
def test_openai_stream_gives_events_or_typed_errors(case):
    run_backend(OpenAIBackend(model="m", api_key="k", base_url="http://llm.test/v1"), *case, "text/event-stream")


@FUZZ
@given(stream_bodies(ANTHROPIC_FRAMES, sse=True))
def test_anthropic_stream_gives_events_or_typed_errors(case):
    run_backend(AnthropicBackend(model="m", api_key="k", base_url="http://llm.test"), *case, "text/event-stream")


@FUZZ
@given(stream_bodies(OLLAMA_FRAMES, sse=False))
def test_ollama_stream_gives_events_or_typed_errors(case):
    run_backend(OllamaBackend(model="m", base_url="http://llm.test"), *case, "application/x-ndjson")


@FUZZ
@given(st.lists(st.sampled_from(OPENAI_FRAMES + ANTHROPIC_FRAMES), max_size=10), st.lists(st.integers(0, 4000)))
def test_sse_decoder_finds_the_same_events_whatever_the_chunk_boundaries(frames, cuts):
    body = b"".join(frames)
    whole = SSEDecoder()
    expected = whole.feed(body) + whole.finish()
    split = SSEDecoder()
    got = [event for piece in chunks(body, cuts) for event in split.feed(piece)] + split.finish()
    assert got == expected
    assert len(got) == len([f for f in frames if not f.startswith(b":")])  # comments are not events


@FUZZ
@given(st.lists(st.sampled_from(OLLAMA_FRAMES), max_size=10), st.lists(st.integers(0, 4000)),
       st.binary(max_size=30))
def test_ndjson_decoder_splits_anywhere_and_garbage_is_a_value_error(frames, cuts, junk):
    body = b"".join(frames)
    decoder = NDJSONDecoder()
    got = [obj for piece in chunks(body, cuts) for obj in decoder.feed(piece)] + decoder.finish()
    assert got == [json.loads(f) for f in frames]
    try:
        NDJSONDecoder().feed(junk + b"\n")
    except ValueError:
        pass  # stream_frames turns this into a TransientError
