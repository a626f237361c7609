"""A real project (its own git repository, with a commit) for the workspace engine's tests."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from ollie.workspace.checkpoints import Checkpoints


def git(cwd: Path, *args: str) -> str:
    """Run the user's git in `cwd` (the project's own repository, as the user would)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x", "GIT_COMMITTER_NAME": "u", "GIT_COMMITTER_EMAIL": "u@x"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


async def changed_since_snapshot(project: Path, name: str, before: tuple[str, int],
                                 after: tuple[str, int]) -> tuple[Checkpoints, str]:
    """`name` written with `before`'s text and mode, snapshotted, then given `after`'s: the checkpoints and that
    snapshot (a step's change to a file's text and bits, to undo or rewind)."""
    file = project / name
    file.write_text(before[0])
    file.chmod(before[1])
    cps = Checkpoints(project)
    taken = await cps.snapshot()
    file.write_text(after[0])
    file.chmod(after[1])
    return cps, taken


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A small git project: a few text files, a .gitignore, a committed history."""
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("".join(f"line {i}\n" for i in range(1, 31)))
    (root / "README.md").write_text("# demo\n")
    (root / ".gitignore").write_text("build/\n*.log\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root


@pytest.fixture
def git_ran(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The shadow git commands run (each still runs, for real), in order; clear it to count from a point."""
    from ollie.workspace.shadowgit import ShadowGit

    ran: list[str] = []
    original = ShadowGit.run

    async def run(self: ShadowGit, *args: str, **kwargs: Any) -> bytes:
        ran.append(args[0])
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(ShadowGit, "run", run)
    return ran
