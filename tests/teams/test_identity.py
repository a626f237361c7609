"""Identity: sessions belong to a user (OLLIE_USER or the OS user); others' are Forbidden unless shared to a team."""

from __future__ import annotations

import pytest

from ollie.sessions.errors import ForbiddenError, InvalidSessionError, ReadOnlyError
from ollie.sessions.registry import Registry
from ollie.sessions.types import Channel, Kind, Request, Scope, os_user

ALICE = Scope(user_id="alice")
BOB = Scope(user_id="bob")


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request, tmp_path):
    if request.param == "sqlite":
        return tmp_path / "sessions.db"
    return request.getfixturevalue("store_url")


def _new(registry: Registry, user: str, title: str):
    return registry.ensure(Request(user_id=user, agent_id="coding", kind=Kind.CHAT, channel=Channel.LSP, title=title))


def test_another_users_session_is_not_listed_and_forbidden(location):
    registry = Registry(location)
    try:
        mine = _new(registry, "alice", "alice's")
        _new(registry, "bob", "bob's")
        assert [i.title for i in registry.page(ALICE)[0]] == ["alice's"]
        with pytest.raises(ForbiddenError):
            registry.get(BOB, mine.id)
        with pytest.raises(ForbiddenError):
            registry.ensure(Request(id=mine.id, user_id="bob", agent_id="coding"))
    finally:
        registry.close()


def test_a_session_shared_to_a_team_channel_is_its_members_to_read_not_to_change(location, monkeypatch):
    owner = Registry(location)
    monkeypatch.setenv("OLLIE_TEAMS", "backend")  # the member's: read as his registry opens
    member = Registry(location)
    try:
        shared = _new(owner, "alice", "the migration")
        private = _new(owner, "alice", "private notes")
        with pytest.raises(ForbiddenError) as caught:
            owner.share(BOB, shared.id, "backend")  # only the owner shares
        assert not isinstance(caught.value, ReadOnlyError)  # bob is not in a team it is shared to: not his to see
        owner.share(ALICE, shared.id, "backend")
        # A member lists and loads it (the daemon's resume is an ensure of the id); a non-member does not.
        assert [i.id for i in member.page(BOB)[0]] == [shared.id]
        assert member.get(BOB, shared.id).title == "the migration"
        assert member.ensure(Request(id=shared.id, user_id="bob", agent_id="coding")).id == shared.id
        with pytest.raises(ForbiddenError):
            member.get(BOB, private.id)
        assert owner.page(Scope(user_id="carol"))[0] == []
        assert [i.id for i in member.page(Scope(user_id="carol"))[0]] == [shared.id]
        # Reading is not owning: a member cannot rename, archive or re-share it, and is told why.
        for change in (lambda: member.rename(BOB, shared.id, "mine now"), lambda: member.archive(BOB, shared.id),
                       lambda: member.share(BOB, shared.id, "")):
            with pytest.raises(ReadOnlyError, match="shared with team 'backend' to read and resume: only its owner "
                                                    r"\(alice\) may rename, archive or share it"):
                change()
        assert member.get(BOB, shared.id).title == "the migration" and not member.get(BOB, shared.id).archived
        owner.share(ALICE, shared.id, "")
        with pytest.raises(ForbiddenError):
            member.get(BOB, shared.id)
        with pytest.raises(InvalidSessionError):
            owner.share(ALICE, shared.id, "a,b")
    finally:
        owner.close()
        member.close()


def test_ollie_user_names_the_user_over_the_os_login(monkeypatch):
    monkeypatch.delenv("OLLIE_USER", raising=False)
    login = os_user()
    monkeypatch.setenv("OLLIE_USER", "alice@laptop")
    assert os_user() == "alice@laptop" != login


def test_a_log_the_registry_has_no_record_of_is_its_writers_alone(store_url, scripted_llm, tmp_path, monkeypatch):
    """A registry call that failed leaves a log with no record: it must not become every user's to list and read."""
    import subprocess
    import sys

    from ollie.backend.types import Message
    from ollie.sessions import persist
    from ollie.sessions.pg import log as pg_log
    from tests.teams.conftest import home_env

    monkeypatch.setenv("OLLIE_STORE", store_url)
    monkeypatch.setenv("OLLIE_USER", "alice")
    log, session = persist.open_session("unused", None)  # no registry call at all: as if it had failed
    session.messages += [Message("user", "alice's private question"), Message("assistant", "an answer")]
    log.save(session)
    log.close()
    assert session.id in pg_log.saved_ids(store_url)  # hers: listed and resumable
    resumed_log, resumed = persist.open_session("unused", session.id)
    assert [m.content for m in resumed.messages][0] == "alice's private question"
    resumed_log.close()

    monkeypatch.setenv("OLLIE_USER", "bob")
    assert session.id not in pg_log.saved_ids(store_url)
    with pytest.raises(ForbiddenError):
        persist.open_session("unused", session.id)
    run = subprocess.run([sys.executable, "-m", "ollie.cli", "-p", "show me", "--session", session.id],
                         capture_output=True, text=True, timeout=60,
                         env=home_env(tmp_path, **scripted_llm("openai").env(), OLLIE_STORE=store_url,
                                      OLLIE_USER="bob"))
    assert run.returncode != 0 and "belongs to another user" in run.stderr, run.stderr
    assert "private question" not in run.stdout + run.stderr
