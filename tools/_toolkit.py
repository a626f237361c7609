"""Shared helpers for the bundled Python tool scripts (stdlib only; never imports ollie).

The bundled scripts run in the fork server's pre-imported interpreter (ollie/sandbox/pyrun.py),
started with -S: they may import the standard library and this dir's helpers, nothing else.
"""

from __future__ import annotations

import argparse
import errno
import functools
import os
import re
import stat
import sys
from pathlib import Path
from typing import NoReturn

# A sandboxed call's descriptor (a sealed memfd ollie makes) of its policy's paths, JSON {"read": [...], "write":
# [...]}; unset when the call runs unsandboxed (elevated).
PATHS_ENV = "OLLIE_SANDBOX_PATHS"
# How much of the policy's paths a refusal names: a grant split into thousands of entries flooded the result.
SHOWN_CHARS = 2000
# Set by ollie when PATH is open in the editor: the file tools read and write this copy of its
# unsaved text instead (ollie applies the result to the editor's buffer); PATH is still checked.
EDITOR_COPY_ENV = "OLLIE_EDITOR_COPY"
# Set by ollie before it asks the user to approve an edit: the writer checks PATH as its write would (`writable_path`)
# and stops there, writing nothing, so an edit no answer could let through is refused without a question.
WRITE_CHECK_ENV = "OLLIE_WRITE_CHECK"


class ToolError(Exception):
    """A failure the tool reports on stderr with exit status 1."""


def run(main) -> None:
    """Run `main()`, turning ToolError into a one-line message and exit status 1."""
    name = Path(sys.argv[0]).stem
    try:
        main()
    except ToolError as exc:
        print(f"{name}: {named(str(exc))}", file=sys.stderr)
        sys.exit(1)
    except BrokenPipeError:
        sys.exit(0)


def named(text: str) -> str:
    """`text` (a file's name, a message naming one) with each control and bidi override an escape (`\\n`, `\\u202e`):
    a name's line break would forge a line of ollie's, a U+202E draw the rest reversed."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        super().error(named(message))  # it quotes the model's arguments: a line break would forge a line of ours


def parser(description: str) -> argparse.ArgumentParser:
    """An argparse parser named after the running script."""
    return _Parser(prog=Path(sys.argv[0]).stem, description=description)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _allowed(resolved: Path, roots: list[str]) -> bool:
    path = str(resolved)
    # A root that is a prefix of the resolved path as written is its own realpath (every prefix of a resolved path
    # is resolved): the usual case, a file under the workspace, needs no lookup (resolving every root took ~100).
    if any(_under(path, root) for root in roots if os.path.isabs(root) and os.path.normpath(root) == root):
        return True
    return any(_under(path, os.path.realpath(root)) for root in roots)


@functools.cache
def policy_paths() -> dict[str, list[str]] | None:
    """The sandbox policy's {"read": [...], "write": [...]} paths (None: unsandboxed); no path at all when
    `$OLLIE_SANDBOX_PATHS` names anything but a sealed memfd of that JSON, so the check fails closed."""
    named = os.environ.get(PATHS_ENV)
    if named is None:
        return None
    import fcntl  # here, not at the top: only the path checks need them
    import json

    sealed = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
    try:
        fd = int(named)
        # Sealed, or anyone holding it may have changed it; read at offset 0, not at an offset a reader shares.
        if fcntl.fcntl(fd, fcntl.F_GET_SEALS) & sealed != sealed:
            raise ValueError("not sealed")
        data = os.pread(fd, os.fstat(fd).st_size, 0)
        paths = json.loads(data)
        lists = [paths["read"], paths["write"]]
        if all(isinstance(roots, list) and all(isinstance(root, str) for root in roots) for roots in lists):
            return {"read": lists[0], "write": lists[1]}
    except (OSError, ValueError, TypeError, KeyError, RecursionError):
        pass
    return {"read": [], "write": []}


def checked_path(raw: str, *, write: bool) -> Path:
    """`raw` resolved (symlinks too) against the cwd, refused when outside the sandbox policy's paths."""
    if not raw:
        raise ToolError("empty path")
    resolved = Path(os.path.realpath(os.path.expanduser(raw)))  # `~nosuchuser` stays relative
    paths = policy_paths()
    roots = None if paths is None else paths["write" if write else "read"]
    if roots is not None and not _allowed(resolved, roots):
        kind = "writable" if write else "readable"
        # The devices a step may write (/dev/null, /dev/tty...) are no place for a file: listing them hid the rest.
        listed, left = [root for root in roots if root and not root.startswith("/dev/")], SHOWN_CHARS
        for count, root in enumerate(listed):
            left -= len(root) + 2
            if left < 0 and count:
                listed[count:] = [f"and {len(listed) - count} more"]
                break
        shown = ", ".join(listed)
        readable = write and paths is not None and _allowed(resolved, paths["read"])
        # Readable but not writable: one of the policy's read-only paths (/etc, a workspace at $HOME...).
        raise ToolError(f"{raw}: {'read-only in the sandbox: ' if readable else ''}outside the sandbox's {kind} "
                        f"paths ({shown})")
    return resolved


def refuse_read_only(path: Path, shown: object) -> None:
    """ToolError when resolved `path` may not be written: a read-only file or, for a new one, a read-only directory
    it would be made in (`shown`: its name in errors).

    A read-only file is refused, as any editor or program opening it to write would be: the rename `write_atomic`
    makes would replace it (and make it the user's, when another user owns it) although its mode says it is not to
    be changed.
    """
    target = path
    while not os.path.lexists(target) and target != target.parent:
        target = target.parent  # a new file (and the dirs above it) is made in the nearest directory there is
    try:
        st = target.stat()
    except OSError:
        return  # the write itself says what is wrong
    new = target != path
    if new and os.access(target, os.W_OK) or not new and st.st_mode & 0o222 and os.access(target, os.W_OK):
        return
    try:
        mounted = bool(os.statvfs(target).f_flag & os.ST_RDONLY)
    except OSError:
        mounted = False
    what = "its directory is read-only" if new else "read-only"
    if mounted:  # the user's chmod cannot help: say whose rule it is
        raise ToolError(f"{shown}: {what} (a read-only mount: ollie's sandbox shows .git directories and everything "
                        f"outside its writable paths read-only), not {'created' if new else 'changed'}")
    raise ToolError(f"{shown}: {what} (no write permission), not {'created' if new else 'changed'}; the user can "
                    "make it writable if they want it changed")


def writable_path(raw: str) -> Path:
    """`raw` resolved for a write, as `checked_path` and `refuse_read_only` allow it; under OLLIE_WRITE_CHECK the
    tool ends here (exit 0), writing nothing."""
    path = checked_path(raw, write=True)
    refuse_read_only(path, raw)
    if os.environ.get(WRITE_CHECK_ENV):
        sys.exit(0)
    return path


def content_path(path: Path) -> Path:
    """Where `path`'s text is read and written: the editor's copy when ollie passed one, else `path`."""
    copy = os.environ.get(EDITOR_COPY_ENV)
    return Path(copy) if copy else path


def open_regular(path: Path, flags: int, shown: object) -> int:
    """A descriptor of regular file `path` opened with `flags` (`shown`: its name in errors); ToolError for anything
    else.

    Opened without blocking and checked on the open file: a FIFO planted in the workspace held the step until its
    timeout, a device (a link to /dev/zero) read until the step's memory limit.
    """
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, 0o666)  # (a mode for O_CREAT)
    except FileNotFoundError:
        raise ToolError(f"{shown}: no such file") from None
    except PermissionError:
        raise ToolError(f"{shown}: permission denied") from None
    except IsADirectoryError:  # opened to write
        raise ToolError(f"{shown}: is a directory") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and flags & os.O_NOFOLLOW:
            raise ToolError(f"{shown}: is a symlink; not followed") from None
        if exc.errno != errno.ENXIO:
            raise
        raise ToolError(f"{shown}: not a regular file (a FIFO with no reader); not written") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise ToolError(f"{shown}: is a directory (use file_glob to list it)")
        done = "not read" if flags & os.O_ACCMODE == os.O_RDONLY else "not written"
        raise ToolError(f"{shown}: not a regular file (a FIFO, device or socket); {done}")
    return fd


def read_bytes(path: Path, shown: object) -> bytes:
    """The bytes of regular file `path` (`shown`: its name in errors); ToolError for anything else."""
    with os.fdopen(open_regular(path, os.O_RDONLY, shown), "rb") as handle:
        return handle.read()


def read_text(path: Path, errors: str = "replace") -> str:
    """A file's text (invalid UTF-8 replaced, or with `errors="surrogateescape"` kept as it is to be written back);
    ToolError for missing files, dirs and what is no regular file."""
    path = content_path(path)
    return read_bytes(path, path).decode("utf-8", errors=errors)


# The line breaks editors (and LSP positions) count; str.splitlines also breaks at \f, \x1c-\x1e, \x85, U+2028/2029.
LINE_BREAK = re.compile(r"\r\n|\r|\n")


def editor_lines(text: str) -> list[str]:
    """`text` split into lines as editors number them (like str.splitlines, but only at \\n, \\r\\n and \\r)."""
    lines = LINE_BREAK.split(text)
    return lines[:-1] if lines[-1] == "" else lines


def write_atomic(path: Path, text: str, shown: object = None, errors: str = "strict") -> None:
    """Replace `path` with `text` in one rename (in place in a directory the user may not write), keeping an existing
    file's permissions; `shown`: its name in errors (default `path`); `errors`: how `text` is encoded to UTF-8. A
    read-only one is refused (`refuse_read_only`).
    """
    refuse_read_only(path, shown or path)
    path = content_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    import tempfile  # here, not at the top: only the writers need it, and its imports cost ~5 ms a start

    try:
        # Named as ollie's (`.ollie-`): the sweep after a kill (ollie.agent.leftovers) takes no other program's.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.ollie-", suffix=".tmp")
    except PermissionError:
        if mode is None or not path.is_file():
            raise
        # The user's file in a directory they may not write: no file can be made beside it to rename over it, so it
        # is written in place, as editors do (it was refused as "permission denied"). Only a regular file, checked on
        # the open file and truncated only then: one swapped for a FIFO since would wait for a reader.
        fd = open_regular(path, os.O_WRONLY, shown or path)
        with os.fdopen(fd, "w", encoding="utf-8", errors=errors, newline="") as handle:
            os.ftruncate(fd, 0)
            handle.write(text)
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors=errors, newline="") as handle:
            handle.write(text)
        if mode is not None:
            os.chmod(tmp, mode)
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def required_env(name: str) -> str:
    """The value of env var `name`; ToolError saying it is missing otherwise."""
    value = os.environ.get(name)
    if not value:
        raise ToolError(f"${name} is not set (this tool runs through ollie's call_tool)")
    return value


def memory_file() -> Path:
    """This project's store, which memory_remember appends to and memory_recall searches: one JSON object a line."""
    return Path(required_env("OLLIE_MEMORY_PATH")) / "memories.jsonl"
