"""The agent's task plan in the terminal: a checklist as it changes, `/plan` whole, rolled back by `/rewind`."""

from __future__ import annotations

import re
import shlex

from ollie.testing import Reply
from ollie.tools.execute.childenv import plan_file

from .test_cli_pty import Terminal


def _task(tool: str, *args: str) -> Reply:
    return Reply.tool_calls(("call_tool", {"calls": [{"tool": tool, "args": list(args)}]}))


PLANNED = "plan (0 of 2 done):\n  [>] write it\n  [ ] run it\n"
WRITTEN = "plan (1 of 2 done):\n  [x] write it\n  [>] run it\n"


def test_the_plan_shows_as_it_changes_whole_at_slash_plan_and_as_a_rewind_and_a_resume_leave_it(llm, tmp_path):
    # Bug: the terminal showed no plan at all (its `state` events were dropped): the editors' users saw the agent's
    # checklist, a terminal's never did, nor had a command to see it.
    llm.script(_task("task_add", "write it", "run it"), Reply.text("planned"), _task("task_check", "1"),
               Reply.text("written"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = term.wait_for(r"default> ")
        at = term.answer("/plan", r"no plan: the agent keeps one with its task_\* tools", after=at)
        at = term.wait_for(r"default> ", after=at)
        term.type("plan it")
        at = term.wait_for(r"planned\n", after=at)
        # Once: the step's own result (the tool's numbered list, cut at 6 lines) is left for the checklist.
        assert "▸ Add 2 steps to the plan\n" + PLANNED in term.text and "(0/2 done)" not in term.text, term.text
        at = term.wait_for(r"default> ", after=at)
        term.type("write it")
        at = term.wait_for(r"written\n", after=at)
        assert WRITTEN in term.text, term.text
        at = term.wait_for(r"default> ", after=at)
        at = term.answer("/plan", re.escape("plan:\n  [x] write it\n  [>] run it\n"), after=at)
        at = term.wait_for(r"default> ", after=at)
        # Rolled back with the turn it undid, shown after what the rewind says (it came before it).
        at = term.answer("/rewind", r"rewound to before turn 2(?:.*\n)+?" + re.escape(PLANNED) + "default> ", after=at)
        at = term.answer("/rewind undo", r"rewind undone: turn 2 back(?:.*\n)+?" + re.escape(WRITTEN) + "default> ",
                         after=at)
        for other in ("/todos", "/tasks"):  # what Claude Code and the task_* tools call it
            at = term.answer(other, rf"unknown command {other}: did you mean /plan\?", after=at)
        sid = re.search(r"session (\S+)\. /help", term.text)[1]  # type: ignore[index]
        assert term.close() == 0
    # Tomorrow: the resumed session says where its task stood, after its history.
    with Terminal(["--cwd", str(tmp_path), "--session", sid], llm.env(), tmp_path) as term:
        at = term.wait_for(re.escape(WRITTEN) + r"default> ")
        assert term.text.index("written\n") < term.text.rindex(WRITTEN), term.text
        # Its history leaves each plan step's own result out, as the live view does (it showed the numbered list).
        assert "▸ Add 2 steps to the plan\nplanned\n" in term.text, term.text
        assert term.close() == 0


def test_a_long_plan_shows_a_few_steps_from_the_last_done_on_a_narrow_terminal(llm, tmp_path):
    steps = [f"step {n} of the migration to the new settings format" for n in range(1, 10)]
    checks = [{"tool": "task_check", "args": [n]} for n in ("1", "2", "3")]
    llm.script(_task("task_add", *steps), Reply.tool_calls(("call_tool", {"calls": checks})), Reply.text("going"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path, size=(24, 60)) as term:
        at = term.wait_for(r"default> ")
        term.type("migrate")
        at = term.wait_for(r"going\n", after=at)
        shown = term.text.rsplit("plan (3 of 9 done):\n", 1)[1].split("going")[0]
        assert shown.splitlines() == [
            "  … 2 done",
            "  [x] step 3 of the migration to the new settings format",
            "  [>] step 4 of the migration to the new settings format",
            "  [ ] step 5 of the migration to the new settings format",
            "  [ ] step 6 of the migration to the new settings format",
            "  [ ] step 7 of the migration to the new settings format",
            "  … 2 more (/plan shows them all)",
        ], shown
        assert all(len(line) <= 60 for line in term.text.splitlines()), term.text
        assert term.close() == 0


def test_a_plan_step_tool_code_wrote_shows_its_control_codes_escaped(llm, tmp_path):
    # Tool code writes the plan file: a step's `ESC[2J` (clear the screen) or U+202E (reverse what follows) is shown.
    code = r"""printf -- '- [ ] \033[2Jwipe \342\200\256txt.exe\n' > "$OLLIE_PLAN_FILE" """
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": code}]})), Reply.text("planned"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = term.wait_for(r"default> ")
        term.type("plan it")
        at = term.wait_for(r"planned\ndefault> ", after=at)
        at = term.answer("/plan", r"plan:\n.*\n", after=at)
        shown = r"[>] \x1b[2Jwipe \u202etxt.exe"
        assert term.text.count(shown) == 2 and "\x1b[2J" not in term.raw and "\u202e" not in term.raw, term.text
        assert term.close() == 0


def test_a_plan_past_100_steps_counts_all_its_steps(llm, tmp_path):
    # Bug: past 100 steps the plan is summarised (`… N steps done`, `… N more steps`), and each summary counted as one
    # step: 150 steps, 149 done, read "98 of 100 done"; 130 done of 150 read "79 of 99 done".
    ahead = 'for n in $(seq 2 150); do echo "- [x] s$n"; done | sed "1i - [ ] s1" > "$OLLIE_PLAN_FILE"'
    behind = '{ seq 1 130 | sed "s/^/- [x] s/"; seq 131 150 | sed "s/^/- [ ] s/"; } > "$OLLIE_PLAN_FILE"'
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": ahead}]})),
               Reply.tool_calls(("execute_code", {"steps": [{"code": behind}]})), Reply.text("counted"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = term.wait_for(r"default> ")
        term.type("plan it")
        term.wait_for(r"counted\ndefault> ", after=at)
        assert re.search(r"plan \(149 of 150 done\):\n  \[>\] s1\n(?:.*\n)*?  … \d+ more \(/plan shows", term.text), term.text
        assert "plan (130 of 150 done):\n  … 129 done\n  [x] s130\n  [>] s131\n" in term.text, term.text
        assert term.close() == 0


def test_her_own_task_tool_is_no_plan_step_its_output_shown(llm, tmp_path):
    # Bug: a plan step was known by its title, and every `task_*` script was titled "Update the plan": her own
    # `task_deploy`'s output was left out for a checklist that never came (it changed no plan).
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "task_deploy").write_text('#!/bin/bash\n# description: Deploy the app.\necho "deployed to $1"\n')
    llm.script(_task("task_deploy", "prod"), Reply.text("shipped"))
    with Terminal(["--cwd", str(tmp_path)], {**llm.env(), "OLLIE_TOOLS_PATH": str(tools)}, tmp_path) as term:
        at = term.wait_for(r"default> ")
        term.type("ship it")
        term.wait_for(r"shipped\n", after=at)
        assert "▸ Run `task_deploy prod`\n  [call 1 task_deploy] exit 0\n  deployed to prod\nshipped" in term.text, term.text
        assert term.close() == 0


def test_a_plan_the_users_shell_command_writes_shows_as_it_ends(llm, tmp_path):
    # Bug: a `!cmd` that wrote the plan file showed nothing until the next turn ended.
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = term.wait_for(r"default> ")
        plan = shlex.quote(str(plan_file(re.search(r"session (\S+)\. /help", term.text)[1])))  # type: ignore[index]
        term.type(f"!mkdir -p $(dirname {plan}) && printf -- '- [x] write it\\n- [ ] run it\\n' > {plan}")
        term.wait_for(re.escape(WRITTEN) + r"default> ", after=at)
        assert term.close() == 0
