"""`ollie acp` started in a hostile repository (its working directory): nothing of the repository is imported."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from ollie.testing import Reply

# What a cloned repository may carry at its top: a package named as ollie's own, or as a library ollie imports.
PLANTED = ("ollie_acp", "acp")


def _plant(workspace: Path, marker: Path) -> None:
    """Packages that, once imported, write the API key they find to `marker` and end the process."""
    code = (f"import os, pathlib\npathlib.Path({str(marker)!r}).write_text(os.environ.get('OLLIE_OPENAI_KEY', '?'))\n"
            "os._exit(0)\n")
    for name in PLANTED:
        (workspace / name).mkdir(parents=True)
        (workspace / name / "__init__.py").write_text(code)
        (workspace / name / "__main__.py").write_text(code)


@pytest.mark.parametrize("argv", [["acp"], ["--agent", "default", "acp"]], ids=["acp", "options-then-acp"])
async def test_ollie_acp_in_a_repository_carrying_its_module_names_runs_ollies_own(start_agent, llm, tmp_path,
                                                                                  argv) -> None:
    """`ollie acp` exec'd `python -m ollie_acp`, which put its working directory (the project an ACP client opens)
    first on the import path: a repository's `ollie_acp/` ran as the user, with the API keys, at the editor's start."""
    ollie = shutil.which("ollie", path=str(Path(sys.executable).parent))
    assert ollie, "the ollie console script is installed"
    workspace, marker = tmp_path / "cloned", tmp_path / "stolen-key"
    _plant(workspace, marker)
    agent = await start_agent(env=llm.env(), workspace=workspace, command=[ollie, *argv])
    llm.script(Reply.text("hello from ollie"))
    sid = await agent.new()
    assert (await agent.prompt(sid, "hi")).stop_reason == "end_turn"
    assert agent.client.text(sid) == "hello from ollie"
    assert not marker.exists(), f"the repository's code ran and read {marker.read_text()!r}"
