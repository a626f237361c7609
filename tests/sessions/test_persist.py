"""SessionFile: append-only saves, snapshots on rewrite, torn tails, compaction snapshots, ids."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from ollie.agent.commands_info import sessions_in
from ollie.backend.types import Message, ToolCall, Usage
from ollie.sessions import logindex, persist
from ollie.sessions.persist import SessionFile, SessionFileCorruptError, SessionFileNotFoundError, session_log
from ollie.sessions.session import Session, TaskState, new_session_id
from tests.compactions import read_compaction_snapshots


def _saved(file: SessionFile) -> bytes:
    """What a log holds: the file's bytes, or the rows of a database log joined in order (the same records)."""
    if file.storage is None:
        return file.path.read_bytes()
    file.flush()
    with file.storage.store.reading() as conn:
        rows = conn.execute("SELECT data FROM session_rounds WHERE session_id = ? ORDER BY seq", (file.session_id,))
        return b"".join(bytes(r[0]) for r in rows)


def _identity(file: SessionFile) -> object:
    """What a rewrite replaces: the file's inode, or the database log's round numbers."""
    if file.storage is None:
        return os.stat(file.path).st_ino
    file.flush()
    with file.storage.store.reading() as conn:
        return [r[0] for r in conn.execute("SELECT seq FROM session_rounds WHERE session_id = ? ORDER BY seq",
                                           (file.session_id,))]


def _round(session: Session, r: int) -> None:
    session.messages.append(Message("user", f"question {r}"))
    session.messages.append(Message("assistant", f"answer {r}", tool_calls=[ToolCall(f"c{r}", "t", "{}")]))
    session.messages.append(Message("tool", f"result {r}", tool_call_id=f"c{r}", name="t"))
    session.result_tiers[f"c{r}"] = "cold"
    session.add_usage(Usage(input_tokens=10, output_tokens=2, cached_input_tokens=1), 0.5)


def _one_round_saved(tmp_path: Path, log: Callable[[Path, str], SessionFile]) -> tuple[Session, SessionFile]:
    """A new session with one round, saved through `log` (SessionFile, or session_log for the configured store)."""
    session = Session()
    file = log(tmp_path, session.id)
    _round(session, 0)
    file.save(session)
    return session, file


def _dicts(session: Session) -> list[dict]:
    return [m.to_dict() for m in session.messages]


def test_round_trip_keeps_messages_totals_and_task_state(tmp_path, log_store):
    session = Session(agent="coding", task_state=TaskState(goal="fix", plan=["a", "b"]))
    file = session_log(tmp_path, session.id)
    for r in range(3):
        _round(session, r)
        file.save(session)
    loaded = persist.load(tmp_path, session.id)
    assert _dicts(loaded) == _dicts(session)
    assert loaded.task_state == TaskState(goal="fix", plan=["a", "b"])
    assert (loaded.agent, loaded.total_requests, loaded.total_input_tokens, loaded.session_cost_usd) == (
        "coding", 3, 30, 1.5)


def test_an_agent_switch_keeps_the_saved_conversation_as_a_session_of_its_own(tmp_path, log_store):
    # What `/agent NAME` would have cleared is copied first (agentswitch.keep), in files and in PostgreSQL alike: the
    # copy is a session of its own, titled, in the agent it ran; the session it came from is left as it was.
    from ollie.agent.agentswitch import keep

    session = Session(agent="coding", task_state=TaskState(goal="fix"))
    file = session_log(tmp_path, session.id)
    for r in range(3):
        _round(session, r)
        file.save(session)
    session.turn_starts, session.turn_changed = [0, 2, 4], [2, 1, 3]
    file.save(session)
    kept_id = keep(file, "fix the parser", new_session_id(), {1, 3})
    assert kept_id != session.id
    # Its turns with it, those whose checkpoints were not copied (here turn 2) showing no files changed.
    assert persist.load(tmp_path, kept_id).turn_changed == [2, 0, 3]
    session.turn_changed = [2, 0, 3]
    kept = persist.load(tmp_path, kept_id)
    assert _dicts(kept) == _dicts(session) and kept.task_state == TaskState(goal="fix")
    assert (kept.id, kept.title, kept.agent) == (kept_id, "fix the parser", "coding")
    session.clear()  # the switch goes on: the session it came from is cleared and saved, its copy stays whole
    file.save(session)
    assert persist.load(tmp_path, session.id).messages == []
    assert _dicts(persist.load(tmp_path, kept_id)) == _dicts(kept)


def test_a_copy_that_could_not_be_written_leaves_no_failed_save_behind(tmp_path):
    # Bug: a keep whose write failed (the sessions dir unwritable) left the copy's failed save noted under its id for
    # a close that never comes: never told, never dropped. The failure is the caller's error (NotKept), and only that.
    from ollie.agent.agentswitch import keep

    session = Session(agent="coding")
    file = session_log(tmp_path, session.id)
    _round(session, 0)
    file.save(session)
    kept_id = new_session_id()
    (tmp_path / f"{kept_id}.jsonl").mkdir()  # its file cannot be written (as root too)
    with pytest.raises(OSError):
        keep(file, "fix the parser", kept_id, set())
    persist.release(kept_id)  # raised NotSavedError for a session that never existed


def test_a_save_appends_only_the_new_round(tmp_path, log_store):
    session = Session(agent="a")
    file = session_log(tmp_path, session.id)
    growth = []
    for r in range(300):
        size = len(_saved(file)) if file.exists() else 0
        _round(session, r)
        file.save(session)
        growth.append(len(_saved(file)) - size)
    before = _saved(file)
    _round(session, 300)
    file.save(session)
    after = _saved(file)
    # The old bytes are untouched (no rewrite) and the growth is one round plus one meta record.
    assert after.startswith(before)
    added = after[len(before):].decode().splitlines()
    assert [json.loads(line)["t"] for line in added] == ["m", "m", "m", "meta"]
    # What a save writes does not grow with the history (nor with the map of result tiers).
    assert growth[-1] < growth[5] * 1.1, (growth[5], growth[-1])  # a few more digits, nothing more


def test_result_tiers_are_saved_as_changes_and_load_back(tmp_path, log_store):
    session = Session()
    file = session_log(tmp_path, session.id)
    for r in range(3):
        _round(session, r)
        file.save(session)
    session.result_tiers["c1"] = "collapsed"
    del session.result_tiers["c0"]
    file.save(session)
    last = json.loads(_saved(file).splitlines()[-1])
    assert last["tracked"] == {"result_tiers": {"c1": "collapsed", "c0": None}}
    assert "result_tiers" not in last["meta"]
    assert persist.load(tmp_path, session.id).result_tiers == {"c1": "collapsed", "c2": "cold"}
    session.result_tiers = {"c2": "hot"}  # replaced wholesale, without a history rewrite
    file.save(session)
    resumed_file = session_log(tmp_path, session.id)
    resumed = resumed_file.load()
    assert resumed.result_tiers == {"c2": "hot"}
    resumed.result_tiers["c9"] = "warm"
    resumed_file.save(resumed)
    assert persist.load(tmp_path, session.id).result_tiers == {"c2": "hot", "c9": "warm"}


def test_in_place_edit_is_recorded_without_rewriting(tmp_path, log_store):
    session = Session()
    file = session_log(tmp_path, session.id)
    _round(session, 0)
    _round(session, 1)
    file.save(session)
    before = _saved(file)
    session.messages[2].content = "collapsed: 1 line"
    session.mark_edited(2)
    file.save(session)
    after = _saved(file)
    assert after.startswith(before)
    assert persist.load(tmp_path, session.id).messages[2].content == "collapsed: 1 line"


@pytest.mark.parametrize("rewrite", ["replace_messages", "clear", "slice_assign", "reassign", "explicit"])
def test_history_rewrite_writes_a_fresh_snapshot(tmp_path, rewrite, log_store):
    session = Session()
    file = session_log(tmp_path, session.id)
    for r in range(4):
        _round(session, r)
        file.save(session)
    inode = _identity(file)
    hot = session.messages[-3:]
    if rewrite == "replace_messages":
        session.replace_messages([Message("user", "task state")] + hot)
    elif rewrite == "clear":
        session.clear()
    elif rewrite == "slice_assign":
        session.messages[:] = [Message("user", "task state")] + [Message(m.role, m.content) for m in hot] * 4
    elif rewrite == "reassign":
        session.messages = [Message("user", "summary")] + session.messages[1:]
    if rewrite == "explicit":
        session.messages[0] = Message("user", "replaced in place")
        file.rewrite(session)
    else:
        file.save(session)
    assert _identity(file) != inode, "a rewrite must replace the file, not append to it"
    assert _dicts(persist.load(tmp_path, session.id)) == _dicts(session)
    assert not list(tmp_path.glob(".ollie-*"))


def test_a_snapshot_written_later_keeps_what_changed_meanwhile_for_the_next_save(tmp_path, log_store):
    # The daemon writes a rewritten history's snapshot in a thread while its loop goes on changing the session.
    session, file = _one_round_saved(tmp_path, session_log)
    _round(session, 1)
    session.replace_messages(session.messages[3:])
    write = file.save_later(session)
    assert write is not None
    rewritten = len(session.messages)
    session.messages[0].content = "edited meanwhile"
    session.mark_edited(0)
    _round(session, 2)  # a message, a tier, the totals: all after the snapshot was taken
    write()
    assert len(persist.load(tmp_path, session.id).messages) == rewritten  # (an edit in place may be in it already)
    assert file.save_later(session) is None, "the round after the snapshot is appended, not a second snapshot"
    loaded = persist.load(tmp_path, session.id)
    assert _dicts(loaded) == _dicts(session) and loaded.meta() == session.meta()


def test_a_save_before_a_snapshots_write_makes_that_write_stand_down(tmp_path, log_store):
    session, file = _one_round_saved(tmp_path, session_log)
    session.replace_messages([Message("user", "task state")])
    older = file.save_later(session)
    _round(session, 1)
    file.save(session)  # the whole session as it is now: the older snapshot must not replace it
    assert older is not None
    older()
    assert _dicts(persist.load(tmp_path, session.id)) == _dicts(session)
    _round(session, 2)
    file.save(session)
    assert _dicts(persist.load(tmp_path, session.id)) == _dicts(session)


def test_a_rewrite_before_a_snapshots_write_makes_that_write_stand_down(tmp_path, log_store):
    # Bug: only `save` retired a snapshot taken earlier; `rewrite` (a session moved between stores) wrote the whole
    # session, then the older snapshot's write put the history as it was at its take over it.
    session, file = _one_round_saved(tmp_path, session_log)
    session.replace_messages([Message("user", "task state")])
    older = file.save_later(session)
    _round(session, 1)
    file.rewrite(session)
    assert older is not None
    older()
    assert _dicts(persist.load(tmp_path, session.id)) == _dicts(session)


def test_a_crash_during_a_snapshot_leaves_the_old_file(tmp_path, monkeypatch):
    session, file = _one_round_saved(tmp_path, SessionFile)
    saved = _dicts(session)

    def killed(*args, **kwargs):
        raise KeyboardInterrupt("killed before the rename")

    monkeypatch.setattr(persist.os, "rename", killed)
    session.replace_messages([Message("user", "compacted")])
    with pytest.raises(KeyboardInterrupt):
        file.save(session)
    monkeypatch.undo()
    assert _dicts(persist.load(tmp_path, session.id)) == saved
    # The next save succeeds, with no temporary file left.
    file.save(session)
    assert _dicts(persist.load(tmp_path, session.id)) == [{"role": "user", "content": "compacted"}]
    assert not list(tmp_path.glob(".ollie-*"))


def test_stale_temporary_files_are_looked_for_once_not_at_every_snapshot(tmp_path, monkeypatch):
    # Listing a directory of thousands of sessions was half a snapshot's CPU: a killed process's leftover is looked
    # for at a log's first snapshot of an existing session (a new one has none), and after one of its writes failed.
    session, file = _one_round_saved(tmp_path, SessionFile)
    leftover = tmp_path / f".ollie-0123456789ab-{file.path.name}"
    leftover.write_bytes(b"killed")
    listed: list[str] = []
    glob = Path.glob
    monkeypatch.setattr(Path, "glob", lambda self, pattern: listed.append(pattern) or glob(self, pattern))
    file.rewrite(session)
    assert not listed  # this process made the file: no leftover of another
    resumed = SessionFile(tmp_path, session.id)
    for _ in range(3):
        resumed.rewrite(session)
    assert len(listed) == 1 and not leftover.exists()


def test_a_tear_anywhere_loads_the_last_complete_round(tmp_path):
    session = Session()
    file = SessionFile(tmp_path, session.id)
    commits: list[tuple[int, list[dict]]] = []
    file.save(session)
    commits.append((file.path.stat().st_size, []))
    for r in range(4):
        _round(session, r)
        file.save(session)
        commits.append((file.path.stat().st_size, _dicts(session)))
    data = file.path.read_bytes()
    # Every byte around each record boundary (where a tear matters most), and a stride in between.
    near_newlines = {i + d for i, byte in enumerate(data) if byte == ord("\n") for d in (-2, -1, 0, 1, 2)}
    cuts = sorted({c for c in near_newlines | set(range(0, len(data) + 1, 5)) if commits[0][0] <= c <= len(data)})
    for cut in cuts:
        file.path.write_bytes(data[:cut])
        expected = [msgs for size, msgs in commits if size <= cut][-1]
        assert _dicts(persist.load(tmp_path, session.id)) == expected, f"cut at byte {cut}"


def test_a_garbled_last_line_is_ignored_and_the_next_save_cuts_it(tmp_path):
    session, file = _one_round_saved(tmp_path, SessionFile)
    with open(file.path, "ab") as f:
        f.write(b'{"t":"m","m":{"role":"user","content":"half\x00\x00\n')
    resumed_file = SessionFile(tmp_path, session.id)
    resumed = resumed_file.load()
    assert _dicts(resumed) == _dicts(session)
    _round(resumed, 1)
    resumed_file.save(resumed)
    assert _dicts(persist.load(tmp_path, session.id)) == _dicts(resumed)
    assert b"half" not in file.path.read_bytes()
    # An append of this very file object that failed part-way (ENOSPC) leaves its bytes past the commit, more than
    # the next round's: that round's append cuts them first (written over, the rest of them stayed).
    with open(file.path, "ab") as f:
        f.write(b'{"t":"m","m":{"role":"user","content":"' + b"torn" * 5000)
    _round(resumed, 2)
    resumed_file.save(resumed)
    assert _dicts(persist.load(tmp_path, session.id)) == _dicts(resumed)
    assert b"torn" not in file.path.read_bytes()


def test_damage_before_the_last_line_is_a_clear_error(tmp_path):
    session = Session()
    file = SessionFile(tmp_path, session.id)
    for r in range(2):
        _round(session, r)
        file.save(session)
    lines = file.path.read_bytes().split(b"\n")
    lines[2] = b"garbage"
    file.path.write_bytes(b"\n".join(lines))
    with pytest.raises(SessionFileCorruptError, match="line 3"):
        persist.load(tmp_path, session.id)


def test_a_fresh_file_object_snapshots_on_its_first_save(tmp_path, log_store):
    session = Session()
    session_log(tmp_path, session.id).save(session)
    _round(session, 0)
    # A second writer that never loaded the file must not append blindly.
    session_log(tmp_path, session.id).save(session)
    assert _dicts(persist.load(tmp_path, session.id)) == _dicts(session)


def test_the_log_is_folded_into_a_snapshot_periodically(tmp_path, log_store):
    session = Session()
    file = session_log(tmp_path, session.id, compact_min_records=10)
    _round(session, 0)
    file.save(session)
    sizes = []
    for _ in range(30):
        session.add_usage(Usage(input_tokens=1), 0.0)
        file.save(session)  # meta-only saves: the log grows without new messages
        sizes.append(len(_saved(file)))
    assert max(sizes) < sizes[0] * 12, "the log was never folded"
    assert any(later < earlier for earlier, later in itertools.pairwise(sizes)), "no fold happened"
    assert persist.load(tmp_path, session.id).total_requests == 31


def test_compaction_snapshot_is_appended_and_readable(tmp_path, log_store):
    session = Session()
    file = session_log(tmp_path, session.id)
    _round(session, 0)
    first = _dicts(session)
    path = file.write_compaction_snapshot(session)
    if not log_store:
        assert path == tmp_path / f"{session.id}.compaction.jsonl"
    session.replace_messages([Message("user", "summary")])
    _round(session, 1)
    file.write_compaction_snapshot(session)
    snapshots = read_compaction_snapshots(tmp_path, session.id)
    assert [[m.to_dict() for m in msgs] for _, msgs in snapshots] == [first, _dicts(session)]
    assert snapshots[0][0]["n"] == 3


def test_ids_are_validated_before_touching_paths(tmp_path, log_store):
    for bad in ("../escape", "1-abc", "123-ABCDEF", "", "1716300000000-abc123/x", "a" * 30):
        with pytest.raises(ValueError):
            session_log(tmp_path, bad)
        assert not persist.exists(tmp_path, bad)
    session_log(tmp_path, "1716300000000-abc123")  # the seed's example form is accepted


def test_a_session_cannot_be_saved_into_another_sessions_file(tmp_path, log_store):
    file = session_log(tmp_path, new_session_id())
    with pytest.raises(ValueError, match="cannot be saved"):
        file.save(Session())


def _made_at(ns: int) -> str:
    """A session id of one made at `ns` (new_session_id's form: nanoseconds, then 6 hex)."""
    return f"{ns:019d}-{os.urandom(3).hex()}"


def test_listing_leaves_out_sessions_nobody_typed_in(tmp_path, log_store):
    unused, prompted, named, cleared = (_made_at(n) for n in (1_000, 2_000, 3_000, 4_000))
    session_log(tmp_path, unused).save(Session(id=unused))
    session_log(tmp_path, prompted).save(Session(id=prompted, messages=[Message("user", "fix it")]))
    session_log(tmp_path, named).save(Session(id=named, title="planned"))
    gone = Session(id=cleared, messages=[Message("user", "once")])
    log = session_log(tmp_path, cleared)
    log.save(gone)
    gone.clear()
    log.save(gone)  # a /clear after a prompt: nothing in it now, and untitled
    assert logindex.list_saved(tmp_path) == [prompted, named]
    assert persist.exists(tmp_path, unused)  # saved, only not listed


def test_an_emptied_session_is_listed_only_while_its_rewind_backup_is_a_file(tmp_path, log_store):
    # A rewind of every turn leaves the session untitled and empty: listed while that rewind can be undone, which a
    # backup that is a link or a directory (never followed) cannot be.
    rewound, linked, walled = (_made_at(n) for n in (1_000, 2_000, 3_000))
    for session_id in (rewound, linked, walled):
        session_log(tmp_path, session_id).save(Session(id=session_id))
    (backup := tmp_path / logindex.rewind_name(rewound)).write_text("{}")
    (tmp_path / logindex.rewind_name(linked)).symlink_to(backup)
    (tmp_path / logindex.rewind_name(walled)).mkdir()
    assert logindex.list_saved(tmp_path) == [rewound]


def test_the_sessions_of_a_directory_are_found_reading_each_logs_end_once(tmp_path, log_store, monkeypatch):
    here, there = tmp_path / "here", tmp_path / "there"
    ids = [_made_at(n) for n in (1_000, 2_000, 3_000, 4_000)]
    for session_id, cwd in zip(ids, (here, there, here, here), strict=True):
        typed = [Message("user", "hi")] if session_id != ids[3] else []  # the last one nobody typed in
        session_log(tmp_path, session_id).save(Session(id=session_id, cwd=str(cwd), messages=typed))
    reads: list[str] = []
    tail = logindex._tail

    def counted(sessions_dir: Path | str, session_id: str, **kwargs: bool) -> bytes:
        reads.append(session_id)
        return tail(sessions_dir, session_id, **kwargs)

    monkeypatch.setattr(logindex, "_tail", counted)
    assert sessions_in(tmp_path, here) == [ids[2], ids[0]]
    assert sorted(reads) == ids  # once each: the check for sessions nobody typed in read the meta too


def test_list_and_exists(tmp_path, log_store):
    assert logindex.list_saved(tmp_path / "missing") == []
    ids = [_made_at(n) for n in (3_000, 1_000, 2_000)]
    for session_id in ids:
        file = session_log(tmp_path, session_id)
        file.save(Session(id=session_id, messages=[Message("user", "hi")]))
        file.write_compaction_snapshot(Session(id=session_id))
    (tmp_path / "notes.jsonl").write_text("{}\n")
    assert logindex.list_saved(tmp_path) == sorted(ids)
    assert persist.exists(tmp_path, ids[0])
    unsaved = _made_at(4_000)
    assert not persist.exists(tmp_path, unsaved)
    with pytest.raises(SessionFileNotFoundError):
        persist.load(tmp_path, unsaved)
    with pytest.raises(FileNotFoundError):
        persist.load(tmp_path, unsaved)


def test_mark_edited_rejects_an_index_out_of_range():
    session = Session()
    with pytest.raises(IndexError):
        session.mark_edited(0)


def test_two_writers_of_one_session_never_leave_a_broken_file(tmp_path):
    first = Session()
    file_a = SessionFile(tmp_path, first.id)
    _round(first, 0)
    file_a.save(first)
    file_b = SessionFile(tmp_path, first.id)
    second = file_b.load()
    _round(second, 1)
    _round(second, 2)
    file_b.save(second)
    file_b.rewrite(second)  # b replaces the file: a's offsets now point into another file
    _round(first, 9)
    file_a.save(first)  # a must not append to (or cut) b's file blindly
    assert _dicts(persist.load(tmp_path, first.id)) == _dicts(first)
    second.messages[:] = second.messages[:1]
    file_b.save(second)
    assert _dicts(persist.load(tmp_path, first.id)) == _dicts(second)


def test_a_log_cut_behind_the_writers_back_is_written_whole_not_past_a_hole(tmp_path):
    # Cut short by another process (a sync tool's older copy): the next round went at the old offset, past the end,
    # leaving a run of NULs, and the session no longer loaded (that check removed, no test failed).
    session = Session()
    file = SessionFile(tmp_path, session.id)
    _round(session, 0)
    file.save(session)
    _round(session, 1)
    file.save(session)
    os.truncate(file.path, len(_saved(file)) // 2)
    _round(session, 2)
    file.save(session)
    assert b"\0" not in _saved(file) and _dicts(persist.load(tmp_path, session.id)) == _dicts(session)


def test_open_session_resumes_with_a_file_that_appends_and_starts_unknown_ids_fresh(tmp_path, log_store):
    session, file = _one_round_saved(tmp_path, session_log)
    before = _saved(file)
    reopened_file, resumed = persist.open_session(tmp_path, session.id)
    assert _dicts(resumed) == _dicts(session)
    _round(resumed, 1)
    reopened_file.save(resumed)
    # The file that loaded the session appends the new round instead of rewriting the history.
    assert _saved(file).startswith(before)
    assert _dicts(persist.load(tmp_path, session.id)) == _dicts(resumed)

    unknown = new_session_id()
    new_file, fresh = persist.open_session(tmp_path, unknown)
    assert fresh.id == unknown and fresh.messages == [] and not new_file.exists()
    anonymous_file, anonymous = persist.open_session(tmp_path, None)
    assert anonymous_file.session_id == anonymous.id
    with pytest.raises(ValueError):
        persist.open_session(tmp_path, "../escape")
