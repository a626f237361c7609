"""`ollie -c`: the session to continue, the newest one started in this directory."""

from __future__ import annotations

from pathlib import Path


def latest_session(cwd: Path) -> str | None:
    """The id of the newest saved session whose working directory is `cwd`, or None."""
    from ollie import paths
    from ollie.sessions import persist

    sessions_dir = paths.sessions_dir()
    wanted = str(cwd.resolve())
    # Ids sort by creation time: the first match from the end is the newest; unprompted starts are not listed.
    for session_id in reversed(persist.list_saved(sessions_dir)):
        if persist.read_meta(sessions_dir, session_id).get("cwd") == wanted:
            return session_id
    return None
