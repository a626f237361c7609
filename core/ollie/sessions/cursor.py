"""A session listing's page cursor: the sort key of the last session read, so rows left out of a listing (written by
no ollie) or added since cannot shift the next page's start, as an offset would."""

from __future__ import annotations

import re

from ollie.sessions.types import SortKey

# "<last active>:<id>"; an id holds no NUL (PostgreSQL refuses one in text) and no lone surrogate (no UTF-8 for it):
# a cursor carrying either is none a store gave, and must not fail the listing as an internal error.
_CURSOR = re.compile(r"(-?[0-9]{1,19})?:([^\x00\ud800-\udfff]+)", re.DOTALL)
_SHOWN = 100  # a bad cursor's characters echoed in the error (it may be megabytes)


def to_cursor(key: SortKey) -> str:
    """The cursor for the sessions listed after `key`: "<last active, unix micros>:<id>"."""
    active, session_id = key
    return f"{'' if active is None else active}:{session_id}"


def from_cursor(text: str | None) -> SortKey | None:
    """The sort key a cursor names (None: the first page); ValueError when it is none of ours."""
    if not text:
        return None
    found = _CURSOR.fullmatch(text)
    active = int(found[1]) if found and found[1] else None
    if found is None or (active is not None and not -(2**63) <= active < 2**63):  # the stores' BIGINT
        shown = repr(text[:_SHOWN]) + (f" ... ({len(text)} characters)" if len(text) > _SHOWN else "")
        raise ValueError(f"not a cursor of ollie's session list: {shown}")
    return active, found[2]
