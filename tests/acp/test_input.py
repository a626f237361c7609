"""Hostile lines on `ollie acp`'s stdin: each is answered with a JSON-RPC error, and the agent serves on."""

from __future__ import annotations

import json
import subprocess

from .conftest import AGENT_COMMAND, child_env

INITIALIZE = {"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": {"protocolVersion": 1}}


def test_malformed_lines_get_errors_and_a_request_after_them_is_answered(tmp_path):
    lines = [
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize"',  # cut short
        b'{"jsonrpc": "2.0", "method": "x", "params": "\xff"}',  # not UTF-8
        b"[" * 100_000 + b"]" * 100_000,  # deeper than the parser goes
        b"42",
        json.dumps([{"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {}}]).encode(),  # a batch
        b"",
        json.dumps(INITIALIZE).encode(),
    ]
    out = subprocess.run(AGENT_COMMAND, input=b"\n".join(lines) + b"\n", capture_output=True, timeout=120,
                         env=child_env(), cwd=tmp_path)
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    answers = [json.loads(line) for line in out.stdout.splitlines()]
    errors = [(a["id"], a["error"]["code"]) for a in answers if "error" in a]
    assert errors == [(None, -32700), (None, -32700), (None, -32700), (None, -32600), (7, -32600)], answers
    assert any(a.get("id") == 9 and "result" in a for a in answers), answers


def test_params_that_fail_the_schema_are_answered_naming_each_field_without_echoing_it(tmp_path):
    # The SDK's answer held pydantic's errors, each bad value whole: a megabyte sent was a megabyte sent back.
    lines = [
        INITIALIZE,
        {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": "s", "prompt": "x" * 1_000_000}},
        {"jsonrpc": "2.0", "id": 3, "method": "session/new", "params": {}},
    ]
    out = subprocess.run(AGENT_COMMAND, input=b"".join(json.dumps(line).encode() + b"\n" for line in lines),
                         capture_output=True, timeout=120, env=child_env(), cwd=tmp_path)
    errors = {a["id"]: a["error"] for a in map(json.loads, out.stdout.splitlines()) if "error" in a}
    assert errors == {2: {"code": -32602, "message": "Invalid params: prompt: Input should be a valid list",
                          "data": {"prompt": "Input should be a valid list"}},
                      3: {"code": -32602, "message": "Invalid params: cwd: Field required; mcpServers: Field required",
                          "data": {"cwd": "Field required", "mcpServers": "Field required"}}}, errors


def test_a_malformed_mcp_server_entry_is_invalid_params_naming_it_not_dropped(tmp_path):
    # The SDK dropped an entry that failed its schema without a word: the session opened without the user's server.
    servers = [{"name": "github", "command": "gh-mcp"},  # no args, no env
               {"type": "http", "name": "docs", "headers": []},  # no url
               {"type": "websocket", "name": "ws", "url": "ws://127.0.0.1:1"}]
    lines = [INITIALIZE,
             {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(tmp_path), "mcpServers": servers}},
             {"jsonrpc": "2.0", "id": 3, "method": "session/load",
              "params": {"cwd": str(tmp_path), "sessionId": "s", "mcpServers": [servers[1]]}},
             # What README says of the method ACP removed: the model is a config option.
             {"jsonrpc": "2.0", "id": 5, "method": "session/set_model", "params": {"sessionId": "s", "modelId": "m"}},
             {**INITIALIZE, "id": 4}]
    out = subprocess.run(AGENT_COMMAND, input=b"".join(json.dumps(line).encode() + b"\n" for line in lines),
                         capture_output=True, timeout=120, env=child_env(), cwd=tmp_path)
    answers = {a["id"]: a for a in map(json.loads, out.stdout.splitlines()) if "id" in a}
    assert answers[2]["error"]["message"].startswith("Invalid params: mcpServers[0]: server 'github': "), answers
    assert answers[2]["error"] | {"message": ""} == {"code": -32602, "message": "", "data": {
        "mcpServers[0]": "server 'github': args: Field required; env: Field required",
        "mcpServers[1]": "server 'docs': url: Field required",
        "mcpServers[2]": "server 'ws': type 'websocket' is not one of stdio, http, sse, acp "
                         "(command: Field required; args: Field required; env: Field required)"}}, answers
    assert answers[3]["error"]["data"] == {"mcpServers[0]": "server 'docs': url: Field required"}, answers
    assert answers[5]["error"]["code"] == -32601, answers
    assert "result" in answers[4], answers  # and the agent serves on


def test_a_server_entry_whose_type_is_not_a_string_is_invalid_params_and_the_agent_serves_on(tmp_path):
    # `"type": []` raised TypeError (unhashable) in the check of the entries, out of the reader: the agent exited, the
    # request and every one after it unanswered.
    servers = [{"type": [], "name": "a", "command": "x"},
               {"type": {"http": 1}, "name": "b", "url": "http://127.0.0.1:1", "headers": []}]
    lines = [INITIALIZE,
             {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(tmp_path), "mcpServers": servers}},
             {**INITIALIZE, "id": 4}]
    out = subprocess.run(AGENT_COMMAND, input=b"".join(json.dumps(line).encode() + b"\n" for line in lines),
                         capture_output=True, timeout=120, env=child_env(), cwd=tmp_path)
    answers = {a["id"]: a for a in map(json.loads, out.stdout.splitlines()) if "id" in a}
    assert answers[2]["error"]["code"] == -32602, (answers, out.stderr.decode()[-2000:])
    data = answers[2]["error"]["data"]
    assert data["mcpServers[0]"].startswith("server 'a': type of a list is not one of stdio, http, sse, acp ("), data
    assert data["mcpServers[1]"].startswith("server 'b': type of a dict is not one of stdio, http, sse, acp ("), data
    assert "result" in answers[4], answers  # and the agent serves on


def test_the_answer_to_malformed_server_entries_is_bounded_whatever_the_client_sent(tmp_path):
    # Every malformed entry was named, each with what the client sent in it: thousands of entries (a megabyte's key in
    # each) were as many lines of answer. At most 5 are named, each cut short, and the answer says there are more.
    key = "k" * 1_000_000
    servers = [{"name": key, key: 1, "command": "x", "env": [{key: "v"}]}] + [{"name": "n"}] * 2000
    lines = [INITIALIZE,
             {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(tmp_path), "mcpServers": servers}},
             {**INITIALIZE, "id": 4}]
    out = subprocess.run(AGENT_COMMAND, input=b"".join(json.dumps(line).encode() + b"\n" for line in lines),
                         capture_output=True, timeout=120, env=child_env(), cwd=tmp_path)
    answers = {a["id"]: (len(line), a) for line in out.stdout.splitlines() if "id" in (a := json.loads(line))}
    size, answer = answers[2]
    assert answer["error"]["code"] == -32602 and size < 2000, (size, str(answer)[:2000])
    data = answer["error"]["data"]
    assert list(data) == [f"mcpServers[{i}]" for i in range(5)] + ["mcpServers"], data
    assert data["mcpServers[0]"] == f"server {'k' * 80!r}: args: Field required; env.0.name: Field required; " \
                                    "env.0.value: Field required", data
    assert data["mcpServers"] == "more entries do not fit ACP's schema (the first 5 are named)", data
    assert "result" in answers[4][1], answers[4]  # and the agent serves on
