"""Registry: ensure's four cases, scoped get, listings, archive, rename, touch, and their errors."""

from __future__ import annotations

import sqlite3

import pytest

from ollie.sessions.errors import (
    ArchivedError,
    ForbiddenError,
    InvalidSessionError,
    NotFoundError,
    TitleTooLongError,
    rpc_answer,
)
from ollie.sessions.location import StoreConfigError
from ollie.sessions.registry import Registry
from ollie.sessions.schema import SCHEMA_VERSION
from ollie.sessions.store import StoreBusyError
from ollie.sessions.types import Channel, Info, Kind, ListOptions, Request, Scope, TurnResult

ALICE = Scope(user_id="alice")
# Tests of the SQLite file itself (their PostgreSQL counterparts are in tests/teams).
SQLITE_ONLY = pytest.mark.parametrize("db_path", ["sqlite"], indirect=True)


def _new(registry: Registry, *, user="alice", agent="coding", kind=Kind.CHAT, channel=Channel.LSP, **extra) -> Info:
    return registry.ensure(Request(user_id=user, agent_id=agent, kind=kind, channel=channel,
                                   **extra))


# --- ensure -------------------------------------------------------------


def test_ensure_resumes_an_existing_session(registry):
    created = _new(registry, title="first")
    resumed = registry.ensure(Request(id=created.id, user_id="alice", agent_id="coding"))
    assert resumed == created


def test_ensure_resume_checks_the_owner(registry):
    created = _new(registry, kind=Kind.TASK)
    assert registry.ensure(Request(id=created.id, user_id="alice", agent_id="coding")).kind == Kind.TASK
    with pytest.raises(ForbiddenError):
        registry.ensure(Request(id=created.id, user_id="bob", agent_id="coding"))
    with pytest.raises(ForbiddenError):
        registry.ensure(Request(id=created.id, user_id="alice", agent_id="other"))


def test_ensure_creates_the_exact_id_it_is_given(registry):
    made = registry.ensure(Request(id="s-1", user_id="alice", agent_id="coding", kind=Kind.DELEGATE,
                                   channel=Channel.ACP))
    assert (made.id, made.kind, made.channel) == ("s-1", "delegate", "acp")
    assert registry.get(ALICE, "s-1") == made


def test_ensure_generates_an_id_when_given_none(registry):
    made = _new(registry, title="hi")
    assert made.id and made.created_at == made.last_active
    assert registry.get(ALICE, made.id).title == "hi"


def test_ensure_rejects_bad_requests(registry):
    with pytest.raises(InvalidSessionError):
        registry.ensure(Request(agent_id="coding"))
    with pytest.raises(InvalidSessionError):
        registry.ensure(Request(user_id="alice"))
    with pytest.raises(InvalidSessionError):
        registry.ensure(Request(user_id="alice", agent_id="coding", kind="boss"))
    with pytest.raises(InvalidSessionError):
        registry.ensure(Request(user_id="alice", agent_id="coding", channel="fax"))
    with pytest.raises(TitleTooLongError):
        registry.ensure(Request(user_id="alice", agent_id="coding", title="t" * 1001))
    assert registry.page(ALICE)[0] == [], "a rejected request must not leave a row"


def test_only_one_active_main_per_user(registry):
    _new(registry, kind=Kind.MAIN)
    with pytest.raises(InvalidSessionError, match="main"):
        _new(registry, kind=Kind.MAIN)
    _new(registry, user="bob", kind=Kind.MAIN)


# --- get ----------------------------------------------------------------


def test_get_is_scoped_by_user(registry):
    mine = _new(registry)
    with pytest.raises(NotFoundError):
        registry.get(ALICE, "missing")
    with pytest.raises(ForbiddenError):
        registry.get(Scope(user_id="bob"), mine.id)
    with pytest.raises(InvalidSessionError):
        registry.get(Scope(), mine.id)
    assert registry.get(ALICE, mine.id) == mine


def test_store_failures_answer_on_the_wire_as_the_table_says(registry):
    """rpc_answer, both front ends' table: another user's session is one not found (its owner unnamed); a failure
    with no code of its own, as a bad OLLIE_STORE, is -32009 saying why."""
    mine = _new(registry)
    with pytest.raises(ForbiddenError) as caught:
        registry.get(Scope(user_id="bob"), mine.id)
    assert rpc_answer(caught.value, mine.id) == (-32001, f"session not found: {mine.id}")
    assert rpc_answer(StoreConfigError("OLLIE_STORE='x'"), "") == (-32009, "store unavailable: OLLIE_STORE='x'")
    with pytest.raises(InvalidSessionError) as invalid:
        registry.get(Scope(), mine.id)
    assert rpc_answer(invalid.value, mine.id) == (-32602, str(invalid.value))  # the front end names the field


# --- list ---------------------------------------------------------------


@pytest.fixture
def populated(registry):
    made = {
        "chat": _new(registry),
        "task": _new(registry, kind=Kind.TASK, channel=Channel.ACP),
        "delegate": _new(registry, kind=Kind.DELEGATE, channel=Channel.ACP),
        "sched": _new(registry, kind=Kind.SCHEDULER, channel=Channel.CLI),
        "old": _new(registry, channel=Channel.CLI),
        "bob": _new(registry, user="bob"),
    }
    registry.archive(ALICE, made["old"].id)
    return made


def _ids(infos):
    return [i.id for i in infos]


def test_list_is_the_scopes_active_sessions_newest_first(registry, populated):
    p = populated
    assert _ids(registry.page(ALICE)[0]) == [p["sched"].id, p["delegate"].id, p["task"].id, p["chat"].id]


def test_list_filters(registry, populated):
    p = populated
    assert _ids(registry.page(ALICE, ListOptions(include_archived=True))[0])[0] == p["old"].id
    assert _ids(registry.page(ALICE, ListOptions(kinds=[Kind.TASK, Kind.DELEGATE]))[0]) == [p["delegate"].id, p["task"].id]
    assert _ids(registry.page(ALICE, ListOptions(limit=2))[0]) == [p["sched"].id, p["delegate"].id]
    with pytest.raises(InvalidSessionError):
        registry.page(ALICE, ListOptions(limit=-1))[0]
    with pytest.raises(InvalidSessionError):
        registry.page(ALICE, ListOptions(kinds=["boss"]))[0]


# --- writes -------------------------------------------------------------


def test_archive_is_scoped_and_idempotent(registry):
    made = _new(registry)
    with pytest.raises(ForbiddenError):
        registry.archive(Scope(user_id="bob"), made.id)
    with pytest.raises(NotFoundError):
        registry.archive(ALICE, "nope")
    registry.archive(ALICE, made.id)
    registry.archive(ALICE, made.id)
    assert registry.get(ALICE, made.id).archived
    assert registry.page(ALICE)[0] == []


def test_unarchive_brings_a_session_back_scoped_and_idempotent(registry):
    made = _new(registry)
    registry.touch(made.id, turn_started=True)
    registry.archive(ALICE, made.id)
    with pytest.raises(ForbiddenError):
        registry.unarchive(Scope(user_id="bob"), made.id)
    with pytest.raises(NotFoundError):
        registry.unarchive(ALICE, "nope")
    assert registry.get(ALICE, made.id).archived
    back = registry.unarchive(ALICE, made.id)
    assert not back.archived and back.id == made.id
    assert registry.unarchive(ALICE, made.id) == registry.get(ALICE, made.id)  # twice: still one active session
    assert [i.id for i in registry.page(ALICE)[0]] == [made.id]
    assert registry.rename(ALICE, made.id, "writable again").title == "writable again"
    registry.touch(made.id, turn_started=True)


def test_unarchive_refuses_a_second_active_main(registry):
    old = _new(registry, kind=Kind.MAIN)
    with pytest.raises(InvalidSessionError, match="active main session"):
        _new(registry, kind=Kind.MAIN)
    registry.archive(ALICE, old.id)
    new = _new(registry, kind=Kind.MAIN)
    with pytest.raises(InvalidSessionError, match="main session"):
        registry.unarchive(ALICE, old.id)
    assert registry.get(ALICE, old.id).archived
    registry.archive(ALICE, new.id)
    assert not registry.unarchive(ALICE, old.id).archived


def test_listings_can_leave_out_sessions_never_used(registry):
    idle = _new(registry)
    prompted = _new(registry)
    named = _new(registry, title="Named by hand")
    registry.touch(prompted.id, turn_started=True)
    unused = ListOptions(exclude_unused=True)
    assert {i.id for i in registry.page(ALICE, unused)[0]} == {prompted.id, named.id}
    assert {i.id for i in registry.page(ALICE)[0]} == {idle.id, prompted.id, named.id}  # the default lists every one
    registry.rename(ALICE, idle.id, "now named")
    assert idle.id in {i.id for i in registry.page(ALICE, unused)[0]}


def test_rename(registry):
    made = _new(registry)
    assert registry.rename(ALICE, made.id, "Fix the parser").title == "Fix the parser"
    assert registry.get(ALICE, made.id).title == "Fix the parser"
    with pytest.raises(TitleTooLongError):
        registry.rename(ALICE, made.id, "é" * 501)
    # PostgreSQL keeps no NUL in text: its store failed the rename with a DataError (an internal error), SQLite's kept
    # it; refused by both, as the daemon refuses the param.
    with pytest.raises(InvalidSessionError, match="NUL"):
        registry.rename(ALICE, made.id, "fix\x00it")
    with pytest.raises(ForbiddenError):
        registry.rename(Scope(user_id="bob"), made.id, "mine now")
    assert registry.get(ALICE, made.id).title == "Fix the parser"


def test_writes_to_an_archived_session_raise_archived(registry):
    made = _new(registry)
    registry.archive(ALICE, made.id)
    with pytest.raises(ArchivedError):
        registry.rename(ALICE, made.id, "x")
    with pytest.raises(ArchivedError):
        registry.touch(made.id, turn_started=True)
    assert registry.get(ALICE, made.id).archived  # reading it still works


def test_touch_records_turns(registry, clock):
    made = _new(registry)
    started = registry.touch(made.id, turn_started=True)
    assert started.last_turn_started_at == started.last_active > made.last_active
    assert started.last_turn_completed_at is None
    done = registry.touch(made.id, turn_completed=True, result=TurnResult.INTERRUPTED)
    assert done.last_turn_completed_at > started.last_turn_started_at
    assert registry.get(ALICE, made.id).last_turn_result == "interrupted"
    assert registry.page(ALICE)[0][0].id == made.id
    with pytest.raises(InvalidSessionError):
        registry.touch(made.id, result="exploded")
    with pytest.raises(NotFoundError):
        registry.touch("missing")


def test_touch_moves_a_session_to_the_top(registry):
    first = _new(registry)
    second = _new(registry)
    assert _ids(registry.page(ALICE)[0]) == [second.id, first.id]
    registry.touch(first.id)
    assert _ids(registry.page(ALICE)[0]) == [first.id, second.id]


# --- store --------------------------------------------------------------


@SQLITE_ONLY
def test_the_store_is_one_wal_file_with_a_schema_version(registry, db_path, clock):
    made = _new(registry)
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        conn.close()
    reopened = Registry(db_path, clock=clock)
    try:
        assert reopened.get(ALICE, made.id) == made
    finally:
        reopened.close()


@SQLITE_ONLY
def test_a_newer_schema_is_refused(db_path):
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(Exception, match="newer"):
        Registry(db_path)


def test_default_path_is_in_the_data_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("OLLIE_DATA_DIR", str(tmp_path / "data"))
    registry = Registry()
    try:
        assert (tmp_path / "data" / "sessions.db").exists()
    finally:
        registry.close()


@SQLITE_ONLY
def test_a_corrupt_row_fails_closed(registry, db_path):
    made = _new(registry)
    conn = sqlite3.connect(db_path)
    conn.execute("UPDATE sessions SET kind = 'boss' WHERE id = ?", (made.id,))
    conn.commit()
    conn.close()
    with pytest.raises(InvalidSessionError):
        registry.get(ALICE, made.id)


def test_a_user_scope_without_agent_spans_the_users_agents(registry):
    coding = _new(registry)
    writing = _new(registry, agent="writer")
    _new(registry, user="bob")
    anyone = Scope(user_id="alice")
    assert registry.get(anyone, writing.id) == writing
    assert _ids(registry.page(anyone)[0]) == [writing.id, coding.id]
    registry.rename(anyone, coding.id, "renamed")
    with pytest.raises(ForbiddenError):
        registry.get(Scope(user_id="bob"), coding.id)
    with pytest.raises(InvalidSessionError):
        registry.page(Scope())[0]


@SQLITE_ONLY
def test_a_lock_held_too_long_is_a_clear_error_not_database_is_locked(db_path):
    registry = Registry(db_path, busy_timeout_s=0.2)
    other = sqlite3.connect(db_path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreBusyError, match="locked"):
            _new(registry)
        other.execute("ROLLBACK")
        assert _new(registry).id  # and it works once the other writer is done
    finally:
        other.close()
        registry.close()


@SQLITE_ONLY
def test_the_store_file_is_private(registry, db_path):
    _new(registry)
    assert db_path.stat().st_mode & 0o077 == 0
