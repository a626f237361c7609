"""The daemon attacks whose outcome depends on the OS user, run with the daemon as a normal user (`tests/asuser.py`).

A normal user's daemon reads its own git child's /proc only as ptrace allows, and makes a step's namespaces
(network and mount) from a user namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import cast

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from ollie.testing import Reply, nethosts
from tests.asuser import FLAGS, PRELUDE, _as, os_user, python_for
from tests.lsp.conftest import Daemon, capabilities, llm, make_client  # noqa: F401  (fixtures)
from tests.netserver import Listener
from tests.reliability.test_chokepoint_attacks import run
from tests.tools.test_os_users import ALICE, home_of, shared  # noqa: F401  (fixtures)

# `-I` leaves PYTHONPATH's sitecustomize out: a test's host names (nethosts.env) are taken up here.
DAEMON = PRELUDE + "from ollie.testing import nethosts; nethosts.from_env()\n" \
                   "import runpy; runpy.run_module('ollie_lsp', run_name='__main__')\n"


@contextlib.asynccontextmanager
async def daemon_as_alice(home: Path, env: Mapping[str, str]) -> AsyncIterator[Daemon]:
    """The real daemon, run as ALICE with her own XDG dirs, on her `work` dir; shut down at the end."""
    ws = home / "work"
    base = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "TMPDIR": str(home.parent), "LANG": "C.UTF-8",
            "XDG_CONFIG_HOME": str(home / "config"), "XDG_DATA_HOME": str(home / "data"),
            "XDG_STATE_HOME": str(home / "state")}
    config = ClientServerConfig(server_command=[*_as(os_user(ALICE)), python_for(ALICE), *FLAGS, "-c", DAEMON],
                                client_factory=make_client, server_env={**base, **env})
    client = cast(LanguageClient, await config.start())  # make_client's kind
    try:
        await asyncio.wait_for(client.initialize_session(types.InitializeParams(
            capabilities=capabilities(), root_uri=ws.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=ws.as_uri(), name="ws")])), 60)
        yield Daemon(client, ws)
    finally:
        try:
            await asyncio.wait_for(client.shutdown_session(), 20)
        finally:
            await client.stop()


def _work_holding_a_file(tmp: Path) -> tuple[Path, Path]:
    """ALICE's home (under the shared dir `tmp`) and her `work` dir, which holds her `a.txt` ("one")."""
    user = os_user(ALICE)
    home = home_of(ALICE, tmp)
    ws = home / "work"
    (ws / "a.txt").write_text("one\n")
    os.chown(ws / "a.txt", user.pw_uid, user.pw_gid)
    return home, ws


async def test_as_a_normal_user_a_fifo_where_git_reads_is_named_and_the_turn_goes_on(llm, shared):  # noqa: F811
    home, ws = _work_holding_a_file(shared)
    llm.script(run("mkfifo .gitignore"), run("echo two > a.txt"), Reply.text("done"))
    try:
        async with daemon_as_alice(home, llm.env()) as daemon:
            result = await daemon.request("ollie/submit", {"text": "go"}, timeout=90)
            assert result["reply"] == "done" and (ws / "a.txt").read_text() == "two\n"
            notes = [e["content"] for e in daemon.session_events(result["session"]) if e["role"] == "info"]
            assert any("FIFO" in n and str(ws / ".gitignore") in n for n in notes), notes
    finally:
        (ws / ".gitignore").unlink(missing_ok=True)


async def test_as_a_normal_user_a_file_made_unreadable_hides_no_change_from_review(llm, shared):  # noqa: F811
    # `chmod 000` on a file of the step's own (Landlock does not mediate chmod), or `chmod 600` on a dir: git could not
    # read or lstat it, so every snapshot after it failed, silently (a logged warning): the turn's changes, undo and
    # /rewind were gone for the session.
    home, ws = _work_holding_a_file(shared)
    llm.script(run("echo secret > locked.txt && chmod 000 locked.txt && mkdir shut && echo x > shut/f && chmod 000 shut"
                   " && mkdir half && echo y > half/g && chmod 600 half"),  # listed, but no lstat of half/g
               run("echo two > a.txt"), Reply.text("done"))
    try:
        async with daemon_as_alice(home, llm.env()) as daemon:
            result = await daemon.request("ollie/submit", {"text": "go"}, timeout=90)
            assert result["reply"] == "done" and (ws / "a.txt").read_text() == "two\n"
            files = (await daemon.request("ollie/changes", {"turn": 1}))["files"]
            assert [f["path"] for f in files] == ["a.txt"], files
            rewound = await daemon.request("ollie/rewind", {"turn": 1})
            assert rewound["files"] == ["a.txt"] and (ws / "a.txt").read_text() == "one\n"
            assert all((ws / name).exists() for name in ("locked.txt", "shut", "half"))  # not checkpointed: left
    finally:
        (ws / "locked.txt").unlink(missing_ok=True)
        for name in ("shut", "half"):
            shutil.rmtree(ws / name, ignore_errors=True)


PROBE = """python3 - <<'PY'
import socket
for request in (REQUESTS):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    s.sendall(request)
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    print("answer", data.split(b"\\\\r\\\\n", 1)[0].decode())
PY"""


async def test_as_a_normal_user_a_proxy_tunnel_carries_no_plain_http_to_a_listed_host(llm, shared):  # noqa: F811
    server = Listener()
    server.start()
    try:
        user = os_user(ALICE)
        home = home_of(ALICE, shared)
        config = home / "config" / "ollie"
        config.mkdir(exist_ok=True)
        os.chown(config, user.pw_uid, user.pw_gid)
        bundled = (Path(__file__).parents[2] / "sandbox.yaml").read_text()
        start = bundled.index("  allow: [")
        end = bundled.index("]", bundled.index('"codeload.github.com"')) + 1
        (config / "sandbox.yaml").write_text(bundled[:start] + f'  allow: ["pypi.test:{server.port}"]' + bundled[end:])
        connect = f"CONNECT pypi.test:{server.port} HTTP/1.1\r\n\r\n".encode()
        requests = [connect + b"GET / HTTP/1.1\r\nHost: other.test\r\n\r\n", connect + b"SSH-2.0-x\r\n\r\n"]
        llm.script(run(PROBE.replace("REQUESTS", repr(requests)[1:-1] + ",")), Reply.text("done"))
        async with daemon_as_alice(home, {**llm.env(), **nethosts.env({"pypi.test": "127.0.0.1"})}) as daemon:
            result = await daemon.request("ollie/submit", {"text": "go"}, timeout=90)
        told = llm.chat_requests[-1].body["messages"][-1]["content"]
        assert result["reply"] == "done" and told.count("answer HTTP/1.1 200") == 2, told
        # The plain HTTP never reached the host; the SSH session did (her step's way out works).
        assert bytes(server.received) == b"SSH-2.0-x\r\n\r\n", (bytes(server.received), told)
    finally:
        server.sock.close()
