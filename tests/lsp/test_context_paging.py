"""`ollie/context` in pages: offset/limit through the real daemon, the total, and -32602 naming the bad field."""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcException

from ollie.testing import Reply


async def test_context_pages_with_offset_limit_and_total(start_daemon, llm):
    llm.script(*(Reply.text(f"answer {n}") for n in range(3)))
    daemon = await start_daemon(env=llm.env())
    for n in range(3):
        await daemon.request("ollie/submit", {"text": f"prompt {n}"})

    whole = await daemon.request("ollie/context", {})
    contents = [m["content"] for m in whole["messages"]]
    assert contents[-6:] == ["prompt 0", "answer 0", "prompt 1", "answer 1", "prompt 2", "answer 2"]
    total = whole["total"]
    assert total == len(contents) and isinstance(whole["systemPrompt"], str)

    page = await daemon.request("ollie/context", {"offset": total - 4, "limit": 2})
    assert [m["content"] for m in page["messages"]] == ["prompt 1", "answer 1"]
    assert page["total"] == total and page["systemPrompt"] == whole["systemPrompt"]
    # Pages put back together are the whole; past the end is empty; limit alone is the first page.
    pages = [await daemon.request("ollie/context", {"offset": start, "limit": 4}) for start in range(0, total, 4)]
    assert [m for p in pages for m in p["messages"]] == whole["messages"]
    assert (await daemon.request("ollie/context", {"offset": total + 5}))["messages"] == []
    assert (await daemon.request("ollie/context", {"limit": 1}))["messages"] == whole["messages"][:1]
    assert (await daemon.request("ollie/context", {"offset": 0, "limit": 0}))["messages"] == []

    for params, field in (({"offset": -1}, "offset"), ({"offset": "2"}, "offset"), ({"limit": -3}, "limit"),
                          ({"limit": 1.5}, "limit"), ({"offset": True}, "offset")):
        with pytest.raises(JsonRpcException) as caught:
            await daemon.request("ollie/context", params)
        assert caught.value.code == -32602 and field in caught.value.message, (params, caught.value)


def _saved_session(size: int) -> str:
    """A saved session of `size` messages (user prompts with an editor context block, calls, results)."""
    from ollie import paths
    from ollie.backend.types import Message, ToolCall
    from ollie.sessions import Channel, Kind, Registry, Request, os_user
    from ollie.sessions.persist import SessionFile
    from ollie.sessions.session import Session

    session = Session(agent="default")
    for n in range(size // 4):
        session.messages += [
            Message("user", f"prompt {n} ü"),
            Message("assistant", "", tool_calls=[ToolCall(f"c{n}", "execute_code", '{"steps": []}')]),
            Message("tool", f"result {n} 😀", tool_call_id=f"c{n}", name="execute_code"),
            Message("assistant", f"answer {n}"),
        ]
    SessionFile(paths.sessions_dir(), session.id).save(session)
    registry = Registry()
    registry.ensure(Request(id=session.id, user_id=os_user(), agent_id="default", kind=Kind.CHAT,
                            channel=Channel.LSP, title="long", allow_exact_id_create=True))
    registry.close()
    return session.id


async def test_a_long_unpaged_context_is_whole_and_exact(start_daemon, llm):
    """Over INLINE_MESSAGES the answer is encoded off the loop and sent as bytes: the client reads the same JSON."""
    from ollie.jsonpieces import INLINE_MESSAGES

    size = INLINE_MESSAGES * 4
    sid = _saved_session(size)
    daemon = await start_daemon(env=llm.env())
    await daemon.request("ollie/session/load", {"session": sid})
    whole = await daemon.request("ollie/context", {"session": sid})
    assert whole["total"] == size == len(whole["messages"])
    assert whole["messages"][0] == {"role": "user", "content": "prompt 0 ü"}
    assert whole["messages"][-2]["content"] == f"result {size // 4 - 1} 😀"
    assert whole["messages"][1]["tool_calls"][0]["tool"]["status"] == "completed"  # paired across the history
    page = await daemon.request("ollie/context", {"session": sid, "offset": 4, "limit": 4})  # small: inline
    assert page["messages"] == whole["messages"][4:8] and page["systemPrompt"] == whole["systemPrompt"]
