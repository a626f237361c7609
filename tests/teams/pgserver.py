"""A throwaway local PostgreSQL cluster (Debian's initdb + pg_ctl in a temp dir, on a free port) for the tests and the
bench, and the test run's shared one: started on first use, stopped when the run ends."""

from __future__ import annotations

import atexit
import itertools
import os
import pwd
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path

BIN_DIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
_schemas = itertools.count(1)


def pg_bin(name: str) -> str:
    """The path of PostgreSQL program `name` (Debian's versioned bin dirs first, then PATH)."""
    for directory in BIN_DIRS:
        if (directory / name).exists():
            return str(directory / name)
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} not found: install PostgreSQL (scripts/setup.d/50-postgres.sh)")
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PgServer:
    """One PostgreSQL cluster in a temp dir (as the `postgres` user when run as root: the server refuses root)."""

    def __init__(self, *, fsync: bool = False) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="ollie-pg-"))
        self.data = self.dir / "data"
        self.port = _free_port()
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:
            entry = pwd.getpwnam("postgres")
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
        self._watchdog = self._watch()
        # A password, not trust: its port is on 127.0.0.1, where any user of the machine may connect, and a superuser
        # runs programs as the server's OS user (`COPY ... FROM PROGRAM`). Every role of the tests logs in with it.
        self.password = secrets.token_hex(16)
        pwfile = self.dir / "password"
        pwfile.write_text(self.password)
        if self._as_postgres:
            os.chown(pwfile, entry.pw_uid, entry.pw_gid)
        self._run(pg_bin("initdb"), "-A", "scram-sha-256", f"--pwfile={pwfile}", "-U", "postgres", "-E", "UTF8",
                  "--no-sync", "-D", str(self.data))
        # fsync off for tests (a lost machine loses a throwaway cluster); on for the bench, to compare durable writes.
        options = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync={'on' if fsync else 'off'} "
                   "-c max_connections=300 -c shared_buffers=32MB")
        self._run(pg_bin("pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.dir / "log"), "-w", "start")
        self.url = f"postgresql://postgres:{self.password}@127.0.0.1:{self.port}/postgres"

    def _argv(self, *argv: str) -> tuple[str, ...]:
        return ("su", "postgres", "-s", "/bin/sh", "-c", shlex.join(argv)) if self._as_postgres else argv

    def _run(self, *argv: str) -> None:
        subprocess.run(self._argv(*argv), check=True, capture_output=True, timeout=60)

    def _watch(self) -> subprocess.Popen[bytes]:
        """A process that stops the server and removes its files once this one closes its pipe: at `stop`, or when
        it dies, however (pg_ctl detaches the server, so a killed pytest left it running, its files kept)."""
        read, self._alive = os.pipe()  # the write end is this process's alone: not inherited by what it starts
        stop = shlex.join(self._argv(pg_bin("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"))
        # Its own session, deaf to the signals that end a run (a CI timeout's SIGTERM to the group): EOF alone ends it.
        script = f'trap "" HUP INT TERM; read _; {stop}; rm -rf {shlex.quote(str(self.dir))}'
        try:
            return subprocess.Popen(["sh", "-c", script], stdin=read, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True)
        finally:
            os.close(read)

    def schema_url(self) -> str:
        """A fresh, empty schema of its own, as a store URL (a private store per test, made in a millisecond)."""
        import psycopg
        from psycopg import sql

        name = f"t{os.getpid()}_{next(_schemas)}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
        return f"{self.url}?options=-csearch_path%3D{name}"

    def restart(self) -> None:
        """Stop the server (dropping every connection, as a crash or a failover does) and start it again."""
        self._run(pg_bin("pg_ctl"), "-D", str(self.data), "-l", str(self.dir / "log"), "-m", "fast", "-w", "restart")

    def freeze(self, frozen: bool) -> None:
        """SIGSTOP every process of the server (SIGCONT when not `frozen`): its host up, its kernel acknowledging every
        packet, nothing read."""
        main = int((self.data / "postmaster.pid").read_text().split()[0])
        children = [int(pid) for pid in os.listdir("/proc") if pid.isdigit() and _parent(pid) == main]
        for pid in (main, *children):
            os.kill(pid, signal.SIGSTOP if frozen else signal.SIGCONT)

    def stop(self) -> None:
        """Stop the server and remove its files (its watchdog does, now)."""
        os.close(self._alive)
        self._watchdog.wait(60)


def _parent(pid: str) -> int:
    """The parent of process `pid` (0 when it is gone)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


_server: PgServer | None = None


def shared_server() -> PgServer:
    """The test run's server: started on first use, stopped when the run ends."""
    global _server
    if _server is None:
        _server = PgServer()
        atexit.register(_server.stop)
    return _server
