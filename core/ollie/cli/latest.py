"""`ollie -c`: the session to continue, the newest one started in this directory."""

from __future__ import annotations

from pathlib import Path


def latest_session(cwd: Path) -> str | None:
    """The id of the newest saved session whose working directory is `cwd`, or None."""
    from ollie import paths
    from ollie.agent.commands_info import sessions_in

    found = sessions_in(paths.sessions_dir(), cwd, limit=1)
    return found[0] if found else None
