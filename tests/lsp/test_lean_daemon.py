"""The daemon's start-up path: a first turn imports no pydantic (httpx without its CLI) and none of the tool-call
machinery, and its classes generate no method nobody calls; the fork server starts with the first reply."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import ClientServerConfig

from ollie.paths import config_dir
from ollie.testing import Reply
from tests.procs import eventually

from .conftest import capabilities, child_env, make_client

# The daemon exactly as `python -m ollie_lsp` runs it, with an import finder that logs, in the daemon's own
# process (not the tool processes it forks), every pydantic, httpx, click, sqlite3 and secrets module it loads, the
# modules only a tool call needs, and the engine as a witness; and each full pass of the cycle collector.
_WATCHED = """
import gc, os, runpy, sys
log, pid = sys.argv.pop(1), os.getpid()
def full_pass(phase, info):
    if phase == "stop" and info["generation"] == 2 and os.getpid() == pid:
        with open(log, "a") as f:
            f.write("(full-collection)\\n")
gc.callbacks.append(full_pass)
class Watch:  # a finder, not an audit hook: importlib.import_module (a lazy export's load) raises no audit event
    def find_spec(self, name, path=None, target=None):
        if os.getpid() == pid and (name.partition(".")[0] in (
                "pydantic", "httpx", "click", "sqlite3", "secrets") or name in (
                "ollie.agent.core", "ollie.agent.toolround", "ollie.sandbox.egress", "ollie.tools.execute.executors",
                "ollie.tools.execute.context", "ollie.tools.editor.answers", "ollie.tools.editor.queries",
                "ollie.tools.editor.knowledge", *DEFERRED, *FEATURES, *AFTER_TOKEN)):
            with open(log, "a") as f:
                f.write(name + "\\n")
sys.meta_path.insert(0, Watch())
runpy.run_module("ollie_lsp", run_name="__main__", alter_sys=True)
"""
# What only a step that may write (the checkpoints, their git and the tree's inotify watch, the changes' types and
# diff, difflib) or a spawn (the runner, Landlock's rules, the fork server's client, its processes) needs: a session
# is built and answers without them.
_DEFERRED = ("ollie.workspace.checkpoints", "ollie.workspace.treewatch", "ollie.workspace.types",
             "ollie.workspace.diff", "difflib", "ollie.tools.execute.runner", "ollie.sandbox.spawn",
             "ollie.sandbox.rules", "ollie.sandbox.process")
# What only a slash command, an agent switch (or the agents' list) or a compaction needs: loaded by the first one.
_FEATURES = ("ollie.agent.commands", "ollie.agent.commands_info", "ollie.agent.agentswitch", "ollie.agent.compaction")
# What a first turn loads only after its first token (its reply's end: the history's marks, calls written as text;
# the runner's spawn as it ends), or a later request (a history page, the sessions' list, the backend's health) or a
# first tool call (its results, the readers' list, the locks) loads.
_AFTER_TOKEN = ("ollie.agent.history", "ollie.agent.textcalls", "ollie.sessions.cursor", "ollie.backend.health",
                "ollie.sessions.logparse", "ollie.tools.execute.results", "ollie.tools.execute.spawn",
                "ollie.tools.execute.readers", "ollie.tools.execute.flock")
for _name, _modules in (("*DEFERRED", _DEFERRED), ("*FEATURES", _FEATURES), ("*AFTER_TOKEN", _AFTER_TOKEN)):
    _WATCHED = _WATCHED.replace(_name, ", ".join(map(repr, _modules)))


async def _first_turn(log: Path, env: dict[str, str], workspace: Path, *, turn: bool = True,
                      hold: threading.Event | None = None) -> list[str]:
    """Start the watched daemon, answer a first turn (unless not `turn`), read the state; the modules it logged.

    Without a turn, those it logged by the state's answer (its shutdown records the session). With `hold` (the
    scripted reply's), "(first-token)" is logged as its first token arrives, and the reply is let end after.
    """
    # No proxy from this machine's environment unless `env` sets one.
    server_env = {k: v for k, v in child_env(env).items() if not k.lower().endswith("_proxy") or k in env}
    config = ClientServerConfig(server_command=[sys.executable, "-c", _WATCHED, str(log)],
                                client_factory=make_client, server_env=server_env)
    client = await config.start()
    try:
        await asyncio.wait_for(client.initialize_session(types.InitializeParams(
            capabilities=capabilities(), root_uri=workspace.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")])), 30)
        if turn:
            submit = asyncio.ensure_future(client.protocol.send_request_async("ollie/submit", {"text": "hi"}))
            if hold is not None:  # the reply is held before its end: what its end loads is not loaded yet
                wire = client.ollie_wire  # type: ignore[attr-defined]
                await eventually(lambda: any(k == "event" and e["role"] == "assistant" for k, e in wire), "a token")
                with log.open("a") as f:
                    f.write("(first-token)\n")
                hold.set()
            result = await asyncio.wait_for(submit, 30)
            assert result["reply"] == "hello"
        await asyncio.wait_for(client.protocol.send_request_async("ollie/state", {}), 30)
        answered = log.read_text().split() if log.exists() else []
        await asyncio.wait_for(client.shutdown_session(), 20)
    finally:
        await client.stop()
    return (log.read_text().split() if log.exists() else []) if turn else answered


async def test_a_first_turn_imports_no_pydantic_and_httpx_without_its_cli(llm, tmp_path):
    holds = threading.Event(), threading.Event()
    llm.script(Reply.text("hello", hold=holds[0]), Reply.text("hello", hold=holds[1]))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    # Params, the agent config and the sandbox policies are checked by ollie.shapes (attrs and cattrs, which
    # pygls loads anyway): pydantic never loads, on a first start or a later one.
    first = await _first_turn(tmp_path / "first.log", llm.env(), workspace, hold=holds[0])
    later = await _first_turn(tmp_path / "later.log", llm.env(), workspace, hold=holds[1])
    # Nothing of _AFTER_TOKEN by the first token, on either start.
    by_token = first[:first.index("(first-token)")] + later[:later.index("(first-token)")]
    assert [m for m in by_token if m in _AFTER_TOKEN] == []
    assert "ollie.agent.core" in first and "ollie.agent.core" in later
    # No full pass of the collector over pygls' and lsprotocol's objects while the daemon's own modules load.
    assert "(full-collection)" not in first[:first.index("ollie.agent.core")] + later[:later.index("ollie.agent.core")]
    assert [m for m in first + later if m.startswith("pydantic")] == []
    # Temporary files' names come from os.urandom: `secrets` (and the hmac and hashes it loads) is not imported.
    assert "secrets" not in first + later
    # httpx is the backends' HTTP client: loaded for the first turn, without its command-line client.
    assert "httpx" in later and [m for m in first + later if m.startswith("click")] == []
    # A chat-only turn loads none of what runs a tool call (the tool round, the executors, the egress proxy, editor
    # queries and answers and the editor's knowledge, whose types the session names), nor the checkpoints: it wrote
    # nothing; nor the slash commands, agent switching or compaction (_FEATURES). (The fork server starts as the
    # reply begins, and the policy's setup warnings are read as the turn ends: the runner and the sandbox's spawn
    # load then.)
    loaded = [m for m in first + later if m.startswith("ollie.") and m not in ("ollie.agent.core", *_AFTER_TOKEN)]
    assert [m for m in loaded if m not in _DEFERRED or m.startswith("ollie.workspace.")] == []


async def test_the_engine_loads_once_initialize_is_answered_without_waiting_for_initialized(tmp_path):
    # The client's round trip to `initialized` (an editor's own start-up in it) is time the engine's import uses.
    log, workspace = tmp_path / "early.log", tmp_path / "ws"
    workspace.mkdir()
    config = ClientServerConfig(server_command=[sys.executable, "-c", _WATCHED, str(log)],
                                client_factory=make_client, server_env=child_env())
    client = await config.start()
    client.capabilities = capabilities()  # what initialize_session sets, which sends `initialized` too
    try:
        await asyncio.wait_for(client.protocol.send_request_async(types.INITIALIZE, types.InitializeParams(
            capabilities=capabilities(), root_uri=workspace.as_uri())), 30)
        deadline = time.monotonic() + 30  # a bound: the import runs in a thread of its own
        while not (loaded := "ollie.agent.core" in (log.read_text().split() if log.exists() else [])):
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.05)
        await asyncio.wait_for(client.shutdown_session(), 20)
    finally:
        await client.stop()
    assert loaded, "no `initialized` sent: the engine never loaded"


def test_initialize_loads_no_backend_for_a_client_without_inline_completions() -> None:
    # Only a client that declares inline completions is told of them, if a completion model is set (the env file):
    # for the others, `initialize` is answered without the backends' registry (~5 ms) loaded to read it.
    code = ("import sys\nfrom lsprotocol import types\nfrom ollie_lsp.capabilities import fit_capabilities\n"
            "caps = types.ServerCapabilities(inline_completion_provider=True)\n"
            "fit_capabilities(caps, types.ClientCapabilities())\n"
            "print(caps.inline_completion_provider, 'ollie.backend.registry' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["None", "False"]


async def test_a_daemon_answers_its_first_request_without_the_checkpoints_or_the_spawn_machinery(llm, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("a file the checkpoints would watch\n")
    # The engine is loaded and the default session built (its first request waits for both): the session's
    # review, change tracker and execute server exist, their machinery does not.
    loaded = await _first_turn(tmp_path / "state.log", llm.env(), workspace, turn=False)
    assert "ollie.agent.core" in loaded
    assert [m for m in loaded if m in _DEFERRED] == []
    # Nor the registry: the default session is recorded at its first prompt (or a rename, its close), as
    # `session/list` leaves it out until then anyway.
    assert [m for m in loaded if m.startswith("sqlite3")] == []


async def test_a_daemon_whose_backend_is_down_answers_its_first_request_without_difflib(llm, tmp_path):
    # The state's health check fails and its message names the env file (absent here): difflib's guesses at a
    # misspelt key need a key that is no setting, not every such message (~0.15 MiB of the first request's RSS).
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {**llm.env(), "OLLIE_OPENAI_URL": f"http://127.0.0.1:{port}/v1"}
    loaded = await _first_turn(tmp_path / "state.log", env, workspace, turn=False)
    assert "ollie.backend.health" in loaded  # the witness: the check ran
    assert "difflib" not in loaded


async def _proxy(upstream_port: int, seen: list[bytes]) -> asyncio.Server:
    """A forwarding HTTP proxy to 127.0.0.1:`upstream_port`: each request line it gets is kept in `seen`."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream_port)

        async def answers() -> None:  # the server's answers go back as they are
            while data := await up_reader.read(65536):
                writer.write(data)
                await writer.drain()
            writer.close()

        relay = asyncio.create_task(answers())
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                line, _, rest = head.partition(b"\r\n")
                seen.append(line)
                method, target, version = line.split(b" ")
                origin_form = b"/" + target.split(b"://", 1)[1].partition(b"/")[2]  # absolute-form: a proxy's
                length = next((int(h.split(b":")[1]) for h in rest.split(b"\r\n")
                               if h.lower().startswith(b"content-length:")), 0)
                up_writer.write(b"%s %s %s\r\n%s%s" % (method, origin_form, version, rest,
                                                        await reader.readexactly(length)))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            up_writer.close()
            await asyncio.wait({relay})

    return await asyncio.start_server(handle, "127.0.0.1", 0)


async def test_with_a_proxy_set_the_daemon_reaches_its_backend_through_the_proxy(llm, tmp_path):
    llm.script(Reply.text("hello"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    upstream_port = int(llm.url.rsplit(":", 1)[1].partition("/")[0])
    seen: list[bytes] = []
    proxy = await _proxy(upstream_port, seen)
    proxy_url = f"http://127.0.0.1:{proxy.sockets[0].getsockname()[1]}"
    # A name that resolves nowhere: only the proxy can reach it.
    env = {**llm.env(), "OLLIE_OPENAI_URL": f"http://llm.invalid:{upstream_port}/v1",
           "HTTP_PROXY": proxy_url, "HTTPS_PROXY": proxy_url}
    async with proxy:
        modules = await _first_turn(tmp_path / "proxied.log", env, workspace)
    assert b"POST http://llm.invalid:%d/v1/chat/completions HTTP/1.1" % upstream_port in seen
    assert all(line.split(b" ")[1].startswith(b"http://llm.invalid:%d/v1/" % upstream_port) for line in seen)
    assert "httpx" in modules  # the backends' client: so the hook sees it when it loads


def _fork_servers(daemon_pid: int) -> list[int]:
    """The daemon's children that run the sandbox's fork server."""
    # Each thread's own children: the fork server is started from the engine-loading thread.
    children = [pid for task in Path(f"/proc/{daemon_pid}/task").iterdir()
                for pid in (task / "children").read_text().split()]
    found = []
    for pid in children:
        with contextlib.suppress(OSError):
            if b"forkserver.py" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
    return found


async def test_the_fork_server_starts_with_the_first_reply_not_at_start_up(start_daemon, llm, tmp_path):
    # An agent whose prompt is plain text: nothing would spawn a process before a tool call.
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "plain.json").write_text(json.dumps({"prompt": "You are plain."}))
    daemon = await start_daemon(env={**llm.env(), "OLLIE_AGENTS_DIR": str(agents)}, init_options={"agent": "plain"})
    pid = daemon.client._server.pid  # type: ignore[attr-defined]
    # Answered once the engine is loaded: the fork server's interpreter did not compete with that start.
    assert (await daemon.request("ollie/state", {}))["agent"] == "plain"
    assert _fork_servers(pid) == []
    # A turn whose request fails has no reply: no tool call could follow, and nothing starts the fork server (it
    # would compete with the request for the CPU; it starts as a reply begins).
    llm.script(Reply.error(400, {"error": {"message": "bad request"}}))
    assert (await daemon.request("ollie/submit", {"text": "hi"}))["stop"] == "error"
    assert _fork_servers(pid) == []
    llm.script(Reply.text("hello"))
    assert (await daemon.request("ollie/submit", {"text": "hi"}))["reply"] == "hello"
    deadline = time.monotonic() + 30  # a bound: started in a worker thread as the reply began
    while not _fork_servers(pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert len(_fork_servers(pid)) == 1


_GC_PROBE = """
import gc, sys
import pygls.lsp.server  # as main() loads it: pygls and lsprotocol with the collector on, then the daemon paused
from ollie.startup import pause_gc
pause_gc()
import ollie_lsp.daemon as d
walked = []
def probe(phase, info):
    if phase == "start":
        walked.append(sum(len(gc.get_objects(g)) for g in range(info["generation"] + 1)))
gc.callbacks.append(probe)
d.load_engine()
during_load, loaded = len(walked), set(sys.modules)
keep = [[] for _ in range(5000)]  # enough new objects for young passes (every 700) and a middle one
for item in keep:
    item.append(item)  # a cycle each: the passes have something to do
print(during_load, gc.isenabled(), max(walked), gc.get_freeze_count() > 0, "httpx" in loaded)
"""


def test_the_engines_load_is_frozen_off_the_first_tokens_collections() -> None:
    # The engine and the HTTP client load with the collector paused (loaded after it, the client's import took 17
    # passes); then it runs again over new objects only (everything loaded is frozen: the engine's ~19k objects
    # were walked by the next young pass, and again by the one after, before a first token).
    out = subprocess.run([sys.executable, "-c", _GC_PROBE], capture_output=True, text=True, timeout=60, check=True)
    during_load, enabled, young, frozen, client = out.stdout.split()
    assert (during_load, enabled, frozen, client) == ("0", "True", "True", "True")
    assert int(young) < 5_000  # what a young pass walked: the new objects (~700), not the loaded modules'


# The dataclasses and attrs classes a first turn imports whose equality the code or the tests compare; the others
# generate no __eq__ (nor, frozen attrs ones, a __hash__), and none a __repr__ (each generated method is source
# compiled at import, before the first token; no log line or message shows one).
# (PlanChange: a field of ToolStep, whose equality compares it.)
_COMPARED = {"ollie.agent.hooks.HookResult", "ollie.agent.steps.Location", "ollie.agent.steps.ToolStep",
             "ollie.agent.steps.PlanChange", "ollie.agent.taskstate.PlanEntry",
             "ollie.backend.framing.SSEEvent", "ollie.backend.reply.ReplyLimits", "ollie.backend.types.ToolCall",
             "ollie.backend.types.Image", "ollie.backend.types.Message", "ollie.backend.types.StreamEvent",
             "ollie.sessions.session.TaskState", "ollie.sessions.types.Info", "ollie.tools.execute.args.ScriptCall"}
# The first turn's modules, and the sandbox policy's shapes (read as a first step runs, or a session with a user's policy opens).
_GENERATED_PROBE = """
import attrs, dataclasses, sys
import ollie_lsp.daemon, ollie_lsp.methods, ollie_lsp.sessions, ollie.agent.core, ollie.backend.openai
import ollie.sandbox.policy_schema
for name, module in list(sys.modules.items()):
    for value in vars(module).values() if name.startswith("ollie") else ():
        if not isinstance(value, type) or value.__module__ != name:
            continue
        if dataclasses.is_dataclass(value):
            made = value.__dataclass_params__
            print(f"{name}.{value.__qualname__}", "eq" if made.eq else "-", "repr" if made.repr else "-",
                  "frozen" if made.frozen else "-")
        elif attrs.has(value):
            print(f"{name}.{value.__qualname__}", "eq" if "__eq__" in vars(value) else "-",
                  "repr" if "__repr__" in vars(value) else "-", "-")
"""


def test_the_first_turns_classes_generate_no_repr_and_equality_only_where_compared() -> None:
    out = subprocess.run([sys.executable, "-c", _GENERATED_PROBE], capture_output=True, text=True, timeout=60,
                         check=True)
    made = [line.split() for line in out.stdout.splitlines()]
    assert len(made) > 90  # the probe saw the engine's classes (~75 dataclasses, ~40 attrs classes)
    assert [name for name, _, shown, _ in made if shown == "repr"] == []
    assert {name for name, eq, _, _ in made if eq == "eq"} == _COMPARED
    # A frozen dataclass compiles its own __setattr__ and __delattr__ (~1.3 M instructions a class): a shared instance
    # is an attrs.frozen one instead, which shares attrs' one; only the compared (hashed) values stay frozen dataclasses.
    assert {name for name, _, _, frozen in made if frozen == "frozen"} <= _COMPARED


_SHAPE_PROBE = """
import linecache
from ollie.config import AgentConfig
from ollie.shapes import Invalid, parse
try:
    parse(AgentConfig, {"maxSteps": "x"})
except Invalid:
    pass
print(sorted(name for name in linecache.cache if "cattrs generated structure" in name))
"""


def test_a_shapes_first_check_generates_no_function() -> None:
    # cattrs generated, and compiled, a structure function for each shape at its first check (the agent config's
    # shapes before every first token: ~23 M instructions); ollie.shapes reads a shape's fields itself.
    out = subprocess.run([sys.executable, "-c", _SHAPE_PROBE], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


async def test_the_daemon_raises_its_descriptor_limit_to_the_hard_one(tmp_path) -> None:
    # Started with a soft limit far under the hard one (each proxied connection of a step holds six descriptors).
    code = ("import resource, runpy; hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]; "
            "resource.setrlimit(resource.RLIMIT_NOFILE, (512, hard)); "
            "runpy.run_module('ollie_lsp', run_name='__main__', alter_sys=True)")
    config = ClientServerConfig(server_command=[sys.executable, "-c", code], client_factory=make_client,
                                server_env=child_env({}))
    client = await config.start()
    try:
        await asyncio.wait_for(client.initialize_session(types.InitializeParams(
            capabilities=capabilities(), root_uri=tmp_path.as_uri())), 30)
        limits = Path(f"/proc/{client._server.pid}/limits").read_text()  # type: ignore[attr-defined]
        await asyncio.wait_for(client.shutdown_session(), 20)
    finally:
        await client.stop()
    soft, hard = next(line for line in limits.splitlines() if line.startswith("Max open files")).split()[3:5]
    assert soft == hard, limits


# The daemon as `python -m ollie_lsp` runs it, where the fork server's start fails the first time, as a broken install
# would: its import of the spawn machinery raises (in the worker thread that starts it as the reply begins).
_SPAWN_BREAKS_ONCE = """
import runpy, sys
failed = []
def hook(event, args):
    if event == "import" and args[0] == "ollie.sandbox.spawn" and not failed:
        frame = sys._getframe()
        while frame is not None and frame.f_code.co_name != "_start_fork_server":
            frame = frame.f_back
        if frame is not None:
            failed.append(True)
            raise ImportError("ollie.sandbox.spawn broke for this test")
sys.addaudithook(hook)
runpy.run_module("ollie_lsp", run_name="__main__", alter_sys=True)
"""


async def test_a_fork_server_that_cannot_start_is_logged_and_the_next_reply_starts_it(llm, tmp_path):
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "plain.json").write_text(json.dumps({"prompt": "You are plain."}))
    state = tmp_path / "state"
    env = child_env({**llm.env(), "OLLIE_AGENTS_DIR": str(agents), "OLLIE_STATE_DIR": str(state)})
    config = ClientServerConfig(server_command=[sys.executable, "-c", _SPAWN_BREAKS_ONCE], client_factory=make_client,
                                server_env=env)
    client = await config.start()
    pid = client._server.pid  # type: ignore[attr-defined]
    log = state / "ollie.log"

    def submit() -> Any:
        return asyncio.wait_for(client.protocol.send_request_async("ollie/submit", {"text": "hi"}), 30)

    def logged() -> list[dict]:
        lines = log.read_text().splitlines() if log.exists() else []
        return [entry for entry in map(json.loads, lines) if "fork server" in entry["msg"]]

    try:
        await asyncio.wait_for(client.initialize_session(types.InitializeParams(
            capabilities=capabilities(), root_uri=tmp_path.as_uri(), initialization_options={"agent": "plain"})), 30)
        llm.script(Reply.text("hello"), Reply.text("again"))
        assert (await submit())["reply"] == "hello"
        deadline = time.monotonic() + 30  # a bound: the worker thread logs it as it fails
        while not logged() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        # Said plainly, with the cause, where it read "Future exception was never retrieved".
        [entry] = logged()
        assert entry["level"] == "error" and "could not be started" in entry["msg"]
        assert "ollie.sandbox.spawn broke for this test" in entry["exc"]
        assert "never retrieved" not in log.read_text() and _fork_servers(pid) == []
        # The next reply tries again, and it starts.
        assert (await submit())["reply"] == "again"
        deadline = time.monotonic() + 30
        while not _fork_servers(pid) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert len(_fork_servers(pid)) == 1
        await asyncio.wait_for(client.shutdown_session(), 20)
    finally:
        await client.stop()


async def test_a_prompt_sent_as_the_daemon_starts_streams_before_the_sandbox_policy_is_read(start_daemon, llm):
    # The policy's read (YAML and its checks, ~25 ms of CPU with the GIL held) ran beside a cold first turn and held
    # its first token back: a prompt that waited for the default session has its reply begin first, and a broken
    # policy is said right after (before any step: a step's call comes after its reply).
    policy = config_dir() / "sandbox.yaml"
    policy.parent.mkdir(parents=True, exist_ok=True)
    policy.write_text("netwrok:\n  enabled: true\n")  # a misspelt key
    llm.script(Reply.text("hello"))
    daemon = await start_daemon(env=llm.env(), initialize=False)
    client, root = daemon.client, daemon.workspace.as_uri()
    wire = client.ollie_wire  # type: ignore[attr-defined]

    class Told(list):  # window/showMessage among the events, in arrival order
        def append(self, params: Any) -> None:
            wire.append(("message", params.message))
            super().append(params)

    client.messages = Told()
    client.capabilities = capabilities()  # what initialize_session sets, which waits for the answer
    # As an editor started with a prompt: initialize, initialized and the prompt written at once, so the prompt
    # waits for the default session (the engine loads after the answer).
    init = client.protocol.send_request(types.INITIALIZE, types.InitializeParams(
        capabilities=capabilities(), root_uri=root, workspace_folders=[types.WorkspaceFolder(uri=root, name="ws")]))
    client.protocol.notify(types.INITIALIZED, types.InitializedParams())
    result = await asyncio.wait_for(client.protocol.send_request_async("ollie/submit", {"text": "hi"}), 60)
    await asyncio.wait_for(asyncio.wrap_future(init), 60)
    assert result["reply"] == "hello"
    await eventually(lambda: any(kind == "message" and "'netwrok'" in said for kind, said in wire), "the policy told")
    first = next(n for n, (kind, said) in enumerate(wire) if kind == "event" and said["role"] == "assistant")
    told = next(n for n, (kind, said) in enumerate(wire) if kind == "message" and "'netwrok'" in said)
    assert first < told, wire
