"""What a SessionFile needs of a place other than a file to keep its records (OLLIE_STORE: PostgreSQL rows)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class LogStorage(Protocol):
    """Where a SessionFile keeps its records instead of a file: a database's rows (ollie.sessions.pg.log)."""

    # Set by the SessionFile, called from the writer thread: a write failed, the next save must be a snapshot.
    on_failure: Callable[[BaseException], None]

    def read(self) -> bytes | None: ...  # the whole log (None: not saved); resuming, it leases the session

    def append(self, payload: bytes) -> None: ...  # one round after the last one written

    def replace(self, payload: bytes) -> None: ...  # a snapshot replacing the log

    def add_compaction(self, payload: bytes) -> None: ...

    def exists(self) -> bool: ...

    def delete(self) -> None: ...

    def discard(self) -> None: ...  # delete in the background; nothing is written after

    def flush(self) -> None: ...  # wait for the writes; raise a failure no snapshot has healed since

    def close(self) -> None: ...  # flush and give up the lease
