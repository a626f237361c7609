"""The file tools' arguments, parsed once by the daemon and handed to the tool in one unambiguous form.

The daemon (editor buffers, diff previews, ACP `fs/*`) and the tool process both read a file tool's
arguments; two parsers can disagree (`--offset 5 secret`) and `a/../b` is `b` lexically but not to the
kernel. So the daemon parses them with the tool's own grammar and rewrites them as
`[options] [--] PATH [rest]` with PATH normalised: every reader sees the same path.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any

FILE_TOOLS = frozenset({"file_read", "file_write", "file_edit"})


class FileArgsError(ValueError):
    """The arguments do not fit the file tool's grammar."""


@functools.cache
def _parser_class() -> type[Any]:
    """An ArgumentParser that raises instead of exiting (argparse is imported at the first file call, not at start)."""
    import argparse

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> None:  # type: ignore[override]  # raise, never exit the daemon
            raise FileArgsError(f"{self.prog}: {message}")

        def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]  # --help
            raise FileArgsError(f"{self.prog}: {(message or 'no help here').strip()}")

    return _Parser


@functools.cache  # built once per tool: building one (argparse's gettext look-ups) cost 1 ms, 2 s a 2,000-call batch
def _grammar(tool: str) -> Any:
    """The same arguments as tools/<tool> declares."""
    p = _parser_class()(prog=tool, add_help=False)
    p.add_argument("path")
    if tool == "file_read":
        p.add_argument("--offset", type=int, default=1)
        p.add_argument("--limit", type=int, default=2000)
    elif tool == "file_write":
        p.add_argument("content")
    else:
        p.add_argument("old")
        p.add_argument("new")
        p.add_argument("--all", action="store_true")
    return p


@dataclass(eq=False, repr=False)
class FileCall:
    """A file tool's call as the daemon understood it."""

    tool: str
    path: str
    content: str | None = None
    old: str | None = None
    new: str | None = None
    all: bool = False
    offset: int = 1
    limit: int = 2000

    def argv(self) -> tuple[str, ...]:
        """The arguments the tool process gets: options first (those not at their default), then the
        positionals, after `--` when one starts with `-`: PATH cannot be read as anything else."""
        options: list[str] = []
        if self.tool == "file_read":
            positionals = [self.path]
            options += ["--offset", str(self.offset)] if self.offset != 1 else []
            options += ["--limit", str(self.limit)] if self.limit != 2000 else []
        elif self.tool == "file_write":
            positionals = [self.path, self.content or ""]
        else:
            positionals = [self.path, self.old or "", self.new or ""]
            options += ["--all"] if self.all else []
        dash = ["--"] if any(p.startswith("-") for p in positionals) else []
        return (*options, *dash, *positionals)


def parse_file_call(tool: str, args: tuple[str, ...]) -> FileCall:
    """Parse `args` of file tool `tool` as the tool would; FileArgsError naming the problem."""
    if tool not in FILE_TOOLS:
        raise FileArgsError(f"{tool} is not a file tool")
    ns = _grammar(tool).parse_args(list(args))
    if not ns.path or "\0" in ns.path:
        raise FileArgsError(f"{ns.path!r}: not a path")
    # `~` expanded and `.`/`..`/`//` folded lexically: the one spelling every reader gets.
    path = os.path.normpath(os.path.expanduser(ns.path))
    path = "/" + path.lstrip("/") if path.startswith("//") else path
    if tool == "file_read":
        return FileCall(tool, path, offset=ns.offset, limit=ns.limit)
    if tool == "file_write":
        return FileCall(tool, path, content=ns.content)
    return FileCall(tool, path, old=ns.old, new=ns.new, all=ns.all)
