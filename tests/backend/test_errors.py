"""Each error class from the vendor's realistic error body, over real HTTP, for every wire format."""

from __future__ import annotations

from contextlib import aclosing

import pytest

from ollie.backend.errors import (
    BackendError,
    ContextOverflowError,
    RateLimitError,
    ToolUnsupportedError,
    TransientError,
)
from ollie.testing import Reply

from .conftest import FORMATS, READ_TOOL, collect


@pytest.mark.parametrize("fmt", FORMATS)
async def test_rate_limit_carries_retry_after(connect, fmt):
    srv, backend = connect(fmt)
    srv.script(Reply.error(429, retry_after=7))
    with pytest.raises(RateLimitError) as caught:
        await collect(backend)
    assert caught.value.retry_after == 7
    assert caught.value.status == 429


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("status", [500, 502, 503, 529])
async def test_server_errors_are_transient(connect, fmt, status):
    srv, backend = connect(fmt)
    srv.script(Reply.error(status))
    with pytest.raises(TransientError) as caught:
        await collect(backend)
    assert caught.value.status == status


@pytest.mark.parametrize("fmt", FORMATS)
async def test_context_overflow_from_the_vendor_message(connect, fmt):
    srv, backend = connect(fmt)
    srv.script(Reply.context_overflow())
    with pytest.raises(ContextOverflowError) as caught:
        await collect(backend)
    assert caught.value.status == 400
    expected = {"openai": "maximum context length", "anthropic": "prompt is too long",
                "ollama": "input length exceeds the context length"}[fmt]
    assert expected in str(caught.value)


@pytest.mark.parametrize("fmt", FORMATS)
async def test_tool_unsupported_from_the_vendor_message(connect, fmt):
    srv, backend = connect(fmt)
    srv.script(Reply.tool_unsupported())
    with pytest.raises(ToolUnsupportedError) as caught:
        await collect(backend, tools=[READ_TOOL])
    assert "support tool" in str(caught.value)


async def test_openrouter_404_no_endpoints_is_tool_unsupported(connect):
    srv, backend = connect("openai", backend="openrouter")
    srv.script(Reply.no_tool_endpoints())
    with pytest.raises(ToolUnsupportedError) as caught:
        await collect(backend, tools=[READ_TOOL])
    assert caught.value.status == 404
    assert "No endpoints found that support tool use" in str(caught.value)


@pytest.mark.parametrize("fmt", FORMATS)
async def test_other_client_errors_are_plain_backend_errors(connect, fmt):
    srv, backend = connect(fmt)
    srv.script(Reply.error(401, body={"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}))
    with pytest.raises(BackendError) as caught:
        await collect(backend)
    assert type(caught.value) is BackendError
    assert "Incorrect API key provided" in str(caught.value)


async def test_a_refused_connection_is_a_configuration_error_not_transient():
    from ollie.backend.errors import BackendUnreachableError
    from ollie.backend.openai import OpenAIBackend

    async with aclosing(OpenAIBackend(model="m", base_url="http://127.0.0.1:9/v1", api_key="k", timeout=2.0)) as backend:
        with pytest.raises(BackendUnreachableError) as caught:
            await collect(backend)
    assert not isinstance(caught.value, TransientError)


@pytest.mark.parametrize("fmt", FORMATS)
async def test_error_inside_a_started_stream_is_classified(connect, fmt):
    srv, backend = connect(fmt)
    srv.script(Reply.stream_error(after=2, status=529), Reply.stream_error(after=2, status=429))
    with pytest.raises(TransientError):
        await collect(backend)
    # Ollama's in-stream errors are bare strings without a status: retried as transient.
    with pytest.raises(TransientError if fmt == "ollama" else RateLimitError):
        await collect(backend)
