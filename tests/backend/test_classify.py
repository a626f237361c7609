"""Status + vendor body -> typed error, and retry-after parsing (unit level)."""

from __future__ import annotations

import pytest

from ollie.backend.classify import classify_error, error_message, parse_retry_after
from ollie.backend.errors import (
    BackendError,
    ContextOverflowError,
    RateLimitError,
    ToolUnsupportedError,
    TransientError,
)

CASES = [
    (400, {"error": {"message": "This model's maximum context length is 8192 tokens. However, your messages "
                                "resulted in 9000 tokens.", "type": "invalid_request_error", "param": "messages",
                     "code": "context_length_exceeded"}}, ContextOverflowError),
    (400, {"type": "error", "error": {"type": "invalid_request_error",
                                      "message": "prompt is too long: 208310 tokens > 200000 maximum"}},
     ContextOverflowError),
    (400, {"type": "error", "error": {"type": "invalid_request_error", "message":
           "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length "
           "or `max_tokens` and try again"}}, ContextOverflowError),
    (400, {"error": "the input length exceeds the context length"}, ContextOverflowError),
    (400, {"error": {"code": 400, "message": "This endpoint's maximum context length is 131072 tokens. However, "
                                             "you requested about 200000 tokens."}}, ContextOverflowError),
    (400, {"error": {"code": 400, "message": "Provider returned error",
                     "metadata": {"raw": '{"error":{"message":"prompt is too long: 300000 tokens > 200000"}}'}}},
     ContextOverflowError),
    (400, {"error": "registry.ollama.ai/library/gemma:2b does not support tools"}, ToolUnsupportedError),
    (400, {"error": {"message": "stablelm2:latest does not support tools", "type": "api_error"}},
     ToolUnsupportedError),
    (404, {"error": {"message": "No endpoints found that support tool use. To learn more about provider routing, "
                                "visit: https://openrouter.ai/docs/provider-routing", "code": 404}},
     ToolUnsupportedError),
    (400, {"object": "error", "message": '"auto" tool choice requires --enable-auto-tool-choice and '
                                         "--tool-call-parser to be set", "type": "BadRequestError", "code": 400},
     ToolUnsupportedError),
    (404, {"error": "model \"llama9\" not found, try pulling it first"}, BackendError),
    (401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}, BackendError),
    (500, {"error": {"message": "The server had an error", "type": "server_error"}}, TransientError),
    (529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, TransientError),
    (502, "<html>Bad Gateway</html>", TransientError),
    (429, {"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}, RateLimitError),
]


@pytest.mark.parametrize(("status", "body", "expected"), CASES)
def test_classification(status, body, expected):
    error = classify_error(status, body, backend="x")
    assert type(error) is expected
    assert error.status == status
    assert error_message(body)[:20] in str(error)


def test_message_extraction_handles_each_vendor_shape():
    assert error_message(b'{"error":"plain ollama"}') == "plain ollama"
    assert error_message({"type": "error", "error": {"type": "api_error", "message": "boom"}}) == "boom"
    assert error_message({"detail": "fastapi says no"}) == "fastapi says no"
    assert error_message("not json at all") == "not json at all"


def test_retry_after_forms():
    assert parse_retry_after({"retry-after": "12"}) == 12
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=1445412470.0) == 10.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    error = classify_error(429, "{}", headers={"retry-after": "3"})
    assert isinstance(error, RateLimitError) and error.retry_after == 3
