"""A resumed turn's steps each get back their own diffs (`ollie/changes`' `steps`), as live: two steps of one file too."""

from __future__ import annotations

from typing import Any

from ollie import paths
from ollie.sessions.persist import SessionFile
from ollie.testing import Reply
from tests.planted import git_fifo_and_link

from .test_history_render import resumed
from .test_review import ORIGINAL_A, ORIGINAL_B, env, seeded

FIRST = ORIGINAL_A.replace("line 2\n", "LINE TWO\n")
SECOND = FIRST.replace("LINE TWO\n", "LINE 2!\n")


def own(changes: dict[str, Any]) -> dict[str, list[tuple[str, str | None, str | None]]]:
    """`steps` as (path, old text, new text) by call id."""
    return {call: [(d["path"], d["oldText"], d["newText"]) for d in diffs] for call, diffs in changes["steps"].items()}


async def edited_twice_and_sed(start_daemon, llm, tmp_path) -> tuple[Any, str, dict[str, list[Any]]]:
    """A daemon whose turn edited a.txt in two steps and ran a sed on b.txt: (it, its session, each step's live diffs
    as (path, old text, new text) by call id)."""
    llm.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": ["a.txt", "line 2\n", "LINE TWO\n"]}]}),
                                ("call_tool", {"calls": [{"tool": "file_edit", "args": ["a.txt", "LINE TWO\n", "LINE 2!\n"]}]})),
               Reply.tool_calls(("execute_code", {"steps": [{"code": "sed -i s/beta/BETA/ b.txt", "language": "bash"}]})),
               Reply.text("edited"))
    daemon = await start_daemon(env=env(llm), workspace=seeded(tmp_path))
    session = (await daemon.request("ollie/submit", {"text": "edit them"}, timeout=60))["session"]
    live = {e["tool"]["id"]: [(d["path"], d["oldText"], d["newText"]) for d in e["tool"]["diffs"]]
            for e in daemon.session_events(session) if e["role"] == "tool"}
    return daemon, session, live


async def test_two_steps_of_one_file_each_show_their_own_diff_after_a_resume_whatever_the_log_names(
        start_daemon, llm, tmp_path):
    daemon, session, live = await edited_twice_and_sed(start_daemon, llm, tmp_path)
    first, second, sed = live
    assert live == {first: [("a.txt", ORIGINAL_A, FIRST)], second: [("a.txt", FIRST, SECOND)],
                    sed: [("b.txt", ORIGINAL_B, ORIGINAL_B.replace("beta", "BETA"))]}

    # Resumed (an editor's window reloaded): each step's own, as live; the turn's listing is its whole change.
    daemon = await resumed(start_daemon, llm, daemon, session)
    changes = await daemon.request("ollie/changes", {"session": session, "turn": 1})
    assert [(f["path"], f["oldText"], f["newText"]) for f in changes["files"]] == [
        ("a.txt", ORIGINAL_A, SECOND), ("b.txt", ORIGINAL_B, ORIGINAL_B.replace("beta", "BETA"))]
    assert own(changes) == live
    # A file asked by path is the turn's alone (a review's): no steps.
    assert "steps" not in await daemon.request("ollie/changes", {"session": session, "turn": 1, "path": "a.txt"})

    # A crafted log: the first step names b.txt (the sed's) and the sed names nothing, another call has checkpoints
    # that are no ids, one has checkpoints this directory does not hold. The first step still shows only its own
    # change (before, a client placed the sed's b.txt under it), the others none: nothing else is read.
    await daemon.client.shutdown_session()
    log = SessionFile(paths.sessions_dir(), session, sync=False)
    saved = log.load()
    saved.step_files[first] = ["a.txt", "b.txt"]
    saved.step_files[sed] = []
    saved.step_trees[second] = ["--output=/tmp/x", "HEAD"]
    saved.step_trees[sed] = ["1" * 40, "2" * 40]
    log.save(saved)
    daemon = await start_daemon(env=env(llm), workspace=daemon.workspace)
    await daemon.request("ollie/session/load", {"session": session})
    crafted = await daemon.request("ollie/changes", {"session": session, "turn": 1})
    assert own(crafted) == {first: [("a.txt", ORIGINAL_A, FIRST)]}
    assert crafted["files"] == changes["files"]


async def test_the_steps_own_diffs_after_a_resume_pass_a_planted_git_a_fifo_and_a_link(start_daemon, llm, tmp_path):
    # Each step's diffs are the daemon's reads of its checkpoints: a `git` a step put in the workspace's `.venv/bin`
    # (on PATH, an activated venv) never runs, and the edited files swapped since for a FIFO and a link to a secret
    # are never read (an answer waiting on the FIFO, or holding the secret, would be).
    daemon, session, live = await edited_twice_and_sed(start_daemon, llm, tmp_path)
    await daemon.client.shutdown_session()
    ws, ran = daemon.workspace, tmp_path / "planted-git-ran"
    path = git_fifo_and_link(ws, ran, fifo="a.txt", link="b.txt")
    daemon = await start_daemon(env={**env(llm), "PATH": path}, workspace=ws)
    await daemon.request("ollie/session/load", {"session": session})
    changes = await daemon.request("ollie/changes", {"session": session, "turn": 1}, timeout=30)
    assert own(changes) == live and len(live) == 3, own(changes)
    assert "root:" not in str(changes) and not ran.exists()
