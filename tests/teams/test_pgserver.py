"""The tests' PostgreSQL server dies with the process that started it, however that ends, and leaves no files."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from pathlib import Path

OWNER = """
import sys
from tests.teams.pgserver import PgServer
server = PgServer()
pid = (server.data / "postmaster.pid").read_text().split()[0]
print(server.dir, pid, server._watchdog.pid, flush=True)
sys.stdin.read()
"""


def wait_gone(pid: int) -> None:
    """Wait for process `pid` (not a child of this one) to end."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        assert select.select([fd], [], [], 60)[0], f"process {pid} still runs"
    finally:
        os.close(fd)


def test_a_killed_owner_takes_its_server_and_files_with_it() -> None:
    # pg_ctl detaches the server: a pytest killed (SIGKILL, a CI timeout) never ran its atexit stop, and the
    # `postgres -D /tmp/ollie-pg-*` processes and their clusters piled up.
    owner = subprocess.Popen([sys.executable, "-c", OWNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             cwd=Path(__file__).parents[2])
    assert owner.stdout is not None
    where, postmaster, watchdog = owner.stdout.readline().split()
    assert (Path(where.decode()) / "data").is_dir()
    os.kill(int(postmaster), 0)  # it runs
    owner.send_signal(signal.SIGKILL)
    owner.wait(30)
    wait_gone(int(watchdog))
    wait_gone(int(postmaster))
    assert not Path(where.decode()).exists()
