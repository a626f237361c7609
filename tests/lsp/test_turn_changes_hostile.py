"""A hostile step's writes as a turn's end event lists them (`turnChanges`): bounded, never followed, never trusted."""

from __future__ import annotations

import json

from ollie.testing import Reply

from .test_review import env
from .test_step_diffs_hostile import peak_kib

# What a hostile model's step writes: a name with a newline, one with terminal escapes (a title set, the screen
# cleared), one that is no UTF-8, a FIFO, links to /dev/zero and out of the workspace, then 1,500 files with long names
# (a 4 KiB path each, and 50,000 of them, made one 200 MB notification).
HOSTILE = r"""
printf 'x\n' > $'a new\nline'
printf 'x\n' > $'a esc\e]0;pwned\a\e[2J'
printf 'x\n' > $'a bad\xff\xfeutf8'
mkfifo a-fifo
ln -s /dev/zero a-zero
ln -s ../outside/secret a-up
mkdir many && cd many
long=$(printf 'n%.0s' $(seq 200))
for i in $(seq 1500); do : > "$long$i"; done
"""


async def test_a_turn_of_thousands_of_files_and_hostile_names_ends_with_a_bounded_list(shared_daemon, llm, tmp_path):
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": HOSTILE, "language": "bash"}]})),
               Reply.text("written"), Reply.text("still here"))
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "outside").mkdir()
    daemon = await shared_daemon(env=env(llm), cwd=ws)
    session = (await daemon.request("ollie/submit", {"text": "write"}, timeout=120))["session"]

    end = [e for e in daemon.session_events(session) if e["role"] == "turn" and e["content"] != "start"][-1]
    changes = end["turnChanges"]
    # The count is exact (the FIFO is not checkpointed: not a change); the list is its first files, the rest counted.
    assert changes["files"] == 1505
    listed = changes["changed"]
    assert 0 < len(listed) <= 100 and changes["more"] == 1505 - len(listed)
    assert len(json.dumps(end)) < 128 * 1024  # it was 430 KB here
    # Names as they are (JSON escapes the controls, an editor draws them as text); links as links, never followed.
    assert listed[:5] == [
        # Each byte that is no UTF-8 as "?" (as `ollie/changes` has it): escaped as a lone surrogate, Neovim's JSON
        # decoder refused the whole event (its chat ran on for ever).
        {"path": "a bad??utf8", "status": "added", "added": 1, "removed": 0, "inEditor": False},
        {"path": "a esc\x1b]0;pwned\x07\x1b[2J", "status": "added", "added": 1, "removed": 0, "inEditor": False},
        {"path": "a new\nline", "status": "added", "added": 1, "removed": 0, "inEditor": False},
        {"path": "a-up", "status": "added", "added": 0, "removed": 0, "inEditor": False},
        {"path": "a-zero", "status": "added", "added": 0, "removed": 0, "inEditor": False},
    ]
    assert all(f["path"].startswith("many/") for f in listed[5:])
    # The history counts what the event counted, and the daemon serves on.
    marks = [m["turnChanges"] for m in (await daemon.request("ollie/context", {}))["messages"] if "turnChanges" in m]
    assert marks == [{"turn": 1, "files": 1505}]
    assert (await daemon.request("ollie/submit", {"text": "still there?"}))["reply"] == "still here"


async def test_a_rewrite_of_repeated_lines_ends_its_turn_at_once_and_is_listed(shared_daemon, llm, tmp_path):
    # 3,000 lines of one text, rewritten as two texts taking turns: the diff's search walked every place of each line
    # in the other side, region after region (cubic: 2,000 such lines took 4 minutes, 3,000 ~15, in a thread holding
    # the GIL), and the turn's end waited for it.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "same.txt").write_text("x\n" * 3000)
    rewrite = "for i in $(seq 1500); do printf 'x\\ny\\n'; done > same.txt"
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": rewrite, "language": "bash"}]})),
               Reply.text("rewritten"))
    daemon = await shared_daemon(env=env(llm), cwd=ws)
    session = (await daemon.request("ollie/submit", {"text": "rewrite"}, timeout=60))["session"]
    end = [e for e in daemon.session_events(session) if e["role"] == "turn" and e["content"] != "start"][-1]
    # Listed, as one change of the region past the diff's budget (3,000 lines out, 3,000 in) where 1,500 of each is
    # the least: coarser, still exact to undo.
    (listed,) = end["turnChanges"]["changed"]
    assert listed["path"] == "same.txt" and listed["added"] == listed["removed"] >= 1500, listed
    (change,) = (await daemon.request("ollie/changes", {"turn": 1}, timeout=60))["files"]
    assert change["path"] == "same.txt" and change["hunks"], change


async def test_a_file_of_a_million_empty_lines_is_listed_without_hunks_in_bounded_memory(start_daemon, llm, tmp_path):
    # A text of 500,000 lines rewritten as 1,000,000 empty ones (1 MB each side, under the checkpoints' cap): the diff
    # held a few objects per line, 300 MB of the daemon's memory and 3 s of a thread (an editor's 16 MiB buffer ~2 GB).
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "small.txt").write_text("one\n")
    (ws / "lines.txt").write_text("x\n" * 500_000)
    rewrite = "head -c 1000000 /dev/zero | tr '\\0' '\\n' > lines.txt"
    llm.script(Reply.tool_calls(("file_write", {"path": "small.txt", "content": "two\n"})), Reply.text("warm"),
               Reply.tool_calls(("execute_code", {"steps": [{"code": rewrite, "language": "bash"}]})),
               Reply.text("rewritten"))
    daemon = await start_daemon(env=env(llm), workspace=ws)
    # A first turn that writes: the checkpoints, git and the diff code loaded, as any session has them.
    session = (await daemon.request("ollie/submit", {"text": "warm up"}, timeout=60))["session"]
    await daemon.request("ollie/changes", {"turn": 1}, timeout=60)
    before = peak_kib(daemon)
    await daemon.request("ollie/submit", {"text": "rewrite"}, timeout=60)
    (change,) = (await daemon.request("ollie/changes", {"turn": 2}, timeout=60))["files"]
    assert peak_kib(daemon) - before < 64 * 1024, (before, peak_kib(daemon))
    # Listed without hunks, its texts whole; its lines counted all the same (they were a wrong +0 -0).
    end = [e for e in daemon.session_events(session) if e["role"] == "turn" and e["content"] != "start"][-1]
    assert end["turnChanges"]["changed"] == [
        {"path": "lines.txt", "status": "modified", "added": 1_000_000, "removed": 500_000, "inEditor": False}]
    assert change["hunks"] == [] and change["newText"] == "\n" * 1_000_000
    assert (change["added"], change["removed"]) == (1_000_000, 500_000)
    # Undone whole, exactly.
    await daemon.request("ollie/review/undo", {"path": "lines.txt"}, timeout=60)
    assert (ws / "lines.txt").read_text() == "x\n" * 500_000


async def test_a_step_making_too_many_files_to_checkpoint_hides_no_change_from_review(start_daemon, llm, tmp_path):
    # A step's 50,001 new files made its snapshot "too many to checkpoint", which ended checkpoints for the session: its
    # own edit beside them, and every later step's once it removed them, were in no diff and could not be undone.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("safe\n")
    # (The checkpoints' 50,000 files lowered to 1,000: 50,001 files took the step ~4 s to make, and as long to list.)
    flood = "mkdir junk && cd junk && seq 1001 | xargs touch && cd .. && echo evil > app.py"
    steps = (flood, "rm -rf junk; echo evil > .envrc", flood.replace(" && echo evil > app.py", ""), "rm -rf junk")
    # Each step's whole time: under load a flood ran past the default 30 s, was killed short of 50,001 files and of
    # its edit (the turn listed .envrc alone, and its snapshot, never too many, told nothing).
    calls = [Reply.tool_calls(("execute_code", {"steps": [{"code": code, "language": "bash"}], "timeout": 600}))
             for code in steps]
    llm.script(*calls[:2], Reply.text("done"), *calls[2:], Reply.text("again"))
    daemon = await start_daemon(env={**env(llm), "OLLIE_CHECKPOINT_MAX_FILES": "1000"}, workspace=ws)
    session = (await daemon.request("ollie/submit", {"text": "go"}, timeout=120))["session"]
    # The turn's changes are listed, once the tree can be checkpointed again, and undone.
    end = [e for e in daemon.session_events(session) if e["role"] == "turn" and e["content"] != "start"][-1]
    assert sorted(f["path"] for f in end["turnChanges"]["changed"]) == [".envrc", "app.py"], end
    await daemon.request("ollie/review/undo", {"path": "app.py"}, timeout=60)
    assert (ws / "app.py").read_text() == "safe\n"
    # The user is told each time a step's changes go unlisted (not once a session).
    await daemon.request("ollie/submit", {"text": "again"}, timeout=120)
    told = [e["content"] for e in daemon.session_events(session)
            if e["role"] == "info" and "more than 1,000 files" in e["content"]]
    assert len(told) == 2 and "cannot be undone until one succeeds" in told[0], told


async def test_a_file_too_large_to_checkpoint_is_named_each_time_a_step_writes_it(shared_daemon, llm, tmp_path):
    # A step's `.envrc` (direnv runs it outside any sandbox) padded past the checkpoints' 1 MiB cap was in no diff, no
    # listing, no warning: the review the user relies on for files other programs run later never showed it.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "data.bin").write_bytes(b"\0" * (2 << 20))  # the user's own: not named
    envrc = "{ echo 'PATH_add evil'; head -c 1100000 /dev/zero | tr '\\0' '#'; } > .envrc"
    llm.script(*(Reply.tool_calls(("execute_code", {"steps": [{"code": code, "language": "bash"}]}))
                 for code in ("echo one > a.txt", envrc, "echo two > a.txt", envrc.replace("evil", "worse"))),
               Reply.text("done"))
    daemon = await shared_daemon(env=env(llm), cwd=ws)
    session = (await daemon.request("ollie/submit", {"text": "go"}, timeout=60))["session"]
    told = [e["content"] for e in daemon.session_events(session) if e["role"] == "info" and "no diff shows" in e["content"]]
    assert told == ["warning: no diff shows, and no undo or rewind restores, files over the checkpoints' 1 MiB or not "
                    "regular: '.envrc'"] * 2, told


async def test_a_reason_whose_escapes_pass_200_characters_is_said_once_across_a_resume(start_daemon, llm, tmp_path):
    # A workspace named with controls, nested too deep to checkpoint: its reason, escaped, passed 200 characters; cut
    # before escaping, it was cut again as the log loaded, and the resumed session's next turn said it once more.
    write = Reply.tool_calls(("execute_code", {"steps": [{"code": "echo hi >> a.txt", "language": "bash"}]}))
    llm.script(write, Reply.text("done"), write, Reply.text("again"))
    ws = tmp_path / ("ws" + "\x01" * 60)
    (ws / "/".join(["d"] * 260)).mkdir(parents=True)
    daemon = await start_daemon(env=env(llm), workspace=ws)
    session = (await daemon.request("ollie/submit", {"text": "write"}, timeout=60))["session"]
    await daemon.client.shutdown_session()
    daemon = await start_daemon(env=env(llm), workspace=ws)
    await daemon.request("ollie/session/load", {"session": session})
    await daemon.request("ollie/submit", {"session": session, "text": "write again"}, timeout=60)
    ends = [e.get("turnChanges") for e in daemon.session_events(session) if e["role"] == "turn" and e.get("turn")]
    said = (await daemon.request("ollie/context", {"session": session}))["messages"]
    (first,) = [m["turnChanges"] for m in said if m.get("turnChanges", {}).get("turn") == 1]
    assert first["reason"].startswith(f"{ws}".replace("\x01", "\\x01")[:200]) and first["reason"].endswith("...")
    assert ends == [{"turn": 2, "unknown": True, "reason": first["reason"], "again": True}], ends


async def test_a_nested_repository_a_step_makes_is_named_as_no_diff_shows_it(shared_daemon, llm, tmp_path):
    # A step's `git init tools` and `tools/conftest.py` (pytest runs it, outside any sandbox, when it collects the
    # project): git takes `tools/` for another repository, which checkpoints never hold, so the turn listed nothing and
    # nothing said why.
    ws = tmp_path / "ws"
    ws.mkdir()
    code = "git init -q tools && echo 'import os' > tools/conftest.py && echo one > a.txt"
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": code, "language": "bash"}]})), Reply.text("done"))
    daemon = await shared_daemon(env=env(llm), cwd=ws)
    session = (await daemon.request("ollie/submit", {"text": "go"}, timeout=60))["session"]
    assert (ws / "tools" / ".git" / "HEAD").exists()  # the step's git ran
    told = [e["content"] for e in daemon.session_events(session) if e["role"] == "info" and "no diff shows" in e["content"]]
    assert told == ["warning: no diff shows, and no undo or rewind restores, files over the checkpoints' 1 MiB or not "
                    "regular: 'tools/'"], told
