"""Snapshot reuse through a real Core: a hook's write between snapshots is never pinned on the next step."""

from __future__ import annotations

from agentkit import drain, roles, write_agent

from ollie.testing import Reply


def _write(name: str, text: str) -> Reply:
    """A turn step: a Python script (real execute server) that writes `name`."""
    code = f"open({name!r}, 'w').write({text!r})"
    return Reply.tool_calls(("execute_code", {"steps": [{"code": code, "language": "python3"}]}))


async def test_a_hooks_write_is_the_turns_but_not_the_steps(scripted_llm, make_core, agents_dir, workdir):
    # preTurn runs after the turn-begin snapshot, postTool after a read-only step: both may write.
    write_agent(agents_dir, "h", hooks={"preTurn": "echo pre > pre.txt",
                                        "postTool": 'if [ "$OLLIE_TOOL" = file_read ]; then echo post > post.txt; fi'})
    (workdir / "seen.txt").write_text("seen\n")
    srv = scripted_llm("openai")
    srv.script(_write("a.txt", "one\n"),
               Reply.tool_calls(("file_read", {"path": "seen.txt"})),
               _write("b.txt", "two\n"),
               Reply.text("done"))
    core = await make_core(srv, agent="h")
    core.set_approval("auto")
    sub = core.bus.subscribe()
    assert (await core.submit("go")).reply == "done"
    diffs = [e.tool.diffs for e in roles(drain(sub), "tool") if e.tool is not None]
    # The read carries none (no snapshot); each write step only its own file.
    assert [[d.path for d in ds] for ds in diffs if ds is not None] == [["a.txt"], ["b.txt"]]
    turn = await core.review.changes()
    assert sorted(c.path for c in turn.changes) == ["a.txt", "b.txt", "post.txt", "pre.txt"]
