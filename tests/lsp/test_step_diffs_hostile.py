"""A hostile step's many big files as its `tool` event and `ollie/changes` carry them: bounded, the rest counted, never
read into the daemon."""

from __future__ import annotations

import json
from pathlib import Path

from ollie.testing import Reply

from .test_review import env

FILES = 320
FILE_BYTES = 256 * 1024  # 80 MiB in all: the checkpoints' caps allow 50,000 files of 1 MiB
# Each file its own text (the shadow stores one blob per file): a number, then 256 KiB of lines.
BIG = f"""
yes 'a line of text that a step wrote' | head -c {FILE_BYTES} > seed
for i in $(seq -w {FILES}); do {{ echo "$i"; cat seed; }} > "big-$i.txt"; done
rm seed
"""
LISTED_FILES, LISTED_BYTES = 100, 4 << 20


def peak_kib(daemon) -> int:
    """The daemon's peak resident memory so far."""
    status = Path(f"/proc/{daemon.client._server.pid}/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0])


def texts(files: list[dict]) -> int:
    return sum(len(f["oldText"] or "") + len(f["newText"] or "") for f in files)


async def test_a_step_writing_80_mib_sends_its_first_files_counts_the_rest_and_reads_no_more(
        start_daemon, llm, tmp_path):
    llm.script(Reply.tool_calls(("file_write", {"path": "small.txt", "content": "one\n"})), Reply.text("warm"),
               Reply.tool_calls(("execute_code", {"steps": [{"code": BIG, "language": "bash"}]})),
               Reply.text("written"), Reply.text("still here"))
    daemon = await start_daemon(env=env(llm), workspace=tmp_path / "ws")
    # A first turn that writes: the checkpoints, git and the diff code loaded, as any session has them.
    session = (await daemon.request("ollie/submit", {"text": "warm up"}, timeout=60))["session"]
    before = peak_kib(daemon)
    await daemon.request("ollie/submit", {"text": "write"}, timeout=240)

    (event,) = [e for e in daemon.session_events(session) if e["role"] == "tool" and e["name"] == "execute_code"]
    step = event["tool"]
    diffs = step["diffs"]
    # Its first files whole, the rest counted: the count is exact, the event a few MiB (it was 80 MiB and more).
    assert 0 < len(diffs) <= LISTED_FILES and texts(diffs) <= LISTED_BYTES
    assert len(diffs) + step["diffsMore"] == FILES
    assert [d["path"] for d in diffs] == [f"big-{i:03}.txt" for i in range(1, len(diffs) + 1)]
    assert all(d["oldText"] is None and d["newText"].startswith(d["path"][4:7] + "\na line") for d in diffs)
    assert len(json.dumps(event)) < LISTED_BYTES + 64 * 1024

    # ollie/changes of the turn: the same first files with texts and hunks, the rest counted; one file asked by path.
    changes = await daemon.request("ollie/changes", {}, timeout=60)
    assert changes["turn"] == 2 and len(changes["files"]) + changes["more"] == FILES
    assert 0 < len(changes["files"]) <= LISTED_FILES and texts(changes["files"]) <= LISTED_BYTES
    last = f"big-{FILES}.txt"  # past the bound: not listed, read alone when asked for
    assert last not in [f["path"] for f in changes["files"]]
    (one,) = (await daemon.request("ollie/changes", {"path": last}))["files"]
    assert one["path"] == last and one["status"] == "added" and one["newText"].startswith(f"{FILES}\na line")
    assert "more" not in (await daemon.request("ollie/changes", {"path": last}))
    assert (await daemon.request("ollie/changes", {"path": "no-such-file"})) == {"turn": 2, "files": []}

    # The daemon never held the step's 80 MiB: its peak grew by ~50 MiB here (the JSON of a 4 MiB answer with its
    # hunks), where reading every file (as bytes, text and hunks) and sending them all grew it by 1 GiB.
    grown = peak_kib(daemon) - before
    assert grown < FILES * FILE_BYTES // 1024, f"the daemon's peak memory grew by {grown} KiB"

    # Undo of a listed file and of one past the bound: both removed (they were added), the count down by two.
    first = diffs[0]["path"]
    for path in (first, last):
        await daemon.request("ollie/review/undo", {"path": path})
        assert not (daemon.workspace / path).exists()
    after = await daemon.request("ollie/changes", {})
    assert len(after["files"]) + after["more"] == FILES - 2 and first not in [f["path"] for f in after["files"]]
    end = [e for e in daemon.session_events(session) if e["role"] == "turn" and e["content"] != "start"][-1]
    assert end["turnChanges"]["files"] == FILES
    # The daemon serves on.
    assert (await daemon.request("ollie/submit", {"text": "still there?"}))["reply"] == "still here"
