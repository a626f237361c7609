"""advanced.ldd: grant read+execute on a program and the shared libraries `ldd` lists for it."""

from __future__ import annotations

import asyncio
import re
import shutil
from collections.abc import Mapping

from ollie import programs
from ollie.sandbox import landlock

_LIBRARY = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x[0-9a-f]+\)")
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
            libraries = _LIBRARY.findall(out.decode(errors="replace"))
        _cache[program] = libraries
    return _cache[program]


async def library_rules(command: str, env: Mapping[str, str]) -> list[tuple[str, int]]:
    """Rules for `command` (looked up on env's PATH) and its libraries; empty when it is not found."""
    program = shutil.which(command, path=env.get("PATH"))
    if program is None:
        return []
    access = landlock.READ | landlock.FS_EXECUTE
    return [(path, access) for path in [program, *await _ldd(program)]]
