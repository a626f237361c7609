"""A step's connection to a host outside the allow-list, put to the editor as an `ollie/permission` question."""

from __future__ import annotations

import pytest

from ollie.sandbox.rules import landlock_abi
from ollie.testing import Reply
from tests.lsp.cards import answer_cards

pytestmark = pytest.mark.skipif(landlock_abi() < 1, reason="needs Landlock")


async def test_the_editor_is_asked_and_a_rejected_host_receives_nothing(start_daemon, llm, listener):
    llm.script(Reply.tool_calls(("execute_code", {"steps": [
        {"code": f"curl -s -w ' status %{{http_code}}' http://other.test:{listener.port}/x"}]})), Reply.text("ok"))
    # `auto`: the step runs unasked, but the host is not on the policy's allow-list, so that is still asked.
    daemon = await start_daemon(env=llm.env(approval="auto"), init_options={"permissionRequest": True})
    questions = answer_cards(daemon, "reject")

    assert (await daemon.request("ollie/submit", {"text": "fetch"}))["reply"] == "ok"
    (question,) = questions
    step = question["step"]
    assert step["kind"] == "fetch" and step["prefix"] == f"other.test:{listener.port}"
    assert step["title"].startswith(f"connect to other.test:{listener.port} (network; step: Run `curl -s")
    # The step as the user saw it, not its process: `bash /tmp/ollie-0/<session>/scratch/run-<id>/step1.sh`.
    assert "step1.sh" not in step["title"] and "/scratch/" not in step["title"], step["title"]
    # The connection itself, for an editor to ask "Allow network access to other.test:PORT?" its own way.
    assert step["network"] == {"host": "other.test", "port": listener.port, "scheme": "http"}
    assert question["always"] == f"connections to other.test:{listener.port} in this and later sessions"
    # "Reject with feedback" too: the model reads the words in the connection's `[network]` line.
    assert [o["id"] for o in question["options"]] == ["allow_once", "allow_session", "allow_always", "reject",
                                                     "reject_with_feedback"]
    told = llm.chat_requests[-1].body["messages"][-1]["content"]
    assert "status 403" in told and f"[network] other.test:{listener.port} denied (you said no)" in told
    assert not listener.received
    # The step's `tool` event lists its connections, structured (PROTOCOL.md "Network questions").
    (tool,) = [e["tool"] for e in daemon.events if e.get("role") == "tool" and e.get("tool")]
    # `words` as the result's `[network]` line says it: the editors show it (no table of their own).
    record = {"host": "other.test", "port": listener.port, "verdict": "denied", "how": "deny",
              "words": "denied (you said no)", "sent": 0, "received": 0}
    assert tool["network"] == [record]

    # Saved with the session: resumed in a new daemon (an editor's restart), its step and `/network` still show it.
    session = (await daemon.request("ollie/state", {}))["session"]
    await daemon.client.shutdown_session()
    again = await start_daemon(env=llm.env(), workspace=daemon.workspace)
    await again.request("ollie/session/load", {"session": session})
    context = await again.request("ollie/context", {"session": session})
    assert [m["tool"]["network"] for m in context["messages"] if m.get("role") == "tool"] == [[record]]
    listing = (await again.request("ollie/command", {"session": session, "line": "/network"}))["output"]
    assert listing.startswith("network (1 connection):") and f"other.test:{listener.port} denied (you said no)" in listing


async def test_allow_for_this_session_lets_its_later_steps_through_and_no_other_session(start_daemon, llm, listener):
    from ollie.sandbox import netsaved
    from ollie.testing import nethosts

    fetch = Reply.tool_calls(("execute_code", {"steps": [
        {"code": f"curl -s -w ' status %{{http_code}}' http://other.test:{listener.port}/x"}]}))
    llm.script(fetch, Reply.text("one"), fetch, Reply.text("two"), fetch, Reply.text("three"), fetch, Reply.text("four"))
    env = {**llm.env(approval="auto"), **nethosts.env({"other.test": "127.0.0.1"})}
    daemon = await start_daemon(env=env, init_options={"permissionRequest": True})
    questions = answer_cards(daemon, "allow_session", "reject", "reject")

    async def fetched(text: str, session: str) -> str:
        assert (await daemon.request("ollie/submit", {"session": session, "text": text}))["reply"] == text
        return llm.chat_requests[-1].body["messages"][-1]["content"]

    first = (await daemon.request("ollie/state", {}))["session"]
    assert "hello status 200" in await fetched("one", first)
    (question,) = questions
    assert {"id": "allow_session", "name": "Allow for this session"} in question["options"]
    told = await fetched("two", first)  # a later step of the session: not asked, let through
    assert len(questions) == 1 and "hello status 200" in told
    assert f"[network] other.test:{listener.port} allowed for this session" in told
    listing = (await daemon.request("ollie/command", {"session": first, "line": "/network"}))["output"]
    assert f"other.test:{listener.port} — \"Allow for this session\" (asked by: Run `curl -s" in listing, listing
    # Another session asks again; so does this one, closed and resumed. Nothing was written for later sessions.
    other = (await daemon.request("ollie/session/new", {}))["session"]
    assert "status 403" in await fetched("three", other) and len(questions) == 2
    await daemon.request("ollie/session/close", {"session": first})
    await daemon.request("ollie/session/load", {"session": first})
    assert "status 403" in await fetched("four", first) and len(questions) == 3
    assert listener.received.count(b"GET /x ") == 2
    assert not netsaved.saved_file().exists()
