"""MCP prompts as slash commands: `/mcp:<server>:<prompt> [value | name=value ...]` becomes the prompt's text."""

from __future__ import annotations

import re
import shlex
from typing import Any

_LINE = re.compile(r"/mcp:(?P<server>[^:\s]+):(?P<prompt>\S+)(?:\s+(?P<args>.*))?", re.DOTALL)


def is_prompt_line(text: str) -> bool:
    """Whether `text` runs an MCP prompt."""
    return _LINE.fullmatch(text.strip()) is not None


async def expand(host: Any, text: str) -> str:
    """The text of the prompt `text` names; ValueError naming what is wrong (no such prompt, bad arguments)."""
    match = _LINE.fullmatch(text.strip())
    if match is None:
        raise ValueError("usage: /mcp:<server>:<prompt> [value | name=value ...]")
    server, prompt = match["server"], match["prompt"]
    owner = host.prompt_owner(server, prompt) if host is not None else None
    if owner is None:
        raise ValueError(f"no MCP prompt {prompt!r} on server {server!r} (see /mcp)")
    declared = next(p.arguments for p in owner.prompts if p.name == prompt)
    try:
        words = shlex.split(match["args"] or "")
    except ValueError as exc:
        raise ValueError(f"/mcp:{server}:{prompt}: {exc}") from None
    arguments = {key: value for key, eq, value in (w.partition("=") for w in words) if eq}
    positional = [w for w in words if "=" not in w]
    free = [a for a in declared if a not in arguments]
    if len(positional) > len(free):
        raise ValueError(f"/mcp:{server}:{prompt} takes {', '.join(declared) or 'no arguments'}")
    arguments.update(zip(free, positional, strict=False))
    return await owner.get_prompt(prompt, arguments)
