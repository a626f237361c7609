"""psycopg is imported only for a PostgreSQL store: the embedded default never loads the driver."""

from __future__ import annotations

import subprocess
import sys

from tests.teams.conftest import home_env

SCRIPT = """
import sys
from ollie.sessions import logindex, persist
from ollie.sessions.registry import Registry
from ollie.sessions.types import Request
from ollie.sessions.session import Session
registry = Registry()
registry.ensure(Request(user_id="alice", agent_id="coding"))
from ollie.backend.types import Message
log, session = persist.open_session(sys.argv[1], None)
session.messages.append(Message("user", "hi"))  # a session nobody typed in is not listed
log.save(session)
print(logindex.list_saved(sys.argv[1]) == [session.id], "psycopg" in sys.modules)
"""


def test_the_default_store_never_imports_psycopg_and_a_postgresql_one_does(tmp_path, store_url):
    def run(**env: str) -> str:
        done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "sessions")], capture_output=True,
                              text=True, timeout=60, env=home_env(tmp_path / "home", **env))
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert run() == "True False"
    assert run(OLLIE_STORE=store_url) == "True True"
