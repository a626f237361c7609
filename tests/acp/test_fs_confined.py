"""Red team through `ollie acp`: fs/read_text_file and fs/write_text_file only ever name files beneath the root.

The client (an editor) reads and writes with the user's full rights, outside any sandbox: a file tool
naming `../x`, an absolute path elsewhere, a symlink to a secret or a path through a symlinked dir must
not make the daemon ask it for that file. The tool then reads the disk itself, sandboxed.
"""

from __future__ import annotations

import os
from pathlib import Path

from ollie.testing import Reply

SECRET = "SECRET_KEY=hunter2"


def call(name: str, *args: str) -> Reply:
    return Reply.tool_calls(("call_tool", {"calls": [{"tool": name, "args": list(args)}]}))


async def test_the_client_is_asked_only_about_plain_paths_beneath_the_root(start_agent, llm, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text(f"{SECRET}\n")
    names = ["../outside/secret", str(outside / "secret"), "link/secret", "lf", "sub/../../outside/secret"]
    replies: list[Reply] = []
    for n, name in enumerate(names):
        replies += [call("file_read", name), Reply.text(f"r{n}")]
    replies += [call("file_write", "link/new", "pwned"), Reply.text("w"), call("file_read", "ok.txt"), Reply.text("ok")]
    llm.script(*replies)
    agent = await start_agent(env=llm.env(), fs=True)
    ws = agent.workspace
    (ws / "sub").mkdir()
    (ws / "link").symlink_to(outside)
    (ws / "lf").symlink_to(outside / "secret")
    (ws / "ok.txt").write_text("disk\n")
    asked: list[str] = []
    client = agent.client

    class EveryFile(dict):  # type: ignore[type-arg]
        """A real editor reads any file the user can: this one hands back whatever it is asked for."""

        def __getitem__(self, path: str) -> str:
            asked.append(path)
            return Path(path).read_text() if os.path.exists(path) else ""

    client.files = EveryFile()
    client.permission_answers = ["allow_once"] * 10
    sid = await agent.new()
    for n in range(len(names)):
        await agent.prompt(sid, f"read {n}")
    await agent.prompt(sid, "write")
    await agent.prompt(sid, "ok")
    root = os.path.realpath(ws)
    assert asked == [os.path.join(root, "ok.txt")], asked
    assert not any(path.startswith(str(outside)) or "outside" in path for path, _ in client.writes), client.writes
    assert not (outside / "new").exists() or (outside / "new").read_text() != "pwned"
