"""The `<editor-context>` block a front end puts before a prompt: the daemon's editor context, ACP's attached files.

One shape for both, so the agent prompts that explain it apply to every front end.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlparse

from ollie.escapes import escaped

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
    """A file URI as a path relative to `cwd` when inside it, else absolute; other URIs unchanged. Escaped: a file's
    name (the workspace's) with a line break would add lines of its own to the header, or to the user's words
    where a mention stands."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return escaped(uri, keep="")
    path = unquote(parsed.path)
    rel = os.path.relpath(path, cwd)
    return escaped(path if rel.startswith("..") else rel, keep="")


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


# One saved block, at a line's start (injects the daemon joined have each one's blocks before its own line):
# `File: <path> (<language>)`, then what it shows. Linear in a hostile prompt (a teammate's, a pasted file's): a
# whitespace run before it is looked at from each of its lines (so, a few characters), no parens in the language.
_BLOCK = re.compile(r"^\s{0,16}<editor-context>\n?(.*?)</editor-context>", re.DOTALL | re.MULTILINE)
_FILE = re.compile(r"^File: (.+?)(?: \([^()\n]*\))?$", re.MULTILINE)
_RESOURCE = re.compile(r"^MCP resource: (\S+) \(server ([^)\n]+)\)$", re.MULTILINE)
_LINES = re.compile(r"^(?:Showing|Location:) lines? (\d+)(?:-(\d+))?:?$", re.MULTILINE)


def _label(block: re.Match[str]) -> str:
    """A block's compact label: `a.py:3-7`, `a.py:4`, `a.py (selection)`, `server: uri`."""
    body = block.group(1).split("```", 1)[0]  # the header lines only: the code may say anything
    file = _FILE.search(body)
    path = file.group(1) if file else "?"
    if not file and (resource := _RESOURCE.search(body)):
        return f"{resource.group(2)}: {resource.group(1)}"
    if lines := _LINES.search(body):
        first, last = lines.group(1), lines.group(2) or lines.group(1)
        return f"{path}:{first}" if first == last else f"{path}:{first}-{last}"
    return f"{path} (selection)" if "\nSelected text:" in body else path


def _closed(prompt: str) -> int:
    """Where the prompt's last block ends: no open after it is closed, and each would be scanned to the end."""
    return end + len(CLOSE) if (end := prompt.rfind(CLOSE)) >= 0 else 0


def context_labels(prompt: str) -> list[str]:
    """One compact label per editor-context block of a saved prompt (`_label`)."""
    return [_label(match) for match in _BLOCK.finditer(prompt, 0, _closed(prompt))]


def summary(prompt: str) -> str:
    """A saved or queued prompt as a user reads it: each editor-context block as its `[label]`, where it stands (none
    where the user's words name it `@label`, as an ACP prompt's mentions do)."""
    blocks, rest = prompt[:(cut := _closed(prompt))], prompt[cut:]
    words = _BLOCK.sub("", blocks) + rest

    def label(match: re.Match[str]) -> str:
        return "" if f"@{(name := _label(match))}" in words else f"[{name}]"

    return re.sub(r"\]\s*\n\n", "] ", _BLOCK.sub(label, blocks) + rest).strip()
