"""A session's compaction snapshots read back (ollie writes them for recovery by hand; the tests check them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ollie.backend.types import Message
from ollie.sessions.location import store_url
from ollie.sessions.logformat import COMPACTION_SUFFIX, session_path


def read_compaction_snapshots(sessions_dir: Path | str, session_id: str) -> list[tuple[dict[str, Any], list[Message]]]:
    """The pre-compaction histories saved for a session, oldest first: (header, messages) pairs."""
    url = store_url()
    if url:
        from ollie.sessions.pg import log as pg_log

        pg_log.drain(url, session_id)
        store, _ = pg_log.shared(url)
        with store.reading() as conn:
            rows = conn.execute("SELECT data FROM session_compactions WHERE session_id = ? ORDER BY seq", (session_id,))
            data = b"".join(bytes(r[0]) for r in rows)
    else:
        try:
            data = session_path(Path(sessions_dir), session_id, COMPACTION_SUFFIX).read_bytes()
        except FileNotFoundError:
            return []
    snapshots: list[tuple[dict[str, Any], list[Message]]] = []
    for line in data.split(b"\n"):
        try:
            record = json.loads(line)
        except ValueError:
            continue  # an empty or torn line
        if record.get("t") == "compaction":
            snapshots.append((record, []))
        elif record.get("t") == "m" and snapshots:
            snapshots[-1][1].append(Message.from_dict(record["m"]))
    # A snapshot whose append was cut short is incomplete: keep only whole ones.
    return [(head, msgs) for head, msgs in snapshots if len(msgs) == head.get("n")]
