"""Offline testing aids: a scripted LLM server that speaks the real OpenAI, Anthropic and Ollama wire formats.

    from ollie.testing import ScriptedLLMServer, Reply
    with ScriptedLLMServer(fmt="openai") as srv:           # or "anthropic", "ollama"
        srv.script(Reply.text("hello"), Reply.tool_calls(("file_read", {"path": "a"})))
        env = srv.env()                                    # OLLIE_BACKEND, OLLIE_*_URL, a dummy key, OLLIE_MODEL
        ...                                                # point a Core / daemon / backend at it
        srv.requests                                       # what came: method, path, headers, parsed body
        srv.assert_done()                                  # leftovers or unexpected requests fail

Other replies: `Reply.error(429)`, `Reply.context_overflow()`, `Reply.tool_unsupported()`,
`Reply.no_tool_endpoints()` (OpenRouter 404), `Reply.drop(after=3)`, `Reply.stream_error(after=2, status=529)`,
and `Reply(text=..., reasoning=..., tool_calls=[...], usage=Usage(...), cost=..., chunk_size=..., delay=...,
hold=threading.Event())` (held before its end until the event is set).
From another process: `python -m ollie.testing.server --fmt openai --script script.json` prints `URL <url>`; a script
entry's `"hold": PATH` holds its reply before its end until that file exists.
In pytest: the `scripted_llm` fixture of `ollie.testing.pytest_plugin`.
Host names a step's connections reach through the egress proxy (no internet here): `ollie.testing.nethosts`.
"""

from __future__ import annotations

from ollie.backend.types import Usage
from ollie.testing.reply import Reply
from ollie.testing.scripted import RecordedRequest, ScriptedLLMServer

__all__ = ["RecordedRequest", "Reply", "ScriptedLLMServer", "Usage"]
