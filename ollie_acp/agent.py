"""The ACP agent: initialize, sessions (new, load, resume, fork, list, close), prompt, cancel, modes and options."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from acp import PROTOCOL_VERSION, RequestError
from acp.helpers import update_available_commands
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    AvailableCommand,
    AvailableCommandInput,
    ClientCapabilities,
    CloseSessionResponse,
    FileSystemCapabilities,
    ForkSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionForkCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    UnstructuredCommandInput,
)

from ollie import __version__
from ollie.agent import inbox
from ollie.agent.commands import COMMANDS
from ollie.agent.core import Core
from ollie.agent.editorcontext import is_command
from ollie.agent.recorder import record
from ollie.agent.setup import session_dir
from ollie.agent.steps import script_kinds
from ollie.errors import ConfigError
from ollie.escapes import escaped
from ollie.mcp.config import ServerSpec, from_acp
from ollie.paths import sessions_dir, tools_path
from ollie.sessions import logindex, persist
from ollie.sessions.cursor import from_cursor, to_cursor
from ollie.sessions.errors import ArchivedError, NotFoundError
from ollie.sessions.records import UserRecords
from ollie.sessions.types import Channel, Info, ListOptions, sort_key
from ollie_acp.errors import invalid_params, store_errors
from ollie_acp.fs import client_files
from ollie_acp.options import agents, backend_models, config_options, mode_state
from ollie_acp.prompt import PromptBlock, image_blocks, image_bytes, prompt_images, prompt_text
from ollie_acp.session import AcpSession
from ollie_acp.updates import Update, UpdateForwarder

logger = logging.getLogger("ollie.acp.agent")
LIST_PAGE = 50
# A replay's updates sent before the client must have read them (~25 ms of the loop): the agent's other sessions
# are served between pages, and their answers wait behind one page in the pipe, not the whole history.
REPLAY_PAGE = 500
_Answer = TypeVar("_Answer", LoadSessionResponse, ResumeSessionResponse, ForkSessionResponse)


class OllieAgent:
    """One client's ACP agent: every session it opened, each its own Core."""

    def __init__(self, *, agent: str = "default", backend: str | None = None, model: str | None = None,
                 read_by_client: Callable[[], Awaitable[None]] | None = None) -> None:
        self._agent = agent
        self._read_by_client = read_by_client or (lambda: asyncio.sleep(0))
        self._backend = backend
        self._model = model
        self._client: Client | None = None
        self._fs: FileSystemCapabilities | None = None
        self._sessions: dict[str, AcpSession] = {}
        self._records = UserRecords()
        self._after: set[asyncio.Task[None]] = set()

    def on_connect(self, conn: Client) -> None:
        """The SDK hands over the connection to the client."""
        self._client = conn

    @property
    def client(self) -> Client:
        """The connected client."""
        assert self._client is not None, "no client connected"
        return self._client

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
                         **kwargs: Any) -> InitializeResponse:
        """Protocol version 1; load, list, embedded context, resource links and images."""
        self._fs = client_capabilities.fs if isinstance(client_capabilities, ClientCapabilities) else None
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                mcp_capabilities=McpCapabilities(http=True, sse=True),
                prompt_capabilities=PromptCapabilities(embedded_context=True, image=True, audio=False),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities(),
                                                         close=SessionCloseCapabilities(),
                                                         fork=SessionForkCapabilities(),
                                                         resume=SessionResumeCapabilities()),
            ),
            agent_info=Implementation(name="ollie", title="ollie", version=__version__),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        """No authentication: the backend's keys come from the environment."""

    async def stop_turns(self) -> None:
        """Stop every running turn, as session/cancel does (the client that could cancel them is gone)."""
        await asyncio.gather(*(s.cancel() for s in self._sessions.values()), return_exceptions=True)

    async def close_all(self) -> None:
        """Close every session: interrupted, saved, tool processes ended."""
        sessions, self._sessions = list(self._sessions.values()), {}
        await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)
        self._records.io.shutdown(wait=True)

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        """A new ollie session in `cwd`, with the client's MCP servers (started contained, like the user's own)."""
        live = await self._open(await _directory(cwd), session_id=None, agent=self._agent, mcp=_mcp_specs(mcp_servers))
        # The model list (GET /models) would hold the answer back: it follows as a `config_option_update`, with
        # the agent configs read for this answer (not read again milliseconds later).
        agent_list = live.offered(await agents(live.core))
        response = NewSessionResponse(session_id=live.id, modes=mode_state(live.core),
                                      config_options=await config_options(live.core, ask_models=False,
                                                                          agent_list=agent_list))
        self._after_answer(self._announce(live))
        self._after_answer(live.send_models(agent_list))
        return response

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None,
                           **kwargs: Any) -> LoadSessionResponse:
        """Reopen a saved session in the `cwd` given now (ACP requires one) and replay its history as updates; one
        open here already (a client reopening its thread) replays to the client and goes on as it was."""
        live = await self._reopen(cwd, session_id, mcp_servers)
        from ollie_acp.history import replay, turn_diffs  # only a resume replays: not in a first prompt's path

        async with live.replaying:  # a running turn's updates wait: the history first, then what it does next
            changed = await turn_diffs(live.core)
            # O(history): built in a thread, so the agent's other sessions do not wait for a long one's replay.
            session = live.core.session
            updates = await asyncio.to_thread(replay, list(session.messages), cwd=live.core.cwd,
                                              kind_of=script_kinds(tools_path()), collapsed=dict(session.step_images),
                                              outcomes=dict(session.step_outcomes), changed=changed,
                                              running=live.core.is_running)
            for start in range(0, len(updates), REPLAY_PAGE):
                for update in updates[start:start + REPLAY_PAGE]:
                    await self.client.session_update(session_id=live.id, update=update)
                    live.forwarder.sent(update)
                await self._read_by_client()
        return await self._opened(live, LoadSessionResponse)

    async def resume_session(self, session_id: str, cwd: str, mcp_servers: Any = None,
                             **kwargs: Any) -> ResumeSessionResponse:
        """session/resume (unstable): reopen a saved session as session/load does, without replaying its history."""
        live = await self._reopen(cwd, session_id, mcp_servers)
        return await self._opened(live, ResumeSessionResponse)

    async def fork_session(self, session_id: str, cwd: str, mcp_servers: Any = None,
                           **kwargs: Any) -> ForkSessionResponse:
        """session/fork (unstable): a new session in `cwd` that goes on from a copy of a saved or open one's conversation.

        The copy is what the session has saved; its "always" answers and a teammate's approval mode are not copied.
        """
        from ollie.agent import fork  # only a fork plans one (~1.3 ms of CPU): not in a first prompt's path
        directory = await _directory(cwd)
        specs = _mcp_specs(mcp_servers)
        source = self._sessions.get(session_id)
        with store_errors(session_id):  # another user's is one not found; a store that is down says so
            info = await self._records.run(self._record, session_id)
        if source is None and info is None:  # only the user's own sessions, or those shared with their team
            raise RequestError.resource_not_found(session_id)
        with store_errors(session_id):
            known = await fork.source_of(session_id, info, self._records, source.core if source else None,
                                         source.recorder.title if source and source.recorder else None)
            with invalid_params("sessionId", fork.ForkTurnError):  # its first turn still answering elsewhere: nothing yet
                plan = await fork.plan(known, default_agent=self._agent)
        # Made untitled (an unused session is not listed) and named once its copy is saved: named first, an agent
        # killed before the copy was saved left an empty `<title> (fork)` in the session list.
        live = await self._open(directory, session_id=None, agent=plan.agent, mcp=specs)
        await live.core.fork_from(plan.source, keep_mode=plan.keep_mode)
        with store_errors(live.id):
            if live.recorder is not None:  # (it is: `_open` records every session)
                await live.recorder.rename(plan.title)
        return await self._opened(live, ForkSessionResponse, session_id=live.id)

    async def _reopen(self, cwd: str, session_id: str, mcp_servers: Any) -> AcpSession:
        directory = await _directory(cwd)
        specs = _mcp_specs(mcp_servers)
        if (live := self._sessions.get(session_id)) is not None:  # Zed loads a thread again as its panel reopens:
            return live  # the one writer goes on, in its directory, with its MCP servers (no second Core on its log)
        with invalid_params("sessionId", ValueError), store_errors(session_id):
            known = await asyncio.to_thread(persist.exists, sessions_dir(), session_id)
        if not known:
            raise RequestError.resource_not_found(session_id)
        # A record that cannot be read is no licence to open the session as one's own.
        info = await self._refuse_archived(session_id)
        owner = info.user_id if info is not None and info.user_id != self._records.user else ""  # see Core.shared_by
        return await self._open(directory, session_id=session_id, agent=info.agent_id if info else self._agent,
                                title=info.title if info else "", mcp=specs, owner=owner)

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        """session/close: interrupt its turn, save it, end its tool processes; its id is no longer open."""
        live = self._get(session_id)
        del self._sessions[session_id]
        await live.cancel()
        await live.close()
        return CloseSessionResponse()

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None,
                            **kwargs: Any) -> ListSessionsResponse:
        """The user's saved sessions (those of `cwd` when given), most recently active first, with titles and times."""
        with invalid_params("cursor", ValueError):
            after = from_cursor(cursor)
        if cwd is not None and not Path(cwd).is_absolute():
            raise RequestError.invalid_params({"cwd": f"{cwd} is not an absolute path"})
        want = str(await asyncio.to_thread(Path(cwd).resolve)) if cwd else None  # absolute: nothing to expand
        sessions: list[SessionInfo] = []
        # The registry does not know directories: page through it until a page of matches is found. Pages go by sort
        # key, not count: a row the registry leaves out (written by no ollie) neither ends the listing nor shifts it.
        while True:
            with store_errors(None):
                # Sessions nobody typed in (one per start) are not worth listing, as in the daemon's session list.
                options = ListOptions(limit=LIST_PAGE, after=after, exclude_unused=True)
                page, after = await self._records.run(self._records.page, options)
                listed = await asyncio.to_thread(_listed_cwds, page)
            for index, info in enumerate(page):
                if info.id in listed and (want is None or listed[info.id] == want):
                    stamp = info.last_active or info.created_at
                    sessions.append(SessionInfo(session_id=info.id, cwd=listed[info.id] or str(Path.cwd()),
                                                title=_listed_title(info, self._records.user),
                                                updated_at=stamp.isoformat() if stamp else None))
                if len(sessions) == LIST_PAGE:
                    more = after is not None or index + 1 < len(page)
                    return ListSessionsResponse(sessions=sessions, next_cursor=to_cursor(sort_key(info)) if more else None)
            if after is None:
                return ListSessionsResponse(sessions=sessions)

    async def _open(self, cwd: Path, *, session_id: str | None, agent: str, title: str = "",
                    mcp: dict[str, ServerSpec] | None = None, owner: str = "") -> AcpSession:
        # OLLIE_STORE: down, or another machine runs the session now.
        with invalid_params("agent", ConfigError), store_errors(session_id):
            core = await Core.create(agent=agent, cwd=cwd, backend=self._backend, model=self._model,
                                     session_id=session_id, owner=owner)
        live_id = core.session_id
        client = self.client

        async def send(update: Update) -> None:
            async with live.replaying:
                await client.session_update(session_id=live_id, update=update)

        forwarder = UpdateForwarder(core, send)
        live = AcpSession(id=live_id, core=core, forwarder=forwarder, client=client)
        core.step_approver = live.approve_step

        async def kill() -> None:  # `/kill`: no longer open here (a later prompt is -32602), closed as its prompt ends
            self._sessions.pop(live_id, None)
            live.killed = True

        core.on_kill = kill
        core.tell_answers = False  # the permission card shows the answer: no "allowed: ..." line as agent text
        core.resume_how, core.help_width = "the client's session list (session/load)", None  # its window breaks /help
        core.set_documents(client_files(client, live_id, self._fs, lambda: core.cwd))
        try:  # a registry's refusal refuses the session, as in every front end (Recorder.open)
            records = self._records
            with store_errors(live_id):
                live.recorder = await record(core, channel=Channel.ACP, title=title, registry=lambda: records.registry,
                                             user=records.user, io=records.io)
        except BaseException:
            await live.close()  # never listed: nothing ran in it
            raise
        # Listed only now: until its record says whose it is, a teammate's session would run a prompt as the owner's.
        self._sessions[live_id] = live
        if mcp:
            await core.add_mcp_servers(mcp)
        return live

    async def _opened(self, live: AcpSession, response: Callable[..., _Answer], **fields: Any) -> _Answer:
        """The answer to session/load, /resume or /fork: `response` with `fields`, the mode and the config options the
        session opens with (an agent config that cannot load is told at its first reply); the session announced after
        it."""
        options = await config_options(live.core, agent_list=live.offered(await agents(live.core)))
        answer = response(**fields, modes=mode_state(live.core), config_options=options)
        self._after_answer(self._announce(live))
        return answer

    def _after_answer(self, send: Coroutine[Any, Any, None]) -> None:
        """Send updates right after the handler's answer (called last: the SDK's FIFO queue has the answer first)."""
        task = asyncio.ensure_future(send)
        self._after.add(task)
        task.add_done_callback(self._after.discard)

    async def _announce(self, live: AcpSession) -> None:
        """Once the client has the session's id (`_after_answer`): its updates (those held since it opened first: an
        MCP server that failed at once), its title (a load again: Zed names the thread anew), the slash commands, and a
        reopened one's plan and context use (else the client shows neither until the next turn's step)."""
        live.forwarder.start()  # an update of a session the client has not been told of yet is one it cannot place
        title = live.forwarder.title_update(again=True)
        await live.send(*([title] if title else []), update_available_commands(_commands()), what="slash commands")
        await live.forwarder.send_plan()
        if live.core.session.messages:  # with the model's window: one not looked up yet was sent as 0 tokens
            await live.core.context_limit()
            await live.forwarder.send_usage()

    def _get(self, session_id: str) -> AcpSession:
        live = self._sessions.get(session_id)
        if live is None:
            raise RequestError.invalid_params({"sessionId": f"no open session {session_id!r}"})
        return live

    async def prompt(self, prompt: list[PromptBlock], session_id: str, **kwargs: Any) -> PromptResponse:
        """Run the prompt (or a slash command) and answer with the stop reason once every update is out."""
        live = self._get(session_id)
        number = live.receive()  # at once: a session/cancel that comes while this is checked cancels it
        holder = inbox.Held()  # its images, counted from before they are decoded until its turn begins
        live.waiting.add(holder)
        try:
            # Archived by another client (the daemon, another window) since it was opened here: the archive wins, as
            # at a load, and nothing runs (its turn would go into an archived session). As the daemon checks.
            if live.recorder is not None and await live.recorder.archived():
                with store_errors(session_id):
                    raise ArchivedError(session_id)
            text = prompt_text(prompt, cwd=live.core.cwd)
            pictures = []
            if blocks := image_blocks(prompt):
                try:  # the daemon's bound: prompts waiting for their turn in every session held theirs, without end
                    inbox.take_images(holder, image_bytes(blocks), where="this agent",
                                      held=sum(h.images for s in self._sessions.values() for h in s.waiting))
                except inbox.QueueFull as exc:
                    raise RequestError(exc.rpc_code, f"queue full: {exc}", {"sessionId": session_id}) from None
                # Megabytes of base64 are decoded in a thread, not on the event loop.
                pictures = await asyncio.to_thread(prompt_images, prompt)
            if not text and not pictures:
                raise RequestError.invalid_params({"prompt": "the prompt has no text"})
            if pictures and is_command(text):
                raise RequestError.invalid_params({"prompt": "a command or !shell line takes no images"})
            return await live.run_prompt(number, text, pictures, holder)
        finally:
            live.waiting.discard(holder)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """session/cancel: the prompts sent before it, running or not begun yet, answer `cancelled`."""
        live = self._sessions.get(session_id)
        if live is not None:
            await live.cancel()

    async def set_session_mode(self, mode_id: str, session_id: str, **kwargs: Any) -> SetSessionModeResponse:
        """Switch the session's approval mode (the `mode` config option follows)."""
        live = self._get(session_id)
        with store_errors(session_id):  # a team member's resume of another's session: -32008
            await live.set_mode(mode_id)
        self._after_answer(live.sync_options())
        return SetSessionModeResponse()

    async def set_config_option(self, config_id: str, session_id: str, value: str | bool,
                                **kwargs: Any) -> SetSessionConfigOptionResponse:
        """`mode` switches the approval mode, `model` the backend's model, `agent` the agent config (asks first
        when the new one is unsandboxed)."""
        live = self._get(session_id)
        if not isinstance(value, str) or not value:
            raise RequestError.invalid_params({"value": "a non-empty string"})
        if config_id == "mode":
            await live.set_mode(value, field_name="value")
            self._after_answer(live.sync_options())  # the legacy mode state follows too
        elif config_id == "model":
            known = await backend_models(live.core)  # none: the backend lists none now, so any name may serve
            if known and value not in {*known, live.core.model_name}:  # the option offers these alone
                raise RequestError.invalid_params(
                    {"value": f"the backend has no model {value!r} (the model option lists its models)"})
            with invalid_params("value", RuntimeError):  # no backend: why, and what to set
                live.core.switch_model(value)
        elif config_id == "agent":
            with invalid_params("value", ConfigError), store_errors(session_id):
                await live.switch_agent(value)
        else:
            raise RequestError.invalid_params({"configId": f"unknown option {config_id!r} (mode, model, agent)"})
        return SetSessionConfigOptionResponse(config_options=await config_options(live.core))

    async def _refuse_archived(self, session_id: str) -> Info | None:
        """The session's record (None: it has none); -32002 when it is archived (its turns would write to it)."""
        with store_errors(session_id):
            info = await self._records.run(self._record, session_id)
            if info is not None and info.archived:
                raise ArchivedError(session_id)
        return info

    def _record(self, session_id: str) -> Info | None:
        """The session's record; None when it has none (its log is then its writer's alone: the store checks that)."""
        try:
            return self._records.get(session_id)
        except NotFoundError:
            return None


def _mcp_specs(servers: Any) -> dict[str, ServerSpec]:
    """The MCP servers a client sent (session/new, session/load); -32602 naming the one that is malformed."""
    with invalid_params("mcpServers", ConfigError):
        return from_acp(list(servers or []))


async def _directory(cwd: str) -> Path:
    """The session's directory, its real path; -32602 naming `cwd` unless it is an existing absolute directory."""
    with invalid_params("cwd", ValueError):
        return await session_dir(cwd, absolute=True)


def _listed_cwds(page: list[Info]) -> dict[str, str]:
    """The directory each session of the page worth listing (`logindex.worth_listing`, the one rule of every session
    list) keeps in its meta ("" when it has none)."""
    store = sessions_dir()
    listed = {}
    for info in page:
        meta, turns = logindex.meta_and_turns(store, info.id)
        if logindex.worth_listing(store, info.id, titled=bool(info.title), turns=turns):
            listed[info.id] = str(meta.get("cwd") or "")
    return listed


def _commands() -> list[AvailableCommand]:
    out = []
    for name, command in COMMANDS.items():
        hint = command.usage.partition(" ")[2]
        out.append(AvailableCommand(name=name, description=command.summary,
                                    input=AvailableCommandInput(UnstructuredCommandInput(hint=hint)) if hint else None))
    return out


def _listed_title(info: Info, user: str) -> str | None:
    """A listed session's title, escaped on one line (a teammate's record is hers to write); a teammate's shared
    session also says whose and which team's (docs/TEAM.md)."""
    if info.team and info.user_id != user:
        return escaped(f"{info.title or 'untitled'} ({info.user_id}'s, team {info.team})", keep="")
    return escaped(info.title, keep="") or None
