"""A turn's work asks for the loop's share (ollie.loopshare): while nothing is let on, a submitted turn neither
records its prompt nor sends a request; once steps are let on again, it ends as usual."""

from __future__ import annotations

import asyncio

import pytest
from agentkit import ToyServer

from ollie import loopshare
from ollie.loopshare import loop_share
from ollie.testing import Reply


async def test_a_turn_waits_for_its_share_of_the_loop(scripted_llm, make_core, monkeypatch: pytest.MonkeyPatch):
    srv = scripted_llm("openai")
    srv.script(Reply.text("hello"))
    core = await make_core(srv, toy=ToyServer())
    monkeypatch.setattr(loopshare, "PASS_CPU_S", 0.0)  # every pass's share spent at once
    monkeypatch.setattr(loopshare, "RELEASED_PER_PASS", 0)  # and no waiting step let on
    turn = asyncio.ensure_future(core.submit("hi"))
    share = loop_share()
    for _ in range(6000):  # the turn reaches its first ask (30 s at least: a bound for a loaded machine)
        if share.waiting() or turn.done():
            break
        await asyncio.sleep(0.005)
    for _ in range(20):  # and stays there, pass after pass
        await asyncio.sleep(0)
    assert share.waiting() and not turn.done()
    assert not srv.chat_requests
    assert not any(m.role == "user" for m in core.session.messages)
    monkeypatch.setattr(loopshare, "RELEASED_PER_PASS", 4)
    result = await asyncio.wait_for(turn, 30)
    assert result.stop == "end" and result.reply == "hello"
    assert share.waiting() == 0
