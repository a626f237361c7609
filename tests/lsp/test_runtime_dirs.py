"""What a daemon keeps in ollie's runtime dirs (the egress proxy's socket dir) goes once the daemon is killed with -9:
the next session another daemon opens sweeps it, and never a live daemon's. Also under a runtime dir too deep for a
unix socket's path, where the socket dir lies in /tmp/ollie-<uid> instead."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ollie.sandbox.rules import landlock_abi
from ollie.testing import Reply
from tests.lsp.conftest import xdg_env
from tests.procs import open_files

pytestmark = pytest.mark.skipif(landlock_abi() < 1, reason="needs Landlock")

NETWORK_STEP = Reply.tool_calls(("execute_code", {"steps": [{"code": "curl -s http://127.0.0.1:9/ ; echo tried"}]}))


def proxy_dir(pid: int) -> Path:
    """The egress proxy's socket dir of daemon `pid`: where the unix socket it listens on lies."""
    held = open_files(pid)
    with open("/proc/net/unix") as table:  # Num RefCount Protocol Flags Type St Inode Path
        rows = [line.split() for line in table.readlines()[1:]]
    (found,) = [Path(row[7]).parent for row in rows if len(row) == 8 and f"socket:[{row[6]}]" in held
                and row[7].endswith("/egress.sock")]
    return found


async def daemon_with_proxy(start_daemon, llm, env: dict[str, str]):
    """A daemon whose step went out through its egress proxy; the daemon and the proxy's dir."""
    llm.script(NETWORK_STEP, Reply.text("done"))
    daemon = await start_daemon(env={**llm.env(), **env})
    assert (await daemon.request("ollie/submit", {"text": "fetch"}))["reply"] == "done"
    assert "tried" in llm.chat_requests[-1].body["messages"][-1]["content"]
    return daemon, proxy_dir(daemon.client._server.pid)


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A dir short enough to hold the socket dir (pytest's tmp_path is too deep); removed after the daemons are gone."""
    made = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp"))
    yield made
    shutil.rmtree(made, ignore_errors=True)


@pytest.mark.parametrize("depth", ["short", "too deep for a socket"])
async def test_a_killed_daemons_socket_dir_is_swept_and_a_live_ones_kept(short_dir, start_daemon, llm, tmp_path,
                                                                         depth):
    # Under a deep runtime dir the socket dir lay in /tmp/ollie-egress-XXXX, with no owner lock: never swept, one
    # more left in /tmp by each daemon killed (dozens, after test runs).
    base = short_dir if depth == "short" else tmp_path / ("d" * 80)
    base.mkdir(exist_ok=True)
    env = {"XDG_RUNTIME_DIR": str(base)}
    dead, dead_dir = await daemon_with_proxy(start_daemon, llm, env)
    live, live_dir = await daemon_with_proxy(start_daemon, llm, env)
    dead.client._server.kill()  # SIGKILL: no exit handler runs
    await dead.client._server.wait()
    # Under a deep runtime dir the socket root is the shared /tmp/ollie-<uid>: a session another test's daemon opens
    # meanwhile may sweep the killed one's dir first (a full run failed here once), which is what is wanted too.
    assert (dead_dir / "egress.sock").exists() or depth != "short"

    sweeper = await start_daemon(env={**llm.env(), **env})
    await sweeper.request("ollie/session/new", {})  # a session opening sweeps
    assert not dead_dir.exists(), "the killed daemon's socket dir is swept"
    assert (live_dir / "egress.sock").exists(), "the live daemon's is kept"
    # The daemon's own: 0700 in a root of its user's, checked (under a deep one, /tmp/ollie-<uid>).
    expected = base / "ollie" if depth == "short" else Path(f"/tmp/ollie-{os.geteuid()}")
    assert live_dir.parent == expected
    for made in (expected, live_dir):
        assert made.lstat().st_uid == os.geteuid() and made.lstat().st_mode & 0o777 == 0o700, made
    llm.script(NETWORK_STEP, Reply.text("again"))
    assert (await live.request("ollie/submit", {"text": "fetch again"}))["reply"] == "again"
    assert "tried" in llm.chat_requests[-1].body["messages"][-1]["content"], "its proxy still serves its steps"


@pytest.fixture
def var_tmp_dir() -> Iterator[Path]:
    """A runtime dir too deep for a socket and outside /tmp (a TMPDIR under /var/tmp, say)."""
    made = Path(tempfile.mkdtemp(prefix="egress19-", dir="/var/tmp"))
    yield made
    shutil.rmtree(made, ignore_errors=True)


async def test_a_step_granted_tmp_cannot_swap_or_plant_in_the_proxys_socket_dir(var_tmp_dir, start_daemon, llm):
    # The user's policy grants /tmp (tools like it there); the socket dir lay in /tmp/ollie-egress-XXXX, where a
    # hostile step removed the daemon's socket (every later proxied step failed to start) or put its own there
    # (and took other steps' listeners). It is now the daemon's, granted to no step. (ollie's other dirs lie outside
    # /tmp here, as they do for a user: none of them makes /tmp read-only.)
    env = {"XDG_RUNTIME_DIR": str(var_tmp_dir / ("d" * 80)), **xdg_env(var_tmp_dir)}
    policy = (Path(__file__).parents[2] / "sandbox.yaml").read_text().replace(
        'rwx: ["{CWD}", "{TMPDIR}"]', 'rwx: ["{CWD}", "{TMPDIR}", "/tmp"]')
    for made in env.values():
        Path(made).mkdir()
    (var_tmp_dir / "config" / "ollie").mkdir()
    (var_tmp_dir / "config" / "ollie" / "sandbox.yaml").write_text(policy)
    daemon, socket_dir = await daemon_with_proxy(start_daemon, llm, env)
    # Only this daemon's own dir is aimed at: other daemons of this machine are not the test's to break.
    hunt = (f"rm -f '{socket_dir}/egress.sock' && echo REMOVED\n"
            f"echo x > '{socket_dir}/planted' && echo PLANTED\n")
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": hunt}]})), Reply.text("hunted"))
    assert (await daemon.request("ollie/submit", {"text": "hunt"}))["reply"] == "hunted"
    told = llm.chat_requests[-1].body["messages"][-1]["content"]
    assert "REMOVED" not in told and "PLANTED" not in told, told
    assert (socket_dir / "egress.sock").exists() and not (socket_dir / "planted").exists()
    llm.script(NETWORK_STEP, Reply.text("again"))
    assert (await daemon.request("ollie/submit", {"text": "fetch again"}))["reply"] == "again"
    assert "tried" in llm.chat_requests[-1].body["messages"][-1]["content"], "later steps still reach the proxy"
