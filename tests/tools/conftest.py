"""Execute-server fixtures: a project dir, a private TMPDIR, an 'outside' dir no policy grants."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ollie.tools.base import ToolResult
from ollie.tools.execute.languages import LanguageError, language, resolve_interpreter
from ollie.tools.execute.server import ExecuteServer
from tests.workdirs import Dirs, make_dirs


def installed(name: str) -> bool:
    """Whether language `name`'s interpreter is on this machine's PATH."""
    try:
        resolve_interpreter(language(name), None)
    except LanguageError:
        return False
    return True


@dataclass
class Workspace(Dirs):
    """One test's dirs, with `tools` its OLLIE_TOOLS_PATH dir, and its execute servers."""

    tools: Path

    def server(self, **options: Any) -> ExecuteServer:
        """An execute server for this workspace (session `s1` unless given)."""
        options.setdefault("session_id", "s1")
        return ExecuteServer(cwd=self.work, **options)

    def script(self, name: str, text: str, *, executable: bool = True) -> Path:
        """Write a tool script into the test's OLLIE_TOOLS_PATH dir."""
        path = self.tools / name
        path.write_text(textwrap.dedent(text).lstrip())
        if executable:
            path.chmod(0o755)
        return path


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    """A fresh workspace; TMPDIR and OLLIE_TOOLS_PATH point into it."""
    dirs = make_dirs(tmp_path, "tools", secret_file="secret.txt")
    # The pytest tmp root sits under /tmp: a private TMPDIR keeps `outside` out of the policy.
    monkeypatch.setenv("TMPDIR", str(dirs["scratch"]))
    monkeypatch.setenv("OLLIE_TOOLS_PATH", str(dirs["tools"]))
    return Workspace(root=tmp_path, **dirs)


async def code(server: ExecuteServer, program: str, language: str = "bash", **extra: Any) -> ToolResult:
    """Run one execute_code step."""
    step = {"code": program, "language": language}
    if "elevated" in extra:
        step["elevated"] = extra.pop("elevated")
    return await server.call("execute_code", {"steps": [step], **extra})


async def tool(server: ExecuteServer, name: str, *args: str, **extra: Any) -> ToolResult:
    """Run one call_tool call."""
    return await server.call("call_tool", {"calls": [{"tool": name, "args": list(args)}], **extra})


def stdout_of(result: ToolResult) -> str:
    """The text after a single section's status line."""
    return result.text.split("\n", 1)[1] if "\n" in result.text else ""

