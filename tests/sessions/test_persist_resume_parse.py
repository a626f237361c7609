"""The resume's fast parse: the cyclic GC paused and restored, records read as json.loads reads them."""

from __future__ import annotations

import contextlib
import gc
import itertools
import json
import random
import threading
import time
from dataclasses import fields
from typing import Any

import pytest

from ollie.agent.history import turn_marks
from ollie.backend.types import Message, ToolCall, Usage
from ollie.sessions import logparse
from ollie.sessions.logformat import SessionFileError
from ollie.sessions.persist import SessionFile, SessionFileCorruptError
from ollie.sessions.session import Session


def _saved_session(tmp_path) -> Session:
    session = Session(agent="t")
    session.messages += [
        Message("user", "héllo"), Message("assistant", "", tool_calls=[ToolCall("c1", "file_read", '{"p": 1}')],
                                          reasoning="why", reasoning_signature="sig"),
        Message("tool", "out", tool_call_id="c1", name="file_read"),
    ]
    SessionFile(tmp_path, session.id).save(session)
    return session


@pytest.mark.parametrize("enabled", [True, False])
def test_a_resume_leaves_the_cyclic_gc_as_it_found_it(tmp_path, enabled):
    session = _saved_session(tmp_path)
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        assert SessionFile(tmp_path, session.id).load().messages == session.messages
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


def test_overlapping_resumes_in_threads_turn_the_gc_back_on_once_all_are_done(tmp_path):
    sessions = [_saved_session(tmp_path) for _ in range(4)]
    loaded: list[bool] = []

    def load(session: Session) -> None:
        for _ in range(20):
            loaded.append(SessionFile(tmp_path, session.id).load().messages == session.messages)

    threads = [threading.Thread(target=load, args=(s,)) for s in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert loaded == [True] * 80 and gc.isenabled()


def test_records_are_read_exactly_as_json_loads_reads_them(tmp_path):
    session = _saved_session(tmp_path)
    file = SessionFile(tmp_path, session.id)
    lines = file.path.read_bytes().split(b"\n")
    # Whitespace around a record is still a record; anything after it is damage, as for json.loads.
    lines[1] = b"  " + lines[1] + b" \t"
    file.path.write_bytes(b"\n".join(lines))
    assert SessionFile(tmp_path, session.id).load().messages == session.messages
    lines[2] = lines[2] + b'{"t": "m"}'
    file.path.write_bytes(b"\n".join(lines))
    with pytest.raises(SessionFileCorruptError, match="unreadable record on line 3"):
        SessionFile(tmp_path, session.id).load()
    assert json.loads(lines[1]) and gc.isenabled()


def test_a_resume_does_not_parse_its_records_line_by_line(tmp_path, monkeypatch):
    """The floor of a resume is json.loads of all lines at once (in parts of a few hundred KiB), not one per line."""
    session = _saved_session(tmp_path)
    by_lines: list[int] = []
    original = logparse._parse_lines
    monkeypatch.setattr(logparse, "_parse_lines", lambda lines, path: by_lines.append(len(lines)) or original(lines, path))
    assert SessionFile(tmp_path, session.id).load().messages == session.messages
    assert by_lines == []


@pytest.mark.parametrize("tail", [b'{"t":"m","m":{"role":"user","content":"torn', b'{"t": garbled}\n',
                                  b'{"t":"m","m":{"role":"user","content":"a"}},{"t":"m"}\n',
                                  b'{"t":"m","m":{"role":"robot","content":"a"}}\n'],
                         ids=["torn last line", "garbled last line", "two values on one line", "not a message"])
def test_a_damaged_last_round_falls_back_to_lines_and_keeps_the_committed_state(tmp_path, tail):
    session = _saved_session(tmp_path)
    path = next(tmp_path.glob(f"{session.id}*"))
    with path.open("ab") as file:
        file.write(tail)
    assert SessionFile(tmp_path, session.id).load().messages == session.messages


def test_a_long_file_is_parsed_in_parts_so_the_parsing_thread_lets_the_event_loop_run(tmp_path, monkeypatch):
    """One json.loads holds the GIL until it returns: a resume (in a thread) parses a part of the file at a time."""
    session = Session(agent="t")
    session.messages += [Message("user", f"message {i} " + "x" * 200) for i in range(300)]
    SessionFile(tmp_path, session.id).save(session)
    monkeypatch.setattr(logparse, "PARSE_PART_BYTES", 4096)
    parts: list[int] = []
    original = json.loads
    monkeypatch.setattr(logparse.json, "loads", lambda text: parts.append(len(text)) or original(text))
    assert SessionFile(tmp_path, session.id).load().messages == session.messages
    assert len(parts) > 10 and max(parts) < 2 * 4096  # each part at most one line over the size
    # A damaged line in a later part is still found, by its line number.
    path = next(tmp_path.glob(f"{session.id}*"))
    lines = path.read_bytes().split(b"\n")
    lines[200] = b'{"t": garbled}'
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(SessionFileCorruptError, match="unreadable record on line 201"):
        SessionFile(tmp_path, session.id).load()


def test_the_walk_over_all_records_and_the_walk_line_by_line_agree_on_a_log_of_rounds(tmp_path):
    """A resume walks the other records one by one and takes the messages between them a run at a time."""
    session = Session(agent="t")
    file = SessionFile(tmp_path, session.id, sync=False)
    for r in range(30):
        call = ToolCall(f"c{r}", "f")
        session.messages += [Message("user", f"step {r}"), Message("assistant", "", tool_calls=[call]),
                             Message("tool", f"out {r}", tool_call_id=f"c{r}", name="f")]
        session.result_tiers[f"c{r}"] = "cold"
        if r >= 2:  # as the loop does: an older result collapses in place (an `e` record)
            session.result_tiers[f"c{r - 2}"] = "collapsed"
            session.messages[-7].content = f"[collapsed {r - 2}]"
            session.mark_edited(len(session.messages) - 7)
        file.save(session)
    committed = file.path.stat().st_size
    # An unfinished round (no commit after it) and a torn line after it.
    data = file.path.read_bytes() + b'{"t":"m","m":{"role":"user","content":"unfinished"}}\n{"t":"m","m":{"ro'
    lines = data.split(b"\n")
    assert len(lines) > 3 * 30 + 30  # a snapshot, then rounds of messages, edits and commits
    walked = logparse._parse_all(data, file.path)
    assert walked is not None and walked == logparse._parse_lines(lines, file.path)
    messages, meta, offset, overhead = walked
    assert messages == session.messages and offset == committed and overhead > 30
    assert meta["result_tiers"] == session.result_tiers


def test_a_resumed_message_has_every_field_a_constructed_one_has():
    """A resume builds messages without `Message.__init__`: a field added to Message must be set there too."""
    full = Message("assistant", "text", tool_calls=[ToolCall("c1", "f", '{"a": 1}')], tool_call_id="c0", name="n",
                   reasoning="why", reasoning_signature="sig")
    noted = Message("user", "hi\n\n[preTurn hook]\nnote", notes="[preTurn hook]\nnote")
    for message in (Message("user", "hi"), Message("tool", "", tool_call_id="c1", name="f"), full, noted):
        built = logparse._built([message.to_dict()])[0]
        assert [getattr(built, f.name) for f in fields(Message)] == [getattr(message, f.name) for f in fields(Message)]
    assert {f.name for f in fields(ToolCall)} == {"id", "name", "arguments"}  # what `_tool_call` sets


@pytest.mark.parametrize("line", [b'{"t":"x","m":{"role":"user"}}', b'{"t": "m", "m": {"role": "user"}}',
                                  b'{"t":"m","m":{"role":"user"}} ', b'{"t":"m","m":{"role":"user"},"x":1}'],
                         ids=["another kind", "spaced", "trailing space", "another key"])
def test_a_line_not_written_as_a_message_record_among_messages_is_read_as_json_reads_it(tmp_path, line):
    """The bulk parse takes only lines exactly as `dumps` writes a message; any other line goes line by line."""
    session = _saved_session(tmp_path)
    path = next(tmp_path.glob(f"{session.id}*"))
    lines = path.read_bytes().split(b"\n")
    lines.insert(2, line)
    meta = json.loads(lines[-2])
    meta["n"] += json.loads(line).get("t") == "m"
    lines[-2] = json.dumps(meta, separators=(",", ":")).encode()
    path.write_bytes(b"\n".join(lines))
    loaded = SessionFile(tmp_path, session.id).load().messages
    expected = session.messages[:1] + [Message("user")] * (meta["n"] - 3) + session.messages[1:]
    assert loaded == expected
    assert logparse._parse_all(path.read_bytes(), path) is None  # not the bulk path: a line it does not take


def _log_of_rounds(tmp_path) -> tuple[SessionFile, bytes]:
    session = Session(agent="t")
    file = SessionFile(tmp_path, session.id, sync=False)
    for r in range(6):
        session.messages += [Message("user", f"step {r} \"q\" \u2028 é"),
                             Message("assistant", "", tool_calls=[ToolCall(f"c{r}", "f")]),
                             Message("tool", f"out {r}", tool_call_id=f"c{r}", name="f")]
        if r >= 2:
            session.messages[-7].content = f"[collapsed {r - 2}]"
            session.mark_edited(len(session.messages) - 7)
        file.save(session)
    return file, file.path.read_bytes()


def _outcome(parse, *args) -> tuple[Any, ...]:
    try:
        messages, meta, offset, overhead = parse(*args)
    except SessionFileError as exc:
        return ("error", str(exc))
    return ("ok", messages, meta, offset, overhead)


# Lines a damaged or crafted log may hold (each found the walks disagreeing, or is near one that could).
_ODD_LINES = [b"", b"{}", b"[]", b"1", b'{"t":"m","m":5}', b'{"t":"m","m":[1]}', b'{"t":"m","m":{"role":"user"}}\r',
              b'{"t":"m","m":{"role":"user"}\r}', b'{"t":"m","m":{"role":"user"},"t":"e"}',
              b'{"t":"m","m":{"role":"user"}},{"role":"user"}', b'{"t":"m","m":{"role":"user","content":"\xed\xa0\x80"}}',
              b'{"t":"m","m":{"role":"user","content":"\\u000a\\u0022"}}', b'{"t":"m","m":{"role":"user","content":"\xff"}}',
              b'{"t":"e","i":99,"m":{"role":"user"}}', b'{"t":"e","i":0,"m":{"role":"user"}},1', b'{"t":"meta","n":0}',
              b'{"t":"head","v":1}', b'{"t":"m","m":{"role":"user","tool_calls":{"a":1}}}', b'{"t":"m"}',
              # Wrong-typed fields: each a corrupt record, refused alike by both walks.
              b'{"t":"m","m":{"role":"user","content":5}}', b'{"t":"m","m":{"role":"user","content":[]}}',
              b'{"t":"m","m":{"role":7,"content":""}}', b'{"t":"m","m":{"role":"robot"}}',
              b'{"t":"m","m":{"role":["user"]}}', b'{"t":"m","m":{"role":"tool","tool_call_id":5}}',
              b'{"t":"m","m":{"role":"tool","name":null}}', b'{"t":"m","m":{"role":"assistant","reasoning":true}}',
              b'{"t":"m","m":{"role":"assistant","tool_calls":[{"id":1,"name":"f"}]}}',
              b'{"t":"m","m":{"role":"assistant","tool_calls":[5]}}', b'{"t":"m","m":{"role":"user","images":{}}}',
              b'{"t":"e","i":-1,"m":{"role":"user"}}', b'{"t":"e","i":true,"m":{"role":"user"}}',
              b'{"t":"e","i":0,"m":{"role":"user","content":5}}', b'{"t":"meta","n":true}',
              b'{"t":"meta","n":0,"meta":5}', b'{"t":"meta","n":0,"tracked":[1]}', b'{"t":"head","v":"1"}']


def test_the_bulk_walk_and_the_walk_line_by_line_agree_on_damaged_logs(tmp_path, monkeypatch):
    """Differential: odd lines inserted, lines dropped, doubled or given a CR, the end torn, in parts of any size."""
    file, base = _log_of_rounds(tmp_path)
    rng = random.Random(20261202)
    for _ in range(400):
        lines = base.split(b"\n")
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(lines))
            kind = rng.randrange(4)
            if kind == 0:
                lines.insert(at, rng.choice(_ODD_LINES))
            elif kind == 1:
                del lines[at]
            elif kind == 2:
                lines.insert(at, lines[rng.randrange(len(lines))])
            else:
                lines[at] += b"\r"
        data = b"\n".join(lines)
        if rng.random() < 0.3:
            data = data[:rng.randrange(len(data))]
        for part in (logparse.PARSE_PART_BYTES, rng.randrange(1, 300)):
            monkeypatch.setattr(logparse, "PARSE_PART_BYTES", part)
            lines_walked = _outcome(logparse._parse_lines, data.split(b"\n"), file.path)
            assert _outcome(logparse.parse, data, file.path) == lines_walked, (part, data)


@pytest.mark.parametrize("part", [1 << 19, 40])
@pytest.mark.parametrize("line", [b"", b'{"t":"m","m":{"role":"user","content":"\xed\xa0\x80"}}'],
                         ids=["empty line", "a lone surrogate's bytes"])
def test_a_line_the_walk_line_by_line_refuses_is_refused_by_the_bulk_walk_too(tmp_path, monkeypatch, part, line):
    """An empty line among records, or a record whose bytes are not UTF-8 (json.loads of bytes lets a surrogate's
    through): the bulk walk took both, where the line-by-line walk calls the file corrupt."""
    monkeypatch.setattr(logparse, "PARSE_PART_BYTES", part)
    file, data = _log_of_rounds(tmp_path)
    lines = data.split(b"\n")
    edit = next(at for at, line in enumerate(lines) if line.startswith(b'{"t":"e"'))  # a commit's next line
    for at in (1, 4, 5, edit, len(lines) - 3):  # after the header, before and after a commit, between two records
        damaged = b"\n".join([*lines[:at], line, *lines[at:]])
        assert logparse._parse_all(damaged, file.path) is None
        with pytest.raises(SessionFileCorruptError, match=f"unreadable record on line {at + 1}"):
            logparse.parse(damaged, file.path)


def _with_line(data: bytes, at: int, record: dict[str, Any]) -> bytes:
    lines = data.split(b"\n")
    lines[at] = json.dumps(record, separators=(",", ":")).encode()
    return b"\n".join(lines)


def _resumed_with_meta(tmp_path, session: Session, key: str, value: object) -> Session:
    """`session` saved, its commit's meta given `value` for `key` (as a hostile log's), and loaded back."""
    file = SessionFile(tmp_path, session.id, sync=False)
    file.save(session)
    data = file.path.read_bytes()
    at = len(session.messages) + 1  # the messages' lines, after the header, then the commit
    commit = json.loads(data.split(b"\n")[at])
    commit["meta"][key] = value
    file.path.write_bytes(_with_line(data, at, commit))
    return SessionFile(tmp_path, session.id, sync=False).load()


def _refused_alike(data: bytes, path, match: str) -> None:
    """Both walks (and a resume) call the file corrupt, with the same words: its path and the line."""
    lines_walked = _outcome(logparse._parse_lines, data.split(b"\n"), path)
    assert lines_walked[0] == "error" and lines_walked[1].startswith(f"{path}: ")
    assert match in lines_walked[1]
    assert _outcome(logparse.parse, data, path) == lines_walked


@pytest.mark.parametrize("part", [1 << 19, 40])
@pytest.mark.parametrize("field", [("content", 5), ("content", ["a"]), ("content", False), ("role", "robot"),
                                   ("role", ["user"]), ("tool_call_id", 5), ("name", None), ("reasoning", True),
                                   ("reasoning_signature", {}), ("tool_calls", {"id": "c"}), ("tool_calls", [5]),
                                   ("tool_calls", [{"id": 1, "name": "f"}]), ("tool_calls", [{"name": "f"}]),
                                   ("tool_calls", [{"id": "c", "name": "f", "arguments": {}}]), ("images", 5)],
                         ids=lambda v: str(v))
def test_a_message_field_of_the_wrong_type_is_refused_with_the_file_and_its_line(tmp_path, monkeypatch, part,
                                                                                     field):
    """A crafted `"content": 5` resumed, and the session then failed every turn (a retried "malformed stream
    event"): a message that `Message` cannot hold is a corrupt record, named by its line, in a run or alone."""
    monkeypatch.setattr(logparse, "PARSE_PART_BYTES", part)
    file, data = _log_of_rounds(tmp_path)
    lines = data.split(b"\n")
    for at in (2, 6, len(lines) - 4):  # in the snapshot's run of messages, a round's first, a round's last
        record = json.loads(lines[at])
        assert record["t"] == "m"
        record["m"][field[0]] = field[1]
        _refused_alike(_with_line(data, at, record), file.path, f"bad record on line {at + 1}: ")
    record = json.loads(lines[2])
    del record["m"]["role"]
    _refused_alike(_with_line(data, 2, record), file.path, "bad record on line 3: no 'role'")


@pytest.mark.parametrize("index", [-1, True, "0", 1.0, None, 10**6])
def test_an_edit_of_no_message_is_refused(tmp_path, index):
    """A negative index edited a message from the end, and `true` (a bool is an int) edited message 1."""
    file, data = _log_of_rounds(tmp_path)
    at = next(at for at, line in enumerate(data.split(b"\n")) if line.startswith(b'{"t":"e"'))
    record = json.loads(data.split(b"\n")[at])
    record["i"] = index
    _refused_alike(_with_line(data, at, record), file.path, f"bad record on line {at + 1}: no message")


def test_a_commit_or_header_of_the_wrong_type_is_refused(tmp_path):
    """`"n": true` counted one message, a meta that is no map or a version that is no number raised a TypeError."""
    session = Session(agent="t")
    session.messages.append(Message("user", "a"))
    file = SessionFile(tmp_path, session.id, sync=False)
    file.save(session)
    data = file.path.read_bytes()
    commit = json.loads(data.split(b"\n")[2])
    for key, value in (("n", True), ("n", 1.0), ("meta", 5), ("meta", [["title", "x"]]), ("tracked", [1]),
                       ("tracked_full", {"result_tiers": 5})):
        _refused_alike(_with_line(data, 2, {**commit, key: value}), file.path, "bad record on line 3: ")
    header = json.loads(data.split(b"\n")[0])
    _refused_alike(_with_line(data, 0, {**header, "v": "1"}), file.path, "format version '1' on line 1")


@pytest.mark.parametrize("key, value", [("total_input_tokens", "x"), ("session_cost_usd", "x"), ("total_requests", True),
                                        ("last_input_tokens", None), ("title", 5), ("turn_starts", ["x"]),
                                        ("turn_starts", 5), ("approval_always", [1]), ("task_state", 5),
                                        ("task_state", [1]), ("result_tiers", {"c": 5}), ("step_outcomes", {"c": 5}),
                                        ("step_outcomes", {"c": [5]}), ("plans_before", {"1": 5})], ids=str)
def test_a_session_field_of_the_wrong_type_is_refused_with_the_file(tmp_path, key, value):
    """A crafted `"total_input_tokens": "x"` resumed and then failed every turn (the usage is added to it), and a
    `task_state` that is no map raised an AttributeError: each is a corrupt file, named."""
    session = Session(agent="t", turn_starts=[0])
    session.messages.append(Message("user", "a"))
    file = SessionFile(tmp_path, session.id, sync=False)
    file.save(session)
    data = file.path.read_bytes()
    commit = json.loads(data.split(b"\n")[2])
    commit["meta"][key] = value
    file.path.write_bytes(_with_line(data, 2, commit))
    with pytest.raises(SessionFileCorruptError, match=f"^{file.path}: the session's {key} is "):
        SessionFile(tmp_path, session.id, sync=False).load()
    commit["meta"][key] = Session().meta()[key] if key != "total_input_tokens" else 3  # a well-typed one loads
    file.path.write_bytes(_with_line(data, 2, commit))
    assert SessionFile(tmp_path, session.id, sync=False).load().messages == session.messages


@pytest.mark.parametrize("saved, loaded", [
    ([2, -3, 10**30, True, "x", None, 1.5, 0, 1], [2, -1, -1, -1, -1, -1, -1, 0, 1]),
    ([2, 0], [2, 0] + [-1] * 7), ("x", [-1] * 9), ({"1": 2}, [-1] * 9), (None, [-1] * 9),
], ids=str)
def test_a_hostile_turn_changed_resumes_with_its_bad_counts_unknown(tmp_path, saved, loaded):
    """A teammate's log may be hostile: a negative or huge count (Neovim drew 10**30 as -9223372036854775808 files) or
    one of the wrong type refused the session, or marked its history with a lie. Now the others mark their turns, and
    a bad or missing count (a cut or older log) is unknown, never "no changes" (a user rewound it thinking nothing went)."""
    session = Session(agent="t", turn_starts=list(range(9)))
    session.messages.extend(Message("assistant", str(n), tool_calls=[ToolCall(f"c{n}", "execute_code")]) for n in range(10))
    resumed = _resumed_with_meta(tmp_path, session, "turn_changed", saved)
    assert resumed.turn_changed == loaded
    marks = turn_marks(resumed.turn_starts, resumed.turn_changed, len(resumed.messages))
    assert marks == {turn - (turn < 9): {"turn": turn, "files": n} if n >= 0 else {"turn": turn, "unknown": True}
                     for turn, n in enumerate(loaded, 1) if n}


def test_a_turn_uncounted_that_called_no_tool_resumes_as_changing_nothing(tmp_path):
    """A turn the daemon died in while it only talked (or one of a log of before the counts) is uncounted: the resumed
    chat said "Changed files: not known" under it, though no step of it ran. One that called a tool stays unknown."""
    session = Session(agent="t", turn_starts=[0, 2, 4], turn_changed=[-1, -1, -1])
    session.messages.extend([Message("user", "talk"), Message("assistant", "talked"), Message("user", "run"),
                             Message("assistant", "", tool_calls=[ToolCall("c1", "execute_code")]),
                             Message("user", "talk again")])
    file = SessionFile(tmp_path, session.id, sync=False)
    file.save(session)
    assert SessionFile(tmp_path, session.id, sync=False).load().turn_changed == [0, -1, 0]


def test_a_hostile_turn_unknown_resumes_with_only_turns_reasons(tmp_path):
    """A teammate's log may be hostile: a reason keyed by no turn's number, or no text, is left out."""
    session = Session(agent="t", turn_starts=[0], turn_changed=[-1])
    session.messages.extend([Message("user", "run"), Message("assistant", "", tool_calls=[ToolCall("c1", "execute_code")])])
    resumed = _resumed_with_meta(tmp_path, session, "turn_unknown", {"1": "why", "x": "not a turn", "2": 5,
                                                                     "3": "y" * 200, "4": "z" * 201, "5": "\x01" * 60})
    # Each one line of at most 200 characters, "..." said only where some were cut.
    assert resumed.turn_unknown == {"1": "why", "3": "y" * 200, "4": "z" * 200 + "...", "5": "\\x01" * 50 + "..."}


def test_a_turn_resumed_as_changing_nothing_leaves_the_next_to_say_why_its_changes_are_not_known(tmp_path):
    """A turn that only talked (its preTurn hook made the tree too large to track) resumes as changing nothing, its
    reason shown nowhere: the next turn with that reason says it, not taken for one said before."""
    why = "the workspace has too many files to track"
    session = Session(agent="t", turn_starts=[0, 2], turn_changed=[-1, -1], turn_unknown={"1": why, "2": why})
    session.messages.extend([Message("user", "talk"), Message("assistant", "talked"), Message("user", "run"),
                             Message("assistant", "", tool_calls=[ToolCall("c1", "execute_code")])])
    SessionFile(tmp_path, session.id, sync=False).save(session)
    resumed = SessionFile(tmp_path, session.id, sync=False).load()
    assert resumed.turn_changed == [0, -1]
    marks = turn_marks(resumed.turn_starts, resumed.turn_changed, len(resumed.messages), reasons=resumed.turn_unknown)
    assert marks == {3: {"turn": 2, "unknown": True, "reason": why}}


@pytest.mark.parametrize("saved, loaded", [
    ({"c1": ["a.py", 5, None, ["b"], "../x"], "c2": "a.py", "c3": None, "c4": [f"f{n}" for n in range(500)]},
     {"c1": ["a.py", "../x"], "c4": [f"f{n}" for n in range(100)]}),
    ({"c1": {"a.py": 1}, "c2": [7]}, {"c2": []}),
], ids=["mixed", "no paths"])
def test_a_hostile_step_files_resumes_with_its_paths_as_text(tmp_path, saved, loaded):
    """A teammate's log names each step's changed files: what is not a list of paths is left out, at most 100 a step
    (as its diffs carried), and the session resumes; /clear drops them with the history."""
    session = Session(agent="t")
    session.messages.append(Message("user", "hi"))
    resumed = _resumed_with_meta(tmp_path, session, "step_files", saved)
    assert dict(resumed.step_files) == loaded
    resumed.clear()
    assert not resumed.step_files


def test_a_hostile_step_trees_resumes_with_checkpoint_ids_alone(tmp_path):
    """A log's checkpoints around each step go to git: only a pair of object ids is kept (`--output=/x` is an option
    git would take), the rest left out and the session resumes (its steps show the turn's diffs, as before)."""
    session = Session(agent="t")
    session.messages.append(Message("user", "hi"))
    tree = "0123456789abcdef0123456789abcdef01234567"
    saved = {"c1": [tree, tree], "c2": ["--output=/tmp/x", tree], "c3": [tree], "c4": [tree, 7], "c5": "x", "c6": None,
             "c7": [tree.upper(), tree]}
    resumed = _resumed_with_meta(tmp_path, session, "step_trees", saved)
    assert dict(resumed.step_trees) == {"c1": [tree, tree]}


_VALUES = [5, -1, True, None, "x", "", [], {}, 1.5, [1], {"a": 1}, "user", "tool"]


def _mutated(record: Any, rng: random.Random) -> Any:
    """The record with one value somewhere in it replaced by one of another type, or its key dropped."""
    places = []  # (container, key) of every value
    todo = [record]
    while todo:
        item = todo.pop()
        keys = item.keys() if isinstance(item, dict) else range(len(item)) if isinstance(item, list) else ()
        for key in keys:
            places.append((item, key))
            todo.append(item[key])
    if places:
        item, key = rng.choice(places)
        if isinstance(item, dict) and rng.random() < 0.2:
            del item[key]
        else:
            item[key] = rng.choice(_VALUES)
    return record


def test_the_walks_agree_on_records_with_a_field_of_another_type_and_a_resume_builds_or_refuses(tmp_path,
                                                                                                 monkeypatch):
    """Differential: fields anywhere in any record (header, message, edit, commit, tracked maps) given another type
    or dropped, lines swapped or cut short; what both walks take builds a session whose usage adds up."""
    file, base = _log_of_rounds(tmp_path)
    rng = random.Random(20261203)
    for _ in range(300):
        lines = base.split(b"\n")
        for _ in range(rng.randint(1, 3)):
            # The last commit's meta is what a resume keeps: changed there a third of the time.
            at = len(lines) - 2 if rng.random() < 0.3 else rng.randrange(len(lines) - 1)
            kind = rng.randrange(5)
            if kind < 3:
                with contextlib.suppress(ValueError):  # (not a line cut short before)
                    lines[at] = json.dumps(_mutated(json.loads(lines[at]), rng), separators=(",", ":")).encode()
            elif kind == 3:
                other = rng.randrange(len(lines) - 1)
                lines[at], lines[other] = lines[other], lines[at]
            else:
                lines[at] = lines[at][:rng.randrange(len(lines[at]) + 1)]
        data = b"\n".join(lines)
        for part in (logparse.PARSE_PART_BYTES, rng.randrange(1, 300)):
            monkeypatch.setattr(logparse, "PARSE_PART_BYTES", part)
            lines_walked = _outcome(logparse._parse_lines, data.split(b"\n"), file.path)
            assert _outcome(logparse.parse, data, file.path) == lines_walked, (part, data)
        file.path.write_bytes(data)
        try:
            session = SessionFile(tmp_path, file.session_id, sync=False).load()
        except SessionFileError:
            continue
        session.add_usage(Usage(1, 1), 0.5)
        assert all(type(m.content) is str for m in session.messages) and json.dumps(session.meta())
        assert type(session.title) is str and all(type(start) is int for start in session.turn_starts)


@pytest.mark.parametrize("calls", [1, 2])
def test_a_message_of_any_shape_is_built_as_the_constructor_builds_it(calls):
    """`_built` tells the shapes `to_dict` writes most by their size: another of that size (other fields, or no
    content) must still get every field it holds."""
    values = {"content": "c", "tool_calls": [{"id": f"c{i}", "name": "f", "arguments": "{}"} for i in range(calls)],
              "tool_call_id": "c0", "name": "n", "reasoning": "r", "reasoning_signature": "s",
              "images": [{"mime": "image/png", "data": "AA=="}], "notes": "o"}
    for size in range(len(values) + 1):
        for keys in itertools.combinations(values, size):
            data = {"role": "tool", **{key: values[key] for key in keys}}
            assert logparse._built([data]) == [Message.from_dict(data)], keys


def test_a_hostile_logs_turns_are_marked_in_time_linear_in_the_log():
    """A teammate's log whose turns start back and forth (0, N, 0, N...) and whose prompt holds one undo note per turn:
    each turn's settling scanned every message (`_settled`), and each turn's mark every note (`turn_marks`): 20,000 of
    each held the session's load (and each `ollie/history` page's thread) for tens of seconds. Now one pass each."""
    n = 20_000
    messages = [Message("user", "x") for _ in range(n)]
    messages[1].notes = "\n\n".join(f"the user undid these changes of yours (turn {t}): a.py" for t in range(1, n + 1))
    started = time.perf_counter()
    session = Session.from_meta({"turn_starts": [0, n] * (n // 2)}, messages)
    marks = turn_marks(session.turn_starts, session.turn_changed, n, notes=[(1, messages[1].notes)])
    assert time.perf_counter() - started < 2  # (one pass: ~50 ms; each turn a pass: ~20 s)
    # No turn called a tool: each is none, but those that end before they start (kept unknown) and the last (empty).
    assert session.turn_changed == [0, -1] * (n // 2 - 1) + [0, 0]
    # Every odd turn runs from the first message to the last (its undone mark on that one), the last of them kept.
    assert marks == {n - 1: {"turn": n - 1, "files": 0, "undone": True}}
