"""The `mcpServers` entries of a session request, checked one by one: the SDK drops an entry that fails its schema
without a word, and the user's server then never appears."""

from __future__ import annotations

from functools import cache
from typing import Any

from acp.schema import AcpMcpServer, HttpMcpServer, McpServerStdio, SseMcpServer
from pydantic import BaseModel, TypeAdapter, ValidationError

# The requests whose `mcpServers` the SDK reads with `skip_invalid_items` (acp/_deserialize.py).
SESSION_OPENS = {"session/new", "session/load", "session/resume", "session/fork"}
# At most this many entries are named, each with at most this many of its errors, their locations and messages cut
# to CUT characters: the answer repeats what the client sent (a field's name, its place) only so far.
MAX_NAMED, CUT = 5, 80
# An entry's schema by its `type`; without one it is a stdio server.
_BY_TYPE: dict[object, type[BaseModel]] = {"http": HttpMcpServer, "sse": SseMcpServer, "acp": AcpMcpServer}


def malformed_entries(message: dict[str, Any]) -> dict[str, str]:
    """`{"mcpServers[i]": why}` for each entry of a session request that the SDK would drop, the first MAX_NAMED of
    them (and `"mcpServers"` saying there are more; empty: none)."""
    params = message.get("params")
    if message.get("method") not in SESSION_OPENS or not isinstance(params, dict):
        return {}
    entries = params.get("mcpServers")
    if not isinstance(entries, list):
        return {}  # the SDK's own -32602 names the field
    bad = {}
    for i, entry in enumerate(entries):
        try:
            _entry().validate_python(entry)
        except ValidationError as exc:
            if len(bad) == MAX_NAMED:
                bad["mcpServers"] = f"more entries do not fit ACP's schema (the first {MAX_NAMED} are named)"
                break
            bad[f"mcpServers[{i}]"] = _why(entry, exc)
    return bad


@cache
def _entry() -> TypeAdapter[Any]:
    """The SDK's schema of one entry (built at the first session request, not at start)."""
    return TypeAdapter(HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio)


def _why(entry: object, exc: ValidationError) -> str:
    """What is wrong with an entry, naming the server and its fields, never echoing a value but its name's start:
    the errors of the schema its `type` names (the union's error lists every schema's, each under its name)."""
    if not isinstance(entry, dict):
        return "not an object"
    name = entry.get("name")
    server = f"server {name[:CUT]!r}: " if isinstance(name, str) else ""
    kind = entry.get("type", "stdio")
    # Not `_BY_TYPE.get(kind)`: a `"type": []` raised TypeError (unhashable) out of the reader, and the agent ended.
    model = _BY_TYPE.get(kind, McpServerStdio) if isinstance(kind, str) else McpServerStdio
    errors = [e for e in exc.errors() if e["loc"][:1] == (model.__name__,)][:MAX_NAMED]
    fields = "; ".join(f"{'.'.join(map(str, e['loc'][1:]))[:CUT] or 'entry'}: {e['msg'][:CUT]}" for e in errors)
    if model is McpServerStdio and kind != "stdio":
        named = repr(kind[:40]) if isinstance(kind, str) else f"of a {type(kind).__name__}"
        return f"{server}type {named} is not one of stdio, http, sse, acp ({fields})"
    return server + fields
