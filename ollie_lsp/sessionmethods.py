"""The session methods: new, list, load, fork, rename, archive and close."""

from __future__ import annotations

import asyncio
from typing import Any

from ollie.errors import ConfigError
from ollie.paths import sessions_dir
from ollie.sessions.types import ListOptions
from ollie_lsp.dispatch import method
from ollie_lsp.errors import invalid_params
from ollie_lsp.idlecollect import collect_and_freeze
from ollie_lsp.params import (
    SessionForkParams,
    SessionIdParams,
    SessionListParams,
    SessionNewParams,
    SessionRenameParams,
)
from ollie_lsp.records import check_kind, info_to_wire
from ollie_lsp.server import OllieServer
from ollie_lsp.sessions import LiveSession


@method("ollie/session/new", SessionNewParams)
async def session_new(ls: OllieServer, p: SessionNewParams) -> dict[str, Any]:
    """Start another session (its own Core)."""
    from ollie.agent.setup import session_dir  # (the session's set-up, loaded with the first session, not at start)

    kind = check_kind(p.kind or "chat")
    await ls.sessions_dir()  # the folders walked (a link among them is no guard); all refused: -32603, no param's fault
    with invalid_params("cwd"):  # the client's choice (a relative one from the daemon's directory), but no link a step
        # may have planted in the workspace folder: an editor names its folders (a workspace file's), each may be one
        cwd = await session_dir(p.cwd, guarded=[ls.root_cwd, ls.default_cwd]) if p.cwd else None
    with invalid_params("agent", ConfigError):
        live = await ls.table.create(agent=p.agent, kind=kind, title=p.title or "", cwd=cwd)
    # Its objects frozen now, while new (~1 ms): else 50 new sessions were one full pass of 30 ms in their first turns.
    collect_and_freeze(ls.live_sessions(), closed_too=False)
    return {"session": live.id}


@method("ollie/session/list", SessionListParams)
async def session_list(ls: OllieServer, p: SessionListParams) -> dict[str, Any]:
    """The user's saved sessions, most recent first, a page at a time (`cursor`: where the last page ended)."""
    from ollie.sessions.cursor import from_cursor, to_cursor  # not a first token's
    from ollie.sessions.logindex import rewind_undoable, saved_turns, worth_listing
    records = ls.table.records
    with invalid_params("cursor"):
        after = from_cursor(p.cursor)
    kinds = [check_kind(k, f"kinds[{i}]") for i, k in enumerate(p.kinds or [])]
    options = ListOptions(kinds=kinds, include_archived=p.include_archived, exclude_unused=True, limit=p.limit or 0,
                          after=after)
    infos, last = await records.run(records.page, options)
    elsewhere = await records.run(records.live_elsewhere, [i.id for i in infos])
    # What tells two sessions of one title apart, as the terminal's /sessions: each log's end read, off the loop.
    turns = await asyncio.to_thread(lambda: {i.id: saved_turns(sessions_dir(), i.id) for i in infos})
    # The one rule of every session list (an emptied one listed while its rewind can be undone, as such).
    shown, undo = await asyncio.to_thread(lambda: (
        [i for i in infos if worth_listing(sessions_dir(), i.id, titled=bool(i.title), turns=turns[i.id])],
        {i.id for i in infos if rewind_undoable(sessions_dir(), i.id)}))
    return {"sessions": [info_to_wire(i, live=ls.table.find(i.id) is not None, live_on=elsewhere.get(i.id),
                                      turns=turns[i.id], rewind_undo=i.id in undo) for i in shown],
            "nextCursor": to_cursor(last) if last is not None else None}


async def _opened(ls: OllieServer, live: LiveSession) -> dict[str, Any]:
    """A load's or fork's answer: the session live here and its info."""
    from ollie.sessions.logindex import rewind_undoable

    info = await ls.table.records.run(ls.table.records.get, live.id)
    undo = await asyncio.to_thread(rewind_undoable, sessions_dir(), live.id)
    return {"session": live.id, "info": info_to_wire(info, live=True, turns=len(live.core.session.turn_starts),
                                                     rewind_undo=undo)}


@method("ollie/session/load", SessionIdParams)
async def session_load(ls: OllieServer, p: SessionIdParams) -> dict[str, Any]:
    """Resume a saved session in this daemon."""
    return await _opened(ls, await ls.table.load(p.session))


@method("ollie/session/fork", SessionForkParams)
async def session_fork(ls: OllieServer, p: SessionForkParams) -> dict[str, Any]:
    """A new session going on from a copy of another's conversation up to turn `turn` (default: all of it)."""
    return await _opened(ls, await ls.table.fork(p.session, turn=p.turn))


@method("ollie/session/rename", SessionRenameParams)
async def session_rename(ls: OllieServer, p: SessionRenameParams) -> dict[str, Any]:
    """Give a session a title."""
    await ls.table.rename(p.session, p.title)
    return {}


@method("ollie/session/archive", SessionIdParams)
async def session_archive(ls: OllieServer, p: SessionIdParams) -> dict[str, Any]:
    """Archive a session: kept, but read-only and out of the default list."""
    await ls.table.set_archived(p.session, True)
    return {}


@method("ollie/session/unarchive", SessionIdParams)
async def session_unarchive(ls: OllieServer, p: SessionIdParams) -> dict[str, Any]:
    """Bring an archived session back: listed by default and writable again."""
    await ls.table.set_archived(p.session, False)
    return {}


@method("ollie/session/close", SessionIdParams)
async def session_close(ls: OllieServer, p: SessionIdParams) -> dict[str, Any]:
    """Stop a live session; what is saved stays."""
    await ls.table.close(p.session)
    return {}
