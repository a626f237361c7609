"""advanced.ldd: grant read+execute on a program and the shared libraries `ldd` lists for it."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

from ollie import programs
from ollie.sandbox import landlock

# A library ld.so found: "\tname => /path (0x...)", or "\t/path (0x...)" for the loader. The names are the
# program's (a step may have built it): one holding "\n\tz => /home/u/.ssh (0x1)" prints a line of that form.
_LIBRARY = re.compile(r"\t(?:\S+ => )?(/\S+) \(0x[0-9a-f]+\)")
_cache: dict[str, list[str]] = {}


async def _ldd(program: str) -> list[str]:
    if program not in _cache:
        try:
            ldd: str | None = programs.program("ldd")  # run unsandboxed: never one found on a writable PATH entry
        except programs.ProgramNotFound:
            ldd = None
        libraries: list[str] = []
        if ldd:
            proc = await asyncio.create_subprocess_exec(ldd, program, stdout=asyncio.subprocess.PIPE,
                                                        stderr=asyncio.subprocess.DEVNULL, start_new_session=True)
            out, _ = await proc.communicate()
            found = (_LIBRARY.fullmatch(line) for line in out.decode(errors="replace").splitlines())
            # So only a shared object counts, never a directory or any other file a forged line names.
            libraries = [m[1] for m in found if m and programs.starts_with(m[1], b"\x7fELF")]
        _cache[program] = libraries
    return _cache[program]


async def library_rules(command: str, env: Mapping[str, str], workspace: Path) -> list[tuple[str, int]]:
    """Rules for `command` (looked up on env's PATH) and its libraries, by real path; empty when it is not found or
    lies where a step (or the workspace) may have put it: ldd has ld.so load the program's own DT_AUDIT library."""
    found = shutil.which(command, path=env.get("PATH"))
    program = os.path.realpath(found) if found else None
    if program is None or programs.step_may_write(program, workspace):
        return []
    access = landlock.READ | landlock.FS_EXECUTE
    # A library where a step may write is no grant: a rule opened by name there would follow a link swapped in.
    libraries = [real for real in map(os.path.realpath, await _ldd(program))
                 if not programs.step_may_write(real, workspace)]
    return [(path, access) for path in [program, *libraries]]
