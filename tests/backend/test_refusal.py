"""A declined reply reaches the engine as stop_reason "refusal", whatever the vendor calls it."""

from __future__ import annotations

import pytest

from ollie.testing import Reply

from .conftest import collect, joined


@pytest.mark.parametrize("fmt", ["anthropic", "openai"])
async def test_the_vendors_refusal_stop_is_refusal(connect, fmt):
    # Anthropic sends stop_reason "refusal", OpenAI-compatible servers finish_reason "content_filter".
    srv, backend = connect(fmt)
    srv.script(Reply.refusal("I can't help with that."))
    events = await collect(backend)
    assert events[-1].done and events[-1].stop_reason == "refusal"
    assert joined(events, "content") == "I can't help with that."


@pytest.mark.parametrize("fmt", ["anthropic", "openai", "ollama"])
async def test_an_ordinary_reply_is_no_refusal(connect, fmt):
    srv, backend = connect(fmt)
    srv.script(Reply.text("Sure."))
    events = await collect(backend)
    assert events[-1].stop_reason not in ("refusal", "content_filter", "")
