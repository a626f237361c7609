"""Info's fail-closed boundaries, titles, review policy, kinds and channels."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from ollie.sessions.errors import InvalidSessionError, TitleTooLongError
from ollie.sessions.types import MAX_TITLE_BYTES, Channel, Info, Kind, TurnResult, validate_title


def test_kinds_are_the_protocols_and_channels_the_front_ends():
    assert {k.value for k in Kind} == {"main", "chat", "delegate", "task", "scheduler"}
    assert {c.value for c in Channel} == {"cli", "lsp", "acp"}
    assert Kind("main") == "main" and Channel.LSP == "lsp" and Channel.ACP == "acp"


@pytest.mark.parametrize("field", ["id", "agent_id", "user_id"])
def test_validate_requires_id_agent_and_user(field):
    info = Info(id="s1", agent_id="a", user_id="u")
    info.validate()
    setattr(info, field, "")
    with pytest.raises(InvalidSessionError, match=field):
        info.validate()


def test_validate_rejects_unknown_kind_channel_and_result():
    for changes in ({"kind": "boss"}, {"channel": "fax"}, {"last_turn_result": "maybe"}):
        with pytest.raises(InvalidSessionError):
            replace(Info(id="s", agent_id="a", user_id="u"), **changes).validate()


def test_record_round_trip_keeps_every_field():
    moment = datetime(2026, 5, 1, 12, 30, 15, 123456, tzinfo=UTC)
    info = Info(
        id="s", agent_id="a", user_id="u", channel=Channel.ACP, kind=Kind.CHAT, title="Ünïcode",
        created_at=moment, last_active=moment, last_turn_started_at=moment, last_turn_completed_at=moment,
        last_turn_result=TurnResult.END, archived=True,
    )
    row = info.row()
    assert isinstance(row["created_at"], int) and "team" not in row
    assert Info.from_row(row) == info


def test_boundaries_fail_closed():
    with pytest.raises(InvalidSessionError):
        Info(id="", agent_id="a", user_id="u").row()
    row = Info(id="s", agent_id="a", user_id="u").row()
    with pytest.raises(InvalidSessionError):
        Info.from_row({**row, "user_id": ""}).validate()
    with pytest.raises(InvalidSessionError):
        Info.from_row({**row, "kind": "nonsense"}).validate()
    with pytest.raises(InvalidSessionError):
        Info(id="s", agent_id="", user_id="u").validate()
    with pytest.raises(InvalidSessionError, match="timezone"):
        Info(id="s", agent_id="a", user_id="u", created_at=datetime(2026, 1, 1)).row()


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
