"""initialize: capabilities, experimental.ollie, the executeCommand list, bad params of every method."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from ollie_lsp.methods import METHODS
from ollie_lsp.names import METHOD_NAMES, command_name

ALL_METHODS = sorted(METHODS)


def test_the_start_up_name_list_matches_the_handlers():
    assert sorted(METHOD_NAMES) == ALL_METHODS

# One bad params object per method, and the field its error must name.
BAD_PARAMS = {
    "ollie/submit": ({"session": None}, "text"),
    "ollie/interrupt": ({"reason": 5}, "reason"),
    "ollie/inject": ({"text": ["x"]}, "text"),
    "ollie/queue": ({"text": ""}, "text"),
    "ollie/popQueue": ({"session": 12}, "session"),
    "ollie/queue/run": ({"session": 12}, "session"),
    "ollie/queue/clear": ({"session": []}, "session"),
    "ollie/state": ({"session": {"id": "x"}}, "session"),
    "ollie/context": ({"session": True}, "session"),
    "ollie/command": ({}, "line"),
    "ollie/listModels": ({"session": 12}, "session"),
    "ollie/listAgents": ({"session": False}, "session"),
    "ollie/mcp/list": ({"session": 12}, "session"),
    "ollie/listCommands": ([1], "params"),
    "ollie/setCwd": ({"cwd": 3}, "cwd"),
    "ollie/setEnv": ({"key": "1BAD", "value": "v"}, "key"),
    "ollie/setGenerationParams": ({"params": "hot"}, "params"),
    "ollie/setApproval": ({"approval": "sometimes"}, "approval"),
    "ollie/changes": ({"turn": 0}, "turn"),
    "ollie/review/undo": ({"path": "a.txt", "hunk": "1"}, "hunk"),
    "ollie/rewind": ({"undo": "yes"}, "undo"),
    "ollie/session/new": ({"title": 7}, "title"),
    "ollie/session/list": ({"limit": -1}, "limit"),
    "ollie/session/load": ({}, "session"),
    "ollie/session/fork": ({"session": "x", "turn": 0}, "turn"),
    "ollie/session/rename": ({"session": "x"}, "title"),
    "ollie/session/archive": ({"session": 1}, "session"),
    "ollie/session/unarchive": ({"session": None}, "session"),
    "ollie/session/close": ({"session": ""}, "session"),
}


async def test_capabilities_list_every_method_and_command(start_daemon):
    daemon = await start_daemon()
    caps = daemon.init_result.capabilities
    ollie = caps.experimental["ollie"]
    assert ollie["version"] == 2
    assert sorted(ollie["methods"]) == ALL_METHODS
    assert {"ollie/submit", "ollie/session/new", "ollie/setGenerationParams"} <= set(ollie["methods"])
    commands = set(caps.execute_command_provider.commands)
    # Every ollie/* method's mirror, and the command the standard code actions run.
    assert commands == {command_name(m) for m in ALL_METHODS} | {"ollie.codeAction"}
    assert "ollie.session.new" in commands
    assert daemon.init_result.server_info.name == "ollie-lsp"


def test_bad_params_table_covers_every_method():
    assert sorted(BAD_PARAMS) == ALL_METHODS


async def test_bad_params_name_the_field_and_the_daemon_keeps_serving(start_daemon):
    daemon = await start_daemon()
    for method, (params, field) in BAD_PARAMS.items():
        with pytest.raises(JsonRpcException) as caught:
            await daemon.request(method, params)
        assert caught.value.code == -32602, (method, caught.value)
        assert field in caught.value.message, (method, caught.value.message)
    # Params that are not an object at all.
    with pytest.raises(JsonRpcException) as caught:
        await daemon.request("ollie/state", [1, 2])
    assert caught.value.code == -32602
    assert "params" in caught.value.message
    # Still alive: an unknown session is answered with its own error.
    with pytest.raises(JsonRpcException) as caught:
        await daemon.request("ollie/state", {"session": "1-abcdef"})
    assert caught.value.code == -32001


async def test_a_lone_surrogate_in_a_name_is_invalid_params_naming_it(start_daemon):
    # JSON's "\ud800" (a client's broken UTF-16) has no UTF-8: as a path, a URI, a session id or a title it failed as an
    # internal error (-32603, UnicodeEncodeError) where a file, the store or a log met it. A prompt's text may hold one.
    daemon = await start_daemon()
    lone = "\ud800"
    cases = [("ollie/submit", {"text": "hi", "context": {"uri": f"file:///{lone}"}}, "context.uri"),
             ("ollie/submit", {"text": "hi", "images": [{"path": lone}]}, "images[0].path"),
             ("ollie/session/new", {"title": lone}, "title"),
             ("ollie/session/load", {"session": lone}, "session"),
             ("ollie/session/fork", {"session": lone}, "session"),
             ("ollie/session/rename", {"session": lone, "title": "x"}, "session"),
             ("ollie/session/archive", {"session": lone}, "session")]
    action = {"action": "explain", "uri": f"file:///{lone}",
              "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}}
    for method, params, field in [*cases, ("ollie.codeAction", action, "uri")]:
        with pytest.raises(JsonRpcException) as caught:
            if method.startswith("ollie/"):
                await daemon.request(method, params)
            else:  # Emacs' code action, as eglot runs it
                await daemon.client.workspace_execute_command_async(
                    types.ExecuteCommandParams(command=method, arguments=[params]))
        assert caught.value.code == -32602, (method, caught.value)
        assert caught.value.message.startswith(f"Invalid params: {field}: has a lone surrogate"), caught.value.message
    assert (await daemon.request("ollie/state", {}))["state"] == "idle"


async def test_a_title_past_the_stores_limit_is_invalid_params_naming_title(start_daemon):
    # The store keeps at most 1,000 UTF-8 bytes of a title: a longer one was -32602 naming no field ("session title is
    # 1002 bytes; ...").
    daemon = await start_daemon()
    sid = (await daemon.request("ollie/session/new", {}))["session"]
    long = "é" * 501
    for method, params in (("ollie/session/new", {"title": long}), ("ollie/session/rename", {"session": sid, "title": long})):
        with pytest.raises(JsonRpcException) as caught:
            await daemon.request(method, params)
        assert caught.value.code == -32602, (method, caught.value)
        assert caught.value.message.startswith("Invalid params: title: "), caught.value.message
        assert "1,000 bytes of UTF-8 (this one has 1,002)" in caught.value.message, caught.value.message
    assert await daemon.request("ollie/session/rename", {"session": sid, "title": "é" * 500}) == {}
    # A NUL: PostgreSQL keeps none in text (its store's DataError was -32603), SQLite's kept it.
    nul = "a\x00b"
    for method, params in (("ollie/session/new", {"title": nul}), ("ollie/session/rename", {"session": sid, "title": nul})):
        with pytest.raises(JsonRpcException) as caught:
            await daemon.request(method, params)
        assert caught.value.code == -32602 and caught.value.message.startswith("Invalid params: title: "), caught.value


async def test_a_second_main_session_is_invalid_params_naming_kind_or_session(start_daemon):
    # A user has one active main session (of an agent): a second was -32602 naming no field, in the store's words.
    daemon = await start_daemon()
    first = (await daemon.request("ollie/session/new", {"kind": "main"}))["session"]
    with pytest.raises(JsonRpcException) as caught:
        await daemon.request("ollie/session/new", {"kind": "main"})
    assert caught.value.code == -32602, caught.value
    assert caught.value.message == "Invalid params: kind: this user already has an active main session", caught.value
    assert (await daemon.request("ollie/state", {"session": first}))["kind"] == "main"
    # Nor does an archived one come back beside it: named by its `session`.
    await daemon.request("ollie/session/archive", {"session": first})
    await daemon.request("ollie/session/new", {"kind": "main"})
    with pytest.raises(JsonRpcException) as caught:
        await daemon.request("ollie/session/unarchive", {"session": first})
    assert caught.value.code == -32602, caught.value
    assert caught.value.message.startswith(f"Invalid params: session: session {first} cannot be unarchived"), caught.value


async def test_api_keys_in_the_init_env_serve_the_backend_and_never_reach_tool_code(start_daemon, llm, tmp_path):
    # initializationOptions.env (Neovim's `env` option) picks the backend and is the tools' extra env: an API key given
    # there reached every step's environment and a preTurn hook's, for a hostile model to print and send.
    import json

    from ollie.backend.settings import SPECS
    from ollie.testing import Reply
    from ollie.tools.execute.childenv import BACKEND_KEYS

    assert set(BACKEND_KEYS) == {v for s in SPECS.values() for v in (s.key_var, s.vendor_key_var) if v}
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "keyed.json").write_text(json.dumps({"prompt": "You are a test agent.",
                                                   "hooks": {"preTurn": "env | grep _KEY= || echo hook saw no keys"}}))
    env = {**llm.env(), "OLLIE_AGENTS_DIR": str(agents)}
    key = env.pop("OLLIE_OPENAI_KEY")  # the backend's key comes from the init env alone
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": "env | grep _KEY= || echo no keys"}]})),
               Reply.text("done"))
    daemon = await start_daemon(env=env, init_options={"agent": "keyed", "env": {
        "OLLIE_OPENAI_KEY": key, "OPENAI_API_KEY": "sk-vendor-secret", "ANTHROPIC_API_KEY": "sk-ant-secret",
        "MY_TOOL_VAR": "for the tools"}})
    assert (await daemon.request("ollie/submit", {"text": "go"}))["stop"] == "end"
    sent = json.dumps([r.body for r in llm.chat_requests])
    assert [secret for secret in (key, "sk-vendor-secret", "sk-ant-secret") if secret in sent] == []  # to the model
    assert llm.chat_requests[0].headers["authorization"] == f"Bearer {key}"
    assert "hook saw no keys" in json.dumps(llm.chat_requests[0].body)  # its output joins the prompt
    told = [m for m in llm.chat_requests[-1].body["messages"] if m["role"] == "tool"][-1]["content"]
    assert "no keys" in told, told
    out = await daemon.request("ollie/command", {"line": "!echo $MY_TOOL_VAR"})
    assert "for the tools" in out["output"]  # the rest of the init env still reaches commands
