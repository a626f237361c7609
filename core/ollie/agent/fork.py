"""What a fork of a session starts from: its conversation, title, agent and approval mode (ACP and the daemon)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ollie.agent import agentswitch
from ollie.agent.review import ReviewError
from ollie.paths import agents_dirs, sessions_dir
from ollie.sessions import logformat, persist
from ollie.sessions.errors import InvalidSessionError, NotFoundError

if TYPE_CHECKING:
    from ollie.agent.surface import AcpCore
    from ollie.sessions.records import UserRecords
    from ollie.sessions.session import Session
    from ollie.sessions.types import Info


class ForkTurnError(ReviewError):
    """The fork cannot end where asked; `field` names the request field at fault (`turn`, or `session`)."""


@dataclass(frozen=True)
class Fork:
    """A fork to open: `source` is the conversation it copies (`Core.fork_from`), cut at the end of the turn asked."""

    source: Session
    title: str
    agent: str
    keep_mode: bool  # False for a teammate's session: this user's own approval mode, not the owner's


@dataclass(frozen=True)
class Source:
    """What the caller knows of the session to fork: its record and, when it runs there, its live title and agent."""

    session_id: str
    info: Info | None
    user: str
    live_title: str | None = None
    live_agent: str | None = None
    running: int = 0  # the turn whose prompt it saved and whose reply it has not (0: none)
    elsewhere: bool = False  # another process runs it (a teammate's daemon, another window): its log tells `running`


async def source_of(session_id: str, info: Info | None, records: UserRecords, live: AcpCore | None = None,
                    live_title: str | None = None) -> Source:
    """What a front end knows of the session to fork: its record, and `live`, its Core when it runs there (with its
    recorder's `live_title`), or else whether another process runs it; a turn it runs is left out of the copy."""
    elsewhere = live is None and bool(await records.run(records.live_elsewhere, [session_id]))
    return Source(session_id, info, records.user, live_title=live_title, live_agent=live.agent_name if live else None,
                  running=len(live.session.turn_starts) if live and live.is_answering else 0, elsewhere=elsewhere)


def cut_at_turn(saved: Session, turn: int | None) -> None:
    """Keep `saved`'s messages and turns up to the end of turn `turn` (None: all); ForkTurnError when it has no such
    turn."""
    if turn is None:
        return
    starts = saved.turn_starts
    if not 1 <= turn <= len(starts):
        have = f"turns 1 to {len(starts)}" if starts else "no turns yet"
        raise ForkTurnError(f"no turn {turn}: session {saved.id} has {have}")
    end = starts[turn] if turn < len(starts) else len(saved.messages)
    if not 0 <= end <= len(saved.messages):
        raise ForkTurnError(f"the conversation after turn {turn} was compacted or cleared since: cannot fork there")
    saved.messages = saved.messages[:end]
    saved.turn_starts, saved.turn_changed = starts[:turn], saved.turn_changed[:turn]


def _answered(saved: Session) -> bool:
    """Whether the log's last turn ended with the model's reply (none yet: true)."""
    if not saved.turn_starts:
        return True
    last = saved.messages[-1] if len(saved.messages) > saved.turn_starts[-1] else None
    return last is not None and last.role == "assistant" and not last.tool_calls


async def plan(source: Source, *, default_agent: str, turn: int | None = None) -> Fork:
    """The fork of `source`: what it saved up to turn `turn` (None: all, or, while a turn runs, those that ended),
    titled "<title> (fork)".

    Its agent is the source's, unless a teammate's session runs an agent without a sandbox (the owner's choice is no
    licence for this user's steps): then `default_agent`. NotFoundError when it saved no log, InvalidSessionError
    when its log cannot be read.
    """
    try:
        saved = await asyncio.to_thread(persist.load, sessions_dir(), source.session_id)
    except persist.SessionFileNotFoundError:
        raise NotFoundError(source.session_id) from None
    except (ValueError, logformat.SessionFileError) as exc:  # a malformed id, a log this ollie cannot read
        raise InvalidSessionError(str(exc)) from None
    # Run in another process, its log tells: a last turn with no final reply is still answering there (its prompt
    # and steps are saved as they come), or it failed without one; either way nothing to go on from.
    running = source.running or (len(saved.turn_starts) if source.elsewhere and not _answered(saved) else 0)
    if running:  # the turns that ended: the running one's prompt and steps are a turn with no reply
        ended = running - 1
        if turn is None and not ended:
            raise ForkTurnError(f"session {source.session_id} runs its first turn: nothing to fork yet", "session")
        if turn is not None and turn > ended:
            raise ForkTurnError(f"turn {turn} has not ended: session {source.session_id} runs turn {running}")
        turn = turn or ended
    cut_at_turn(saved, turn)
    info = source.info
    # The record has the title the first prompt gave (the engine's recorder); a live one's own when unrecorded.
    title = info.title if info is not None else source.live_title or ""
    agent = source.live_agent or (info.agent_id if info is not None else default_agent)
    teammates = info is not None and info.user_id != source.user
    if teammates and await asyncio.to_thread(agentswitch.unsandboxed, agent, agents_dirs()):
        agent = default_agent
    return Fork(source=saved, title=f"{title or 'untitled'} (fork)", agent=agent, keep_mode=not teammates)
