"""MCP servers through the daemon: the SDK test server's tools as steps, approval, crash and restart, cancel, status."""

from __future__ import annotations

import asyncio
import http.server
import json
import shutil
import socket
import socketserver
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from ollie.testing import Reply, nethosts
from tests.procs import eventually

from .cards import answer_cards
from .conftest import Daemon, child_env
from .test_cli import OLLIE, run_ollie
from .test_methods import rpc_error

SERVER = Path(__file__).parents[1] / "mcp" / "server.py"
# What the test server's `screenshot` returns: a 3x2 grey PNG (tests/mcp/server.py's png(3, 2)).
SCREEN_PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000003000000020800000000b81f39c60000000e49444154789c636868"
                           "68600062000c080301c5a1b9860000000049454e44ae426082")
pytestmark = pytest.mark.timeout(180)


def configure(home: Path, servers: dict[str, Any]) -> Path:
    """Write the user's mcp.json (in the tests' private XDG config dir)."""
    config = home / "config" / "ollie"
    config.mkdir(parents=True, exist_ok=True)
    (config / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    return config / "mcp.json"


def test_server(*args: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(SERVER), *args]}


test_server.__test__ = False  # type: ignore[attr-defined]


FS_BIN = Path(__file__).parents[1] / "mcp" / "npm" / "node_modules" / ".bin" / "mcp-server-filesystem"


def fs_server(ws: Path) -> dict[str, Any]:
    """The npm reference filesystem server serving `ws`, as users configure it (scripts/setup.d/45-mcp.sh installs it)."""
    if not FS_BIN.exists():
        pytest.fail("the filesystem server is missing: run scripts/setup.d/45-mcp.sh (scripts/test does)")
    return {"command": str(FS_BIN), "args": [str(ws)]}


def workspace_with_hello(tmp_path: Path) -> Path:
    ws = tmp_path / "ws0"
    ws.mkdir()
    (ws / "hello.txt").write_text("hello from the workspace\n")
    return ws


def state_dir(home: Path, name: str) -> Path:
    return home / "state" / "ollie" / "mcp" / name


@pytest.fixture
def mcp_home(shared_home: Path) -> Path:
    """The shared daemons' home (their mcp.json: configure it before the test's session opens), with no MCP server's
    own dir, nor mcp.json, left of an earlier test's: a server notes its starts, calls and cancels there."""
    shutil.rmtree(shared_home / "state" / "ollie" / "mcp", ignore_errors=True)
    (shared_home / "config" / "ollie" / "mcp.json").unlink(missing_ok=True)
    return shared_home


async def submit(daemon: Daemon, text: str) -> str:
    return (await daemon.request("ollie/submit", {"text": text}, timeout=90))["reply"]


def tool_results(llm: Any) -> list[str]:
    """What the model was told of its calls, in order."""
    return [m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "tool"]


async def wait_state(daemon: Daemon, name: str, state: str, timeout: float = 60) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        servers = (await daemon.request("ollie/mcp/list", {}))["servers"]
        found = next((s for s in servers if s["name"] == name), None)
        if found is not None and found["state"] == state:
            return found
        if loop.time() > deadline:
            raise AssertionError(f"server {name} not {state}: {servers}")
        await asyncio.sleep(0.1)


async def test_tools_are_steps_with_kinds_titles_and_approval(shared_daemon, llm, mcp_home):
    configure(mcp_home, {"t": test_server()})
    llm.script(Reply.tool_calls(("mcp__t__add", {"a": 2, "b": 3})), Reply.text("added"),
               Reply.tool_calls(("mcp__t__create_issue", {"title": "the bug"})), Reply.text("filed"),
               Reply.tool_calls(("mcp__t__fails", {})), Reply.text("saw it fail"))
    daemon = await shared_daemon(env=llm.env(approval="ask"))
    asked: list[str] = []

    @daemon.client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def on_request(params: types.ShowMessageRequestParams):
        asked.append(params.message)
        return types.MessageActionItem(title="Allow once")

    listed = await wait_state(daemon, "t", "ready")
    kinds = {t["name"]: t["kind"] for t in listed["tools"]}
    assert kinds["mcp__t__add"] == "read" and kinds["mcp__t__create_issue"] == "other"
    assert [p["name"] for p in listed["prompts"]] == ["review"]

    assert await submit(daemon, "add") == "added"
    offered = {t["function"]["name"]: t["function"] for t in llm.chat_requests[0].body["tools"]}
    assert offered["mcp__t__add"]["parameters"]["properties"]["a"]["type"] == "integer"
    assert tool_results(llm) == ["5"]
    assert asked == []  # read-only hint: never asks

    assert await submit(daemon, "file it") == "filed"
    assert len(asked) == 1 and 't: create_issue "the bug"' in asked[0]
    # "Allow always" names the tool as the step does (Bug: "`mcp__t__create_issue` commands", the model's name for it).
    assert '("Allow always" covers `t: create_issue` calls in this session)' in asked[0], asked[0]
    assert "created issue 'the bug'" in tool_results(llm)[-1]
    # The server wrote into its own dir, the only one it may write.
    assert (state_dir(mcp_home, "t") / "issues.txt").read_text() == "the bug\n"

    assert await submit(daemon, "fail") == "saw it fail"
    assert "this tool always fails" in tool_results(llm)[-1]
    steps = [e["tool"] for e in daemon.events if e.get("role") == "tool" and e.get("tool")]
    titles = {s["title"]: s for s in steps}
    assert titles['t: create_issue "the bug"']["status"] == "completed"
    assert titles["t: add"]["kind"] == "read"
    assert titles["t: fails"]["status"] == "failed"


async def test_a_prompt_waiting_for_a_slow_server_says_so_and_goes_with_its_tools(shared_daemon, llm, mcp_home):
    # A server still starting held the session's first prompt 15 s with no word of why, at the session's start.
    configure(mcp_home, {"g": test_server("gated")})
    llm.script(Reply.tool_calls(("mcp__g__add", {"a": 2, "b": 3})), Reply.text("added"))
    daemon = await shared_daemon(env=llm.env())
    added = asyncio.ensure_future(submit(daemon, "add"))
    await eventually(lambda: any("waiting for MCP server 'g' to start" in (e.get("content") or "") for e in daemon.events)
                     or added.done(), "the prompt told what it waits for")
    home = state_dir(mcp_home, "g")
    await eventually((home / "gated").exists, "the server waiting")
    assert not added.done()
    (home / "open").touch()  # it starts now: the prompt goes on, with its tools
    assert await added == "added"
    assert "mcp__g__add" in [t["function"]["name"] for t in llm.chat_requests[-2].body["tools"]]
    assert tool_results(llm) == ["5"]


async def test_the_question_shows_every_argument_of_the_call(shared_daemon, llm, mcp_home):
    """The title names the first text argument alone: a model putting a decoy first (`note`, which the server ignores)
    had the user allow `t: create_issue "..."` while the issue filed was the other argument's, and a number (`slow`'s
    seconds) was never shown. A bidi override (which reorders what an editor shows after it) is shown as an escape."""
    configure(mcp_home, {"t": test_server()})
    llm.script(Reply.tool_calls(("mcp__t__create_issue", {"note": "\u202eylno sdaer", "title": "rm -rf the repo"})),
               Reply.text("filed"))
    daemon = await shared_daemon(env=llm.env(approval="ask"), init_options={"permissionRequest": True})
    questions = answer_cards(daemon, "reject")
    await wait_state(daemon, "t", "ready")
    await submit(daemon, "file it")
    (question,) = questions
    assert question["step"]["title"] == 't: create_issue "\\u202eylno sdaer"', question
    assert question["step"]["code"] == '{\n  "note": "\\u202eylno sdaer",\n  "title": "rm -rf the repo"\n}', question


async def test_a_crashing_server_restarts_and_the_user_is_told(shared_daemon, llm, mcp_home):
    configure(mcp_home, {"t": test_server()})
    llm.script(Reply.tool_calls(("mcp__t__crash", {})), Reply.text("it crashed"),
               Reply.tool_calls(("mcp__t__add", {"a": 1, "b": 1})), Reply.text("back"))
    daemon = await shared_daemon(env=llm.env())
    await wait_state(daemon, "t", "ready")
    assert await submit(daemon, "crash it") == "it crashed"
    # The model reads why, as /mcp says it, not the SDK's bare "Connection closed".
    told = tool_results(llm)[-1]
    assert told.startswith("MCP server 't' went away during the call (the server exited (status 3)"), told
    await daemon.wait_events(lambda evs: any("MCP server 't' failed" in e.get("content", "") for e in evs),
                             timeout=30)
    again = await wait_state(daemon, "t", "ready")
    assert again["restarts"] == 1
    assert "t (stdio, restarted 1x): ready" in await submit(daemon, "/mcp")
    assert await submit(daemon, "add") == "back"
    # Restarted by hand, it starts anew: its automatic restarts before are no longer counted.
    assert await submit(daemon, "/mcp restart t") == "restarted t: ready"
    assert (await wait_state(daemon, "t", "ready"))["restarts"] == 0
    assert "t (stdio): ready" in await submit(daemon, "/mcp")
    assert tool_results(llm)[-1] == "2"


async def test_a_server_that_fails_at_start_is_shown_with_what_it_said(shared_daemon, llm, mcp_home):
    # A user's server exits at start saying why on stderr (a missing token): `/mcp` shows that, and its status
    # (Bug: only the SDK's "Connection closed", the server's own words lost).
    configure(mcp_home, {"t": {"command": sys.executable,
                                    "args": ["-c", "import sys; sys.exit('error: GITHUB_TOKEN is not set')"]}})
    daemon = await shared_daemon(env=llm.env())
    failed = await wait_state(daemon, "t", "failed")
    assert failed["error"] == "the server exited (status 1): error: GITHUB_TOKEN is not set", failed
    await daemon.wait_events(lambda evs: any("GITHUB_TOKEN is not set" in e.get("content", "") for e in evs),
                             timeout=30)


async def test_what_a_failed_server_said_is_shown_escaped(shared_daemon, llm, mcp_home):
    # Red team 54: a server's last words on stderr (an OSC 52 that sets the clipboard, a U+202E) went as they came to
    # /mcp and the chat's notice, through to the terminal and both editors.
    said = "error: \x1b]52;c;cm0gLXJmIH4=\x07 token \u202eexe.txt"
    configure(mcp_home, {"t": {"command": sys.executable, "args": ["-c", f"import sys; sys.exit({said!r})"]}})
    daemon = await shared_daemon(env=llm.env())
    failed = await wait_state(daemon, "t", "failed")
    shown = "error: \\x1b]52;c;cm0gLXJmIH4=\\x07 token \\u202eexe.txt"
    assert failed["error"] == f"the server exited (status 1): {shown}", failed
    await daemon.wait_events(lambda evs: any(shown in e.get("content", "") for e in evs), timeout=30)
    assert not any("\x1b" in (e.get("content") or "") for e in daemon.events), daemon.events


async def test_a_server_installed_in_a_virtualenv_on_the_users_path_is_named_with_what_to_write(
        start_daemon, llm, _private_dirs, tmp_path):
    """A new user's `pip install notes-mcp` in an activated venv, `"command": "notes-mcp"`: their shell finds it, the
    server's PATH leaves Python environments out, and `/mcp` said only "[Errno 2] No such file or directory:
    'notes-mcp'". Now it names where it is and what to write."""
    import os

    venv = tmp_path / "venvs" / "notes"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {Path(sys.base_prefix) / 'bin'}\n")
    program = venv / "bin" / "notes-mcp"
    program.write_text(f"#!/bin/sh\nexec {sys.executable} {SERVER}\n")
    program.chmod(0o755)
    config = configure(_private_dirs, {"notes": {"command": "notes-mcp"}, "typo": {"command": "notes-mpc"},
                                       "gone": {"command": str(tmp_path / "uninstalled" / "notes-mcp")}})
    env = {**llm.env(), "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    daemon = await start_daemon(env=env)
    failed = await wait_state(daemon, "notes", "failed")
    assert failed["error"] == (f"'notes-mcp' is {program}, in a directory left out of MCP servers' PATH (a project's "
                               "or Python environment, or one tool code may write): name it by that absolute path as "
                               'the "command"'), failed
    typo = await wait_state(daemon, "typo", "failed")
    assert typo["error"].startswith("'notes-mpc' is not on PATH (") and typo["error"].endswith(
        "): install it, or name it by its absolute path"), typo
    gone = await wait_state(daemon, "gone", "failed")
    assert gone["error"] == f"{tmp_path}/uninstalled/notes-mcp does not exist: install it, or fix the \"command\"", gone
    # A missing program is not there a second later either: said once, not retried (Bug: five restarts, each
    # saying the same) until the user fixes the config and asks (`/mcp restart`).
    said = [f"MCP server '{name}' cannot start: " for name in ("notes", "typo", "gone")]
    await daemon.wait_events(lambda evs: all(any(s in e.get("content", "") for e in evs) for s in said), timeout=30)
    assert all(s["restarts"] == 0 for s in (await daemon.request("ollie/mcp/list", {}))["servers"])
    notices = [e["content"] for e in daemon.events if "MCP server 'typo'" in e.get("content", "")]
    assert notices == [f"MCP server 'typo' cannot start: {typo['error']}. Not retried: fix {config}, "
                       "then /mcp restart typo"], notices


async def test_a_server_installed_in_the_workspaces_venv_is_not_to_be_named_by_its_path(
        start_daemon, llm, _private_dirs, tmp_path):
    """The usual activated venv is the project's own `.venv`, inside the workspace: the message said to name
    `<ws>/.venv/bin/notes-mcp` as the command, the very program PATH leaves out because a step may plant one there
    (it would start as the server, with its env's tokens). It says where tool code may write, and to install it
    elsewhere."""
    import os

    ws = tmp_path / "proj"
    program = ws / ".venv" / "bin" / "notes-mcp"
    program.parent.mkdir(parents=True)
    program.write_text(f"#!/bin/sh\nexec {sys.executable} {SERVER}\n")
    program.chmod(0o755)
    configure(_private_dirs, {"notes": {"command": "notes-mcp"}})
    env = {**llm.env(), "PATH": f"{program.parent}{os.pathsep}{os.environ['PATH']}"}
    daemon = await start_daemon(env=env, workspace=ws)
    failed = await wait_state(daemon, "notes", "failed")
    assert failed["error"] == (f"'notes-mcp' is {program}, where tool code may write (a program a step put there "
                               "would start as this server, with its env): install it elsewhere (pipx, npm -g) and "
                               'name that path as the "command"'), failed


async def test_a_servers_connection_is_put_to_the_user_naming_the_server(start_daemon, llm, _private_dirs, listener):
    # The server runs in its own network namespace; its connection to a host off the allow-list is asked about
    # during the call that made it, naming the step (Bug: its process was started outside any call, so nobody
    # was asked and the connection was refused unasked).
    configure(_private_dirs, {"t": test_server()})
    url = f"http://other.test:{listener.port}/x"
    llm.script(Reply.tool_calls(("mcp__t__fetch", {"url": url})), Reply.text("refused"),
               Reply.tool_calls(("mcp__t__fetch", {"url": url})), Reply.text("fetched"))
    env = {**llm.env(approval="auto"), **nethosts.env({"other.test": "127.0.0.1"})}
    daemon = await start_daemon(env=env, init_options={"permissionRequest": True})
    questions: list[dict[str, Any]] = []
    answers = iter(["reject", "allow_once"])

    @daemon.client.feature("ollie/permission")
    def on_permission(params: Any):
        questions.append(params["step"])
        return {"outcome": next(answers)}

    await wait_state(daemon, "t", "ready")
    assert await submit(daemon, "fetch it") == "refused"
    (question,) = questions
    assert question["network"] == {"host": "other.test", "port": listener.port, "scheme": "http"}
    assert question["title"].startswith(f"connect to other.test:{listener.port} (network; step: t: fetch"), question
    assert "status 403" in tool_results(llm)[-1] and not listener.received
    assert await submit(daemon, "again") == "fetched"
    assert len(questions) == 2 and "status 200" in tool_results(llm)[-1], tool_results(llm)
    (tool,) = [e["tool"] for e in daemon.events if e.get("role") == "tool" and e.get("tool")][-1:]
    assert [(c["host"], c["verdict"], c["how"]) for c in tool["network"]] == [("other.test", "allowed", "once")]


def hung_server(*args: str, **options: Any) -> dict[str, Any]:
    """tests/mcp/hung_server.py: lists its tool `wait`, then never answers a call (nor its cancel)."""
    return {"command": sys.executable, "args": [str(SERVER.with_name("hung_server.py")), *args], **options}


async def cancels(home: Path, name: str) -> list[str]:
    """The reasons of the `notifications/cancelled` the hung server `name` got, once it got one (it notes them
    as they come, maybe after the turn ended)."""
    file = state_dir(home, name) / "cancels"
    for _ in range(600):
        if file.exists() and file.read_text().endswith("\n"):
            break
        await asyncio.sleep(0.05)
    return [json.loads(line)["params"]["reason"] for line in file.read_text().splitlines()]


async def test_a_call_to_a_hung_server_ends_at_its_timeout_and_the_turn_goes_on(shared_daemon, llm, mcp_home):
    # Bug: a call to a server that never answers held the turn for 600 s, whatever the user had configured.
    file = configure(mcp_home, {"h": hung_server(timeout=1500)})
    llm.script(Reply.tool_calls(("mcp__h__wait", {})), Reply.text("moved on"))
    daemon = await shared_daemon(env=llm.env())
    await wait_state(daemon, "h", "ready")
    loop = asyncio.get_running_loop()
    began = loop.time()

    assert await submit(daemon, "wait for it") == "moved on"

    assert 1.5 <= loop.time() - began < 30
    assert tool_results(llm)[-1] == (
        "MCP server 'h' did not answer the call of wait within 1.5 s, so it was cancelled; the server may be stuck. "
        f"Its `timeout` (in milliseconds) in {file} sets how long a call may take")
    assert await cancels(mcp_home, "h") == ["no answer within 1.5 s"]
    step = [e["tool"] for e in daemon.events if e.get("role") == "tool" and e.get("tool")][-1]
    assert step["status"] == "failed", step


async def test_a_server_that_answers_no_ping_after_a_timed_out_call_is_restarted(shared_daemon, llm, mcp_home):
    # Kept as it was, a stuck server made every later call wait its whole timeout again.
    configure(mcp_home, {"h": hung_server("deaf", timeout=1000)})
    llm.script(Reply.tool_calls(("mcp__h__wait", {})), Reply.text("moved on"))
    daemon = await shared_daemon(env=llm.env())
    await wait_state(daemon, "h", "ready")
    assert await submit(daemon, "wait for it") == "moved on"
    told = "MCP server 'h' answered neither a call nor a ping within 5 s: restarting it"
    await daemon.wait_events(lambda events: any(told in str(e.get("content")) for e in events), timeout=60)
    starts = state_dir(mcp_home, "h") / "starts"
    for _ in range(600):  # a second process starts (each start notes a line)
        if len(starts.read_text().split()) == 2:
            break
        await asyncio.sleep(0.05)
    assert len(set(starts.read_text().split())) == 2, starts.read_text()
    await wait_state(daemon, "h", "ready")


@pytest.mark.parametrize("hung", [False, True], ids=["answering", "hung"])
async def test_interrupt_ends_the_call_at_once_and_the_server_is_told(shared_daemon, llm, mcp_home, hung):
    # `slow` notes a cancel in its dir as `cancelled`; the hung server never answers (not even the cancel) and
    # notes each cancel in `cancels`. The default timeout (120 s) is far off.
    server, call, started, told = ((hung_server(), ("mcp__t__wait", {}), "calls", "cancels") if hung else
                                   (test_server(), ("mcp__t__slow", {"seconds": 120}), "slow-started", "cancelled"))
    configure(mcp_home, {"t": server})
    llm.script(Reply.tool_calls(call))
    daemon = await shared_daemon(env=llm.env())
    await wait_state(daemon, "t", "ready")
    turn = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "wait"}, timeout=90))
    while not (state_dir(mcp_home, "t") / started).exists():
        await asyncio.sleep(0.05)

    await daemon.request("ollie/interrupt", {})
    await asyncio.wait_for(turn, 10)

    marker = state_dir(mcp_home, "t") / told
    for _ in range(600):
        if marker.exists():
            break
        await asyncio.sleep(0.05)
    assert marker.exists(), "the server was not told (notifications/cancelled)"
    if hung:
        assert await cancels(mcp_home, "t") == ["interrupted by the user"]
    assert (await daemon.request("ollie/state", {}))["running"] is False


async def test_mcp_command_and_prompts_as_slash_commands(shared_daemon, llm, mcp_home):
    configure(mcp_home, {"t": test_server()})
    llm.script(Reply.text("reviewed"), Reply.text("read it"))
    daemon = await shared_daemon(env=llm.env())
    await wait_state(daemon, "t", "ready")
    shown = await submit(daemon, "/mcp")
    assert "t (stdio): ready" in shown and "mcp__t__add [read]" in shown and "/mcp:t:review path=..." in shown
    assert "/mcp add t note://readme" in shown
    assert await submit(daemon, "/mcp:t:review src/a.py") == "reviewed"
    assert llm.chat_requests[-1].body["messages"][-1]["content"].endswith("Please review src/a.py carefully.")
    missing = await submit(daemon, "/mcp:t:nope")
    assert "no MCP prompt 'nope' on server 't'" in missing
    # A resource added as context reaches the model with the next prompt.
    assert "added note://readme of t" in await submit(daemon, "/mcp add t note://readme")
    assert await submit(daemon, "what does it say?") == "read it"
    assert "the readme of the test server" in json.dumps(llm.chat_requests[-1].body["messages"])
    # /mcp restart reconnects a server, or says there is no such server.
    assert await submit(daemon, "/mcp restart t") == "restarted t: ready"
    assert "no MCP server 'nope'" in await submit(daemon, "/mcp restart nope")
    assert (await wait_state(daemon, "t", "ready"))["restarts"] == 0


async def test_mcp_shows_a_servers_prompt_and_resource_names_on_one_line_each(shared_daemon, llm, mcp_home):
    # Red team 52: a server's prompt and resource names are its own text: their line breaks forged a ready server and
    # a read-only tool in /mcp's listing (the terminal, the editors' chats), a U+202E reversed the rest.
    configure(mcp_home, {"t": test_server("forged")})
    daemon = await shared_daemon(env=llm.env())
    await wait_state(daemon, "t", "ready")
    shown = await submit(daemon, "/mcp")
    assert "\u202e" not in shown, shown
    forged = " $(pass-filled)\\n  ok (stdio): ready\\n    mcp__ok__read [read] \\u202etxt.exe"
    assert f"    /mcp:t:p{forged} path=..." in shown.splitlines(), shown
    assert f"    /mcp add t note://forged — notes{forged}" in shown.splitlines(), shown
    assert not any(line.startswith("  ok ") for line in shown.splitlines()), shown


async def test_a_bad_config_names_the_file_and_key(shared_daemon, llm, mcp_home):
    # One bad entry is left out, named; the others start (Bug: a typo in one left every server of mcp.json off).
    file = configure(mcp_home, {"bad": {"command": "x", "args": "not-a-list"}, "t": test_server()})
    daemon = await shared_daemon(env=llm.env())
    await wait_state(daemon, "t", "ready")
    shown = await submit(daemon, "/mcp")
    assert f"{file}: mcpServers.bad.args: expected an array, got a string" in shown, shown


async def test_mcp_names_an_unreachable_http_servers_url_and_what_to_do(shared_daemon, llm, mcp_home):
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    file = configure(mcp_home, {"web": {"url": f"http://127.0.0.1:{port}/mcp?key=s3cret"}})
    daemon = await shared_daemon(env=llm.env())
    await wait_state(daemon, "web", "failed")

    shown = await submit(daemon, "/mcp")

    assert (f"): failed: http://127.0.0.1:{port}/mcp?...: All connection attempts failed; check that the server runs "
            f"there and that its url and headers in {file} are right, then /mcp restart web") in shown, shown
    assert "s3cret" not in shown


class _WebPage(http.server.BaseHTTPRequestHandler):
    """A plain web server's answer to anything: a page, with the status `server.status`."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        page = b"<html><body>It works!</body></html>"
        self.send_response(self.server.status)  # type: ignore[attr-defined]
        self.send_header("Content-Type", getattr(self.server, "kind", "text/html; charset=utf-8"))
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    do_GET = do_DELETE = do_POST  # noqa: N815

    def log_message(self, *args: object) -> None:
        pass


class _HostilePage(_WebPage):
    """A page whose content type says more than a type, with a U+202E as UTF-8 (HTTP lets a value's bytes past 0x7f
    through; httpx reads them as UTF-8)."""

    def send_header(self, keyword: str, value: str) -> None:
        if keyword == "Content-Type":
            self._headers_buffer.append(b"Content-Type: text/html  ok (http): ready \xe2\x80\xaelmth.exe\r\n")
            return
        super().send_header(keyword, value)


async def test_an_http_server_that_is_no_mcp_server_fails_at_once_saying_what_answered(shared_daemon, llm, mcp_home):
    # A url that is a plain web server's (a page, or a 404): the first prompt waited out the start's 30 s (the SDK
    # dropped a page's answer) and /mcp said "did not answer within 30s" (for a 404: "Session terminated").
    servers = {}
    for name, status in (("page", 200), ("gone", 404)):
        servers[name] = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _WebPage)
        servers[name].daemon_threads, servers[name].status = True, status  # type: ignore[attr-defined]
        threading.Thread(target=servers[name].serve_forever, daemon=True).start()
    try:
        file = configure(mcp_home, {name: {"url": f"http://127.0.0.1:{s.server_address[1]}/mcp"}
                                    for name, s in servers.items()})
        llm.script(Reply.text("hello"))
        daemon = await shared_daemon(env=llm.env())
        async with asyncio.timeout(10):  # (FIRST_LIST_WAIT_S is 15: the prompt no longer waits for them)
            assert await submit(daemon, "hi") == "hello"
        shown = await submit(daemon, "/mcp")
        for name, said in (("page", "HTTP 200 OK, text/html"), ("gone", "HTTP 404 Not Found, text/html")):
            url = f"http://127.0.0.1:{servers[name].server_address[1]}/mcp"
            error = (f"{url}: not an MCP server's answer ({said}); check that the server runs there and that its url "
                     f"and headers in {file} are right, then /mcp restart {name}")
            assert f"  {name} (http): failed: {error}\n" in shown + "\n", shown  # not retried: a page stays a page
            assert f"MCP server {name!r} cannot start: {error}. Not retried" in "".join(
                e.get("content") or "" for e in daemon.events), daemon.events
    finally:
        for server in servers.values():
            server.shutdown()


async def test_a_non_mcp_answers_content_type_is_quoted_escaped(shared_daemon, llm, mcp_home):
    # Red team 54: the server chose the content type `_foreign` quotes in the server's error: its U+202E reached /mcp
    # and the cannot-start notice as it came (the terminal, both editors, `ollie doctor` reversed the rest).
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _HostilePage)
    server.daemon_threads, server.status = True, 200  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        configure(mcp_home, {"page": {"url": f"http://127.0.0.1:{server.server_address[1]}/mcp"}})
        daemon = await shared_daemon(env=llm.env())
        await wait_state(daemon, "page", "failed")
        shown = await submit(daemon, "/mcp")
        notices = "".join(e.get("content") or "" for e in daemon.events)
        for said in (shown, notices):
            assert "(HTTP 200 OK, text/html  ok (http): ready \\u202elmth.exe)" in said, repr(said)
            assert "\u202e" not in said, said
    finally:
        server.shutdown()


async def test_a_page_said_to_be_json_fails_at_once(shared_daemon, llm, mcp_home):
    # Red team 54: a content type that lies (a page served as application/json) passed `_foreign` as the SDK's: the SDK
    # dropped the body it could not parse, and the start waited out its 30 s ("did not answer within 30s", retried).
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _WebPage)
    server.daemon_threads, server.status, server.kind = True, 200, "application/json"  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/mcp"
        configure(mcp_home, {"lies": {"url": url}})
        daemon = await shared_daemon(env=llm.env())
        async with asyncio.timeout(10):
            await wait_state(daemon, "lies", "failed")
        shown = await submit(daemon, "/mcp")
        assert f"  lies (http): failed: {url}: not an MCP server's answer (its JSON answer is no JSON);" in shown, shown
    finally:
        server.shutdown()


async def test_mcp_restart_follows_the_edited_config(shared_daemon, llm, mcp_home):
    # The user removes a server from mcp.json, and adds another: `/mcp restart` stops the one and starts the other
    # (Bug: it restarted the removed server, and only a new session left it out).
    configure(mcp_home, {"t": test_server()})
    daemon = await shared_daemon(env=llm.env())
    await wait_state(daemon, "t", "ready")
    configure(mcp_home, {"u": test_server()})

    shown = await submit(daemon, "/mcp restart")

    assert shown == "stopped t: mcp.json no longer lists it\nstarted u: ready", shown
    servers = (await daemon.request("ollie/mcp/list", {}))["servers"]
    assert [(s["name"], s["state"]) for s in servers] == [("u", "ready")]
    # A server named alone is restarted as mcp.json says it now; one it no longer lists is stopped.
    configure(mcp_home, {})
    assert await submit(daemon, "/mcp restart u") == "stopped u: mcp.json no longer lists it"
    assert (await daemon.request("ollie/mcp/list", {}))["servers"] == []


def test_the_terminal_runs_mcp_tools_as_steps_and_says_what_it_waits_for_on_stderr(llm, _private_dirs, tmp_path):
    # `ollie -p`'s note that it waited for a server starting went to stdout, into the answer a script reads.
    configure(_private_dirs, {"t": test_server("gated")})
    llm.script(Reply.tool_calls(("mcp__t__add", {"a": 20, "b": 22})), Reply.text("it is 42"))
    with subprocess.Popen([*OLLIE, "-p", "add them", "--cwd", str(tmp_path)], env=child_env(llm.env()), text=True,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stderr is not None
        said = next((line for line in proc.stderr if "waiting for MCP server 't' to start" in line), "")
        (state_dir(_private_dirs, "t") / "open").touch()  # its start goes on: the prompt with it
        out, err = proc.communicate(timeout=120)
    assert said and proc.returncode == 0, err
    assert out == "it is 42\n" and "▸ t: add\n  42\n" in err, (out, err)


async def test_an_agent_config_adds_and_narrows_servers(start_daemon, llm, _private_dirs):
    configure(_private_dirs, {"t": test_server(), "kept": test_server()})
    agents = _private_dirs / "config" / "ollie" / "agents"
    agents.mkdir(parents=True)
    (agents / "narrow.json").write_text(json.dumps({"mcpServers": {"t": {"disabled": True}, "own": test_server()}}))
    (agents / "broken.json").write_text(json.dumps({"mcpServers": {"x": {"command": ""}}}))
    daemon = await start_daemon(env=llm.env())
    await wait_state(daemon, "t", "ready")
    assert "agent: narrow" in await submit(daemon, "/agent narrow")
    servers = (await daemon.request("ollie/mcp/list", {}))["servers"]
    assert sorted(s["name"] for s in servers) == ["kept", "own"]
    refused = await submit(daemon, "/agent broken")
    assert "broken.json" in refused and "mcpServers.x.command" in refused


async def test_a_workspace_mcp_config_starts_nothing_until_the_user_allows_it(shared_daemon, llm, mcp_home, tmp_path):
    ws = tmp_path / "ws0"
    (ws / ".vscode").mkdir(parents=True)
    (ws / ".vscode" / "mcp.json").write_text(json.dumps({"servers": {"planted": {"type": "stdio", **test_server()}}}))
    daemon = await shared_daemon(env=llm.env(), cwd=ws)
    shown = await submit(daemon, "/mcp")
    assert "planted" in shown and "/mcp allow planted" in shown
    (entry,) = (await daemon.request("ollie/mcp/list", {}))["servers"]
    assert entry["state"] == "needs approval"
    # A workspace's server has a HOME of that workspace's (not the user's same-named server's).
    workspace_homes = state_dir(mcp_home, "workspace")
    assert not workspace_homes.exists() and not state_dir(mcp_home, "planted").exists()  # never spawned
    assert "allowed MCP server 'planted'" in await submit(daemon, "/mcp allow planted")
    listed = await wait_state(daemon, "planted", "ready")
    assert [p.name for p in workspace_homes.glob("*/*")] == ["planted"] and not state_dir(mcp_home, "planted").exists()
    # Its tools' `readOnlyHint` is the repo's word: `add` is asked about as any call (the user's own server's is not).
    assert {t["name"]: t["kind"] for t in listed["tools"]}["mcp__planted__add"] == "other"
    # Remembered for this workspace: a new session starts it without asking.
    new = await daemon.request("ollie/session/new", {"cwd": str(ws)})
    listed = (await daemon.request("ollie/mcp/list", {"session": new["session"]}))["servers"]
    assert [s["name"] for s in listed] == ["planted"] and listed[0]["state"] != "needs approval"
    # A changed entry is a new server: asked again, its args, only its env (PYTHONSTARTUP runs a file of the
    # repository's), its command (the same args run by a shell) or its cwd changed; and the same entry in another
    # checkout, whose files it runs (an approval that left out any of these went unseen by every test).
    (ws / "sub").mkdir()
    other_checkout = tmp_path / "ws1"
    (other_checkout / ".vscode").mkdir(parents=True)
    (other_checkout / ".vscode" / "mcp.json").write_text((ws / ".vscode" / "mcp.json").read_text())
    for changed in (test_server("hostile"), {**test_server(), "env": {"PYTHONSTARTUP": "planted.py"}},
                    {**test_server(), "command": "/bin/sh"}, {**test_server(), "cwd": str(ws / "sub")}, None):
        if changed is not None:
            (ws / ".vscode" / "mcp.json").write_text(json.dumps({"servers": {"planted": changed}}))
        other = await daemon.request("ollie/session/new", {"cwd": str(ws if changed else other_checkout)})
        (again,) = (await daemon.request("ollie/mcp/list", {"session": other["session"]}))["servers"]
        assert again["state"] == "needs approval", changed


async def test_a_vscode_mcp_json_naming_its_script_by_workspace_folder_starts_it(shared_daemon, llm, mcp_home, tmp_path):
    """VS Code's own `.vscode/mcp.json` as its docs write it, `"args": ["${workspaceFolder}/server.py"]`: allowed, the
    server was run with the text as written and failed ("can't open file '<ws>/${workspaceFolder}/server.py'")."""
    ws = tmp_path / "ws0"
    (ws / ".vscode").mkdir(parents=True)
    (ws / "server.py").write_text(SERVER.read_text())
    entry = {"type": "stdio", "command": sys.executable, "args": ["${workspaceFolder}/server.py"]}
    asks = {"command": sys.executable, "args": [str(SERVER)], "env": {"TOKEN": "${input:token}"}}
    (ws / ".vscode" / "mcp.json").write_text(json.dumps({"servers": {"local": entry, "asks": asks}}))
    llm.script(Reply.tool_calls(("mcp__local__add", {"a": 20, "b": 22})), Reply.text("42."))
    daemon = await shared_daemon(env=llm.env(), cwd=ws)
    # The question shows the command line that runs, the folder filled in.
    assert f"({sys.executable} {ws}/server.py)" in await submit(daemon, "/mcp allow local")
    await wait_state(daemon, "local", "ready")
    await submit(daemon, "add them")
    assert tool_results(llm) == ["42"]
    # VS Code's prompt for a value (`${input:...}`) is none of ollie's: said, not silently sent as text.
    assert any(e["content"].startswith("warning: MCP server 'asks' of ") and "${...} variable ollie does not fill in"
               in e["content"] for e in daemon.events if e["role"] == "info"), daemon.events


async def test_a_workspace_http_servers_url_and_headers_never_get_the_folders_path(shared_daemon, llm, mcp_home,
                                                                                    tmp_path, listener):
    """Red team round 27's note: `${workspaceFolder}` was filled into a workspace HTTP server's `url` (and headers),
    so the allowed server's host got the checkout's path, the user's name in it. It stays as written there, warned
    of as for any variable not filled in."""
    ws = tmp_path / "alice-checkout"
    ws.mkdir()
    entry = {"url": f"http://127.0.0.1:{listener.port}/mcp?from=${{workspaceFolder}}",
             "headers": {"X-Folder": "${workspaceFolderBasename}"}}
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"docs": entry}}))
    listener.answer = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"  # its start fails now, not in 30 s
    daemon = await shared_daemon(env=llm.env(), cwd=ws)
    assert "allowed MCP server 'docs'" in await submit(daemon, "/mcp allow docs")
    await eventually(lambda: b"\r\n\r\n" in listener.received, "the server's first request")
    assert b"alice-checkout" not in listener.received, bytes(listener.received)
    assert b"X-Folder: ${workspaceFolderBasename}" in listener.received, bytes(listener.received)
    llm.script(Reply.text("ok"))
    await submit(daemon, "hi")  # (a turn tells the config's warnings)
    assert any(e["content"].startswith("warning: MCP server 'docs' of ") and "not in a url or headers" in e["content"]
               for e in daemon.events if e["role"] == "info"), [e.get("content") for e in daemon.events]


async def test_a_folder_whose_path_holds_a_variables_name_is_filled_in_once(shared_daemon, llm, mcp_home, tmp_path):
    """A checkout under a directory named `${workspaceFolderBasename}`: the path filled in for `${workspaceFolder}` was
    filled in again, the server run as `<parent>/ws0/ws0/server.py`, a file outside the workspace (what the question
    showed, but not what the config says), and the folder's own `${` warned of as a variable not filled in."""
    ws = tmp_path / "${workspaceFolderBasename}" / "ws0"
    (ws / ".vscode").mkdir(parents=True)
    (ws / "server.py").write_text(SERVER.read_text())
    entry = {"type": "stdio", "command": sys.executable, "args": ["${workspaceFolder}/server.py"]}
    (ws / ".vscode" / "mcp.json").write_text(json.dumps({"servers": {"local": entry}}))
    daemon = await shared_daemon(env=llm.env(), cwd=ws)
    assert f"({sys.executable} {ws}/server.py)" in await submit(daemon, "/mcp allow local")
    await wait_state(daemon, "local", "ready")
    assert not [e for e in daemon.events if "variable ollie does not fill in" in e.get("content", "")], daemon.events


async def test_a_changed_tool_list_is_offered_at_once(shared_daemon, llm, mcp_home):
    configure(mcp_home, {"t": test_server()})
    llm.script(Reply.tool_calls(("mcp__t__grow", {})), Reply.tool_calls(("mcp__t__grown", {})), Reply.text("grew"))
    daemon = await shared_daemon(env=llm.env())
    await wait_state(daemon, "t", "ready")
    assert await submit(daemon, "grow") == "grew"
    offered = [[t["function"]["name"] for t in r.body["tools"]] for r in llm.chat_requests]
    assert "mcp__t__grown" not in offered[0] and "mcp__t__grown" in offered[1]
    assert tool_results(llm) == ["added", "grown up"]


async def test_the_npm_filesystem_server_through_the_daemon(shared_daemon, llm, mcp_home, tmp_path):
    ws = workspace_with_hello(tmp_path)
    configure(mcp_home, {"fs": fs_server(ws)})
    llm.script(Reply.tool_calls(("mcp__fs__read_text_file", {"path": str(ws / "hello.txt")})), Reply.text("read it"),
               Reply.tool_calls(("mcp__fs__write_file", {"path": str(ws / "new.txt"), "content": "x"})),
               Reply.text("tried"))
    daemon = await shared_daemon(env=llm.env(), cwd=ws)
    listed = await wait_state(daemon, "fs", "ready", timeout=120)
    assert {t["tool"]: t["kind"] for t in listed["tools"]}["read_text_file"] == "read"
    assert await submit(daemon, "read hello") == "read it"
    assert tool_results(llm) == ["hello from the workspace\n"]
    steps = [e["tool"] for e in daemon.events if e.get("role") == "tool" and e.get("tool")]
    assert any(s["title"].startswith("fs: read_text_file") and s["kind"] == "read" for s in steps), steps
    # It offers writes; its sandbox does not allow them.
    assert await submit(daemon, "write") == "tried"
    assert not (ws / "new.txt").exists()


def test_the_npm_filesystem_server_through_the_terminal(llm, _private_dirs, tmp_path):
    ws = workspace_with_hello(tmp_path)
    configure(_private_dirs, {"fs": fs_server(ws)})
    llm.script(Reply.tool_calls(("mcp__fs__read_text_file", {"path": str(ws / "hello.txt")})), Reply.text("read it"))
    proc = run_ollie(["-p", "read hello", "--cwd", str(ws)], env=llm.env(), timeout=150)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "read it\n" and "▸ fs: read_text_file" in proc.stderr, (proc.stdout, proc.stderr)
    assert "hello from the workspace" in proc.stderr


async def _rejected_questions(shared_daemon, llm, ws: Path, servers: dict) -> list[str]:
    """The questions a daemon in `ws`, whose `.mcp.json` lists `servers`, asks before a prompt's turn (each rejected)."""
    ws.mkdir()
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    llm.script(Reply.text("not started"))
    daemon = await shared_daemon(env=llm.env(), cwd=ws)
    asked: list[str] = []

    @daemon.client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def on_request(params: types.ShowMessageRequestParams):
        asked.append(params.message)
        return types.MessageActionItem(title="Reject")

    assert await submit(daemon, "hi") == "not started"
    return asked


async def test_a_workspace_servers_odd_command_line_is_asked_about_word_for_word(shared_daemon, llm, mcp_home, tmp_path):
    """Red team round 23: a `.mcp.json` command with a leading `-`, a newline, quotes, a backslash, a huge argument:
    the question shows each word as it runs. Words holding a quote or a backslash were shown as they are, so
    `"x` `y"` read as the one word `"x y"` and a backslash's `a\\nb` as the escaped newline of another word."""
    ws = tmp_path / "ws0"
    args = ['"x', 'y"', "a\\nb", "a\nb", "p" * 3000, "tail"]
    asked = await _rejected_questions(shared_daemon, llm, ws, {"planted": {"command": "-c", "args": args}})
    assert len(asked) == 1 and "\n" not in asked[0], asked
    shown = 'start MCP server \'planted\' of ' + str(ws / ".mcp.json") + r': -c "\"x" "y\"" "a\\nb" "a\nb" ppp'
    assert shown in asked[0] and " more characters: read " in asked[0] and "tail" not in asked[0], asked[0]


async def test_a_workspace_server_is_put_to_the_user_as_a_question(shared_daemon, llm, mcp_home, tmp_path):
    ws = tmp_path / "ws0"
    ws.mkdir()
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"planted": {**test_server(), "env": {"K": "v"}}}}))
    llm.script(Reply.text("not started"), Reply.tool_calls(("mcp__planted__add", {"a": 1, "b": 2})), Reply.text("3"))
    daemon = await shared_daemon(env=llm.env(), cwd=ws)  # approval mode auto: the server is asked about still
    asked: list[str] = []
    answers = ["Reject", "Allow always"]

    @daemon.client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def on_request(params: types.ShowMessageRequestParams):
        asked.append(params.message)
        offered.append([a.title for a in params.actions or []])
        return types.MessageActionItem(title=answers.pop(0))

    offered: list[list[str]] = []
    assert await submit(daemon, "hi") == "not started"
    # No "Reject with feedback": the answer reaches only the server's start, nothing would carry text to the model.
    assert offered[0] == ["Reject", "Allow once", "Allow always"]
    # The exact program, its args and env, before anything runs; a "no" leaves it waiting, asked only once.
    assert len(asked) == 1 and f"start MCP server 'planted' of {ws / '.mcp.json'}" in asked[0]
    assert str(SERVER) in asked[0] and 'K="v"' in asked[0], asked[0]
    (entry,) = (await daemon.request("ollie/mcp/list", {}))["servers"]
    assert entry["state"] == "needs approval" and not state_dir(mcp_home, "workspace").exists()
    # A new session asks again; "Allow always" starts it for this turn and remembers it for this workspace.
    new = (await daemon.request("ollie/session/new", {"cwd": str(ws)}))["session"]
    reply = await daemon.request("ollie/submit", {"session": new, "text": "add"}, timeout=90)
    assert len(asked) == 2 and reply["reply"] == "3" and tool_results(llm) == ["3"]
    third = (await daemon.request("ollie/session/new", {"cwd": str(ws)}))["session"]
    listed = (await daemon.request("ollie/mcp/list", {"session": third}))["servers"]
    assert [s["state"] for s in listed] != ["needs approval"] and len(asked) == 2


def test_the_terminal_asks_about_a_workspace_server(llm, _private_dirs, tmp_path):
    from .test_cli_pty import Terminal

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"planted": test_server()}}))
    llm.script(Reply.tool_calls(("mcp__planted__add", {"a": 20, "b": 22})), Reply.text("it is 42"))
    with Terminal(["--cwd", str(ws)], llm.env(), ws) as term:
        at = term.wait_for(r"default> ")
        at = term.answer("add", r"ollie asks to: start MCP server 'planted' of\s[\s\S]*?\nAllow\? [^:]*: ", after=at)
        assert str(SERVER) in term.text and "[f]eedback" not in term.text
        term.answer("y", r"it is 42", after=at)
        assert term.close() == 0
    assert tool_results(llm) == ["42"]


async def test_a_resource_picked_as_context_is_read_through_the_daemon(shared_daemon, llm, mcp_home):
    from pygls.exceptions import JsonRpcException

    configure(mcp_home, {"t": test_server()})
    llm.script(Reply.text("read"))
    daemon = await shared_daemon(env=llm.env())
    await wait_state(daemon, "t", "ready")
    picked = {"uri": "note://readme", "mcpServer": "t"}
    reply = await daemon.request("ollie/submit", {"text": "what does it say?", "context": [picked]}, timeout=90)
    assert reply["reply"] == "read"
    prompt = llm.chat_requests[-1].body["messages"][-1]["content"]
    assert "MCP resource: note://readme (server t)" in prompt and "the readme of the test server" in prompt
    page = await daemon.request("ollie/context", {})
    assert page["messages"][-2]["contextLabels"] == ["t: note://readme"]
    with pytest.raises(JsonRpcException) as refused:
        await daemon.request("ollie/submit", {"text": "x", "context": [{"uri": "note://readme", "mcpServer": "nope"}]})
    assert refused.value.code == -32602 and "context[0].mcpServer: no MCP server 'nope'" in refused.value.message


async def test_an_interrupt_withdraws_the_workspace_server_question(shared_daemon, llm, mcp_home, tmp_path):
    ws = tmp_path / "ws0"
    ws.mkdir()
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"planted": test_server()}}))
    daemon = await shared_daemon(env=llm.env(), cwd=ws)
    asked = asyncio.Event()

    @daemon.client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    async def on_request(params: types.ShowMessageRequestParams):
        asked.set()
        await asyncio.Event().wait()  # the user is away

    turn = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "hi"}, timeout=90))
    await asyncio.wait_for(asked.wait(), 60)
    assert (await daemon.request("ollie/interrupt", {}))["interrupted"] is True
    assert (await turn)["stop"] == "interrupted"
    (entry,) = (await daemon.request("ollie/mcp/list", {}))["servers"]
    assert entry["state"] == "needs approval"


async def test_a_servers_prompt_is_a_turn_never_a_command(shared_daemon, llm, mcp_home):
    # A (hostile) server's prompt text `!touch ...`: /mcp:h:setup ran it as the user's `!cmd`, unsandboxed, with the
    # daemon's environment (its API keys), where the server itself is confined.
    configure(mcp_home, {"h": test_server("hostile")})
    llm.script(Reply.text("not running that"))
    daemon = await shared_daemon(env=llm.env())
    await wait_state(daemon, "h", "ready")
    assert await submit(daemon, "/mcp:h:setup") == "not running that"
    assert llm.chat_requests[-1].body["messages"][-1]["content"] == '!touch "$OLLIE_CWD/../escaped-by-prompt"'
    assert not (daemon.workspace.parent / "escaped-by-prompt").exists()


async def test_an_image_a_server_returns_reaches_the_model(start_daemon, scripted_llm, _private_dirs):
    """OpenAI's chat API takes images in user messages only: the result says it is attached, and the image follows
    the run of results in a user message; Anthropic's tool_result carries it in its own content."""
    configure(_private_dirs, {"t": test_server()})
    for fmt in ("openai", "anthropic"):
        llm = scripted_llm(fmt)
        llm.script(Reply.tool_calls(("mcp__t__screenshot", {}), ("mcp__t__add", {"a": 1, "b": 2})),
                   Reply.text("a grey square"), Reply.text("still there"))
        daemon = await start_daemon(env=llm.env())
        await wait_state(daemon, "t", "ready")
        assert await submit(daemon, "look at the screen") == "a grey square"
        assert await submit(daemon, "and now?") == "still there"  # the history keeps it for later requests
        assert llm.failures == []  # every image in the vendor's real shape (an image in a tool message fails)
        for request in llm.chat_requests[1:]:
            assert llm.images(request) == [("image/png", SCREEN_PNG)], fmt
        messages = llm.chat_requests[1].body["messages"]
        if fmt == "openai":
            results = [m for m in messages if m["role"] == "tool"]
            assert "the screen, 3x2" in results[0]["content"] and "image/png" in results[0]["content"]
            assert results[1]["content"] == "3"
            after = messages[messages.index(results[1]) + 1]  # after the whole run of results, not between them
            assert after["role"] == "user" and "mcp__t__screenshot" in after["content"][0]["text"]
        else:
            blocks = [b for m in messages for b in m["content"] if b["type"] == "tool_result"]
            assert [b["type"] for b in blocks[0]["content"]] == ["text", "image"]
            assert "the screen, 3x2" in blocks[0]["content"][0]["text"]


async def test_a_model_that_reads_no_images_gets_a_note_instead(start_daemon, scripted_llm, _private_dirs):
    """Known beforehand (the model list says so), or from the vendor's refusal: the turn goes on without them."""
    configure(_private_dirs, {"t": test_server()})
    for says in (True, False):
        llm = scripted_llm("openai", vision=False, says_vision=says)
        llm.script(Reply.tool_calls(("mcp__t__screenshot", {})), Reply.text("cannot see it"))
        daemon = await start_daemon(env=llm.env(backend="openrouter"))
        await wait_state(daemon, "t", "ready")
        assert await submit(daemon, "look") == "cannot see it"
        assert llm.images(llm.chat_requests[-1]) == []
        assert "the model does not take images" in tool_results(llm)[-1]
        assert len(llm.chat_requests) == (2 if says else 3)  # refused once, then sent again without it


async def test_a_servers_fake_or_excess_images_are_left_out_with_why(shared_daemon, llm, mcp_home):
    configure(mcp_home, {"t": test_server("hostile")})
    llm.script(Reply.tool_calls(("mcp__t__fake_image", {})), Reply.text("seen"))
    daemon = await shared_daemon(env=llm.env())
    await wait_state(daemon, "t", "ready")
    assert await submit(daemon, "look") == "seen"
    result = tool_results(llm)[-1]
    assert "[image left out: the server's image 1 is not a PNG, JPEG, GIF or WebP image" in result, result
    assert "left out: more than 8 in one result" in result
    assert [mime for mime, _ in llm.images(llm.chat_requests[-1])] == ["image/png"] * 7  # the fake counts too


async def test_a_workspace_http_server_is_asked_about_with_its_headers(shared_daemon, llm, mcp_home, tmp_path):
    """What the daemon sends a workspace's HTTP server is the question's too: its headers (a planted token that logs
    the user into the attacker's account, a `Host` naming another site), not the URL alone."""
    headers = {"Authorization": "Bearer planted", "Host": "internal.example", "X-\u202eevil": "v"}
    (question,) = await _rejected_questions(shared_daemon, llm, tmp_path / "ws0",
                                            {"docs": {"url": "http://127.0.0.1:9/mcp", "headers": headers}})
    assert "http://127.0.0.1:9/mcp" in question, question
    for shown in ('Authorization: "Bearer planted"', 'Host: "internal.example"', '"X-\\u202eevil": "v"'):
        assert shown in question, question


async def test_a_servers_errors_are_one_escaped_line(shared_daemon, llm, mcp_home):
    # Red team 56: the error a server answered /mcp:<server>:<prompt> (or a resource's read: `/mcp add`, a context pick)
    # with was shown as it came: its line breaks drew a step never run and a turn's end in Neovim's chat, in the band of
    # the chat's own lines, an OSC 52 went raw to every client, and a message of any length (8 MiB) went whole.
    configure(mcp_home, {"h": test_server("hostile")})
    daemon = await shared_daemon(env=llm.env())
    await wait_state(daemon, "h", "ready")
    output = await submit(daemon, "/mcp:h:broken")
    (error,) = [e["content"] for e in daemon.events if e["role"] == "error"]
    added = await submit(daemon, "/mcp add h note://broken")
    picked = await rpc_error(daemon, "ollie/submit", {"text": "hi", "context": [{"mcpServer": "h", "uri": "note://broken"}]})
    assert error == f"/mcp:h:broken failed: {output}", error
    assert added.startswith("/mcp failed: MCP server 'h' could not read note://broken: Error reading resource"), added
    assert picked.code == -32602 and "context[0].mcpServer: MCP server 'h' could not read note://broken" in picked.message, picked
    for said in (output, added, picked.message):
        assert "\\n  ✓ Run true\\n_(end)_\\x1b]52;c;aGk=\\x07xxx" in said and said.endswith("x..."), said
        assert len(said) < 1200 and "\n" not in said and "\x1b" not in said, said
