"""Hooks run real shell commands, sandboxed: exit codes, payload on stdin, OLLIE_* env, timeouts kill the group."""

from __future__ import annotations

import asyncio
import json

import pytest

from ollie import beneath
from ollie.agent.commandbox import CommandBox
from ollie.agent.hooks import HookResult, Hooks, payload_env
from tests.procs import new_mark, run_watching, timed_out_once_begun, wait_for_processes, wait_no_processes

# Hooks that leave files in their cwd need a writable command sandbox (the default one is read-only).
WRITABLE = CommandBox(policy="default")


async def test_exit_zero_collects_stdout_of_every_command(tmp_path):
    hooks = Hooks({"preTurn": ["echo first", "true", "printf 'second\\n\\n'"]})
    result = await hooks.run("preTurn", {}, cwd=tmp_path, env={})
    assert result == HookResult(blocked=False, output="first\nsecond", warnings=[], exit_codes=[0, 0, 0])


async def test_payload_arrives_on_stdin_and_as_ollie_env(tmp_path):
    hooks = Hooks({"preTool": ['cat > payload.json; printf "%s|%s|%s" "$OLLIE_TOOL" "$OLLIE_ARGS" "$OLLIE_HOOK"']},
                  box=WRITABLE)
    payload = {"tool": "call_tool", "args": {"calls": [{"tool": "file_read"}]}, "session_id": "s1"}
    result = await hooks.run("preTool", payload, cwd=tmp_path, env={"EXTRA": "x"})
    assert json.loads((tmp_path / "payload.json").read_text()) == {"hook": "preTool", **payload}
    tool, args, hook = result.output.split("|")
    assert tool == "call_tool"
    assert json.loads(args) == payload["args"]
    assert hook == "preTool"


async def test_session_env_and_cwd_reach_the_command_but_not_the_daemons_env(tmp_path, monkeypatch):
    monkeypatch.setenv("FROM_PROCESS", "p")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-daemon-secret")
    hooks = Hooks({"postTurn": ['printf "%s [%s] [%s] %s" "$EXTRA" "$FROM_PROCESS" "$OPENAI_API_KEY" "$(pwd)"']})
    result = await hooks.run("postTurn", {}, cwd=tmp_path, env={"EXTRA": "e"})
    assert result.output == f"e [] [] {tmp_path}"


async def test_the_default_sandbox_is_read_only_and_a_config_may_grant_more(tmp_path):
    command = "echo hi > made.txt && echo wrote"
    refused = await Hooks({"postTurn": [command]}).run("postTurn", {}, cwd=tmp_path, env={})
    assert not (tmp_path / "made.txt").exists()
    assert refused.exit_codes != [0] and "wrote" not in refused.output
    allowed = await Hooks({"postTurn": [command]}, box=WRITABLE).run("postTurn", {}, cwd=tmp_path, env={})
    assert allowed.output == "wrote" and (tmp_path / "made.txt").read_text() == "hi\n"


def test_payload_env_names_and_values():
    env = payload_env({"session_id": "a", "n": 3, "ok": True, "nested": {"k": [1]}, "none": None, "tool-name": "x"})
    assert env == {
        "OLLIE_SESSION_ID": "a",
        "OLLIE_N": "3",
        "OLLIE_OK": "true",
        "OLLIE_NESTED": '{"k": [1]}',
        "OLLIE_NONE": "",
        "OLLIE_TOOL_NAME": "x",
    }


@pytest.mark.parametrize("value, seen", [("c\x00d", "c\ufffdd"), ("e \ud83d", "e ?"), ("x" * 200_000, "x" * 30_000)],
                         ids=["NUL", "lone surrogate", "over 128 KiB"])
async def test_a_payload_no_environment_can_hold_still_runs_the_blocking_hook(tmp_path, value, seen):
    """A model's tool call id with a NUL, a client's lone surrogate, or arguments over Linux's 128 KiB a string:
    the exec refused the environment, the hook "could not start" and the tool ran, never checked. Stdin has it all."""
    hooks = Hooks({"preTool": ['printf %s "$OLLIE_TOOL_CALL_ID"; exit 2']})
    result = await hooks.run("preTool", {"tool": "t", "tool_call_id": value}, cwd=tmp_path, env={})
    assert result.blocked and result.output == seen and result.warnings == []


async def test_exit_two_blocks_and_stops_the_chain(tmp_path):
    hooks = Hooks({"preTool": ["echo ran-before", "echo 'not allowed here' >&2; exit 2", "touch after"]})
    result = await hooks.run("preTool", {"tool": "pipe"}, cwd=tmp_path, env={})
    assert result.blocked
    assert result.output == "not allowed here"
    assert result.exit_codes == [0, 2]
    assert not (tmp_path / "after").exists()


async def test_exit_two_reason_falls_back_to_stdout(tmp_path):
    result = await Hooks({"preCompact": ["echo keep it; exit 2"]}).run("preCompact", {}, cwd=tmp_path, env={})
    assert result.blocked and result.output == "keep it"


async def test_other_exit_codes_warn_and_continue(tmp_path):
    hooks = Hooks({"postTool": ["echo oops >&2; exit 3", "echo fine"]})
    result = await hooks.run("postTool", {}, cwd=tmp_path, env={})
    assert not result.blocked
    assert result.output == "fine"
    assert result.exit_codes == [3, 0]
    assert len(result.warnings) == 1 and "exited 3" in result.warnings[0] and "oops" in result.warnings[0]


async def test_timeout_kills_the_whole_group_including_a_grandchild(tmp_path):
    # sh starts `sleep` in the background (a grandchild of ours) and waits on it. A sandboxed hook has
    # its own PID namespace (its `$!` is no host pid): the sleep's argument marks it for the host to find.
    mark = new_mark()
    hooks = Hooks({"agentSpawn": [f"sleep 600.{mark} & wait", "echo next"]}, box=WRITABLE)
    # The sleep's 10 minutes: a hook that waited for it instead of timing out runs past run_watching's ceiling.
    result, seen = await timed_out_once_begun(
        lambda timeout: run_watching(hooks.run("agentSpawn", {}, cwd=tmp_path, env={}, timeout=timeout), mark),
        lambda ran: ran[1], first_s=2)
    assert seen, "the grandchild never ran before the timeout"
    assert result.exit_codes[0] < 0
    assert "timed out" in result.warnings[0]
    assert result.output == "next", "a timeout is a warning: the next command still runs"
    assert await wait_no_processes(mark) == [], "the grandchild survived the timeout"


async def test_unconfigured_hook_runs_nothing(tmp_path):
    hooks = Hooks({"preTurn": []})
    assert not hooks.has("preTurn") and not hooks.has("postTurn")
    assert await hooks.run("postTurn", {}, cwd=tmp_path, env={}) == HookResult()


def test_has_reports_configured_hooks():
    assert Hooks({"turnError": ["true"]}).has("turnError")


async def test_unknown_hook_name_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="unknown hook 'preturn'"):
        Hooks({"preturn": ["true"]})
    with pytest.raises(ValueError, match="unknown hook"):
        await Hooks({}).run("beforeTurn", {}, cwd=tmp_path, env={})


async def test_nothing_reaches_our_own_stdout(tmp_path, capfd):
    hooks = Hooks({"postCompact": ["echo to-stdout", "echo to-stderr >&2", "echo x >&2; exit 1"]})
    result = await hooks.run("postCompact", {}, cwd=tmp_path, env={})
    captured = capfd.readouterr()
    assert result.output == "to-stdout"
    assert captured.out == "" and captured.err == ""


async def test_cancelling_a_hook_kills_its_process_group(tmp_path):
    mark = new_mark()
    hooks = Hooks({"preTurn": [f"sleep 30.{mark} & wait"]}, box=WRITABLE)
    task = asyncio.create_task(hooks.run("preTurn", {}, cwd=tmp_path, env={}))
    await wait_for_processes(mark)  # the grandchild, running
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_no_processes(mark) == [], "the grandchild survived the cancellation"


async def test_an_unsandboxed_command_never_runs_a_program_planted_on_a_project_path_entry(tmp_path):
    # `"commandSandbox": "none"` trusts the agent's commands, not the workspace: its `git status` (or a hook's
    # `ruff`) must not find a `git` tool code planted in the project's `.venv/bin` or `./node_modules/.bin`.
    marker = tmp_path / "ran"
    for bin_dir in (tmp_path / ".venv" / "bin", tmp_path / "node_modules" / ".bin"):
        bin_dir.mkdir(parents=True)
        (bin_dir / "git").write_text(f"#!/bin/sh\necho planted >> {marker}\n")
        (bin_dir / "git").chmod(0o755)
    path = f"{tmp_path}/.venv/bin:./node_modules/.bin:/usr/bin:/bin"
    box = CommandBox(policy="none")
    result = await box.run("git --version; command -v git", cwd=tmp_path, timeout=30, session_env={"PATH": path})
    assert result.code == 0 and "/usr/bin/git" in result.stdout, result
    assert not marker.exists()


@pytest.mark.parametrize("box", [WRITABLE, CommandBox(policy="none")], ids=["sandboxed", "unsandboxed"])
async def test_a_hook_never_runs_in_a_cwd_another_step_swapped_for_a_symlink(tmp_path, box):
    # The session's cwd was `real` (its real path); another session's step in the folder above swapped it for a link.
    outside, real = tmp_path / "outside", tmp_path / "ws" / "real"
    outside.mkdir()
    real.parent.mkdir()
    real.symlink_to(outside)
    result = await Hooks({"postTurn": ["touch planted"]}, box=box).run("postTurn", {}, cwd=real, env={})
    assert list(outside.iterdir()) == []
    assert result.exit_codes == [] and f"the working directory {real} is now a symlink to {outside}" in result.warnings[0]


@pytest.mark.parametrize("box", [WRITABLE, CommandBox(policy="none")], ids=["sandboxed", "unsandboxed"])
async def test_a_hook_never_runs_in_a_cwd_swapped_for_a_symlink_after_its_check(tmp_path, box, monkeypatch):
    # Round 34: the cwd was checked (beneath.moved), then entered by name by the fork server's child: another session's
    # step swapping it for a link in between sent an unsandboxed hook's commands outside (a sandboxed one's too).
    outside, real = tmp_path / "outside", tmp_path / "ws" / "real"
    outside.mkdir()
    real.mkdir(parents=True)
    checked = beneath.moved

    def checked_then_swapped(cwd):
        found = checked(cwd)
        real.rename(real.parent / "old")
        real.symlink_to(outside)
        return found

    monkeypatch.setattr(beneath, "moved", checked_then_swapped)
    result = await Hooks({"postTurn": ["touch planted"]}, box=box).run("postTurn", {}, cwd=real, env={})
    assert list(outside.iterdir()) == []
    assert result.exit_codes == [] and f"the working directory {real} leads to {outside} now" in result.warnings[0]


async def test_an_unsandboxed_command_of_a_daemon_started_in_the_root_dir_finds_its_programs(tmp_path, monkeypatch):
    # A daemon a launcher started in `/` (a desktop entry, a service) took `/` for the project it started in: every
    # PATH entry lay under it, so `"commandSandbox": "none"` commands got PATH=/dev/null and found no program.
    monkeypatch.chdir("/")
    result = await CommandBox(policy="none").run("git --version", cwd=tmp_path, timeout=30,
                                                 session_env={"PATH": "/usr/local/bin:/usr/bin:/bin"})
    assert result.code == 0 and result.stdout.startswith("git version"), result
