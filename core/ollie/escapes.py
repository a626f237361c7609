"""Text from the model shown to the user as exactly what it is: each control, escape and bidi override as a
visible escape (`\\x1b`, `\\r`, `\\u202e`), so what is approved is what is shown, in a terminal or an editor."""

from __future__ import annotations

_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\x1b": "\\x1b", "\x00": "\\x00"}


def _escape(char: str) -> str:
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escaped(text: str, keep: str = "\n\t") -> str:
    """`text` with each non-printable character but those in `keep` as an escape (`\\x1b`, `\\r`, `\\u202e`)."""
    return "".join(c if c.isprintable() or c in keep else _escape(c) for c in text)


def one_name(text: str, most: int = 100) -> str:
    """`text`, a name another chose (a server's model id), on one line: escaped, cut after `most` characters."""
    return escaped(text[:most], keep="") + "..." * (len(text) > most)


def clipped(text: str, most: int) -> str:
    """`text`, cut to `most` characters (the last an ellipsis) when it is longer."""
    return text if len(text) <= most else text[: most - 1] + "…"


def has_controls(text: str) -> bool:
    """Whether `escaped(text)` differs from `text` (the user should be told that escapes are shown)."""
    return any(not (c.isprintable() or c in "\n\t") for c in text)


def unlinked(text: str) -> str:
    """`text` with no markdown link in it: an editor's notification makes `[x](command:...)` a link that runs an
    editor command at a click (VS Code's do); a space breaks each `](`."""
    return text.replace("](", "] (")
