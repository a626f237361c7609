"""A tool child's env and the session paths it names (plan file, memory dir): light, for prompts and commands."""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path

from ollie import paths

# The bundled file tools' per-call switches (tools/_toolkit.py reads them): work on a copy of an editor's text
# (editordocs); check the write and do not make it (writecheck).
EDITOR_COPY_ENV = "OLLIE_EDITOR_COPY"
WRITE_CHECK_ENV = "OLLIE_WRITE_CHECK"

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
# The API keys ollie's backends read (ollie.backend.settings.SPECS' key_var and vendor_key_var; a test keeps them so).
BACKEND_KEYS = ("OLLIE_OPENAI_KEY", "OLLIE_ANTHROPIC_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY")


def plan_file(session_id: str) -> Path:
    """The session's plan file (a markdown checklist the task_* tools edit and the loop reads)."""
    return paths.sessions_dir() / "s" / session_id / "plan"


def memory_root() -> Path:
    """The dir of every project's notes (what sandbox policies grant as `{OLLIE_DATA_PATH}/memory`)."""
    return paths.data_dir() / "memory"


def memory_dir(cwd: Path) -> Path:
    """Where memory_remember / memory_recall keep the notes of the project at `cwd`: one dir per workspace root."""
    try:
        info = os.stat(cwd)
    except OSError:  # no such dir (yet): nothing to key the cache by
        return memory_root() / _notes_name(cwd)
    return memory_root() / _notes_name_of(cwd, info.st_dev, info.st_ino)


def _notes_name(cwd: Path) -> str:
    resolved = cwd.resolve()
    digest = hashlib.sha256(str(resolved).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9._-]", "_", resolved.name)[:40] or "root"
    return f"{name}-{digest}"


@functools.lru_cache(maxsize=64)
def _notes_name_of(cwd: Path, dev: int, ino: int) -> str:
    # Keyed by the dir `cwd` names now, not resolved at each ask (~30 us, three per call): a symlink on the
    # way re-pointed (or a relative `cwd` after a chdir) names another dir, so another key.
    return _notes_name(cwd)


def child_env(
    *,
    session_id: str,
    cwd: Path,
    session_env: Mapping[str, str],
    tmp_dir: Path | None = None,
) -> dict[str, str]:
    """A clean env for tool code: PATH, HOME, LANG, TMPDIR, TERM, the session's env and OLLIE_* facts.

    TMPDIR is the session's private `tmp_dir` (it wins over the session env: a
    shared /tmp would open other sessions' files to this one's code).
    """
    env = {
        "PATH": os.environ.get("PATH") or DEFAULT_PATH,
        "HOME": os.environ.get("HOME") or str(Path.home()),
        "LANG": os.environ.get("LANG") or "C.UTF-8",
        "TMPDIR": os.environ.get("TMPDIR") or "/tmp",
        "TERM": "dumb",
    }
    env.update(session_env)
    # The file tools' per-call switches (a copy of an editor's text; check, do not write) are set by ollie for one
    # child only: from the session's env they would send every write to nowhere.
    # The session's env also picks the backend (an editor's `env` option, initializationOptions.env): an API key given
    # there is ollie's, never tool code's, a prompt command's or a hook's (a hostile model would print and send it).
    for name in (EDITOR_COPY_ENV, WRITE_CHECK_ENV, *BACKEND_KEYS):
        env.pop(name, None)
    if tmp_dir is not None:
        env["TMPDIR"] = str(tmp_dir)
    env.update(
        {
            "OLLIE_SESSION_ID": session_id,
            "OLLIE_CWD": str(cwd),
            "OLLIE_DATA_PATH": str(paths.data_dir()),
            "OLLIE_MEMORY_PATH": str(memory_dir(cwd)),
            "OLLIE_PLAN_FILE": str(plan_file(session_id)),
        }
    )
    return env
