"""Classifying a rotation whose commit acknowledgement was lost (RotationOutcomeUnknownError)."""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum

from ollie.sessions.types import Info


class RotationOutcome(IntEnum):
    """What a re-read of the binding says about a rotation of unknown outcome."""

    # The verification read failed: nothing is known. Say so; do not invite a
    # retry, which would archive the fresh context if the rotation did land.
    UNCERTAIN = 0
    # The binding has left the expected session: the rotation happened.
    COMMITTED = 1
    # The binding still points at the expected session: it rolled back; retrying is safe.
    NOT_EXECUTED = 2


def verify_rotation(expected_session_id: str, resolve: Callable[[], Info]) -> RotationOutcome:
    """Re-resolve the binding with `resolve` and classify the rotation that was to replace `expected_session_id`."""
    try:
        current = resolve()
    except Exception:  # noqa: BLE001 - any failure of the read means "unknown"
        return RotationOutcome.UNCERTAIN
    # An empty id is not evidence that the binding moved.
    current_id = getattr(current, "id", "") or ""
    if not current_id or not expected_session_id:
        return RotationOutcome.UNCERTAIN
    if current_id == expected_session_id:
        return RotationOutcome.NOT_EXECUTED
    return RotationOutcome.COMMITTED
