"""ollie/listModels, ollie/listAgents, ollie/listCommands: the pickers' data as data, through the real daemon."""

from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

import pytest
from pygls.exceptions import JsonRpcException

from ollie.agent.commands import COMMANDS


async def test_list_models_gives_the_backends_models_and_the_current_one(shared_daemon, scripted_llm):
    llm = scripted_llm("openai", models={"scripted-model": 8192, "other-model": 4096})
    daemon = await shared_daemon(env={**llm.env(), "OLLIE_MODEL": "other-model"})
    result = await daemon.request("ollie/listModels", {})
    # `server`: the local server by the host and port of its URL, as its errors name it (a picker's title).
    assert result == {"backend": "local", "server": urlsplit(llm.url).netloc, "current": "other-model",
                      "models": ["scripted-model", "other-model"], "error": ""}


async def test_list_models_of_an_unreachable_backend_names_the_problem(shared_daemon, llm):
    with socket.socket() as sock:  # a port nobody listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    dead_url = llm.url.replace(urlsplit(llm.url).netloc, f"127.0.0.1:{port}")
    daemon = await shared_daemon(env={**llm.env(), "OLLIE_OPENAI_URL": dead_url})
    result = await daemon.request("ollie/listModels", {})
    assert result["models"] == [] and result["current"] == llm.model and result["error"]


async def test_list_agents_gives_names_descriptions_and_load_errors(shared_daemon, llm, tmp_path):
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "mine.json").write_text(json.dumps({"description": "my own agent"}))
    (agents / "broken.json").write_text("{not json")
    daemon = await shared_daemon(env={**llm.env(), "OLLIE_AGENTS_DIR": str(agents)})
    result = await daemon.request("ollie/listAgents", {})
    assert result["current"] == "default"
    by_name = {a["name"]: a for a in result["agents"]}
    assert {"default", "coding", "ask", "mine", "broken"} <= set(by_name)
    assert by_name["mine"] == {"name": "mine", "description": "my own agent", "error": ""}
    assert by_name["ask"]["description"].startswith("read-only")
    assert by_name["broken"]["error"] and by_name["broken"]["description"] == ""
    # The slash command's listing and the method agree (one source).
    listing = (await daemon.request("ollie/command", {"line": "/agents"}))["output"]
    assert all(name in listing for name in by_name)


async def test_list_commands_gives_every_slash_command_with_usage_and_destructiveness(shared_daemon, llm):
    daemon = await shared_daemon(env=llm.env())
    commands = (await daemon.request("ollie/listCommands", {}))["commands"]
    assert [c["name"] for c in commands] == [f"/{name}" for name in COMMANDS]
    by_name = {c["name"]: c for c in commands}
    assert by_name["/model"] == {"name": "/model", "args": "[name]", "description": "show or switch the model",
                                 "destructive": False}
    assert by_name["/compact"]["args"] == "" and by_name["/rn"]["args"] == "<name>"
    assert {c["name"] for c in commands if c["destructive"]} == {"/agent", "/clear", "/compact", "/kill", "/rewind"}
    help_text = (await daemon.request("ollie/command", {"line": "/help"}))["output"]
    words = " ".join(help_text.split())  # a long description is wrapped onto more lines
    assert all(c["description"] in words for c in commands)


async def test_listings_aimed_at_an_unknown_session_are_32001(shared_daemon, llm):
    daemon = await shared_daemon(env=llm.env())
    for method in ("ollie/listModels", "ollie/listAgents"):
        with pytest.raises(JsonRpcException) as caught:
            await daemon.request(method, {"session": "1700000000000000000-abcdef"})
        assert caught.value.code == -32001, method
