"""Sandbox fixtures: a project dir, a scratch TMPDIR and an 'outside' dir that no policy grants."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ollie.sandbox.policy import Policy, load_policy, parse_policy
from ollie.sandbox.spawn import spawn_sandboxed
from tests.workdirs import Dirs, make_dirs

CHILD_PATH = "/usr/bin:/bin"


class Workspace(Dirs):
    """Dirs of one test, and ways to run sandboxed commands in them."""

    @property
    def env(self) -> dict[str, str]:
        """The child's whole environment."""
        return {"PATH": CHILD_PATH, "TMPDIR": str(self.scratch), "LC_ALL": "C"}

    def default_policy(self) -> Policy:
        """The bundled default policy (sandbox.yaml) expanded for this workspace."""
        return load_policy("default", cwd=self.work, env={"TMPDIR": str(self.scratch)})

    def policy(self, yaml_text: str, name: str = "test") -> Policy:
        """A policy from YAML text, expanded for this workspace."""
        file = self.root / f"{name}.yaml"
        file.write_text(yaml_text)
        return parse_policy(yaml_text, source=str(file), name=name, cwd=self.work, env={"TMPDIR": str(self.scratch)})

    async def run(self, argv: list[str], policy: Policy | None, *, stdin: bytes | None = None,
                  timeout: float = 20) -> tuple[int, str, str]:
        """Run to completion in `work`; (exit status, stdout, stderr)."""
        proc = await spawn_sandboxed(argv, policy=policy, cwd=self.work, env=self.env, stdin=stdin)
        out, err, _ = await asyncio.wait_for(proc.communicate(limit_bytes=1 << 20), timeout)
        return await proc.wait(), out.decode(), err.decode()

    async def bash(self, script: str, policy: Policy | None) -> tuple[int, str, str]:
        """Run a bash script in `work`."""
        return await self.run(["bash", "-c", script], policy)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    """A fresh workspace; `outside/secret` holds the text `secret`."""
    return Workspace(root=tmp_path, **make_dirs(tmp_path, secret_file="secret"))
