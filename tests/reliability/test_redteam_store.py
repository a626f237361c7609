"""Red team: the PostgreSQL store, attacked through the terminal client and from the sandbox.

Another user's session must be neither listed nor resumed by any client (TEAM.md:
"Another user's sessions are not listed, and loading one is the registry's
ForbiddenError"): the daemon and `ollie acp` ask the registry; the terminal's
`--session` and `/sessions` read the store directly, so the store itself refuses.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from ollie.testing import Reply, ScriptedLLMServer
from tests.teams.conftest import home_env, pg_server, store_url  # noqa: F401  (fixtures)

SECRET = "alice-secret-4711"


def _ollie(tmp_path: Path, machine: str, user: str, store: str, llm_env: dict[str, str], args: list[str],
           stdin: str | None = None, teams: str = "") -> subprocess.CompletedProcess[str]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    env = home_env(tmp_path / machine, **llm_env, OLLIE_STORE=store, OLLIE_USER=user, OLLIE_TEAMS=teams)
    return subprocess.run([sys.executable, "-m", "ollie.cli", "--cwd", str(work), *args], env=env, input=stdin,
                          capture_output=True, text=True, timeout=60)


def _alices_session(tmp_path: Path, store: str, llm) -> str:
    llm.script(Reply.text("noted"))
    first = _ollie(tmp_path, "alice-laptop", "alice", store, llm.env(), [], stdin=f"remember {SECRET}\n")
    assert first.returncode == 0, first.stderr
    found = re.search(r"session (\d+-[0-9a-f]{6})", first.stderr)
    assert found, first.stderr
    return found.group(1)


def test_the_terminal_neither_lists_nor_resumes_another_users_session(store_url, scripted_llm, tmp_path):  # noqa: F811
    llm = scripted_llm("openai")
    alices = _alices_session(tmp_path, store_url, llm)
    # Mallory, on her machine with the same store, resumes alice's session by id: refused before her model
    # (a bait that would answer) hears anything of it.
    with ScriptedLLMServer("openai") as bait:
        bait.script(Reply.text("leaked"))
        resumed = _ollie(tmp_path, "mallory-box", "mallory", store_url, bait.env(), ["-p", "what was it?",
                                                                                      "--session", alices])
        assert [r for r in bait.chat_requests if SECRET in str(r.body)] == []
    assert resumed.returncode != 0
    assert "belongs to another user" in resumed.stderr, resumed.stderr
    # ...nor lists it.
    listing = _ollie(tmp_path, "mallory-box", "mallory", store_url, llm.env(), [], stdin="/sessions\n")
    assert listing.returncode == 0, listing.stderr
    assert alices not in listing.stdout + listing.stderr
    # Alice herself still resumes it.
    llm.script(Reply.text(f"it was {SECRET}"))
    again = _ollie(tmp_path, "alice-laptop", "alice", store_url, llm.env(), ["-p", "what was it?", "--session",
                                                                             alices])
    assert again.returncode == 0, again.stderr
    assert SECRET in again.stdout
    users = [m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "user"]
    assert users == [f"remember {SECRET}", "what was it?"]  # nothing of mallory's was appended


PGPASS = "db.example.internal:5432:ollie:ollie:pgpass-secret-2718"


async def test_tool_code_in_a_workspace_at_home_cannot_read_the_stores_password(tmp_path, monkeypatch):
    # TEAM.md tells users to keep the store's password in ~/.pgpass; with it, tool code that can read it can
    # connect to the team's database (the default policy lets it open TCP connections) and read every session.
    from ollie.tools.execute.server import ExecuteServer

    home = tmp_path / "home"
    (home / ".config" / "ollie").mkdir(parents=True)
    (home / ".pgpass").write_text(PGPASS + "\n")
    (home / ".pgpass").chmod(0o600)
    (tmp_path / "scratch").mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "scratch"))
    server = ExecuteServer(cwd=home, session_id="1700000000000000000-pgpass", lock_dir=tmp_path / "locks")
    result = await server.call("execute_code", {"steps": [{"code": "cat ~/.pgpass; echo done", "language": "bash"}]})
    assert "done" in result.text, result.text
    assert "pgpass-secret" not in result.text, result.text
