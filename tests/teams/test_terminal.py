"""The terminal client on two 'machines' sharing a PostgreSQL store: a session saved on one resumes on the other."""

from __future__ import annotations

import re
import subprocess
import sys

from ollie.testing import Reply
from tests.teams.conftest import home_env, share_with_backend


def test_ollie_resumes_on_the_build_box_a_session_the_laptop_saved_and_left(store_url, scripted_llm, tmp_path):
    llm = scripted_llm("openai")
    llm.script(Reply.text("noted"), Reply.text("it was 9"))
    work = tmp_path / "work"
    work.mkdir()

    def ollie(machine: str, args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        env = home_env(tmp_path / machine, **llm.env(), OLLIE_STORE=store_url, OLLIE_USER="alice")
        return subprocess.run([sys.executable, "-m", "ollie.cli", "--cwd", str(work), *args], env=env, input=stdin,
                              capture_output=True, text=True, timeout=60)

    first = ollie("laptop", [], stdin="remember 9\n")
    assert first.returncode == 0, first.stderr
    found = re.search(r"session (\d+-[0-9a-f]{6})", first.stderr)
    assert found, first.stderr
    # The laptop's process exited: its lease went with it, so the build box resumes at once (no TTL to wait).
    second = ollie("buildbox", ["-p", "what was it?", "--session", found.group(1)])
    assert second.returncode == 0, second.stderr
    assert "it was 9" in second.stdout
    users = [m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "user"]
    assert users == ["remember 9", "what was it?"]
    assert not (tmp_path / "buildbox" / "data" / "ollie" / "sessions").exists()  # nothing went to files


def test_sessions_in_the_terminal_names_a_teammates_shared_session_and_its_team(store_url, scripted_llm, tmp_path):

    llm = scripted_llm("openai")
    llm.script(Reply.text("on it"))
    work = tmp_path / "work"
    work.mkdir()

    def ollie(machine: str, user: str, args: list[str], **extra: str) -> subprocess.CompletedProcess[str]:
        env = home_env(tmp_path / machine, **llm.env(), OLLIE_STORE=store_url, OLLIE_USER=user, **extra)
        return subprocess.run([sys.executable, "-m", "ollie.cli", "--cwd", str(work), *args], env=env,
                              capture_output=True, text=True, timeout=60)

    first = ollie("laptop", "alice", ["-p", "migrate the schema"])
    assert first.returncode == 0, first.stderr
    sid = re.fullmatch(r"ollie: session (\S+)\n", first.stderr)
    assert sid, first.stderr
    share_with_backend(store_url, sid.group(1))  # what `ollie store share` does
    listed = ollie("desk", "bob", ["-p", "/sessions"], OLLIE_TEAMS="backend")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    at = next(n for n, line in enumerate(lines) if line.endswith(sid.group(1)))
    assert lines[at - 1] == "  migrate the schema", listed.stdout
    assert lines[at].endswith(f" · 1 turn · team backend, alice's · {sid.group(1)}"), listed.stdout
    # Bob carries it on: both count his turn (the title and directory stay hers; it was her last round's count).
    llm.script(Reply.text("done"))
    assert ollie("desk", "bob", ["-p", "and the data", "--session", sid.group(1)], OLLIE_TEAMS="backend").returncode == 0
    for machine, user in (("desk", "bob"), ("laptop", "alice")):
        listed = ollie(machine, user, ["-p", "/sessions"], OLLIE_TEAMS="backend")
        lines = listed.stdout.splitlines()
        at = next(n for n, line in enumerate(lines) if line.endswith(sid.group(1)))
        assert lines[at - 1] == "  migrate the schema" and " · 2 turns · team backend" in lines[at], listed.stdout


def _terminals(tmp_path, llm, store_url):
    """`ollie(user, args, stdin, **env)`: the terminal client as `user` on a machine of their own, in one work dir."""
    work = tmp_path / "work"
    work.mkdir()

    def ollie(user: str, args: list[str], stdin: str | None = None, **extra: str) -> subprocess.CompletedProcess[str]:
        env = home_env(tmp_path / user, **{**llm.env(), **extra}, OLLIE_STORE=store_url, OLLIE_USER=user)
        return subprocess.run([sys.executable, "-m", "ollie.cli", "--cwd", str(work), *args], env=env, input=stdin,
                              capture_output=True, text=True, timeout=60)

    return ollie


def _shared_by_alice(ollie, store_url, args: list[str]) -> str:
    """Alice's terminal session (run with `args`, one prompt), shared to team backend; its id."""

    first = ollie("alice", args, stdin="remember 9\n")
    sid = re.search(r"session (\d+-[0-9a-f]{6})", first.stderr).group(1)  # type: ignore[union-attr]
    share_with_backend(store_url, sid)
    return sid


def test_a_team_member_cannot_change_the_approval_mode_of_a_shared_session(store_url, scripted_llm, tmp_path):
    llm = scripted_llm("openai")
    llm.script(Reply.text("noted"), Reply.text("still noted"))
    ollie = _terminals(tmp_path, llm, store_url)
    sid = _shared_by_alice(ollie, store_url, [])
    refused = ollie("bob", ["-p", "go", "--session", sid, "--approval", "auto"], OLLIE_TEAMS="backend")
    assert refused.returncode == 2, refused.stderr
    assert "only its owner may change its approval mode" in refused.stderr
    cleared = ollie("bob", ["--session", sid], stdin="/clear\ngo on\n", OLLIE_TEAMS="backend")
    assert cleared.returncode == 0 and "only its owner may clear its history" in cleared.stderr + cleared.stdout
    users = [m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "user"]
    assert users == ["remember 9", "go on"]


def test_a_teammates_session_whose_record_is_malformed_is_not_resumed_as_ones_own(store_url, scripted_llm, tmp_path):
    # Alice may run her session in `auto`; a record of it no ollie writes (a 5,000-byte title) failed the terminal's
    # recording, which it shrugged off: Bob's `--session` ran it as his own, in her mode, and her step ran unasked.
    # Then (round 51) the record read for its agent and owner failed as "no record": his session opened as his own
    # before the refusal, his own agent's agentSpawn hook ran unsandboxed on her session.
    import psycopg

    from tests.teams.test_two_daemons import DEPLOY_AGENT, install_agent

    llm = scripted_llm("openai", check=False)
    llm.script(Reply.text("noted"))
    ollie = _terminals(tmp_path, llm, store_url)
    sid = _shared_by_alice(ollie, store_url, ["--approval", "auto"])
    with psycopg.connect(store_url) as conn:
        conn.execute("UPDATE sessions SET title = repeat('x', 5000) WHERE id = %s", (sid,))
    install_agent(tmp_path / "bob", "default", DEPLOY_AGENT)  # his own, its hook unsandboxed for his own sessions
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": "echo pwned > planted", "language": "bash"}]})),
               Reply.text("done"))
    refused = ollie("bob", ["-p", "go on", "--session", sid], OLLIE_TEAMS="backend", OLLIE_APPROVAL="ask")
    assert refused.returncode == 2 and "at most 1,000 bytes of UTF-8 (this one has 5,000)" in refused.stderr, refused.stderr
    assert not (tmp_path / "work" / "planted").exists()
    assert not list((tmp_path / "bob").glob("*-ran")), refused.stderr


def test_continue_goes_on_with_ones_own_session_not_a_teammates_newer_shared_one(store_url, scripted_llm, tmp_path):
    # Alice's session, saved as started in the directory Bob works in (a shared checkout path), shared to his team
    # after his own: `ollie -c` (the daemon's continueSession, the same pick) resumed hers unasked, her history the
    # context of his next prompt.
    llm = scripted_llm("openai")
    llm.script(Reply.text("bob's answer"), Reply.text("noted"), Reply.text("his again"))
    ollie = _terminals(tmp_path, llm, store_url)
    own = ollie("bob", ["-p", "bob's question"], OLLIE_TEAMS="backend")
    assert own.returncode == 0, own.stderr
    _shared_by_alice(ollie, store_url, [])
    again = ollie("bob", ["-c", "-p", "go on"], OLLIE_TEAMS="backend")
    assert again.returncode == 0, again.stderr
    users = [m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "user"]
    assert users == ["bob's question", "go on"], users


def test_a_teammates_unsandboxed_agent_resumed_in_the_terminal_runs_no_command_of_it_unsandboxed(store_url,
                                                                                                 scripted_llm,
                                                                                                 tmp_path):
    # `ollie --session` takes the agent the session recorded. Alice's runs its prompt commands and hooks unsandboxed;
    # Bob's resume built the Core in it before its record said whose it was: its agentSpawn hook ran with his rights.
    from tests.teams.test_two_daemons import DEPLOY_AGENT, install_agent

    llm = scripted_llm("openai")
    llm.script(Reply.text("noted"))
    ollie = _terminals(tmp_path, llm, store_url)
    for user in ("alice", "bob"):
        install_agent(tmp_path / user, "deploy", DEPLOY_AGENT)
    sid = _shared_by_alice(ollie, store_url, ["--agent", "deploy"])
    assert {p.name for p in (tmp_path / "alice").glob("*-ran")} == {"prompt-ran", "hook-ran"}  # hers ran free
    resumed = ollie("bob", ["-p", "/context", "--session", sid], OLLIE_TEAMS="backend")
    assert resumed.returncode == 0, resumed.stderr
    assert not list((tmp_path / "bob").glob("*-ran")), resumed.stderr
    assert "run sandboxed (readonly) for you" in resumed.stdout, resumed.stdout  # they ran, sandboxed
