"""advanced.ldd: grant read+execute on a program and the shared libraries `ldd` lists for it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
from collections.abc import Mapping
from pathlib import Path

from ollie import programs
from ollie.sandbox import landlock

# A library ld.so found: "\tname => /path (0x...)", or "\t/path (0x...)" for the loader. The names are the
# program's (a step may have built it): one holding "\n\tz => /home/u/.ssh (0x1)" prints a line of that form.
_LIBRARY = re.compile(r"\t(?:\S+ => )?(/\S+) \(0x[0-9a-f]+\)")
_cache: dict[str, list[str]] = {}
# What marks a work tree: git's, and the other VCSs' (a project another daemon may be working in).
_WORK_TREE = (".git", ".hg", ".jj", ".svn", ".bzr", "_darcs", ".pijul", ".fslckout", "_FOSSIL_")
# Dirs above a cwd that are no project: where PATH's system programs live, and what holds the users' homes.
_NO_PROJECT = frozenset({"/", "/usr", "/usr/local", "/opt", "/srv", "/var", "/home", "/mnt", "/media", "/nix", "/snap"})
LIMIT_S = 10.0  # ld.so lists a program's libraries in milliseconds; a FIFO swapped in would hold it for ever


def _kill(proc: asyncio.subprocess.Process) -> None:
    """Kill ldd (a script) and the ld.so it ran, when it is still running (a timeout, the step's cancel)."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


async def _started(ldd: str, program: str) -> asyncio.subprocess.Process:
    """`ldd program` started in a session of its own; a cancel while it starts still kills its whole group (asyncio
    would kill the script alone, leaving the ld.so it may have started)."""
    starting = asyncio.ensure_future(asyncio.create_subprocess_exec(
        ldd, program, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, start_new_session=True))
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        starting.add_done_callback(lambda done: done.cancelled() or done.exception() or _kill(done.result()))
        raise


async def _ldd(program: str) -> list[str]:
    if program not in _cache:
        try:
            ldd: str | None = programs.program("ldd")  # run unsandboxed: never one found on a writable PATH entry
        except programs.ProgramNotFound:
            ldd = None
        libraries: list[str] = []
        if ldd:
            proc = await _started(ldd, program)
            try:
                async with asyncio.timeout(LIMIT_S):
                    out, _ = await proc.communicate()
            except TimeoutError:
                return []  # nothing granted, nothing kept: the next step asks again
            finally:
                _kill(proc)
            found = (_LIBRARY.fullmatch(line) for line in out.decode(errors="replace").splitlines())
            # So only a shared object counts, never a directory or any other file a forged line names.
            libraries = [m[1] for m in found if m and programs.starts_with(m[1], b"\x7fELF")]
        _cache[program] = libraries
    return _cache[program]


def _planted(path: str, workspace: Path) -> bool:
    """Whether absolute path `path`, or the link it may be, lies where a step (or the workspace, or a project's
    environment or work tree, or a dir above the session's cwd, marked or not: a `.venv/bin` or `bin` there that
    another session or daemon writes) may have put it."""
    top = _project_top(Path(os.path.realpath(workspace)))
    return any(programs.step_may_write(p, workspace) or _in_project(real := os.path.realpath(p))
               or (top is not None and Path(real).is_relative_to(top)) for p in (os.path.dirname(path), path))


def _project_top(cwd: Path) -> Path | None:
    """The highest dir above real path `cwd` that may be a project's with no VCS mark (a `bin` of it on PATH, as
    direnv's `PATH_add bin` puts it, is another daemon's to write when that one works higher up): none that holds
    $HOME or is the system's (`_NO_PROJECT`)."""
    home, top = Path(os.path.realpath(os.path.expanduser("~"))), None
    for above in cwd.parents:
        if str(above) in _NO_PROJECT or home.is_relative_to(above):
            break
        top = above
    return top


def _in_project(real: str) -> bool:
    """Whether real path `real` lies in a project's environment or a work tree (a `.git`, or another VCS's mark,
    above it): another daemon's steps in that project, which this one knows nothing of, may write any of it. A home
    that is a work tree (a dotfiles repo) marks none of its hidden entries (`~/.local/bin`, `~/.cargo/bin`): no
    step is ever granted a root holding $HOME (`protect`), and no project lives there."""
    home, path = Path(os.path.realpath(os.path.expanduser("~"))), Path(real)
    hidden = path.is_relative_to(home) and path != home and path.relative_to(home).parts[0].startswith(".")
    marked = (d for d in path.parents if not (hidden and home.is_relative_to(d)))
    return programs.in_project_env(real) or any(os.path.lexists(d / mark) for d in marked for mark in _WORK_TREE)


def _program(command: str, path: str | None, workspace: Path) -> str | None:
    """The real path of `command` on `path`, unless it is not found or is found where a step may have put it."""
    found = shutil.which(command, path=path) or ""  # relative: from the step's cwd, a step's to write
    return os.path.realpath(found) if os.path.isabs(found) and not _planted(found, workspace) else None


async def library_rules(command: str, env: Mapping[str, str], workspace: Path) -> list[tuple[str, int]]:
    """Rules for `command` (looked up on env's PATH) and its libraries, by real path; empty when it is not found, or is
    found where a step (or the workspace) may have put it or a link to it: ldd has ld.so load the program's own
    DT_AUDIT library, and a planted link would have any program of the user's granted (a script with a token)."""
    # In a thread, as every walk of a path a step may have made: a hung mount, or 2,000 levels, would hold the loop.
    found = await asyncio.to_thread(_program, command, env.get("PATH"), workspace)
    if found is None:
        return []
    access = landlock.READ | landlock.FS_EXECUTE
    listed = await _ldd(found)
    # Granted by real path, none a step may swap a link into: a rule is opened by name.
    libraries = await asyncio.to_thread(lambda: [os.path.realpath(lib) for lib in listed if not _planted(lib, workspace)])
    return [(path, access) for path in [found, *libraries]]
