"""The test run's PostgreSQL server: one throwaway cluster, started on first use, stopped when the run ends."""

from __future__ import annotations

import atexit

from ollie.testing.pgserver import PgServer

_server: PgServer | None = None


def shared_server() -> PgServer:
    """The test run's server: started on first use, stopped when the run ends."""
    global _server
    if _server is None:
        _server = PgServer()
        atexit.register(_server.stop)
    return _server
