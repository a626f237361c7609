"""A session runs in one Core at a time: resuming it elsewhere is refused until it closes."""

from __future__ import annotations

import pytest

from ollie.sessions.errors import LiveElsewhereError


async def test_a_session_runs_in_one_core_at_a_time_and_is_free_once_closed(scripted_llm, make_core):
    srv = scripted_llm("openai", check=False)
    first = await make_core(srv)
    with pytest.raises(LiveElsewhereError, match=f"session {first.session_id} is open in another"):
        await make_core(srv, session_id=first.session_id)
    taken = first.session_id
    await first.close()
    second = await make_core(srv, session_id=taken)
    assert second.session_id == taken
