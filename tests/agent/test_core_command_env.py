"""Prompt commands and hooks run as the session: its id, cwd, agent dir and private TMPDIR.

A real Core, its real execute server and the commands under the default
(read-only) command sandbox; the session's temp dirs go when it closes.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from agentkit import write_agent

from ollie.agent.core import Core
from ollie.testing import Reply
from ollie.tools.execute.sessiondirs import SessionDirs

SHOW = 'echo "sid=$OLLIE_SESSION_ID cwd=$OLLIE_CWD agent=$OLLIE_AGENT_DIR tmp=$TMPDIR plan=$OLLIE_PLAN_FILE"'
TOOL_ENV = ("execute_code", {"steps": [{"language": "bash", "code": 'echo "tool sid=$OLLIE_SESSION_ID tmp=$TMPDIR"'}]})


@pytest.fixture
def tmp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private TMPDIR, so this test's session dirs are its own."""
    root = tmp_path / "tmpdir"
    root.mkdir()
    monkeypatch.setenv("TMPDIR", str(root))
    return root


def _facts(text: str, prefix: str = "sid=") -> dict[str, str]:
    """The `name=value` words after the last `prefix` in `text` (the output, not the code that printed it)."""
    line = text[text.rindex(prefix) + len(prefix) - len("sid="):].split("\n")[0]
    words = line.split('"')[0].split("\\")[0]  # up to the end of the JSON string
    return dict(re.findall(r"(\w+)=(\S+)", words))


def _requests(srv) -> str:
    return json.dumps([r.body["messages"] for r in srv.chat_requests])


async def test_prompt_commands_hooks_and_tools_run_as_the_session(
    scripted_llm, make_core, agents_dir: Path, workdir: Path, tmp_root: Path
) -> None:
    # The default commandSandbox (read-only): what the user gets, not the test kit's unsandboxed hooks.
    write_agent(agents_dir, "envy", prompt=[SHOW], hooks={"preTurn": SHOW.replace("sid=", "hook sid=")},
                commandSandbox="readonly")
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(TOOL_ENV), Reply.text("shown"))
    core: Core = await make_core(srv, toy=None, agent="envy")
    sid = core.session_id
    dirs = SessionDirs.for_session(sid)

    assert core.system_prompt() == "", "building the session ran no prompt command"
    facts = _facts(await core.ready_prompt())
    assert facts["sid"] == sid
    assert facts["cwd"] == str(workdir)
    assert facts["agent"] == str(agents_dir)
    assert facts["tmp"] == str(dirs.tmp)
    assert facts["plan"].endswith(f"/{sid}/plan")
    assert dirs.root.is_dir()

    await core.submit("show me")
    sent = _requests(srv)
    hook = _facts(sent.replace("\\n", "\n"), "hook sid=")
    assert (hook["sid"], hook["tmp"]) == (sid, str(dirs.tmp))
    tool = _facts(sent.replace("\\n", "\n"), "tool sid=")
    assert (tool["sid"], tool["tmp"]) == (sid, str(dirs.tmp))
    assert (dirs.root / "tools.lock").exists(), "the tools' lock dir is the session's"
    # Prompt commands that run later (an agent switch rebuilds the prompt) run as the session too.
    await core.switch_agent("envy")
    assert _facts(await core.ready_prompt())["sid"] == sid

    await core.close()
    assert not dirs.root.exists(), "closing the session removes its temp dirs"

    resumed = await make_core(srv, toy=None, agent="envy", session_id=sid)
    assert _facts(await resumed.ready_prompt())["sid"] == sid
    assert _facts(resumed.system_prompt())["tmp"] == str(dirs.tmp)


async def test_prompt_commands_not_run_yet_run_where_the_session_is_when_its_first_turn_comes(
    scripted_llm, make_core, agents_dir: Path, workdir: Path, tmp_root: Path
) -> None:
    write_agent(agents_dir, "envy", prompt=[SHOW], commandSandbox="readonly")
    srv = scripted_llm("openai")
    srv.script(Reply.text("ok"))
    core: Core = await make_core(srv, toy=None, agent="envy")
    moved = workdir / "sub"
    moved.mkdir()
    # Moved before its first turn: the deferred commands run in the new cwd, not the old one.
    await core.set_cwd(moved)
    assert core.system_prompt() == ""
    await core.submit("hi")
    system = srv.chat_requests[-1].body["messages"][0]
    assert system["role"] == "system"
    facts = _facts(system["content"])
    assert (facts["sid"], facts["cwd"]) == (core.session_id, str(moved.resolve()))
    assert facts["tmp"] == str(SessionDirs.for_session(core.session_id).tmp)
    await core.close()


async def test_a_step_nesting_dirs_deeper_than_python_recurses_in_its_tmpdir_breaks_no_session(scripted_llm,
                                                                                              make_core):
    # shutil.rmtree recurses, and RecursionError is no OSError: the session's close failed with it, and the dir
    # stayed for every later session's start (which sweeps first) to fail on.
    srv = scripted_llm("openai")
    deep = "cd \"$TMPDIR\" && python3 -c \"import os\n[(os.mkdir('d'), os.chdir('d')) for _ in range(1500)]\""
    srv.script(Reply.tool_calls(("execute_code", {"steps": [{"code": deep}]})), Reply.text("nested"))
    core = await make_core(srv)
    dirs = SessionDirs.for_session(core.session_id)
    try:
        assert (await core.submit("nest")).reply == "nested"
        assert (dirs.tmp / "d" / "d" / "d").is_dir()
        await core.close()
        assert not dirs.root.exists()
    finally:  # never left for pytest's (or a session's) recursive cleanup, if this fails
        subprocess.run(["rm", "-rf", str(dirs.root)], check=False)
