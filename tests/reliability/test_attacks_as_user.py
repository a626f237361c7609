"""The daemon attacks whose outcome depends on the OS user, run with the daemon as a normal user (`tests/asuser.py`).

A normal user's daemon reads its own git child's /proc only as ptrace allows, and makes a step's namespaces from a
user namespace: the FIFO planted where the shadow git reads must still be named and the turn go on.
"""

from __future__ import annotations

import asyncio
import os
from typing import cast

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from ollie.testing import Reply
from tests.asuser import PRELUDE, _as, os_user, python_for
from tests.lsp.conftest import Daemon, capabilities, llm, make_client  # noqa: F401  (fixtures)
from tests.reliability.test_chokepoint_attacks import run
from tests.tools.test_os_users import ALICE, home_of, shared  # noqa: F401  (fixtures)

DAEMON = PRELUDE + "import runpy; runpy.run_module('ollie_lsp', run_name='__main__')\n"


async def test_as_a_normal_user_a_fifo_where_git_reads_is_named_and_the_turn_goes_on(llm, shared):  # noqa: F811
    user = os_user(ALICE)
    home = home_of(ALICE, shared)
    ws = home / "work"
    (ws / "a.txt").write_text("one\n")
    os.chown(ws / "a.txt", user.pw_uid, user.pw_gid)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "TMPDIR": str(shared), "LANG": "C.UTF-8",
           "XDG_CONFIG_HOME": str(home / "config"), "XDG_DATA_HOME": str(home / "data"),
           "XDG_STATE_HOME": str(home / "state"), **llm.env()}
    llm.script(run("mkfifo .gitignore"), run("echo two > a.txt"), Reply.text("done"))
    config = ClientServerConfig(server_command=[*_as(user), python_for(ALICE), "-I", "-c", DAEMON],
                                client_factory=make_client, server_env=env)
    client = cast(LanguageClient, await config.start())  # make_client's kind
    daemon = Daemon(client, ws)
    try:
        await asyncio.wait_for(client.initialize_session(types.InitializeParams(
            capabilities=capabilities(), root_uri=ws.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=ws.as_uri(), name="ws")])), 60)
        result = await daemon.request("ollie/submit", {"text": "go"}, timeout=90)
        assert result["reply"] == "done" and (ws / "a.txt").read_text() == "two\n"
        notes = [e["content"] for e in daemon.session_events(result["session"]) if e["role"] == "info"]
        assert any("FIFO" in n and str(ws / ".gitignore") in n for n in notes), notes
    finally:
        try:
            await asyncio.wait_for(client.shutdown_session(), 20)
        finally:
            await client.stop()
            (ws / ".gitignore").unlink(missing_ok=True)
