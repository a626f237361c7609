"""Fixtures of the session tests: a registry on a private database with a stepping clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ollie.sessions import Registry


class SteppingClock:
    """Each reading is one second after the previous, so 'most recent' is unambiguous."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def clock() -> SteppingClock:
    return SteppingClock()


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "sessions.db"


@pytest.fixture
def registry(db_path, clock):
    reg = Registry(db_path, clock=clock, busy_timeout_s=5.0)
    yield reg
    reg.close()
