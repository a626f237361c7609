"""Fixtures: the real daemon as a subprocess, driven by pytest-lsp's client, against the scripted LLM server."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import json
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import register_lsp_features

from ollie.testing.scripted import Reply, ScriptedLLMServer
from ollie_lsp.protocol import raw_params_converter

SERVER_COMMAND = [sys.executable, "-m", "ollie_lsp"]

# One converter for every client of this process: cattrs builds a converter's (un)structure code for each LSP type
# the first time it meets it, ~40 ms of CPU per client for `initialize` alone (4 ms with one built already). It keeps
# no state of a client's.
client_converter = functools.cache(raw_params_converter)


def make_client() -> LanguageClient:
    """A pytest-lsp client whose custom results and notifications stay plain dicts."""
    client = LanguageClient(converter_factory=client_converter)
    register_lsp_features(client)
    client.ollie_events = []  # type: ignore[attr-defined]
    client.ollie_states = []  # type: ignore[attr-defined]
    # Both, and each answer, in arrival order: ("event" | "state", params) or ("answer", result or error).
    client.ollie_wire = []  # type: ignore[attr-defined]
    # Each session's events and states (a shared daemon's test reads, and clears, its own).
    client.ollie_session_events = collections.defaultdict(list)  # type: ignore[attr-defined]
    client.ollie_session_states = collections.defaultdict(list)  # type: ignore[attr-defined]
    handle_response = client.protocol._handle_response

    def on_response(msg_id: Any, result: Any = None, error: Any = None) -> None:
        # Read off the wire here: the awaiting test runs later, after notifications that came behind the answer.
        client.ollie_wire.append(("answer", error if error is not None else result))  # type: ignore[attr-defined]
        handle_response(msg_id, result, error)

    client.protocol._handle_response = on_response  # type: ignore[method-assign]

    @client.feature("ollie/event")
    def on_event(params: Any) -> None:
        client.ollie_events.append(params)  # type: ignore[attr-defined]
        client.ollie_session_events[params.get("session")].append(params)  # type: ignore[attr-defined]
        client.ollie_wire.append(("event", params))  # type: ignore[attr-defined]

    @client.feature("ollie/stateChanged")
    def on_state(params: Any) -> None:
        client.ollie_states.append(params)  # type: ignore[attr-defined]
        client.ollie_session_states[params.get("session")].append(params)  # type: ignore[attr-defined]
        client.ollie_wire.append(("state", params))  # type: ignore[attr-defined]

    return client


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """A daemon's or `ollie`'s environment: this process's (its private XDG dirs included, no OLLIE_*) plus `extra`."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("OLLIE_")}, **(extra or {})}


def capabilities(*, progress: bool = True) -> types.ClientCapabilities:
    """Client capabilities; `progress` says whether it takes work-done progress."""
    return types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=progress))


class Daemon:
    """One running daemon and its client, plus helpers the tests share."""

    def __init__(self, client: LanguageClient, workspace: Path) -> None:
        self.client = client
        self.workspace = workspace
        self.init_result: types.InitializeResult | None = None

    @property
    def events(self) -> list[dict[str, Any]]:
        """Every ollie/event received so far."""
        return self.client.ollie_events  # type: ignore[attr-defined]

    @property
    def states(self) -> list[dict[str, Any]]:
        """Every ollie/stateChanged received so far."""
        return self.client.ollie_states  # type: ignore[attr-defined]

    async def request(self, method: str, params: Any = None, *, timeout: float = 30) -> Any:
        """Send a request and wait for its result (errors raise JsonRpcException)."""
        return await asyncio.wait_for(self.client.protocol.send_request_async(method, params), timeout)

    async def cancelled_at_once(self, method: str, params: Any) -> Any:
        """Send a request and its `$/cancelRequest` right behind it, unawaited (the daemon runs a handler at once up
        to its first wait, the engine loading or its session being built, before it reads the cancel); its result."""
        future = self.client.protocol.send_request(method, params)
        (msg_id,) = [k for k, f in self.client.protocol._request_futures.items() if f is future]
        self.client.protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))
        return await asyncio.wait_for(asyncio.wrap_future(future), 30)

    async def wait_events(self, predicate: Callable[[list[dict[str, Any]]], bool], *, timeout: float = 30) -> None:
        """Wait until the events received satisfy `predicate`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not predicate(self.events):
            if loop.time() > deadline:
                raise AssertionError(f"timed out waiting for events; got {self.events[-10:]}")
            await asyncio.sleep(0.01)

    async def request_in_order(self, method: str, params: Any = None) -> tuple[Any, list[tuple[str, Any]]]:
        """Send a request; its result and what came before its answer on the wire since it was sent (`ollie_wire`)."""
        wire = self.client.ollie_wire  # type: ignore[attr-defined]
        sent_at = len(wire)
        result = await self.request(method, params)
        answered_at = next(n for n in range(sent_at, len(wire)) if wire[n][0] == "answer" and wire[n][1] is result)
        return result, wire[sent_at:answered_at]

    def session_events(self, session: str) -> list[dict[str, Any]]:
        """The events of one session, in arrival order."""
        return [e for e in self.events if e["session"] == session]


@contextlib.asynccontextmanager
async def daemons(base: Path, extra_env: dict[str, str] | None = None) -> AsyncIterator[Callable[..., Any]]:
    """A factory of ready daemons, each on a workspace under `base` (its env `extra_env` + the one it is given), every
    one shut down (shutdown + exit) when the block ends."""
    started: list[Daemon] = []

    async def start(
        *, env: dict[str, str] | None = None, init_options: Any = None, workspace: Path | None = None,
        progress: bool = True, initialize: bool = True, caps: types.ClientCapabilities | None = None,
        folders: list[Path] | None = None,
    ) -> Daemon:
        ws = workspace or (base / f"ws{len(started)}")
        folders = folders or [ws]  # the workspace folders the client names (a workspace file's), the first its root
        ws.mkdir(parents=True, exist_ok=True)
        config = ClientServerConfig(
            server_command=SERVER_COMMAND, client_factory=make_client, server_env=child_env({**(extra_env or {}),
                                                                                              **(env or {})})
        )
        client = await config.start()
        daemon = Daemon(client, ws)
        started.append(daemon)
        if initialize:
            daemon.init_result = await asyncio.wait_for(
                client.initialize_session(
                    types.InitializeParams(
                        capabilities=caps or capabilities(progress=progress),
                        root_uri=folders[0].as_uri(),
                        workspace_folders=[types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folders],
                        initialization_options=init_options,
                    )
                ),
                60,  # a bound on a hang: a loaded machine is slow to start the daemon
            )
        return daemon

    yield start
    lingered = []
    for daemon in started:
        try:
            await asyncio.wait_for(daemon.client.shutdown_session(), 20)
        except Exception:
            pass
        try:
            # pygls' stop waits for the process with no bound: a daemon that never exits hung the run for good.
            await asyncio.wait_for(daemon.client.stop(), 60)
        except TimeoutError:
            daemon.client._server.kill()  # type: ignore[union-attr]
            lingered.append(daemon.client._server.pid)  # type: ignore[union-attr]
    assert not lingered, f"daemons {lingered} had not exited 60 s after shutdown and exit (killed)"


@pytest_asyncio.fixture
async def start_daemon(tmp_path: Path, _private_dirs: Path) -> AsyncIterator[Callable[..., Any]]:
    """A factory: `await start_daemon(env=srv.env(), init_options={...})` gives a ready Daemon.

    Every daemon started is shut down (shutdown + exit) at teardown.
    """
    async with daemons(tmp_path) as start:
        yield start


class SharedClient:
    """A shared daemon's client as one test sees it: a handler the test registers stands in for the one before (the
    client's own, or an earlier test's) until the test ends; the messages and documents shown are the test's alone,
    and the documents it opens are closed when it ends; its work-done progress reports are its own."""

    def __init__(self, client: LanguageClient) -> None:
        self._client = client
        self._replaced: dict[str, Any] = {}
        self._opened: set[str] = set()
        client.messages.clear()
        client.shown_documents.clear()
        client.progress_reports.clear()

    def text_document_did_open(self, params: types.DidOpenTextDocumentParams) -> None:
        """didOpen, the document noted to be closed when the test ends."""
        self._opened.add(params.text_document.uri)
        self._client.text_document_did_open(params)

    def text_document_did_close(self, params: types.DidCloseTextDocumentParams) -> None:
        """didClose."""
        self._opened.discard(params.text_document.uri)
        self._client.text_document_did_close(params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def feature(self, name: str, options: Any = None) -> Callable[[Any], Any]:
        """`client.feature(name)(handler)`, over a handler already there."""
        features = self._client.protocol.fm._features  # pygls refuses a second handler for a method

        def register(handler: Any) -> Any:
            self._replaced.setdefault(name, features.pop(name, None))
            return self._client.feature(name, options)(handler)
        return register

    def restore(self) -> None:
        """Close the documents this test left open; put back the handlers it replaced."""
        for uri in self._opened:
            self._client.text_document_did_close(types.DidCloseTextDocumentParams(
                text_document=types.TextDocumentIdentifier(uri=uri)))
        features = self._client.protocol.fm._features
        for name, handler in self._replaced.items():
            features.pop(name, None)
            if handler is not None:
                features[name] = handler


class Session(Daemon):
    """A session of its own on a daemon that a module's tests share, working in a directory of its own: its `ollie/*`
    requests name it, and `events` and `states` are its alone; `made`: the sessions it opened (`ollie/session/new`,
    `ollie/session/fork`)."""

    def __init__(self, daemon: Daemon, session: str, cwd: Path) -> None:
        self.shared = SharedClient(daemon.client)
        super().__init__(self.shared, cwd)  # type: ignore[arg-type]
        self.daemon, self.session = daemon, session
        self.init_result = daemon.init_result
        self.made: list[str] = []

    @property
    def events(self) -> list[dict[str, Any]]:
        """This session's ollie/event notifications so far."""
        return self.client.ollie_session_events[self.session]  # type: ignore[attr-defined]

    @property
    def states(self) -> list[dict[str, Any]]:
        """This session's ollie/stateChanged notifications so far."""
        return self.client.ollie_session_states[self.session]  # type: ignore[attr-defined]

    async def request(self, method: str, params: Any = None, *, timeout: float = 30) -> Any:
        """As Daemon.request; an `ollie/*` method that takes a `session` is sent this one unless it names one."""
        if method.startswith("ollie/") and not method.startswith(("ollie/session/", "ollie/listCommands")):
            params = {"session": self.session, **(params or {})}
        result = await super().request(method, params, timeout=timeout)
        if method in ("ollie/session/new", "ollie/session/fork"):
            self.made.append(result["session"])
        return result


def xdg_env(home: Path) -> dict[str, str]:
    """The XDG dirs of a home laid out as `_private_dirs` (config/, data/, state/, cache/)."""
    return {var: str(home / sub) for var, sub in (("XDG_CONFIG_HOME", "config"), ("XDG_DATA_HOME", "data"),
                                                 ("XDG_STATE_HOME", "state"), ("XDG_CACHE_HOME", "cache"))}


def noted_agent_env(tmp_path: Path, llm: ScriptedLLMServer) -> dict[str, str]:
    """The env of an agent `noted` (in tmp_path/agents) whose preTurn hook adds "run the tests first" to each prompt
    the model reads, scripted to answer "done" once."""
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "noted.json").write_text(json.dumps({"prompt": "You are a test agent.",
                                                   "hooks": {"preTurn": "echo run the tests first"}}))
    llm.script(Reply.text("done"))
    return {**llm.env(), "OLLIE_AGENTS_DIR": str(agents)}


@pytest.fixture(scope="module")
def _module_llm() -> Iterator[ScriptedLLMServer]:
    """The scripted server of a module's shared daemons."""
    with ScriptedLLMServer("openai") as llm:
        yield llm


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def _shared_daemons(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Any]]:
    """A module's shared daemons, one for each env and set of initialization options asked for, with private XDG dirs
    of their own (a test's `_private_dirs` are not theirs)."""
    base = tmp_path_factory.mktemp("shared")
    home = base / "home"  # laid out as a test's `_private_dirs`
    for path in xdg_env(home).values():
        Path(path).mkdir(parents=True)
    async with daemons(base, xdg_env(home)) as start:
        yield {"start": start, "daemons": {}, "sessions": 0, "home": home}


@pytest_asyncio.fixture(loop_scope="module")
async def start_daemon_beside(tmp_path: Path, _shared_daemons: dict[str, Any]) -> AsyncIterator[Callable[..., Any]]:
    """start_daemon for a test that takes `shared_daemon` too (another editor window's daemon): its daemons live in
    the module's loop, where that test runs, on the shared daemons' dirs, so one sees the sessions the other saved."""
    async with daemons(tmp_path, xdg_env(_shared_daemons["home"])) as start:
        yield start


@pytest.fixture
def shared_home(_shared_daemons: dict[str, Any]) -> Path:
    """The shared daemons' home, laid out as `_private_dirs` (config/, data/, state/, cache/): what a test writes in
    its config/ollie is what a session it opens on them next reads."""
    return _shared_daemons["home"]


@pytest.fixture
def shared_llm(_module_llm: ScriptedLLMServer) -> Iterator[ScriptedLLMServer]:
    """The module's scripted server, with this test's requests alone; its script must be used up by the test's end."""
    yield _module_llm
    try:
        _module_llm.assert_done()
    finally:
        _module_llm.reset()


@pytest_asyncio.fixture(loop_scope="module")
async def shared_daemon(_shared_daemons: dict[str, Any]) -> AsyncIterator[Callable[..., Any]]:
    """A factory: `await shared_daemon(env=..., init_options=..., caps=..., cwd=...)` gives a new Session, working in
    `cwd` (a folder of its own by default), on the module's daemon started with that env, those options and client
    capabilities (the first to ask starts it); each session is closed when the test ends.

    For tests whose daemon state does not matter to each other; a test that changes the daemon (its config read at
    start, its process, its session table as a whole) takes `start_daemon`. Its test runs in the module's event
    loop, where the daemons' clients live (tests/conftest.py), and gets their scripted server as `llm`."""
    sessions: list[Session] = []

    async def start(*, env: dict[str, str] | None = None, init_options: Any = None, cwd: Path | None = None,
                    caps: types.ClientCapabilities | None = None) -> Session:
        key = repr((sorted((env or {}).items()), init_options, caps))
        shared = _shared_daemons["daemons"]
        if key not in shared:
            shared[key] = await _shared_daemons["start"](env=env, init_options=init_options, caps=caps)
        daemon = shared[key]
        # Two sessions of one daemon are no two daemons: a test of another daemon's doing takes start_daemon.
        assert all(s.daemon is not daemon for s in sessions), "one shared daemon per env and options in a test"
        _shared_daemons["sessions"] += 1
        folder = cwd or daemon.workspace / f"s{_shared_daemons['sessions']}"
        folder.mkdir(parents=True, exist_ok=True)
        new = await daemon.request("ollie/session/new", {"cwd": str(folder)})
        session = Session(daemon, new["session"], folder)
        sessions.append(session)
        return session

    yield start
    for session in sessions:
        session.shared.restore()
        for sid in (session.session, *session.made):  # (what a test's own sessions started, servers too, ends now)
            try:
                await session.request("ollie/session/close", {"session": sid})
            except JsonRpcException as e:  # -32001: the test closed it itself (another daemon may have loaded it)
                if e.code != -32001:
                    raise


@pytest.fixture
def llm(request: pytest.FixtureRequest) -> Any:
    """A started scripted OpenAI-format server (checked for leftovers at teardown); a test of `shared_daemon`s gets
    theirs."""
    if "shared_daemon" in request.fixturenames:
        return request.getfixturevalue("shared_llm")
    return request.getfixturevalue("scripted_llm")("openai")
