"""Fixtures: `ollie acp` as a subprocess, driven by the ACP Python SDK's client side, against the scripted LLM."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import acp
import pytest
import pytest_asyncio
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)

from ollie.testing import Reply
from ollie.testing.scripted import ScriptedLLMServer

AGENT_COMMAND = [sys.executable, "-m", "ollie_acp"]


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The agent's environment: this process's (private XDG dirs included, no OLLIE_*) plus `extra`."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("OLLIE_")}, **(extra or {})}


class RecordingClient:
    """An ACP client that records every update and answers permission questions from a script."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget what was recorded and scripted (a shared agent's next test starts clean)."""
        self.updates: list[tuple[str, Any]] = []
        # option ids, None = cancelled, "away" = never answered, "fail" = the error of a client without the method
        self.permission_answers: list[str | None] = []
        self.permission_requests: list[Any] = []
        self.files: dict[str, str] = {}
        self.writes: list[tuple[str, str]] = []
        # A client that saves what it writes, through the user's format on save (None: it changes its buffer only).
        self.format_on_save: Callable[[str], str] | None = None

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **kwargs: Any) -> RequestPermissionResponse:
        self.permission_requests.append((tool_call, options))
        answer = self.permission_answers.pop(0) if self.permission_answers else None
        if answer == "away":
            await asyncio.Event().wait()
        if answer == "fail":
            raise acp.RequestError.method_not_found("session/request_permission")
        if answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **kwargs: Any) -> ReadTextFileResponse:
        return ReadTextFileResponse(content=self.files[path])

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        self.writes.append((path, content))
        if self.format_on_save is not None:
            self.files[path] = self.format_on_save(content)
            Path(path).write_text(self.files[path])
        return WriteTextFileResponse()

    def of(self, session_id: str, kind: str | None = None) -> list[Any]:
        """The updates of one session (of one `sessionUpdate` kind when given)."""
        return [u for s, u in self.updates if s == session_id and (kind is None or u.session_update == kind)]

    def text(self, session_id: str, kind: str = "agent_message_chunk") -> str:
        """The joined text of a session's chunks of one kind."""
        return "".join(u.content.text for u in self.of(session_id, kind))


class Agent:
    """One running `ollie acp` and the client connected to it."""

    def __init__(self, conn: Any, proc: Any, client: RecordingClient, workspace: Path) -> None:
        self.conn = conn
        self.proc = proc
        self.client = client
        self.workspace = workspace
        # Every message from the agent, in the order it arrived (the SDK connection's observer).
        self.wire: list[dict[str, Any]] = []
        self.init: Any = None

    async def new(self, cwd: Path | None = None) -> str:
        """A new session in the workspace; its id."""
        response = await asyncio.wait_for(self.conn.new_session(cwd=str(cwd or self.workspace), mcp_servers=[]), 30)
        return response.session_id

    async def updates(self, session_id: str, kind: str, timeout: float = 30) -> list[Any]:
        """A session's updates of one kind, once at least one has come (some follow the answer that made it)."""
        deadline = time.monotonic() + timeout
        while not (found := self.client.of(session_id, kind)):
            assert time.monotonic() < deadline, f"no {kind} update for {session_id} within {timeout} s"
            await asyncio.sleep(0.01)
        return found

    async def prompt(self, session_id: str, *blocks: Any, timeout: float = 60) -> Any:
        """Send a prompt (text strings become text blocks); the response."""
        prompt = [acp.text_block(b) if isinstance(b, str) else b for b in blocks]
        return await asyncio.wait_for(self.conn.prompt(session_id=session_id, prompt=prompt), timeout)

    async def list_pages(self) -> list[list[str]]:
        """The session ids of each session/list page, following the cursors to the end."""
        pages: list[list[str]] = []
        cursor = None
        while cursor is not None or not pages:
            listed = await asyncio.wait_for(self.conn.list_sessions(cursor=cursor), 30)
            pages.append([s.session_id for s in listed.sessions])
            cursor = listed.next_cursor
        return pages


async def _spawn(stack: AsyncExitStack, *, env: dict[str, str], workspace: Path, fs: bool = False,
                 initialize: bool = True, command: list[str] | None = None) -> Agent:
    """An `ollie acp` started in `workspace` with exactly `env`, its client connected (initialized when asked)."""
    client = RecordingClient()
    agent: Agent | None = None

    def observe(event: StreamEvent) -> None:
        if event.direction is StreamDirection.INCOMING and agent is not None:
            agent.wire.append(event.message)

    conn, proc = await stack.enter_async_context(
        acp.spawn_agent_process(client, *(command or AGENT_COMMAND), env=env, cwd=workspace, observers=[observe]))
    agent = Agent(conn, proc, client, workspace)
    if initialize:
        caps = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs))
        # A bound on a hang: a loaded machine took over 30 s to start the agent (7 tests of a file at once).
        agent.init = await asyncio.wait_for(conn.initialize(protocol_version=1, client_capabilities=caps), 60)
    return agent


@asynccontextmanager
async def _agents(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """start_agent's factory, its agents stopped when the block ends."""
    async with AsyncExitStack() as stack:
        count = 0

        async def start(*, env: dict[str, str] | None = None, fs: bool = False, workspace: Path | None = None,
                        initialize: bool = True, command: list[str] | None = None) -> Agent:
            nonlocal count
            count += 1
            ws = workspace or tmp_path / f"ws{count}"
            ws.mkdir(parents=True, exist_ok=True)
            return await _spawn(stack, env=child_env(env), workspace=ws, fs=fs, initialize=initialize,
                                command=command)

        yield start


@pytest_asyncio.fixture
async def start_agent(tmp_path: Path, _private_dirs: Path) -> AsyncIterator[Callable[..., Any]]:
    """A factory: `await start_agent(env=llm.env())` gives an initialized Agent of its own; all are stopped at
    teardown. For a test of the process itself (its start, env, end of input, a crash, a config read at start)."""
    async with _agents(tmp_path) as start:
        yield start


@pytest_asyncio.fixture(loop_scope="module")
async def start_agent_beside(tmp_path: Path, _private_dirs: Path) -> AsyncIterator[Callable[..., Any]]:
    """start_agent for a test that takes `shared_agent` too: its agents live in the module's loop, where that test
    runs, with the shared agent's private dirs (the test's environment then), so one loads what the other saved."""
    async with _agents(tmp_path) as start:
        yield start


XDG_DIRS = {"XDG_CONFIG_HOME": "config", "XDG_DATA_HOME": "data", "XDG_STATE_HOME": "state", "XDG_CACHE_HOME": "cache"}


@pytest.fixture(scope="module")
def _module_llm() -> Iterator[ScriptedLLMServer]:
    """The module's scripted OpenAI-format server: the `llm` of each of its tests, and its shared agents' model."""
    server = ScriptedLLMServer("openai").start()
    yield server
    server.stop()


@pytest.fixture
def llm(_module_llm: ScriptedLLMServer) -> Iterator[ScriptedLLMServer]:
    """The module's server as this test's own: nothing left of the tests before; checked for leftover replies and
    unexpected requests at teardown."""
    _module_llm.reset()
    yield _module_llm
    _module_llm.assert_done()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test on a shared agent runs in its module's event loop, the one the agent's connection lives in."""
    for item in items:
        if "shared_agent" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.asyncio(loop_scope="module"), append=False)  # before auto mode's own


class SharedAgents:
    """A module's `ollie acp` processes, one per environment, each started at its first test and kept to the
    module's end: a test opens its own sessions on one, as Zed opens each thread on one agent."""

    def __init__(self, stack: AsyncExitStack, home: Path, llm: ScriptedLLMServer) -> None:
        self.stack = stack
        self.home = home
        self.llm = llm
        self.agents: dict[tuple[str, bool], Agent] = {}

    async def get(self, approval: str, fs: bool) -> Agent:
        """The shared agent of this approval setting and fs capability, started the first time it is asked for."""
        if (approval, fs) not in self.agents:
            env = {k: v for k, v in child_env(self.llm.env(approval=approval)).items() if k != "XDG_RUNTIME_DIR"}
            env.update({var: str(self.home / sub) for var, sub in XDG_DIRS.items()})
            workspace = self.home / f"cwd-{len(self.agents)}"
            workspace.mkdir()
            self.agents[approval, fs] = await _spawn(self.stack, env=env, workspace=workspace, fs=fs)
        return self.agents[approval, fs]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def _shared_agents(tmp_path_factory: pytest.TempPathFactory,
                         _module_llm: ScriptedLLMServer) -> AsyncIterator[SharedAgents]:
    home = tmp_path_factory.mktemp("shared-home")
    for sub in XDG_DIRS.values():
        (home / sub).mkdir()
    async with AsyncExitStack() as stack:
        yield SharedAgents(stack, home, _module_llm)


@pytest.fixture
def shared_agent(_shared_agents: SharedAgents, _private_dirs: Path, llm: ScriptedLLMServer, tmp_path: Path,
                 monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    """A factory: `await shared_agent()` gives the module's running agent (approval `auto` unless `approval=` says,
    the client's fs methods when `fs=True`) as this test's: a workspace of its own, a fresh client record. Its
    private dirs are the agent's, so what the test reads of them (saved sessions, config) is what the agent wrote."""
    for var, sub in XDG_DIRS.items():  # over _private_dirs' own (hence asked for: it comes first)
        monkeypatch.setenv(var, str(_shared_agents.home / sub))
    workspace = tmp_path / "ws"
    workspace.mkdir()

    async def get(*, approval: str = "auto", fs: bool = False) -> Agent:
        shared = await _shared_agents.get(approval, fs)
        shared.client.reset()
        view = Agent(shared.conn, shared.proc, shared.client, workspace)
        view.init = shared.init
        shared.wire = view.wire  # what comes from now on
        return view

    return get


HAND_COLUMNS = "(id, agent_id, user_id, kind, title, created_at, last_active)"


def hand_written_sessions(user: str) -> tuple[list[tuple[object, ...]], list[str]]:
    """Rows of the sessions table (HAND_COLUMNS) as written by hand: 101 sessions of `user` to list, over three pages of
    session/list, the last three never active, and among them four no ollie writes (a time past year 9999, an unknown
    kind, a 5,000-byte title); and the ids a listing gives, in order."""
    base = 1_700_000_000_000_000
    rows: list[tuple[str, str, object]] = [("chat", "late", 9 * 10**18)]  # (kind, title, last active)
    for n in range(101):
        rows.append(("chat", f"hand {n}", base - n * 1000 if n < 98 else None))
        if n in (9, 48, 98):
            malformed = {9: ("boss", "bossy", base - n * 1000 - 500), 48: ("chat", "x" * 5000, base - n * 1000 - 500),
                         98: ("boss", "never active", None)}
            rows.append(malformed[n])
    # Ids falling with the order: the sessions never active list by id, descending.
    table = [(f"1-hand{500 - i}", "default", user, kind, title, 1, active) for i, (kind, title, active) in enumerate(rows)]
    listed = [row[0] for row in table if row[3] == "chat" and row[4].startswith("hand")]
    return table, listed



def store_hand_written_sessions(user: str) -> list[str]:
    """hand_written_sessions(user) inserted into the local store a front end finds; the ids a listing gives."""
    import sqlite3
    from contextlib import closing

    from ollie.sessions.registry import Registry
    from ollie.sessions.store import default_path

    Registry().close()  # the store made, as a front end makes it
    rows, listed = hand_written_sessions(user)
    with closing(sqlite3.connect(default_path())) as conn, conn:
        conn.executemany(f"INSERT INTO sessions {HAND_COLUMNS} VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    return listed

def _sleepers(marker: str) -> list[int]:
    """Pids of the processes running `sleep <marker>` (the tool's pid may be in its own pid namespace)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (proc / "cmdline").read_bytes() == f"sleep\0{marker}\0".encode():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


async def _start_sleeper(agent: Agent, llm: Any, marker: str) -> tuple[str, asyncio.Future[Any]]:
    """A session whose turn runs `sleep <marker>` as a tool: (session id, the pending prompt)."""
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": f"exec sleep {marker}"}], "timeout": 120})))
    sid = await agent.new()
    prompt = asyncio.ensure_future(agent.prompt(sid, "sleep a minute"))
    deadline = time.monotonic() + 60
    while not _sleepers(marker):
        assert time.monotonic() < deadline, "the tool never started"
        await asyncio.sleep(0.02)
    return sid, prompt


class Sleeper:
    """A tool that sleeps: `start` runs one in a new session's turn, `pids` finds it."""

    start = staticmethod(_start_sleeper)
    pids = staticmethod(_sleepers)


@pytest.fixture
def sleeper() -> Sleeper:
    """Helpers for a turn that runs a long tool process."""
    return Sleeper()


