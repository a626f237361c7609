"""A step's write of a start file where the project's `.gitignore` ignores (`.venv/`): in no checkpoint, so named."""

from __future__ import annotations

import pytest
from agentkit import drain, roles

from ollie.testing import Reply

SITE = ".venv/lib/python3.11/site-packages"


@pytest.mark.parametrize("packages", [1, 400])
async def test_a_pth_a_step_writes_in_an_ignored_venv_is_named_and_the_packages_beside_it_are_not(
        scripted_llm, make_core, workdir, packages):
    """Python runs the `import` lines of every `.pth` in site-packages at each start, outside any sandbox: a step's
    `evil.pth` in `.venv` (ignored by `.gitignore`) was in no diff, no rewind, and nothing said so. Named now, with the
    step's `sitecustomize.py`; the ordinary files of a pip-like install (one: from the watcher's events; 400: too many
    events, so the start files' dirs are listed) and the user's own `.pth` from before are not."""
    (workdir / ".gitignore").write_text(".venv/\n")
    (workdir / SITE).mkdir(parents=True)
    (workdir / SITE / "mine.pth").write_text("/home/me/src\n")
    code = (f"cd {SITE} && echo 'import evil' > evil.pth && echo 'x = 1' > sitecustomize.py"
            f" && for i in $(seq {packages}); do echo \"v = $i\" > m$i.py; done"
            " && cd - >/dev/null && echo hi > notes.txt")
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("execute_code", {"steps": [{"code": code, "language": "bash"}]})), Reply.text("ran"))
    core = await make_core(srv)
    core.set_approval("auto")
    sub = core.bus.subscribe()
    await core.submit("install it")
    assert (workdir / SITE / f"m{packages}.py").exists(), [m.content for m in core.session.messages]  # ran
    told = [e.content for e in roles(drain(sub), "info") if "no diff shows" in e.content]
    assert told == ["warning: no diff shows, and no undo or rewind restores, files the project ignores that programs "
                    f"run at their start: '{SITE}/evil.pth', '{SITE}/sitecustomize.py'"], told
    assert [c.path for c in (await core.review.changes()).changes] == ["notes.txt"]
