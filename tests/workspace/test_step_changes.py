"""Each step's own diffs from the checkpoints its session logged around it: bounded, each pair diffed once."""

from __future__ import annotations

from pathlib import Path

from ollie.agent.stepchanges import step_changes
from ollie.backend.types import Message, ToolCall
from ollie.sessions.session import Session
from ollie.workspace.bounds import Bound
from ollie.workspace.checkpoints import Checkpoints


async def test_a_log_giving_one_pair_to_a_thousand_calls_diffs_it_once_and_reads_to_the_bound(project: Path) -> None:
    checkpoints = Checkpoints(project)
    before = await checkpoints.snapshot()
    (project / "README.md").write_text("# changed\n")
    after = await checkpoints.snapshot()
    calls = [ToolCall(f"c{n}", "file_edit") for n in range(1000)]
    session = Session(turn_starts=[0], messages=[Message("user", "go"), Message("assistant", "", tool_calls=calls)])
    for call in calls:
        session.step_trees[call.id], session.step_files[call.id] = [before, after], ["README.md"]
    diffed = []
    real = checkpoints.diff_entries

    async def counted(*pair: str):  # type: ignore[no-untyped-def]
        diffed.append(pair)
        return await real(*pair)

    checkpoints.diff_entries = counted  # type: ignore[method-assign]
    own = await step_changes(session, checkpoints, 1, bound=Bound(files=5, text_bytes=1 << 20))
    assert [(call, [(c.path, c.old_text, c.new_text) for c in changes]) for call, changes in own.items()] == [
        (f"c{n}", [("README.md", "# demo\n", "# changed\n")]) for n in range(5)]
    assert diffed == [(before, after)]  # once, not once a call (it was 5 here, 1,000 with a bound of 1,000)
