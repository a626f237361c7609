"""The daemon assembled: the server with its features, the session table wired to it, the engine loaded lazily."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from ollie_lsp.documents import register_documents
from ollie_lsp.errors import InvalidParams, StartProblem
from ollie_lsp.idlecollect import collect_when_idle
from ollie_lsp.lifecycle import register_lifecycle
from ollie_lsp.names import METHOD_NAMES, command_name
from ollie_lsp.permission import ask_step
from ollie_lsp.server import OllieServer
from ollie_lsp.standard import register_standard

if TYPE_CHECKING:
    from ollie.agent.events import Event
    from ollie.agent.surface import DaemonCore
    from ollie_lsp.sessions import SessionTable

logger = logging.getLogger("ollie.lsp.daemon")


def build_server(*, coalesce_s: float = 0.004) -> OllieServer:
    """The daemon, with every feature registered."""
    server = OllieServer(make_table=build_table, load_engine=load_engine, coalesce_s=coalesce_s)
    register_lifecycle(server)
    register_documents(server)
    register_methods(server)
    register_standard(server)
    return server


def load_engine() -> None:
    """Import what the first ollie/* request needs (in a thread: it holds no lock the loop needs).

    Not the sandbox's fork server: it starts with the first reply (`build_table`), not competing for the CPU.
    """
    from ollie.startup import pause_gc, resume_gc

    # Paused from here, not from main(): lsprotocol loads with the collector on, as in a bare pygls server, so its
    # ~550 classes that attrs discards (~8 MiB, rebuilt with slots) are freed as they come and their memory reused;
    # held back, one pass over all of it cost ~85 ms before a first token or, deferred, ~6 MiB of RSS.
    pause_gc()
    try:
        import ollie.agent.core  # noqa: F401
        import ollie.backend.stream  # noqa: F401 - the HTTP client: with the collector on, 17 passes (~4 ms) fell in it
        import ollie_lsp.methods  # noqa: F401
        import ollie_lsp.sessions  # noqa: F401
    finally:
        resume_gc()


def _start_fork_server() -> None:
    # In a worker thread, the spawn machinery's import too (Landlock's rules, ctypes): not the first token's loop
    # pass, and not before a first reply (a daemon that only answers requests never loads it).
    try:
        from ollie.sandbox.spawn import start_fork_server

        start_fork_server()
    except Exception:  # noqa: BLE001 - its future is never awaited: raised, it read "Future exception was never retrieved"
        logger.exception("the sandbox's fork server could not be started as the reply began; a step tries again")


def build_table(ls: OllieServer) -> SessionTable:
    """The session table, wired to this server's notifications."""
    from ollie_lsp.events import REPLY_ROLES, EventForwarder
    from ollie_lsp.progress import TurnProgress
    from ollie_lsp.records import records
    from ollie_lsp.sessions import SessionDefaults, SessionTable, editor_resume

    options = ls.init_options
    defaults = SessionDefaults(agent=options.agent or "default", backend=options.backend, model=options.model,
                               env=dict(options.env), tell_answers=not options.shows_answers,
                               resume_how=editor_resume(ls.client_name))
    table: SessionTable
    # Whether the turn's reply began: the fork server starts then, not with the turn (it competed with the first
    # token for the CPU), and not at start-up.
    replying = False

    def make_progress(session_id: str) -> TurnProgress:
        return TurnProgress(ls.work_done_progress, session_id, enabled=ls.supports_progress())

    def make_forwarder(session_id: str, core: DaemonCore) -> EventForwarder:
        def send(params: dict[str, Any]) -> None:
            nonlocal replying
            ls.protocol.notify("ollie/event", params)
            if not replying and params["role"] in REPLY_ROLES:
                replying = True
                # For the reply's tool calls, whose arguments are still streaming.
                asyncio.get_running_loop().run_in_executor(None, _start_fork_server)

        def on_state() -> None:
            live = table.find(session_id)
            if live is None:
                return
            changed = live.state_changed()
            if changed is not None:
                ls.protocol.notify("ollie/stateChanged", changed)
            if live.core.is_running and live.core.state != "idle":
                live.progress.report(live.core.state)

        def on_turn(event: Event) -> None:
            nonlocal replying
            live = table.find(session_id)
            if live is None:
                return
            if event.content == "start":
                replying = False
                live.progress.begin(event.prompt)
            else:
                live.progress.end(event.content)
                collect_when_idle(table.live)

        return EventForwarder(
            session_id, core.bus.subscribe(), send=send, on_state=on_state, on_turn=on_turn, coalesce_s=ls.coalesce_s,
            paused=ls.output_paused, writable=ls.output_writable,
        )

    editor = None
    if options.editor_tools:
        from ollie_lsp.editortools import LspEditorKnowledge

        editor = LspEditorKnowledge(ls)
    table = SessionTable(
        defaults=defaults, start_cwd=ls.sessions_dir, records=records(), make_forwarder=make_forwarder,
        make_progress=make_progress, ask_step=partial(ask_step, ls),
        notify_problem=ls.show, documents=ls.documents, editor=editor,
    )
    return table


def register_methods(server: OllieServer) -> None:
    """Every ollie/* method and its `ollie.*` executeCommand mirror, as stubs that import the handlers on first use."""
    for name in METHOD_NAMES:
        server.feature(name)(_lazy_method(name))
        server.command(command_name(name))(_lazy_command(name))


def _lazy_method(name: str) -> Callable[..., Any]:
    async def run(ls: OllieServer, raw: Any) -> dict[str, Any]:
        if ls.start_problem:  # no session runs that could not be kept: each request says why, as initialize showed
            raise StartProblem(ls.start_problem)
        await ls.engine_loaded()
        from ollie_lsp import methods

        try:
            return await methods.call(name, ls, raw)
        finally:
            # Each answer puts the idle full pass off: idle is no request for a while too (it came amid 50
            # session/new).
            collect_when_idle(ls.live_sessions)

    return run


def _lazy_command(name: str) -> Callable[..., Any]:
    method = _lazy_method(name)

    async def run(ls: OllieServer, *args: Any) -> dict[str, Any]:
        if len(args) > 1:
            raise InvalidParams(f"arguments: expected one argument (the params object), got {len(args)}")
        params = args[0] if args else None
        if name == "ollie/submit":  # (see codeactions.submitted: Emacs freezes until it is answered)
            from ollie_lsp.codeactions import submitted

            return await submitted(ls, method(ls, params), params)
        return await method(ls, params)

    return run
