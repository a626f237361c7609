"""A stdio MCP server that starts and lists its one tool, then never answers a call or resource read (nor its cancel):
a hung server.

Each call or read it got is appended to `calls` in its HOME, each cancel to `cancels`, so a test sees what reached it.
With `deaf` it answers nothing at all (not even a ping) once a call came: a server stuck for good.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HOME = Path(os.environ.get("HOME", "/nonexistent"))
DEAF = "deaf" in sys.argv[1:]
TOOL = {"name": "wait", "description": "Never answers.", "inputSchema": {"type": "object", "properties": {}}}


def answer(request: dict, result: dict) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}) + "\n")
    sys.stdout.flush()


with (HOME / "starts").open("a") as starts:  # a restart shows as a second line
    starts.write(f"{os.urandom(8).hex()}\n")
called = False
for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    if method == "initialize":
        answer(message, {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                         "serverInfo": {"name": "hung", "version": "1"}})
    elif method == "tools/list":
        answer(message, {"tools": [TOOL]})
    elif method in ("tools/call", "resources/read"):
        called = True
        with (HOME / "calls").open("a") as calls:
            calls.write(line)
    elif method == "notifications/cancelled":
        with (HOME / "cancels").open("a") as cancels:
            cancels.write(line)
    elif "id" in message and not (DEAF and called):
        answer(message, {})
