"""A session's life on disk: opened under this machine's lock, renamed with it, failed saves reported."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ollie import paths
from ollie.agent.events import Bus
from ollie.agent.factories import BackendFactory, DispatcherFactory, env_backend_factory
from ollie.agent.setup import Setup
from ollie.beneath import OutsideRoot
from ollie.config import find_agent, load_agent_config
from ollie.sessions.livelock import LiveLock, hold, lock_dir
from ollie.sessions.persist import SessionFile, open_session
from ollie.sessions.session import Session

if TYPE_CHECKING:
    from ollie.backend.types import ToolCall


@dataclass(eq=False, repr=False)
class Opened:
    """What `open_parts` hands the Core: its setup, the session and its log, and the lock that holds it."""

    setup: Setup
    sessions_dir: Path
    session: Session
    session_file: SessionFile
    lock: LiveLock | None
    saved_cwd: str = ""  # the directory the session was saved with ("": new), before this open moved it here


def _close_open_calls(session: Session) -> list[ToolCall]:
    """The calls of the last reply still without a result (their process was killed as they ran) get one that says
    so: the model is told they may have run, and no request goes out with a call unanswered. The calls closed."""
    last = session.messages[-1] if session.messages else None
    if last is not None and last.role == "assistant" and last.tool_calls:
        from ollie.agent.toolround import CLOSED_RESULT
        from ollie.backend.types import Message

        session.messages.extend(Message("tool", CLOSED_RESULT, tool_call_id=c.id, name=c.name) for c in last.tool_calls)
        return list(last.tool_calls)
    return []


async def open_parts(
    *, agent: str, cwd: Path | str | None, backend: str | None, model: str | None, session_id: str | None,
    env: Mapping[str, str] | None, sessions_dir: Path | str | None,
    backend_factory: BackendFactory | None, dispatcher_factory: DispatcherFactory | None,
    agents_dirs: list[Path] | None, prompt_now: bool,
) -> Opened:
    """Load the agent config, take the session's lock, resume or start it, build its runtime and backend."""
    # A file read and its shape checked: in a thread, not on the loop other sessions share.
    cfg = await asyncio.to_thread(load_agent_config, find_agent(agent, agents_dirs))
    # Walked in a thread: on an NFS or FUSE workspace each lstat may stall, and the loop is every session's.
    work = await asyncio.to_thread(_work_dir, cwd)
    extra = dict(env or {})
    store = Path(sessions_dir) if sessions_dir else paths.sessions_dir()
    # Temp dirs of sessions whose process is gone (a crash, kill -9) go first; live ones are kept (see sweep_stale).
    from ollie.tools.execute.sessiondirs import sweep_stale

    await asyncio.to_thread(sweep_stale)
    # Taken before the log is read: a session another process of this machine runs (another editor window,
    # `ollie acp`, a terminal) is refused (-32007), not run twice with one writer's turns lost.
    lock = await asyncio.to_thread(hold, lock_dir(store), session_id) if session_id else None
    try:
        # Reading and parsing a long history takes a while: off the loop, which other sessions share.
        session_file, session = await asyncio.to_thread(open_session, store, session_id)
        if (closed := _close_open_calls(session)) and session.cwd and session_file.storage is None:
            # A file write killed with them left its temporary file beside the file: not the user's to clean up.
            from ollie.agent.leftovers import sweep_write_temporaries

            await asyncio.to_thread(sweep_write_temporaries, session.cwd, closed, session_file.path)
        if not session_id:
            lock = await asyncio.to_thread(hold, lock_dir(store), session.id)
        session.agent = agent
        # Listed and filtered by (ACP session/list); loads keep working without it.
        saved_cwd, session.cwd = session.cwd, str(work)
        if session.backend or session.model:  # its own /backend and /model, before the defaults
            backend, model = session.backend or backend, session.model or None
        setup = await Setup.create(
            cfg, agent=agent, cwd=work, env=extra, session_id=session.id, backend=backend, model=model,
            backend_factory=backend_factory or env_backend_factory(extra), dispatcher_factory=dispatcher_factory,
            agents_dirs=agents_dirs, prompt_now=prompt_now,
        )
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    return Opened(setup, store, session, session_file, lock, saved_cwd)


def _work_dir(cwd: Path | str | None) -> Path:
    """The session's directory (default: the process's), a real path; ValueError when it is none, OutsideRoot when a
    link now stands on its way."""
    work = Path(cwd or Path.cwd()).resolve()
    # A front end walked it to its real path (`session_dir`): a link a step swapped in since is refused, never followed.
    if cwd and str(work) != os.path.abspath(cwd):
        raise OutsideRoot(errno.ELOOP, f"{cwd} now leads to {work} (a directory on its way was swapped for a link)")
    if not work.is_dir():
        raise ValueError(f"working directory {work} does not exist")
    return work


def report_save_errors(log: SessionFile, bus: Bus) -> None:
    """Tell the user at once when a background save fails (a database write, a file's sync): an `error` event."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return  # built outside a loop (a test): the failure is still logged and raised by the log's flush

    def report(text: str) -> None:  # on the log's writer thread: the bus is the loop's
        with contextlib.suppress(RuntimeError):  # the loop is gone (the process is exiting)
            loop.call_soon_threadsafe(bus.emit, "error", text)

    log.on_error = report
