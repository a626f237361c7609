"""A session listing's page cursor: the sort key of the last session read, so rows left out of a listing (written by
no ollie) or added since cannot shift the next page's start, as an offset would."""

from __future__ import annotations

import re

from ollie.sessions.types import SortKey


def to_cursor(key: SortKey) -> str:
    """The cursor for the sessions listed after `key`: "<last active, unix micros>:<id>"."""
    active, session_id = key
    return f"{'' if active is None else active}:{session_id}"


def from_cursor(text: str | None) -> SortKey | None:
    """The sort key a cursor names (None: the first page); ValueError when it is none of ours."""
    if not text:
        return None
    found = re.fullmatch(r"(-?\d{1,19})?:(.+)", text, re.ASCII | re.DOTALL)
    active = int(found[1]) if found and found[1] else None
    if found is None or (active is not None and not -(2**63) <= active < 2**63):  # the stores' BIGINT
        raise ValueError(f"not a cursor of ollie's session list: {text!r}")
    return active, found[2]
