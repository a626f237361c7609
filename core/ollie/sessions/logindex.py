"""Saved session logs without loading them: which are saved, and their latest meta.

Files in the sessions dir, or a PostgreSQL store's rows when OLLIE_STORE names one.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from ollie.sessions.location import store_url
from ollie.sessions.logformat import COMPACTION_SUFFIX, META_TAIL_BYTES, SUFFIX, last_commit, last_meta, session_path
from ollie.sessions.session import is_valid_session_id


def _tail(sessions_dir: Path | str, session_id: str, *, anyone: bool = False) -> bytes:
    """The end of a saved log, where its latest `meta` record is (b"" when the session is not saved); in a store, the
    owner's last round unless `anyone` (see `pg_log.last_round`)."""
    if not is_valid_session_id(session_id):
        return b""
    url = store_url()
    if url:
        from ollie.sessions.pg import log as pg_log

        return pg_log.last_round(url, session_id, anyone=anyone)
    try:
        with open(session_path(Path(sessions_dir), session_id), "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - META_TAIL_BYTES))
            return fh.read()
    except FileNotFoundError:
        return b""


def read_meta(sessions_dir: Path | str, session_id: str) -> dict[str, Any]:
    """The saved session's latest meta (title, cwd, totals; no tracked maps), read from the file's end.

    Every commit ends with a whole `meta` record, so a listing reads the tail (a
    database: the last round), not the history. {} when the session is not saved.
    """
    return last_meta(_tail(sessions_dir, session_id))


def saved_turns(sessions_dir: Path | str, session_id: str) -> int:
    """How many turns the saved session has had: its last meta's, whoever wrote it (a teammate's turns in a shared
    session count, where its title and directory stay the owner's); 0 for a log no ollie wrote."""
    starts = last_meta(_tail(sessions_dir, session_id, anyone=True)).get("turn_starts")
    return len(starts) if isinstance(starts, list) else 0


def rewind_undoable(sessions_dir: Path | str, session_id: str) -> bool:
    """Whether the session's last rewind can still be undone: its backup (`rewind_name`) is a file of the sessions
    dir (not followed)."""
    if not is_valid_session_id(session_id):
        return False
    try:
        return stat.S_ISREG(os.lstat(Path(sessions_dir) / rewind_name(session_id)).st_mode)
    except OSError:
        return False


def rewind_name(session_id: str) -> str:
    """The name of a session's rewind backup in the sessions dir: the way back of its last rewind, until a turn."""
    return f"{session_id}.rewind.json"


def meta_and_turns(sessions_dir: Path | str, session_id: str) -> tuple[dict[str, Any], int]:
    """`read_meta` and `saved_turns` together, a file's end read once (a store's two rounds: the owner's last, then
    the last of all)."""
    meta = read_meta(sessions_dir, session_id)
    starts = (last_meta(_tail(sessions_dir, session_id, anyone=True)) if store_url() else meta).get("turn_starts")
    return meta, len(starts) if isinstance(starts, list) else 0


def worth_listing(sessions_dir: Path | str, session_id: str, *, titled: bool, turns: int) -> bool:
    """Whether a saved session is listed, the one rule of every list (the terminal's /sessions and pickers, the
    daemon's and `ollie acp`'s session lists): titled or with a turn; else (a start nobody typed in, or a rewind of
    every turn) only while that rewind can still be undone (`rewind_undoable`), the way back to it after a restart."""
    return titled or turns > 0 or rewind_undoable(sessions_dir, session_id)


def saved_metas(sessions_dir: Path | str) -> list[tuple[str, dict[str, Any]]]:
    """The saved sessions worth listing (`worth_listing`), oldest first (ids sort by creation time), each with its
    latest meta (`read_meta`): each log's end read once, for the check and the meta (its message count for the turns:
    each start of a front end saves one nobody typed in; `persist.exists` still finds it)."""
    url = store_url()
    if url:
        from ollie.sessions.pg import log as pg_log

        ids = sorted((i for i in pg_log.saved_ids(url) if is_valid_session_id(i)), key=lambda s: (len(s), s))
    else:
        ids = list_saved_files(sessions_dir)
    listed = []
    for session_id in ids:
        commit = last_commit(_tail(sessions_dir, session_id))
        meta = dict(found) if isinstance(found := commit.get("meta"), dict) else {}
        # No message, no turn: its message count stands in for its turns (the check is the one of every list).
        if worth_listing(sessions_dir, session_id, titled=bool(meta.get("title")), turns=int(commit.get("n") != 0)):
            listed.append((session_id, meta))
    return listed


def list_saved(sessions_dir: Path | str) -> list[str]:
    """Ids of the saved sessions worth listing, oldest first (`saved_metas`)."""
    return [session_id for session_id, _ in saved_metas(sessions_dir)]


def list_saved_files(sessions_dir: Path | str) -> list[str]:
    """Ids of the session files in `sessions_dir`, oldest first (whatever OLLIE_STORE says)."""
    root = Path(sessions_dir)
    if not root.is_dir():
        return []
    ids = []
    for entry in root.iterdir():
        name = entry.name
        if name.endswith(SUFFIX) and not name.endswith(COMPACTION_SUFFIX):
            session_id = name[: -len(SUFFIX)]
            if is_valid_session_id(session_id):
                ids.append(session_id)
    return sorted(ids, key=lambda s: (len(s), s))
