"""The `<editor-context>` block a front end puts before a prompt: the daemon's editor context, ACP's attached files.

One shape for both, so the agent prompts that explain it apply to every front end.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlparse

CLOSE = "</editor-context>"
# The longest text copied into a prompt; beyond it the text is cut and marked.
MAX_CONTEXT_CHARS = 20_000


# A slash command line: `/word` (or an MCP prompt's `/mcp:<server>:<prompt>`), then its argument.
SLASH = re.compile(r"/(?P<name>[A-Za-z][\w:-]*)(?:\s+(?P<arg>.*))?", re.DOTALL)


def is_command(line: str) -> bool:
    """True for `!cmd` and `/word ...` lines, which get no editor context (a path like `/usr/bin/x ...` is a prompt)."""
    text = line.strip()
    return text.startswith("!") or SLASH.fullmatch(text) is not None


def display_path(uri: str, cwd: Path) -> str:
    """A file URI as a path relative to `cwd` when inside it, else absolute; other URIs unchanged."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return uri
    path = unquote(parsed.path)
    rel = os.path.relpath(path, cwd)
    return path if rel.startswith("..") else rel


def context_block(header: str, *, notes: Sequence[str] = (), caption: str = "", body: str | None = None,
                  fence: str = "") -> str:
    """`<editor-context>`: the header, `notes`, then `body` (cut at MAX_CONTEXT_CHARS) fenced under `caption`."""
    lines = [header, *notes]
    if body is not None:
        if len(body) > MAX_CONTEXT_CHARS:
            body = body[:MAX_CONTEXT_CHARS] + f"\n[... cut: {len(body) - MAX_CONTEXT_CHARS} more characters]"
        lines += [caption, f"```{fence}", body, "```"]
    # A file's (or a path's) own `</editor-context>` would end the block: what follows it would stand where only the
    # user's words do, for the model and for every reader that splits a prompt at its first close (the chats).
    inner = "\n".join(lines).replace(CLOSE, "<\\/editor-context>")
    return f"<editor-context>\n{inner}\n{CLOSE}"
