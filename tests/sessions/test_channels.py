"""Main sessions, chat-channel bindings (incl. legacy adoption), rotation and its verification."""

from __future__ import annotations

import sqlite3
import uuid

import pytest

from ollie.sessions import (
    Channel,
    ChannelRequest,
    Info,
    InvalidSessionError,
    Kind,
    ListOptions,
    MainRequest,
    NotFoundError,
    Request,
    RotationOutcome,
    RotationOutcomeUnknownError,
    Scope,
    StaleRotationError,
    verify_rotation,
)

ALICE = Scope(user_id="alice", agent_id="coding")
MAIN = MainRequest(user_id="alice", agent_id="coding")
TELEGRAM = ChannelRequest(user_id="alice", agent_id="coding", channel=Channel.TELEGRAM)


def _chat(registry, *, channel=Channel.LSP, **extra) -> Info:
    return registry.ensure(Request(user_id="alice", agent_id="coding", channel=channel, create_if_missing=True,
                                   **extra))


# --- main ---------------------------------------------------------------


def test_resolve_main_creates_once_then_returns_the_same(registry):
    first = registry.resolve_main(MAIN)
    assert first.kind == Kind.MAIN
    assert registry.resolve_main(MAIN) == first
    assert registry.resolve_main(MainRequest(user_id="bob", agent_id="coding")).id != first.id


def test_resolve_main_promotes_the_most_recent_private_chat(registry):
    _chat(registry, channel=Channel.CLI)
    recent = _chat(registry, channel=Channel.LSP)
    registry.ensure(Request(user_id="alice", agent_id="coding", kind=Kind.TASK, create_if_missing=True))
    main = registry.resolve_main(MAIN)
    assert main.id == recent.id and main.kind == Kind.MAIN
    assert registry.get(ALICE, recent.id).kind == Kind.MAIN


def test_resolve_main_without_create_is_not_found(registry):
    with pytest.raises(NotFoundError):
        registry.resolve_main(MainRequest(user_id="alice", agent_id="coding", create_if_missing=False))
    with pytest.raises(InvalidSessionError):
        registry.resolve_main(MainRequest(agent_id="coding"))


def test_rotate_main_archives_and_creates_in_one_step(registry):
    old = registry.resolve_main(MAIN)
    new = registry.rotate_main(MainRequest(user_id="alice", agent_id="coding", expected_session_id=old.id))
    assert new.id != old.id and new.kind == Kind.MAIN
    assert registry.get(ALICE, old.id).archived
    assert registry.resolve_main(MAIN) == new


def test_rotate_main_with_a_stale_expectation_changes_nothing(registry):
    old = registry.resolve_main(MAIN)
    new = registry.rotate_main(MainRequest(user_id="alice", agent_id="coding", expected_session_id=old.id))
    before = registry.list(ALICE, ListOptions(include_archived=True))
    with pytest.raises(StaleRotationError):
        registry.rotate_main(MainRequest(user_id="alice", agent_id="coding", expected_session_id=old.id))
    assert registry.list(ALICE, ListOptions(include_archived=True)) == before
    assert registry.resolve_main(MAIN) == new


def test_rotate_main_without_a_main(registry):
    with pytest.raises(StaleRotationError):
        registry.rotate_main(MainRequest(user_id="alice", agent_id="coding", expected_session_id="gone"))
    created = registry.rotate_main(MAIN)  # no expectation, nothing current: just a create
    assert registry.resolve_main(MAIN) == created


# --- chat channels ------------------------------------------------------


def test_a_private_channel_binds_on_user_agent_and_channel(registry):
    tg = registry.resolve_chat_channel(TELEGRAM)
    assert tg.kind == Kind.CHAT and tg.channel == Channel.TELEGRAM
    assert registry.resolve_chat_channel(TELEGRAM) == tg
    web = registry.resolve_chat_channel(ChannelRequest(user_id="alice", agent_id="coding", channel=Channel.WEB))
    bob = registry.resolve_chat_channel(ChannelRequest(user_id="bob", agent_id="coding", channel=Channel.TELEGRAM))
    assert len({tg.id, web.id, bob.id}) == 3
    with pytest.raises(InvalidSessionError, match="channel"):
        registry.resolve_chat_channel(ChannelRequest(user_id="alice", agent_id="coding"))


def test_a_group_binds_on_the_group_whatever_the_channel(registry):
    group = str(uuid.uuid4())
    via_tg = registry.resolve_chat_channel(
        ChannelRequest(user_id=group, agent_id="coding", group_id=group, channel=Channel.TELEGRAM))
    via_web = registry.resolve_chat_channel(
        ChannelRequest(user_id=group, agent_id="coding", group_id=group, channel=Channel.WEB))
    assert via_web.id == via_tg.id and via_tg.group_id == group
    with pytest.raises(InvalidSessionError):
        registry.resolve_chat_channel(ChannelRequest(user_id="alice", agent_id="coding", group_id=group))
    with pytest.raises(InvalidSessionError):
        registry.resolve_chat_channel(ChannelRequest(user_id="team", agent_id="coding", group_id="team"))


def test_a_guest_binding_must_be_owned_by_the_guest(registry):
    guest = registry.resolve_chat_channel(
        ChannelRequest(user_id="g1", agent_id="coding", guest_id="g1", channel=Channel.TELEGRAM))
    assert guest.guest_id == "g1"
    with pytest.raises(InvalidSessionError):
        registry.resolve_chat_channel(
            ChannelRequest(user_id="alice", agent_id="coding", guest_id="g1", channel=Channel.TELEGRAM))


def test_legacy_session_is_adopted_on_a_binding_miss(registry):
    legacy = registry.ensure(Request(id="telegram:alice", user_id="alice", agent_id="coding",
                                     channel=Channel.TELEGRAM, allow_exact_id_create=True))
    req = ChannelRequest(user_id="alice", agent_id="coding", channel=Channel.TELEGRAM, legacy_id=legacy.id)
    adopted = registry.resolve_chat_channel(req)
    assert adopted.id == legacy.id
    # The binding now holds it: resolving without the legacy hint finds it too.
    assert registry.resolve_chat_channel(TELEGRAM).id == legacy.id
    assert len(registry.list(ALICE)) == 1


@pytest.mark.parametrize("why", ["archived", "other_user", "wrong_kind", "missing", "bound_elsewhere"])
def test_an_unfit_legacy_session_is_superseded_by_a_new_one(registry, why):
    legacy_id = "legacy-1"
    if why != "missing":
        user = "bob" if why == "other_user" else "alice"
        kind = Kind.TASK if why == "wrong_kind" else Kind.CHAT
        registry.ensure(Request(id=legacy_id, user_id=user, agent_id="coding", kind=kind,
                                channel=Channel.TELEGRAM, allow_exact_id_create=True))
        if why == "archived":
            registry.archive(ALICE, legacy_id)
        if why == "bound_elsewhere":
            registry.resolve_chat_channel(ChannelRequest(user_id="alice", agent_id="coding", channel=Channel.WEB,
                                                         legacy_id=legacy_id))
    req = ChannelRequest(user_id="alice", agent_id="coding", channel=Channel.TELEGRAM, legacy_id=legacy_id)
    resolved = registry.resolve_chat_channel(req)
    assert resolved.id != legacy_id and resolved.kind == Kind.CHAT


def test_rotate_channel_archives_and_rebinds(registry):
    old = registry.resolve_chat_channel(TELEGRAM)
    new = registry.rotate_channel(ChannelRequest(user_id="alice", agent_id="coding", channel=Channel.TELEGRAM,
                                                 expected_session_id=old.id))
    assert new.id != old.id and new.channel == Channel.TELEGRAM
    assert registry.get(ALICE, old.id).archived
    assert registry.resolve_chat_channel(TELEGRAM) == new
    with pytest.raises(StaleRotationError):
        registry.rotate_channel(ChannelRequest(user_id="alice", agent_id="coding", channel=Channel.TELEGRAM,
                                               expected_session_id=old.id))
    assert registry.resolve_chat_channel(TELEGRAM) == new
    assert len(registry.list(ALICE, ListOptions(include_archived=True))) == 2


def test_rotate_channel_adopts_a_legacy_session_before_rotating_it(registry):
    registry.ensure(Request(id="tg-legacy", user_id="alice", agent_id="coding", channel=Channel.TELEGRAM,
                            allow_exact_id_create=True))
    new = registry.rotate_channel(ChannelRequest(user_id="alice", agent_id="coding", channel=Channel.TELEGRAM,
                                                 legacy_id="tg-legacy", expected_session_id="tg-legacy"))
    assert registry.get(ALICE, "tg-legacy").archived
    assert registry.resolve_chat_channel(TELEGRAM) == new


# --- rotation outcome ---------------------------------------------------


def _lose_ack(registry, monkeypatch, *, committed: bool) -> None:
    """Make the next COMMIT fail its acknowledgement, after or instead of committing."""
    store = registry._store
    real = type(store)._commit

    def commit(conn):
        if committed:
            real(store, conn)
        monkeypatch.setattr(store, "_commit", lambda c: real(store, c))
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(store, "_commit", commit)


@pytest.mark.parametrize("committed", [True, False])
def test_a_lost_commit_ack_is_outcome_unknown_and_verify_tells_which(registry, monkeypatch, committed):
    old = registry.resolve_chat_channel(TELEGRAM)
    _lose_ack(registry, monkeypatch, committed=committed)
    with pytest.raises(RotationOutcomeUnknownError):
        registry.rotate_channel(ChannelRequest(user_id="alice", agent_id="coding", channel=Channel.TELEGRAM,
                                               expected_session_id=old.id))
    outcome = verify_rotation(old.id, lambda: registry.resolve_chat_channel(TELEGRAM))
    assert outcome == (RotationOutcome.COMMITTED if committed else RotationOutcome.NOT_EXECUTED)
    assert registry.get(ALICE, old.id).archived == committed


def test_a_lost_main_rotation_ack_is_outcome_unknown(registry, monkeypatch):
    old = registry.resolve_main(MAIN)
    _lose_ack(registry, monkeypatch, committed=True)
    with pytest.raises(RotationOutcomeUnknownError):
        registry.rotate_main(MainRequest(user_id="alice", agent_id="coding", expected_session_id=old.id))
    assert verify_rotation(old.id, lambda: registry.resolve_main(MAIN)) == RotationOutcome.COMMITTED


def test_verify_rotation_is_uncertain_when_the_read_fails_or_names_nothing(registry):
    old = registry.resolve_chat_channel(TELEGRAM)

    def broken():
        raise OSError("store unreachable")

    assert verify_rotation(old.id, broken) == RotationOutcome.UNCERTAIN
    assert verify_rotation(old.id, lambda: Info(id="", agent_id="coding", user_id="alice")) == RotationOutcome.UNCERTAIN
    assert verify_rotation(old.id, lambda: registry.resolve_chat_channel(TELEGRAM)) == RotationOutcome.NOT_EXECUTED
