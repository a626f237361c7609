"""Red team through `ollie acp`: fs/read_text_file and fs/write_text_file only ever name files beneath the root.

The client (an editor) reads and writes with the user's full rights, outside any sandbox: a file tool
naming `../x`, an absolute path elsewhere, a symlink to a secret or a path through a symlinked dir must
not make the daemon ask it for that file. The tool then reads the disk itself, sandboxed.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from ollie import beneath
from ollie.testing import Reply
from tests.procs import eventually

SECRET = "SECRET_KEY=hunter2"


def call(name: str, *args: str) -> Reply:
    return Reply.tool_calls(("call_tool", {"calls": [{"tool": name, "args": list(args)}]}))


async def test_the_client_is_asked_only_about_plain_paths_beneath_the_root(shared_agent, llm, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text(f"{SECRET}\n")
    names = ["../outside/secret", str(outside / "secret"), "link/secret", "lf", "sub/../../outside/secret", "fifo"]
    replies: list[Reply] = []
    for n, name in enumerate(names):
        replies += [call("file_read", name), Reply.text(f"r{n}")]
    replies += [call("file_write", "link/new", "pwned"), Reply.text("w"), call("file_read", "ok.txt"), Reply.text("ok")]
    llm.script(*replies)
    agent = await shared_agent(fs=True)
    ws = agent.workspace
    (ws / "sub").mkdir()
    (ws / "link").symlink_to(outside)
    (ws / "lf").symlink_to(outside / "secret")
    (ws / "ok.txt").write_text("disk\n")
    os.mkfifo(ws / "fifo")  # a step's: the client would wait for a writer for good (a FIFO passed, all but this)
    asked: list[str] = []
    client = agent.client

    class EveryFile(dict):  # type: ignore[type-arg]
        """A real editor reads any file the user can: this one hands back whatever it is asked for."""

        def __getitem__(self, path: str) -> str:
            asked.append(path)
            return Path(path).read_text() if os.path.isfile(path) else ""

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


async def test_the_client_is_never_asked_about_a_path_while_a_step_may_swap_it(shared_agent, llm, tmp_path: Path,
                                                                              monkeypatch) -> None:
    """The path was checked (beneath the root, no link), then the client opened it by name, following links: a step of
    another session in the workspace swapping it for a link in between had the client read a secret to the model, or
    write the model's text over a file outside. The client is now asked only while no step that may write there runs
    (each step holds its writable paths' shared locks, `ollie.sandbox.writers`), the path checked again inside."""
    from tests.acp.conftest import RecordingClient

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text(f"{SECRET}\n")
    (outside / "bashrc").write_text("# mine\n")
    asked: list[str] = []
    racing = True  # while the other session's step runs, it swaps the file for a link the instant the client opens it

    def opened(path: str, to: Path) -> Path:
        if racing:
            os.replace(path, f"{path}.bak")
            os.symlink(to, path)
        return Path(path)  # the client opens it by name, following links

    class Racing(dict):  # type: ignore[type-arg]
        def __getitem__(self, path: str) -> str:
            asked.append(path)
            return (opened(path, outside / "secret") if path.endswith("notes.py") else Path(path)).read_text()

    editor_write = RecordingClient.write_text_file

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: object) -> object:
        opened(path, outside / "bashrc").write_text(content)
        return await editor_write(self, session_id, path, content)

    monkeypatch.setattr(RecordingClient, "write_text_file", write_text_file)
    blocker = Reply.tool_calls(("execute_code", {"steps": [{"code": "touch started; cat go.fifo", "language": "bash"}]}))
    llm.script(blocker, call("file_read", "notes.py"), Reply.text("read while it ran"),
               call("file_write", "w.py", "pwned = 1"), Reply.text("wrote while it ran"),
               Reply.text("step done"), call("file_read", "notes.py"), Reply.text("read after"))
    agent = await shared_agent(fs=True)
    ws = agent.workspace
    os.mkfifo(ws / "go.fifo")
    (ws / "notes.py").write_text("notes = 1\n")
    (ws / "w.py").write_text("w = 1\n")
    agent.client.files = Racing()
    agent.client.permission_answers = ["allow_once"] * 10
    other, mine = await agent.new(), await agent.new()
    running = asyncio.ensure_future(agent.prompt(other, "wait"))
    await eventually(lambda: (ws / "started").exists(), "the other session's step started")
    await agent.prompt(mine, "read it")
    await agent.prompt(mine, "write it")
    racing = False
    tools = "\n".join(m["content"] for r in llm.chat_requests[1:] for m in r.body["messages"] if m["role"] == "tool")
    assert SECRET not in tools and "notes = 1" in tools, tools
    assert (outside / "bashrc").read_text() == "# mine\n"
    assert asked == [] and agent.client.writes == [], (asked, agent.client.writes)
    assert (ws / "w.py").read_text() == "pwned = 1" and not (ws / "w.py").is_symlink()  # written on disk, sandboxed
    with open(ws / "go.fifo", "w") as fifo:  # the other session's step ends
        fifo.write("go\n")
    await running
    await agent.prompt(mine, "read it again")
    assert str(Path(os.path.realpath(ws)) / "notes.py") in asked, asked  # asked again once no step runs


async def test_a_client_that_never_answers_a_read_holds_up_no_step(start_agent, llm, monkeypatch) -> None:
    """The client is asked while every step that may write the path waits (`writers.quiet`, locks in the user's state
    dir): a client that never answered `fs/read_text_file` (a hung editor, a buffer stuck loading) held every step of
    the workspace, in every session and ollie process of the user, for good. Its read now has a time limit: the tool
    then reads the disk, sandboxed, and an edit (whose buffer may differ from what the model saw) is refused."""
    from tests.acp.conftest import RecordingClient

    asked = asyncio.Event()
    reads = 0

    async def read_text_file(self, session_id: str, path: str, **kwargs: object) -> object:
        nonlocal reads
        reads += 1
        asked.set()
        if reads in (2, 3):  # the edit's reads are answered, its check before the write is not
            return await RecordingClient.__dict__["_answered"](self, session_id, path)
        await asyncio.Event().wait()

    monkeypatch.setattr(RecordingClient, "_answered", RecordingClient.read_text_file, raising=False)
    monkeypatch.setattr(RecordingClient, "read_text_file", read_text_file)
    step = Reply.tool_calls(("execute_code", {"steps": [{"code": "touch ran", "language": "bash"}]}))
    llm.script(call("file_read", "notes.py"), step, Reply.text("step done"), Reply.text("read"),
               call("file_edit", "notes.py", "notes = 1", "notes = 2"), Reply.text("edit"))
    agent = await start_agent(env={**llm.env(), "OLLIE_ACP_READ_ANSWER_S": "2"}, fs=True)  # each give-up: 2 s, not 5
    ws = agent.workspace
    (ws / "notes.py").write_text("notes = 1\n")
    agent.client.files = {str(ws / "notes.py"): "notes = 1\n"}
    agent.client.permission_answers = ["allow_once"] * 10
    hung, other = await agent.new(), await agent.new()
    reading = asyncio.ensure_future(agent.prompt(hung, "read it"))
    await asyncio.wait_for(asyncio.shield(asyncio.ensure_future(asked.wait())), 30)
    await asyncio.wait_for(agent.prompt(other, "run it"), 30)
    assert (ws / "ran").exists()
    await asyncio.wait_for(reading, 30)
    await asyncio.wait_for(agent.prompt(hung, "edit it"), 30)
    tools = "\n".join(m["content"] for r in llm.chat_requests for m in r.body["messages"] if m["role"] == "tool")
    assert "1\tnotes = 1" in tools and "the editor did not answer a read within" in tools, tools
    assert agent.client.writes == [] and (ws / "notes.py").read_text() == "notes = 1\n"


async def test_a_file_grown_past_the_read_cap_during_an_edit_is_not_read_by_the_client_again(shared_agent, llm) -> None:
    # The edit's write asks the client for its text again first: a file grown past the cap since the edit read it (a
    # log a server writes) is refused instead (that check removed, no test failed).
    llm.script(Reply.file_edit("app.log", "start", "begin"), Reply.text("refused"))
    agent = await shared_agent(fs=True)
    log = agent.workspace / "app.log"
    log.write_text("start\n")
    asked: list[str] = []

    class Growing(dict):  # type: ignore[type-arg]
        def __getitem__(self, path: str) -> str:
            asked.append(path)
            with open(path, "r+b") as grown:  # sparse: past the cap once the edit has read it
                grown.truncate(beneath.cap() + 1)
            return "start\n"

    agent.client.files = Growing()
    agent.client.permission_answers = ["allow_once"] * 3
    await agent.prompt(await agent.new(), "edit it")
    assert asked == [os.path.realpath(log)] and agent.client.writes == [], (asked, agent.client.writes)
    assert "app.log is now larger than" in llm.chat_requests[-1].body["messages"][-1]["content"]


async def test_the_client_is_never_asked_to_read_a_file_larger_than_the_read_cap(shared_agent, llm) -> None:
    # Round 35: the client (an editor, outside any sandbox) reads what it is asked about whole. A step makes a 20 GB
    # sparse file (or a log grows past the cap) and the model reads it: the client was asked, and filled its memory
    # (an answer under 50 MiB came back whole into the daemon's). The tool reads the disk itself, sandboxed.
    llm.script(call("file_read", "huge.log"), Reply.text("read"), call("file_read", "ok.txt"), Reply.text("ok"))
    agent = await shared_agent(fs=True)
    ws = agent.workspace
    with open(ws / "huge.log", "wb") as huge:  # sparse, a byte past the cap (20 GB: the tool sat 30 s reading it)
        huge.truncate(beneath.cap() + 1)
    (ws / "ok.txt").write_text("disk\n")
    asked: list[str] = []

    class Recording(dict):  # type: ignore[type-arg]
        def __getitem__(self, path: str) -> str:
            asked.append(path)
            return "what the editor holds\n"  # never read from the disk here: the old code asked for 20 GB

    agent.client.files = Recording()
    sid = await agent.new()
    await agent.prompt(sid, "read it")
    await agent.prompt(sid, "ok")
    assert asked == [os.path.join(os.path.realpath(ws), "ok.txt")], asked
