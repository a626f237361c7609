"""`ollie/context` in pages: offset/limit through the real daemon, the total, and -32602 naming the bad field."""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcException

from ollie.testing import Reply
from tests.longsession import saved_session


async def test_context_pages_with_offset_limit_and_total(start_daemon, llm):
    llm.script(*(Reply.text(f"answer {n}") for n in range(3)))
    daemon = await start_daemon(env=llm.env())
    for n in range(3):
        await daemon.request("ollie/submit", {"text": f"prompt {n}"})

    whole = await daemon.request("ollie/context", {})
    assert "next" not in whole  # a short history comes whole
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


async def test_a_long_context_comes_in_bounded_pages_that_are_whole_and_exact(start_daemon, llm):
    """Unpaged, or asked for more, a long history comes at most CONTEXT_PAGE_MAX messages a page, with `next`.

    A page over INLINE_MESSAGES is encoded off the loop and sent as bytes: the client reads the same JSON.
    """
    from ollie_lsp.methods import CONTEXT_PAGE_MAX

    size = CONTEXT_PAGE_MAX + 24
    sid = saved_session(size)
    daemon = await start_daemon(env=llm.env())
    await daemon.request("ollie/session/load", {"session": sid})
    first = await daemon.request("ollie/context", {"session": sid})
    assert first["total"] == size and len(first["messages"]) == CONTEXT_PAGE_MAX == first["next"]
    asked_for_all = await daemon.request("ollie/context", {"session": sid, "limit": size})
    assert asked_for_all["messages"] == first["messages"] and asked_for_all["next"] == CONTEXT_PAGE_MAX
    rest = await daemon.request("ollie/context", {"session": sid, "offset": first["next"]})
    assert "next" not in rest and len(rest["messages"]) == size - CONTEXT_PAGE_MAX
    whole = first["messages"] + rest["messages"]
    assert whole[0] == {"role": "user", "content": "prompt 0 ü"}
    assert whole[-2]["content"] == f"result {size // 4 - 1} 😀"
    assert whole[1]["tool_calls"][0]["tool"]["status"] == "completed"  # paired across the history
    assert rest["messages"][1]["tool_calls"][0]["tool"]["status"] == "completed"  # a later page too
    page = await daemon.request("ollie/context", {"session": sid, "offset": 4, "limit": 4})  # small: inline
    assert page["messages"] == whole[4:8] and page["systemPrompt"] == first["systemPrompt"] and page["next"] == 8
