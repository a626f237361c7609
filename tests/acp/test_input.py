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
