"""A workspace's own MCP config (`.mcp.json`, `.vscode/mcp.json`): hostile content, started only once the user allows.

Its servers are read through the chokepoint and listed as `needs approval`; `/mcp allow <name>`
starts one and remembers the exact entry for this workspace (a changed entry must be allowed again).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import attrs

from ollie import beneath, paths, regularfile
from ollie.errors import ConfigError
from ollie.mcp.config import ServerSpec, parse_servers

WORKSPACE_FILES = (".mcp.json", ".vscode/mcp.json")
MAX_CONFIG_BYTES = 256 * 1024
# What a workspace entry may say; anything else of it is ignored.
_KEYS = ("command", "args", "env", "cwd", "url", "headers", "type")


# VS Code's variables ollie fills in; one pass, so a folder path holding such text is never filled in again.
_FILLED = re.compile(r"\$\{(workspaceFolder|workspaceFolderBasename)\}")
# Where they are filled in: what runs here. Not a `url` or `headers`: the checkout's path (the user's name in it)
# would go to that host.
_FILLED_KEYS = ("command", "args", "env", "cwd")


def _filled(value: object, cwd: Path) -> object:
    """`value` with VS Code's `${workspaceFolder}` (and its basename's) filled in, in every string it holds.

    `.vscode/mcp.json` is VS Code's format, where a script beside the config is `${workspaceFolder}/server.py`.
    Nothing else is: `${env:NAME}` would hand a workspace's server the daemon's variables (its keys)."""
    if isinstance(value, str):
        return _FILLED.sub(lambda m: str(cwd) if m[1] == "workspaceFolder" else cwd.name, value)
    if isinstance(value, list):
        return [_filled(v, cwd) for v in value]
    if isinstance(value, dict):
        return {k: _filled(v, cwd) for k, v in value.items()}
    return value


def approvals_file() -> Path:
    """Where the allowed workspace servers are remembered (ollie's state dir, not the workspace)."""
    return paths.state_dir() / "mcp-allowed.json"


def read_workspace_servers(cwd: Path, warnings: list[str]) -> dict[str, ServerSpec]:
    """The servers the workspace's MCP files name (first file wins a name); blocking: run it in a thread."""
    found: dict[str, ServerSpec] = {}
    for rel in WORKSPACE_FILES:
        source = str(cwd / rel)
        try:
            data = json.loads(beneath.read_text_sync(cwd, rel, limit=MAX_CONFIG_BYTES))
        except FileNotFoundError:
            continue
        except (OSError, ValueError, RecursionError) as exc:  # (JSON nested 100,000 deep failed every prompt)
            warnings.append(f"MCP servers of {source} not read: {exc}")
            continue
        servers = data.get("mcpServers", data.get("servers", {})) if isinstance(data, dict) else None
        if not isinstance(servers, dict):
            warnings.append(f"MCP servers of {source} not read: expected \"mcpServers\" (or \"servers\")")
            continue
        for name, entry in servers.items():
            written = {k: v for k, v in entry.items() if k in _KEYS} if isinstance(entry, dict) else {}
            kept = {k: _filled(v, cwd) if k in _FILLED_KEYS else v for k, v in written.items()}
            # (Looked for in what was written, not what was filled in: the folder's own path may hold "${".)
            if any("${" in (_FILLED.sub("", json.dumps(v)) if k in _FILLED_KEYS else json.dumps(v))
                   for k, v in written.items()):
                warnings.append(f"MCP server {name!r} of {source} uses a ${{...}} variable ollie does not fill in "
                                "(only ${workspaceFolder}, and not in a url or headers): it runs with the text as "
                                "written")
            try:
                specs = parse_servers({"mcpServers": {name: kept if isinstance(entry, dict) else entry}}, source)
            except ConfigError as exc:
                warnings.append(f"MCP server not read: {exc}")
                continue
            home = f"workspace/{hashlib.sha256(os.fsencode(cwd)).hexdigest()[:16]}/{name}"
            for key, spec in specs.items():
                found.setdefault(key, attrs.evolve(spec, home=home))
    return found


def approval_key(cwd: Path, spec: ServerSpec) -> str:
    """What an approval covers: this workspace, this name, this exact entry."""
    entry = [str(cwd), spec.name, spec.command, list(spec.args), dict(spec.env), spec.cwd, spec.url,
             dict(spec.headers), *(["sse"] if spec.sse else [])]
    return hashlib.sha256(json.dumps(entry, sort_keys=True).encode()).hexdigest()


def allowed_keys() -> set[str]:
    """The approvals remembered so far; blocking."""
    try:
        data = json.loads(regularfile.read_config_sync(approvals_file()))
    except (OSError, ValueError):
        return set()
    return {k for k in data if isinstance(k, str)} if isinstance(data, list) else set()


def remember(key: str) -> None:
    """Remember one approval (the file replaced atomically); blocking."""
    file = approvals_file()
    file.parent.mkdir(parents=True, exist_ok=True)
    beneath.write_bytes_sync(file.parent, file.name, json.dumps(sorted(allowed_keys() | {key})).encode(), 0o600)
