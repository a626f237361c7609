"""Info's fail-closed boundaries, titles, review policy, kinds and channels."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from ollie.sessions import (
    MAX_TITLE_BYTES,
    Channel,
    Info,
    InvalidSessionError,
    Kind,
    SessionRecord,
    TitleTooLongError,
    TurnResult,
    validate_title,
)

GROUP = str(uuid.UUID("6fa459ea-ee8a-3ca4-894e-db77e160355e"))


def test_kinds_and_channels_are_the_seeds_plus_lsp_and_acp():
    assert {k.value for k in Kind} == {"main", "chat", "delegate", "task", "scheduler"}
    assert {c.value for c in Channel} == {"web", "cli", "telegram", "delegate", "task", "scheduler", "webhook", "lsp",
                                          "acp"}
    assert Kind("main") == "main" and Channel.LSP == "lsp" and Channel.ACP == "acp"


@pytest.mark.parametrize("field", ["id", "agent_id", "user_id"])
def test_validate_requires_id_agent_and_user(field):
    info = Info(id="s1", agent_id="a", user_id="u")
    info.validate()
    setattr(info, field, "")
    with pytest.raises(InvalidSessionError, match=field):
        info.validate()


def test_a_group_session_is_owned_by_a_canonical_uuid_group():
    Info(id="s", agent_id="a", user_id=GROUP, group_id=GROUP).validate()
    with pytest.raises(InvalidSessionError, match="user_id must equal group_id"):
        Info(id="s", agent_id="a", user_id="u", group_id=GROUP).validate()
    upper = GROUP.upper()
    with pytest.raises(InvalidSessionError, match="canonical UUID"):
        Info(id="s", agent_id="a", user_id=upper, group_id=upper).validate()
    with pytest.raises(InvalidSessionError, match="canonical UUID"):
        Info(id="s", agent_id="a", user_id="team", group_id="team").validate()


def test_validate_rejects_unknown_kind_channel_result_and_foreign_guest():
    for changes in ({"kind": "boss"}, {"channel": "fax"}, {"last_turn_result": "maybe"}, {"guest_id": "g"}):
        with pytest.raises(InvalidSessionError):
            Info(id="s", agent_id="a", user_id="u").with_changes(**changes).validate()


def test_record_round_trip_keeps_every_field():
    moment = datetime(2026, 5, 1, 12, 30, 15, 123456, tzinfo=UTC)
    info = Info(
        id="s", agent_id="a", user_id=GROUP, group_id=GROUP, guest_id="", channel=Channel.TELEGRAM,
        kind=Kind.CHAT, project_id="p", title="Ünïcode", created_at=moment, last_active=moment,
        last_turn_started_at=moment, last_turn_completed_at=moment, last_turn_result=TurnResult.END,
        last_viewed_at=moment, archived=True, latest_seq=9,
    )
    record = info.record()
    assert isinstance(record.created_at, int)
    assert Info.from_record(record) == info


def test_boundaries_fail_closed():
    with pytest.raises(InvalidSessionError):
        Info(id="", agent_id="a", user_id="u").record()
    with pytest.raises(InvalidSessionError):
        Info.from_record(SessionRecord(id="s", agent_id="a", user_id="", kind="chat"))
    with pytest.raises(InvalidSessionError):
        Info.from_record(SessionRecord(id="s", agent_id="a", user_id="u", kind="nonsense"))
    with pytest.raises(InvalidSessionError):
        Info(id="s", agent_id="", user_id="u").validate()
    with pytest.raises(InvalidSessionError, match="timezone"):
        Info(id="s", agent_id="a", user_id="u", created_at=datetime(2026, 1, 1)).record()


def test_new_info_sets_the_required_fields():
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    info = Info.new("s", "a", "u", Channel.LSP, Kind.MAIN, "p", now=moment)
    assert (info.kind, info.channel, info.project_id, info.created_at, info.last_active) == (
        "main", "lsp", "p", moment, moment)


def test_title_limit_is_1000_utf8_bytes():
    validate_title("a" * MAX_TITLE_BYTES)
    validate_title("é" * (MAX_TITLE_BYTES // 2))
    with pytest.raises(TitleTooLongError):
        validate_title("a" * (MAX_TITLE_BYTES + 1))
    # 501 two-byte characters: 501 code points but 1,002 bytes.
    with pytest.raises(TitleTooLongError):
        validate_title("é" * 501)
    with pytest.raises(TitleTooLongError):
        Info(id="s", agent_id="a", user_id="u", title="🙂" * 251).validate()
