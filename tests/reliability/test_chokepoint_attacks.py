"""Red team: a hostile model and workspace against the daemon's own file access and helper programs.

Each attack goes through the real daemon (pytest-lsp) with a scripted model; the daemon runs with the
user's full rights, so what it reads, writes or runs must never be chosen by the workspace. The
chokepoint (`ollie.beneath`), the helper resolution (`ollie.programs`) and the once-parsed file-tool
arguments (`ollie.tools.execute.fileargs`) are what keep them closed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from ollie.testing import Reply
from tests.lsp.conftest import _module_llm, _shared_daemons, llm, shared_daemon, shared_llm, start_daemon  # noqa: F401
from tests.lsp.test_step_diffs_hostile import peak_kib
from tests.planted import plant

SECRET = "SECRET_KEY=hunter2"


def run(code: str, *, elevated: bool = False) -> Reply:
    return Reply.tool_calls(("execute_code", {"steps": [{"code": code, "elevated": elevated}]}))


def tool(name: str, *args: str) -> Reply:
    return Reply.tool_calls(("call_tool", {"calls": [{"tool": name, "args": list(args)}]}))


def told(llm: Any, request: int = -1) -> str:  # noqa: F811
    """The tool result the model read in chat request `request`."""
    return llm.chat_requests[request].body["messages"][-1]["content"]


async def asking(shared_daemon: Any, llm: Any, ws: Path, outcome: str) -> tuple[Any, list[dict[str, Any]]]:  # noqa: F811
    """A session in `ws` that asks before each step, its client answering every question `outcome`; the questions."""
    daemon = await shared_daemon(env=llm.env(approval="ask"), init_options={"permissionRequest": True}, cwd=ws)
    questions: list[dict[str, Any]] = []

    @daemon.client.feature("ollie/permission")
    def on_permission(params: Any) -> dict[str, Any]:
        questions.append(params)
        return {"outcome": outcome}
    return daemon, questions


async def test_a_git_planted_in_the_workspace_venv_or_tmp_on_path_never_runs(start_daemon, llm, tmp_path):  # noqa: F811
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    marker = tmp_path / "ran"
    for place in (ws / ".venv" / "bin", ws / "bin", ws / "node_modules" / ".bin"):
        plant(place, "git", marker)
    path = os.pathsep.join([str(ws / ".venv" / "bin"), str(ws / "bin"), str(ws / "node_modules" / ".bin"), ".",
                            os.environ["PATH"]])
    llm.script(run("echo two > a.txt"), Reply.text("done"))
    daemon = await start_daemon(env={**llm.env(), "PATH": path}, workspace=ws)
    assert (await daemon.request("ollie/submit", {"text": "edit"}, timeout=60))["stop"] == "end"
    # The turn's checkpoints ran (git found off the workspace): the change is listed; the planted git never ran.
    files = (await daemon.request("ollie/changes", {"turn": 1}))["files"]
    assert [f["path"] for f in files] == ["a.txt"]
    assert not marker.exists()


async def test_an_elevated_step_runs_neither_a_planted_bash_nor_with_the_workspace_on_path(
        start_daemon, llm, tmp_path):  # noqa: F811
    ws, scratch = tmp_path / "ws", tmp_path / "scratch"
    ws.mkdir()
    scratch.mkdir()
    marker, out = tmp_path / "ran", tmp_path / "out.txt"
    plant(ws / ".venv" / "bin", "bash", marker)
    plant(ws / ".venv" / "bin", "python3", marker)
    path = os.pathsep.join([str(ws / ".venv" / "bin"), os.environ["PATH"]])
    llm.script(run(f"echo \"$PATH\" > {out}; python3 -c pass", elevated=True), Reply.text("done"))
    daemon = await start_daemon(env={**llm.env(), "PATH": path, "TMPDIR": str(scratch)}, workspace=ws)

    @daemon.client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def allow(params: types.ShowMessageRequestParams) -> types.MessageActionItem:
        return types.MessageActionItem(title="Allow once")

    assert (await daemon.request("ollie/submit", {"text": "go"}, timeout=60))["stop"] == "end"
    assert out.exists(), told(llm)
    assert str(ws) not in out.read_text() and not marker.exists()


async def test_a_preview_never_reads_through_a_symlink_a_fifo_or_a_device(shared_daemon, llm, tmp_path):  # noqa: F811
    ws = tmp_path / "ws"
    ws.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text(f"{SECRET}\n")
    (ws / "link.txt").symlink_to(secret)
    os.mkfifo(ws / "pipe.txt")
    (ws / "zero.txt").symlink_to("/dev/zero")
    # A link the write may follow (its target is in the workspace): asked about, its preview still reads no link.
    (ws / "sub").mkdir()
    (ws / "sub" / "real.txt").write_text(f"{SECRET}\n")
    (ws / "inside.txt").symlink_to(ws / "sub" / "real.txt")
    llm.script(tool("file_edit", "link.txt", "SECRET", "x"), Reply.text("1"),
               tool("file_write", "pipe.txt", "new"), Reply.text("2"),
               tool("file_edit", "zero.txt", "\0", "x"), Reply.text("3"),
               tool("file_edit", "inside.txt", "SECRET", "x"), Reply.text("4"))
    daemon, questions = await asking(shared_daemon, llm, ws, "reject")

    try:
        for text in ("1", "2", "3", "4"):
            assert (await daemon.request("ollie/submit", {"text": text}, timeout=30))["stop"] == "end"
    finally:
        try:
            os.close(os.open(ws / "pipe.txt", os.O_WRONLY | os.O_NONBLOCK))  # free a reader a broken daemon has
        except OSError:
            pass
    # The link out of the workspace is refused unasked (the sandbox would refuse its write whatever the answer);
    # the FIFO, the device and the link within are asked about.
    assert [q["step"]["title"] for q in questions] == ["Write pipe.txt", "Edit zero.txt", "Edit inside.txt"]
    told = repr([m for m in llm.chat_requests[1].body["messages"] if m.get("role") == "tool"])
    assert "refused, without asking the user" in told and "link.txt: outside the sandbox" in told, told
    shown = repr(questions) + told
    assert "hunter2" not in shown
    assert all(not (q["step"].get("diff") or {}).get("oldText") for q in questions)


async def test_a_plan_file_swapped_for_a_fifo_or_a_device_does_not_hang_the_daemon(shared_daemon, llm, tmp_path):  # noqa: F811
    llm.script(run('rm -f "$OLLIE_PLAN_FILE"; mkfifo "$OLLIE_PLAN_FILE"'), Reply.text("fifo"),
               run('rm -f "$OLLIE_PLAN_FILE"; ln -s /dev/zero "$OLLIE_PLAN_FILE"'), Reply.text("zero"),
               run('head -c 3000000 /dev/zero | tr "\\0" x > "$OLLIE_PLAN_FILE"'), Reply.text("huge"))
    daemon = await shared_daemon(env=llm.env())
    for expected in ("fifo", "zero", "huge"):
        # Before: the loop read the plan file on the event loop (a FIFO blocked it for good, /dev/zero ate memory).
        result = await daemon.request("ollie/submit", {"text": "plan"}, timeout=30)
        assert result["reply"] == expected, told(llm)
    assert (await daemon.request("ollie/state", {}))  # still answering


async def test_a_plan_file_of_one_long_spaced_line_is_read_in_linear_time(shared_daemon, llm, tmp_path):  # noqa: F811
    # Tool code writes the plan file: an item, then 200,000 spaces before its last word. The checklist's pattern
    # (a lazy item before optional spaces) backtracked over them quadratically on the event loop (2.4 s at 8,000).
    llm.script(run('{ printf -- "- [ ] first"; head -c 200000 /dev/zero | tr "\\0" " "; echo last; } '
                   '> "$OLLIE_PLAN_FILE"'), Reply.text("planned"))
    daemon = await shared_daemon(env=llm.env())
    assert (await daemon.request("ollie/submit", {"text": "plan"}, timeout=30))["reply"] == "planned", told(llm)
    assert (await daemon.request("ollie/state", {}))  # still answering


async def test_code_the_danger_patterns_backtrack_on_is_checked_without_holding_the_daemon(start_daemon,  # noqa: F811
                                                                                           scripted_llm):
    # The model writes the code the patterns run on, on the event loop: each of 40,000 line breaks' `^\s*` ran
    # over all the rest (16,000 took 41 s).
    model = scripted_llm("openai", context_length=1_000_000)  # the code is no reason to compact
    model.script(run("\n" * 40_000 + "echo bash ran"), Reply.text("checked"))
    daemon = await start_daemon(env=model.env())
    assert (await daemon.request("ollie/submit", {"text": "run"}, timeout=60))["reply"] == "checked"
    assert "bash ran" in told(model)


async def test_rewind_and_undo_work_when_a_tracked_directory_becomes_a_symlink(shared_daemon, llm, tmp_path):  # noqa: F811
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "src").mkdir(parents=True)
    outside.mkdir()
    (ws / "src" / "app.py").write_text("mine\n")
    (outside / "app.py").write_text(f"{SECRET}\n")
    # The model's turn swaps src/ for a symlink to a directory outside the workspace.
    llm.script(run(f"rm -r src && ln -s {outside} src"), Reply.text("swapped"))
    daemon = await shared_daemon(env=llm.env(), cwd=ws)
    assert (await daemon.request("ollie/submit", {"text": "go"}, timeout=60))["reply"] == "swapped"
    # Undo of the deleted file: refused (it is a symlink change), nothing written through the link.
    with pytest.raises(JsonRpcException):
        await daemon.request("ollie/review/undo", {"path": "src/app.py"})
    assert (outside / "app.py").read_text() == f"{SECRET}\n"
    done = await daemon.request("ollie/rewind", {})
    assert "src/app.py" in done["files"] or "src" in done["files"], done
    assert not (ws / "src").is_symlink() and (ws / "src" / "app.py").read_text() == "mine\n"
    assert sorted(os.listdir(outside)) == ["app.py"] and (outside / "app.py").read_text() == f"{SECRET}\n"


async def test_duplicate_keys_in_a_tool_calls_arguments_are_refused(shared_daemon, llm, tmp_path):  # noqa: F811
    marker = tmp_path / "ws" / "second"
    raw = ('{"steps": [{"code": "echo first > first"}], "steps": [{"code": "echo second > second"}]}')
    llm.script(Reply.tool_calls(("execute_code", raw)), Reply.text("done"))
    daemon = await shared_daemon(env=llm.env(), cwd=tmp_path / "ws")
    assert (await daemon.request("ollie/submit", {"text": "go"}, timeout=30))["stop"] == "end"
    assert "appears twice" in told(llm) and not marker.exists() and not (tmp_path / "ws" / "first").exists()


async def test_a_file_tool_and_the_daemon_act_on_one_path(shared_daemon, llm, tmp_path):  # noqa: F811
    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    ws.mkdir()
    elsewhere.mkdir()
    (ws / "link").symlink_to(elsewhere)
    # `link/../x.txt`: `x.txt` read lexically, `<tmp>/x.txt` by the kernel. `--limit 5 -- -n` and options
    # before the path: the daemon's reading and the tool's must agree.
    llm.script(tool("file_write", "link/../x.txt", "written"), Reply.text("1"),
               tool("file_read", "--limit", "5", "--", "-n"), Reply.text("2"))
    (ws / "-n").write_text("dash file\n")
    daemon = await shared_daemon(env=llm.env(), cwd=ws)
    assert (await daemon.request("ollie/submit", {"text": "1"}, timeout=30))["reply"] == "1"
    assert (ws / "x.txt").read_text() == "written" and not (tmp_path / "x.txt").exists()
    assert (await daemon.request("ollie/submit", {"text": "2"}, timeout=30))["reply"] == "2"
    assert "dash file" in told(llm)


async def test_an_undo_of_a_file_over_the_cap_is_a_clear_refusal(start_daemon, llm, tmp_path):  # noqa: F811
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "big.txt").write_text("a\n" * 100)
    llm.script(run("printf 'b\\n%.0s' $(seq 1 2000) > big.txt"), Reply.text("grown"))
    daemon = await start_daemon(env={**llm.env(), "OLLIE_MAX_FILE_BYTES": "1000"}, workspace=ws)
    assert (await daemon.request("ollie/submit", {"text": "grow"}, timeout=30))["reply"] == "grown"
    with pytest.raises(JsonRpcException, match="larger than 1,000 bytes"):
        await daemon.request("ollie/review/undo", {"path": "big.txt"})
    assert (ws / "big.txt").read_text() == "b\n" * 2000



async def test_an_undo_of_a_file_swapped_for_a_fifo_is_refused_at_once(shared_daemon, llm, tmp_path):  # noqa: F811
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    llm.script(run("echo two > a.txt"), Reply.text("edited"), run("rm a.txt && mkfifo a.txt"), Reply.text("fifo"))
    daemon = await shared_daemon(env=llm.env(), cwd=ws)
    assert (await daemon.request("ollie/submit", {"text": "edit"}, timeout=30))["reply"] == "edited"
    assert (await daemon.request("ollie/submit", {"text": "swap"}, timeout=30))["reply"] == "fifo"
    try:
        with pytest.raises(JsonRpcException, match="not a regular file"):
            await daemon.request("ollie/review/undo", {"turn": 1, "path": "a.txt"}, timeout=30)
    finally:
        try:
            os.close(os.open(ws / "a.txt", os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
    assert (await daemon.request("ollie/state", {}))


async def test_a_fifo_planted_where_the_shadow_git_reads_never_holds_up_a_turn(shared_daemon, llm, tmp_path):  # noqa: F811
    # git's open(2) of a FIFO `.gitignore` (or a nested repository's HEAD) waits for a writer: each snapshot
    # after the plant held the turn for the 300 s git timeout. Now the turn goes on and the user is told.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    llm.script(run("mkfifo .gitignore && mkdir -p sub/.git/objects sub/.git/refs && mkfifo sub/.git/HEAD"),
               run("echo two > a.txt"), run("rm -r .gitignore sub"), Reply.text("done"))
    daemon = await shared_daemon(env=llm.env(), cwd=ws)
    result = await daemon.request("ollie/submit", {"text": "go"}, timeout=60)
    assert result["reply"] == "done" and (ws / "a.txt").read_text() == "two\n"
    events = daemon.session_events(result["session"])
    notes = [e["content"] for e in events if e["role"] == "info"]
    assert any("FIFO" in n and str(ws) in n for n in notes), notes
    # The FIFOs gone, the turn's edit is listed: the plant ended checkpoints for the session, hiding it (round 10).
    end = [e for e in events if e["role"] == "turn" and e["content"] != "start"][-1]
    assert [f["path"] for f in end["turnChanges"]["changed"]] == ["a.txt"], end
    assert (await daemon.request("ollie/state", {}))


def nest(root: Path, depth: int) -> Path:
    """`root`/a/a/.../a, `depth` directories deep (made one at a time: Python's os.makedirs recurses)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("a", dir_fd=fd)
            inner = os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("f.txt", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
    finally:
        os.close(fd)
    return root


def unnest(root: Path) -> None:
    """Remove what `nest` made, a level at a time (pytest's clean-up, shutil.rmtree, recurses too)."""
    top = root / "a"
    while top.is_dir():
        (top / "f.txt").unlink(missing_ok=True)
        if not (top / "a").is_dir():
            top.rmdir()
            return
        (top / "a").rename(root / "next")
        top.rmdir()
        (root / "next").rename(top)


async def test_a_workspace_nested_deeper_than_python_recurses_is_no_crash(shared_daemon, llm, tmp_path):  # noqa: F811
    # A repository 1,200 directories deep: the project check's walk (os.fwalk recurses) raised RecursionError,
    # which no one caught: the turn failed. Now such a tree is not checkpointed, with a note; the turn goes on.
    ws = tmp_path / "ws"
    ws.mkdir()
    nest(ws, 1200)
    llm.script(run("echo two > b.txt"), Reply.text("done"))
    daemon = await shared_daemon(env=llm.env(), cwd=ws)
    try:
        result = await daemon.request("ollie/submit", {"text": "go"}, timeout=60)
        assert result["reply"] == "done" and (ws / "b.txt").read_text() == "two\n", told(llm)
        notes = [e["content"] for e in daemon.session_events(result["session"]) if e["role"] == "info"]
        assert any("deep" in n for n in notes), notes
    finally:
        unnest(ws)


async def test_file_names_with_newlines_or_invalid_utf8_are_tracked_shown_and_undone(shared_daemon, llm, tmp_path):  # noqa: F811
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    llm.script(run("printf 'x\\n' > \"$(printf 'new\\nline.txt')\"; printf 'y\\n' > \"$(printf 'bad\\377.txt')\"; "
                   "echo two > a.txt"), Reply.text("done"))
    daemon = await shared_daemon(env=llm.env(), cwd=ws)
    result = await daemon.request("ollie/submit", {"text": "go"}, timeout=60)
    assert result["reply"] == "done", told(llm)
    files = (await daemon.request("ollie/changes", {"turn": 1}))["files"]
    assert len(files) == 3, files
    for file in files:  # each by the name the client was given
        await daemon.request("ollie/review/undo", {"turn": 1, "path": file["path"]})
    assert sorted(os.listdir(ws)) == ["a.txt"] and (ws / "a.txt").read_text() == "one\n"


async def test_very_long_paths_in_file_tools_are_clear_errors(shared_daemon, llm, tmp_path):  # noqa: F811
    # Past NAME_MAX (255) in one name, and past PATH_MAX (4096) in all: the preview's read, the editor-buffer
    # lookup and the tool each meet ENAMETOOLONG; the model is told, the turn goes on.
    ws = tmp_path / "ws"
    ws.mkdir()
    long_name, long_path = "n" * 300, "d/" * 2100 + "x.txt"
    llm.script(tool("file_write", long_name, "x"), tool("file_edit", long_path, "a", "b"), Reply.text("done"))
    daemon, questions = await asking(shared_daemon, llm, ws, "allow_once")

    result = await daemon.request("ollie/submit", {"text": "go"}, timeout=60)
    assert result["reply"] == "done", told(llm)
    assert len(questions) == 2  # each asked, its preview with no old text
    assert "too long" in told(llm, 1).lower() and "too long" in told(llm, 2).lower(), (told(llm, 1), told(llm, 2))
    assert os.listdir(ws) == []


async def test_links_to_devices_and_secrets_a_fifo_and_a_huge_file_from_a_step_are_never_read(
        shared_daemon, llm, tmp_path):  # noqa: F811
    # A step leaves what a checkpoint, a step's diffs, the review and undo must not read through or block on:
    # links to /dev/zero and to a secret outside, a FIFO, a 4 GiB sparse file; beside one ordinary edit. A rewind
    # removes the links, and writes nothing through them.
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "secret").write_text(SECRET)
    (ws / "a.txt").write_text("one\n")
    llm.script(run(f"echo two > a.txt; ln -s /dev/zero zero; ln -s {outside}/secret key; mkfifo pipe; "
                   "truncate -s 4G huge"), Reply.text("planted"))
    daemon = await shared_daemon(env=llm.env(), cwd=ws)
    assert (await daemon.request("ollie/submit", {"text": "plant"}, timeout=60))["reply"] == "planted"
    files = {f["path"]: f for f in (await daemon.request("ollie/changes", {"turn": 1}))["files"]}
    assert files["a.txt"]["newText"] == "two\n"
    assert {files[link]["status"] for link in ("zero", "key")} == {"added"}  # links: listed, never read through
    assert "huge" not in files and "pipe" not in files  # over the cap and no file: never read
    assert SECRET not in str(files)
    await daemon.request("ollie/rewind", {}, timeout=30)
    assert not os.path.lexists(ws / "zero") and not os.path.lexists(ws / "key")
    assert (ws / "a.txt").read_text() == "one\n" and (outside / "secret").read_text() == SECRET


async def test_an_edit_of_every_character_is_put_to_the_user_in_bounded_memory(shared_daemon, llm, tmp_path):  # noqa: F811
    # `file_edit --all big.txt a <512 b's>` of a file of 512 Ki "a": the question's preview made the edit's result in
    # the daemon (with the user's rights, on its loop) before asking: 256 MiB here; 10,000 characters made it 5 GB.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "big.txt").write_text("a" * (512 * 1024 - 1))
    llm.script(tool("file_edit", "--all", "big.txt", "a", "b" * 512), Reply.text("asked"))
    daemon, questions = await asking(shared_daemon, llm, ws, "reject")
    before = peak_kib(daemon)
    assert (await daemon.request("ollie/submit", {"text": "edit"}, timeout=60))["reply"] == "asked"
    assert peak_kib(daemon) - before < 64 * 1024, peak_kib(daemon) - before  # 785 MiB more before
    # Asked about, without a preview past the preview's cap.
    assert [(q["step"]["title"], q["step"].get("diff")) for q in questions] == [("Edit big.txt", None)]


async def test_a_write_over_a_file_too_big_to_preview_is_never_shown_as_a_new_file(shared_daemon, llm, tmp_path):  # noqa: F811
    # The preview read no old text past its cap (nor a FIFO's), and showed the write as one making a new file: a user
    # allowing "a new notes.txt" let the model replace a 1 MB file of hers.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "big.txt").write_text("keep\n" * 200_000)
    llm.script(tool("file_write", "big.txt", "x"), Reply.text("asked"))
    daemon, questions = await asking(shared_daemon, llm, ws, "reject")
    assert (await daemon.request("ollie/submit", {"text": "write"}, timeout=60))["reply"] == "asked"
    assert [(q["step"]["title"], q["step"].get("diff")) for q in questions] == [("Write big.txt", None)]
