"""Identity: sessions belong to a user (OLLIE_USER or the OS user); others' are Forbidden unless shared to a team."""

from __future__ import annotations

import pytest

from ollie.sessions import (
    Channel,
    ForbiddenError,
    InvalidSessionError,
    Kind,
    ReadOnlyError,
    Registry,
    Request,
    Scope,
)
from ollie.sessions.types import os_user

ALICE = Scope(user_id="alice")
BOB = Scope(user_id="bob")


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request, tmp_path):
    if request.param == "sqlite":
        return tmp_path / "sessions.db"
    return request.getfixturevalue("store_url")


def _new(registry: Registry, user: str, title: str):
    return registry.ensure(Request(user_id=user, agent_id="coding", kind=Kind.CHAT, channel=Channel.LSP, title=title,
                                   create_if_missing=True))


def test_another_users_session_is_not_listed_and_forbidden(location):
    registry = Registry(location, teams=())
    try:
        mine = _new(registry, "alice", "alice's")
        _new(registry, "bob", "bob's")
        assert [i.title for i in registry.list(ALICE)] == ["alice's"]
        with pytest.raises(ForbiddenError):
            registry.get(BOB, mine.id)
        with pytest.raises(ForbiddenError):
            registry.ensure(Request(id=mine.id, user_id="bob", agent_id="coding"))
    finally:
        registry.close()


def test_a_session_shared_to_a_team_channel_is_its_members_to_read_not_to_change(location):
    owner = Registry(location, teams=())
    member = Registry(location, teams=("backend",))
    try:
        shared = _new(owner, "alice", "the migration")
        private = _new(owner, "alice", "private notes")
        with pytest.raises(ForbiddenError) as caught:
            owner.share(BOB, shared.id, "backend")  # only the owner shares
        assert not isinstance(caught.value, ReadOnlyError)  # bob is not in a team it is shared to: not his to see
        owner.share(ALICE, shared.id, "backend")
        assert owner.team_of(ALICE, shared.id) == "backend"
        # A member lists and loads it (the daemon's resume is an ensure of the id); a non-member does not.
        assert [i.id for i in member.list(BOB)] == [shared.id]
        assert member.get(BOB, shared.id).title == "the migration"
        assert member.ensure(Request(id=shared.id, user_id="bob", agent_id="coding")).id == shared.id
        with pytest.raises(ForbiddenError):
            member.get(BOB, private.id)
        assert owner.list(Scope(user_id="carol")) == []
        assert [i.id for i in owner.list(Scope(user_id="carol", teams=("backend",)))] == [shared.id]
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
