"""Every ollie/* method through the real daemon, its error codes, and the executeCommand mirror."""

from __future__ import annotations

import asyncio
import base64

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from ollie.testing import Reply
from tests.pictures import png


async def rpc_error(daemon, method: str, params: dict) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as caught:
        await daemon.request(method, params)
    return caught.value


async def test_state_context_and_configuration_methods(shared_daemon, llm, tmp_path):
    llm.script(Reply.text("first answer"))
    daemon = await shared_daemon(env=llm.env())
    state = await daemon.request("ollie/state", {})
    assert state["state"] == "idle" and state["running"] is False
    assert state["agent"] == "default" and state["backend"] == "local" and state["model"] == llm.model
    assert state["cwd"] == str(daemon.workspace.resolve())
    assert state["queued"] == 0 and state["toolCalls"] == 0
    assert {"tokens", "limit"} <= set(state["contextSize"])
    assert state["usage"]["requests"] == 0 and state["cost"]["session"] == 0

    # setCwd: an existing directory moves the session; a missing one is -32602 naming cwd.
    other = tmp_path / "other"
    other.mkdir()
    assert await daemon.request("ollie/setCwd", {"cwd": str(other)}) == {}
    assert (await daemon.request("ollie/state", {}))["cwd"] == str(other.resolve())
    err = await rpc_error(daemon, "ollie/setCwd", {"cwd": str(tmp_path / "missing")})
    assert err.code == -32602 and "cwd" in err.message
    # A relative directory is the session's, as `/cwd` takes it (it was the daemon's own directory's).
    (other / "sub").mkdir()
    assert await daemon.request("ollie/setCwd", {"cwd": "sub"}) == {}
    assert (await daemon.request("ollie/state", {}))["cwd"] == str((other / "sub").resolve())
    assert await daemon.request("ollie/setCwd", {"cwd": ".."}) == {}
    assert (await daemon.request("ollie/state", {}))["cwd"] == str(other.resolve())

    # setEnv reaches `!cmd` shells; setGenerationParams takes camelCase and names bad keys.
    assert await daemon.request("ollie/setEnv", {"key": "OLLIE_TEST_VAR", "value": "v42"}) == {}
    out = await daemon.request("ollie/command", {"line": "!echo $OLLIE_TEST_VAR"})
    assert "v42" in out["output"]
    assert await daemon.request("ollie/setGenerationParams", {"params": {"temperature": 0.25, "maxTokens": 77}}) == {}
    err = await rpc_error(daemon, "ollie/setGenerationParams", {"params": {"warmth": 1}})
    assert err.code == -32602 and "params.warmth" in err.message
    err = await rpc_error(daemon, "ollie/setGenerationParams", {"params": {"temperature": "hot"}})
    assert err.code == -32602 and "params.temperature" in err.message

    result = await daemon.request("ollie/submit", {"text": "hello there"})
    assert result["reply"] == "first answer"
    body = llm.chat_requests[-1].body
    assert body["temperature"] == 0.25
    context = await daemon.request("ollie/context", {})
    assert isinstance(context["systemPrompt"], str)
    assert [m["role"] for m in context["messages"]][-2:] == ["user", "assistant"]
    assert context["messages"][-1]["content"] == "first answer"


async def test_command_method_and_slash_commands(shared_daemon, llm):
    daemon = await shared_daemon(env=llm.env())
    out = await daemon.request("ollie/command", {"line": "/help"})
    assert "/model" in out["output"]
    err = await rpc_error(daemon, "ollie/command", {"line": "not a command"})
    assert err.code == -32602 and "line" in err.message
    result = await daemon.request("ollie/submit", {"text": "!echo via-submit"})
    assert result["stop"] == "command" and "via-submit" in result["reply"]
    assert any(e["role"] == "exec" and "via-submit" in e["content"] for e in daemon.events)
    assert "failed" not in result and "failed" not in out
    # Bug: a `!cmd` that failed answered as one that worked (only its output's `[exit 3]` said so): editors could not
    # show it failed, as a failed step.
    failed = await daemon.request("ollie/command", {"line": "!echo out; exit 3"})
    assert failed == {"output": "out\n[exit 3]", "failed": True}
    result = await daemon.request("ollie/submit", {"text": "!exit 4"})
    assert result["stop"] == "command" and result["failed"] is True


async def test_inject_queue_and_pop_queue(shared_daemon, llm):
    llm.script(Reply.text("queued turn answer"))
    daemon = await shared_daemon(env=llm.env())
    assert await daemon.request("ollie/queue", {"text": "one"}) == {"depth": 1}
    # Its context items too, as sent (its blocks are in the text): a prompt queued in another window, or before the
    # editor restarted, came back without them.
    lines = {"uri": "untitled:Untitled-1", "range": {"start": {"line": 0, "character": 0},
                                                      "end": {"line": 1, "character": 0}}, "selection": "x = 1\n"}
    assert await daemon.request("ollie/queue", {"text": "two", "context": lines}) == {"depth": 2}
    assert (await daemon.request("ollie/state", {}))["queued"] == 2
    # Taken back newest first (the one the user just sent), its images with it: into the input, to send again.
    picture = base64.b64encode(png()).decode()
    assert await daemon.request("ollie/queue", {"text": "three", "images": [{"data": picture}]}) == {"depth": 3}
    assert await daemon.request("ollie/popQueue", {}) == {"text": "three", "context": [],
                                                          "images": [{"data": picture, "mimeType": "image/png"}]}
    two = await daemon.request("ollie/popQueue", {})
    assert two["context"] == [lines] and two["text"].endswith("two") and "x = 1" in two["text"], two
    assert (await daemon.request("ollie/state", {}))["queuedPrompts"] == ["one"]
    assert await daemon.request("ollie/popQueue", {}) == {"text": "one", "images": [], "context": []}
    assert await daemon.request("ollie/popQueue", {}) == {"text": None, "images": [], "context": []}
    # Injecting while idle defers the text to the queue (the engine's rule).
    assert await daemon.request("ollie/inject", {"text": "later"}) == {}
    assert (await daemon.request("ollie/state", {}))["queued"] == 1
    assert await daemon.request("ollie/interrupt", {"reason": "nothing runs"}) == {"interrupted": False}
    assert await daemon.request("ollie/popQueue", {}) == {"text": "later", "images": [], "context": []}
    llm.script()  # the scripted reply is used by the next test step
    result = await daemon.request("ollie/submit", {"text": "go"})
    assert result["reply"] == "queued turn answer"


async def test_sessions_new_list_rename_archive_close(start_daemon, llm, tmp_path):
    llm.script(Reply.text("in the second session"))
    daemon = await start_daemon(env=llm.env())
    default = (await daemon.request("ollie/state", {}))["session"]
    other_dir = tmp_path / "proj2"
    other_dir.mkdir()
    new = await daemon.request("ollie/session/new", {"title": "Second", "cwd": str(other_dir)})
    sid = new["session"]
    assert sid != default
    state = await daemon.request("ollie/state", {"session": sid})
    assert state["cwd"] == str(other_dir.resolve())
    result = await daemon.request("ollie/submit", {"session": sid, "text": "hi"})
    assert result["session"] == sid and result["reply"] == "in the second session"
    assert all(e["session"] == sid for e in daemon.events)

    listed = (await daemon.request("ollie/session/list", {}))["sessions"]
    by_id = {s["id"]: s for s in listed}
    # The default session, never prompted nor named, is not listed (each daemon start makes one).
    assert sid in by_id and default not in by_id
    assert by_id[sid]["title"] == "Second" and by_id[sid]["channel"] == "lsp" and by_id[sid]["kind"] == "chat"
    assert by_id[sid]["live"] is True and by_id[sid]["agent"] == "default"
    assert listed[0]["id"] == sid  # most recently active first
    # The engine's recorder stamped the turn before the submit was answered.
    assert by_id[sid]["lastTurnResult"] == "end" and by_id[sid]["turns"] == 1  # as its log saved it

    assert await daemon.request("ollie/session/rename", {"session": sid, "title": "Renamed"}) == {}
    listed = (await daemon.request("ollie/session/list", {"limit": 1}))["sessions"]
    assert len(listed) == 1 and listed[0]["title"] == "Renamed"

    assert await daemon.request("ollie/session/archive", {"session": sid}) == {}
    for method, params in (("ollie/submit", {"text": "x"}), ("ollie/queue", {"text": "x"}),
                           ("ollie/setEnv", {"key": "A", "value": "b"}), ("ollie/session/rename", {"title": "t"})):
        err = await rpc_error(daemon, method, {"session": sid, **params})
        assert err.code == -32002 and "archived" in err.message, method
    assert (await daemon.request("ollie/state", {"session": sid}))["archived"] is True
    ids = [s["id"] for s in (await daemon.request("ollie/session/list", {}))["sessions"]]
    assert sid not in ids
    ids = [s["id"] for s in (await daemon.request("ollie/session/list", {"includeArchived": True}))["sessions"]]
    assert sid in ids
    err = await rpc_error(daemon, "ollie/session/load", {"session": sid})
    assert err.code == -32002

    assert await daemon.request("ollie/session/close", {"session": sid}) == {}
    err = await rpc_error(daemon, "ollie/state", {"session": sid})
    assert err.code == -32001 and "session not found" in err.message
    err = await rpc_error(daemon, "ollie/session/new", {"kind": "bogus"})
    assert err.code == -32602 and "kind" in err.message
    err = await rpc_error(daemon, "ollie/session/new", {"agent": "no-such-agent"})
    assert err.code == -32602 and "agent" in err.message


async def test_unknown_session_is_32001_for_every_session_method(shared_daemon, llm):
    daemon = await shared_daemon(env=llm.env())
    ghost = "1700000000000000000-abcdef"
    for method, params in (
        ("ollie/submit", {"text": "x"}), ("ollie/interrupt", {}), ("ollie/inject", {"text": "x"}),
        ("ollie/queue", {"text": "x"}), ("ollie/popQueue", {}), ("ollie/state", {}), ("ollie/context", {}),
        ("ollie/command", {"line": "/help"}), ("ollie/setCwd", {"cwd": "/"}), ("ollie/setEnv", {"key": "A", "value": "b"}),
        ("ollie/setGenerationParams", {"params": {}}), ("ollie/session/load", {}), ("ollie/session/rename", {"title": "t"}),
        ("ollie/session/archive", {}), ("ollie/session/close", {}),
    ):
        err = await rpc_error(daemon, method, {"session": ghost, **params})
        assert err.code == -32001, (method, err)


async def test_execute_command_mirrors_the_methods(start_daemon, llm):
    llm.script(Reply.text("answer via command"))
    daemon = await start_daemon(env=llm.env())

    async def execute(command: str, *arguments):
        return await asyncio.wait_for(
            daemon.client.workspace_execute_command_async(
                types.ExecuteCommandParams(command=command, arguments=list(arguments))), 30)

    result = await execute("ollie.submit", {"text": "hi"})
    assert result["stop"] == "end" and result["reply"] == "answer via command"
    assert (await execute("ollie.state"))["state"] == "idle"
    new = await execute("ollie.session.new", {"title": "from command"})
    assert (await execute("ollie.state", {"session": new["session"]}))["session"] == new["session"]
    # Queued in the fresh session: in the default one, a prompt queued just after its turn would run.
    assert await execute("ollie.queue", {"text": "q", "session": new["session"]}) == {"depth": 1}
    with pytest.raises(JsonRpcException) as caught:
        await execute("ollie.submit", {"text": 5})
    assert caught.value.code == -32602 and "text" in caught.value.message
    with pytest.raises(JsonRpcException) as caught:
        await execute("ollie.state", {"session": "1-abcdef"})
    assert caught.value.code == -32001


async def test_a_code_action_argument_of_any_shape_is_answered(start_daemon, llm):
    """`ollie.codeAction`'s argument comes back from the client: a diagnostic whose range is no object failed as an
    internal error (AttributeError); it is a diagnostic without a line now, and a non-object one is -32602."""
    llm.script(Reply.text("fixed"))
    daemon = await start_daemon(env=llm.env())
    (daemon.workspace / "a.py").write_text("x = 1\n")
    args = {"action": "fix", "uri": (daemon.workspace / "a.py").as_uri(),
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}}

    async def execute(diagnostics):
        return await asyncio.wait_for(daemon.client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="ollie.codeAction", arguments=[{**args, "diagnostics": diagnostics}])), 30)

    result = await execute([{"range": "x", "message": "bad range"}, {"range": {"start": True}, "message": "odd"}])
    assert result["stop"] == "end" and result["reply"] == "fixed"
    prompt = [m for m in llm.chat_requests[-1].body["messages"] if m["role"] == "user"][-1]["content"]
    assert '- "bad range"\n- "odd"' in prompt, prompt
    with pytest.raises(JsonRpcException) as caught:
        await execute(["junk"])
    assert caught.value.code == -32602 and "diagnostics[0]" in caught.value.message


async def test_initialization_options_are_honoured(start_daemon, llm, tmp_path):
    llm.script(Reply.text("ok"))
    env = llm.env()
    model = env.pop("OLLIE_MODEL")
    daemon = await start_daemon(env=env, init_options={
        "agent": "coding", "model": model, "env": {"OLLIE_INIT_VAR": "from-init"}, "futureKey": True,
    })
    state = await daemon.request("ollie/state", {})
    assert state["agent"] == "coding" and state["model"] == model
    out = await daemon.request("ollie/command", {"line": "!echo $OLLIE_INIT_VAR"})
    assert "from-init" in out["output"]
    assert (await daemon.request("ollie/submit", {"text": "hi"}))["stop"] == "end"
    assert llm.chat_requests[-1].body["model"] == model
    assert daemon.client.messages == []


async def test_bad_initialization_options_are_shown_and_fall_back(start_daemon, llm):
    daemon = await start_daemon(env=llm.env(), init_options={"agent": "no-such-agent", "model": 42, "env": "x"})
    state = await daemon.request("ollie/state", {})
    assert state["agent"] == "default"
    messages = " | ".join(m.message for m in daemon.client.messages)
    assert "model" in messages and "env" in messages and "no-such-agent" in messages


async def test_workspace_folder_change_moves_the_cwd_of_new_sessions(start_daemon, llm, tmp_path):
    daemon = await start_daemon(env=llm.env())
    moved = tmp_path / "moved"
    moved.mkdir()
    daemon.client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        event=types.WorkspaceFoldersChangeEvent(added=[types.WorkspaceFolder(uri=moved.as_uri(), name="m")], removed=[])))
    new = await daemon.request("ollie/session/new", {})
    assert (await daemon.request("ollie/state", {"session": new["session"]}))["cwd"] == str(moved.resolve())
    assert (await daemon.request("ollie/state", {}))["cwd"] == str(daemon.workspace.resolve())


async def test_rename_and_kill_slash_commands_reach_the_session_table(shared_daemon, llm):
    daemon = await shared_daemon(env=llm.env())
    sid = (await daemon.request("ollie/session/new", {}))["session"]
    await daemon.request("ollie/command", {"session": sid, "line": "/rn my title"})
    listed = {s["id"]: s for s in (await daemon.request("ollie/session/list", {}))["sessions"]}
    assert listed[sid]["title"] == "my title"
    await daemon.request("ollie/command", {"session": sid, "line": "/kill"})
    err = await rpc_error(daemon, "ollie/state", {"session": sid})
    assert err.code == -32001
    assert (await daemon.request("ollie/state", {}))["state"] == "idle"  # the test's own session lives on


async def test_a_session_is_titled_by_its_first_prompt_until_renamed(start_daemon, llm):
    llm.script(Reply.text("one"), Reply.text("two"), Reply.text("three"))
    daemon = await start_daemon(env=llm.env())
    first = await daemon.request("ollie/submit", {"text": "Fix the flaky   login test please"})
    await daemon.request("ollie/submit", {"text": "and another thing"})
    named = (await daemon.request("ollie/session/new", {"title": "Named"}))["session"]
    await daemon.request("ollie/submit", {"session": named, "text": "this prompt is not the title"})

    async def titles() -> dict[str, str]:
        listed = (await daemon.request("ollie/session/list", {}))["sessions"]
        return {s["id"]: s["title"] for s in listed}

    for _ in range(1500):  # the title is written on the registry thread
        if (await titles()).get(first["session"]):
            break
        await asyncio.sleep(0.02)
    assert await titles() == {first["session"]: "Fix the flaky login test please", named: "Named"}
