"""Copying a user's local sessions (the SQLite registry and the session files) into a PostgreSQL store."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ollie.sessions import persist, store
from ollie.sessions.errors import InvalidSessionError, SessionError
from ollie.sessions.logformat import SUFFIX, SessionFileError
from ollie.sessions.logindex import list_saved_files
from ollie.sessions.pg.log import PgRounds
from ollie.sessions.pg.store import PgStore, StoreIdentityError
from ollie.sessions.session import Session
from ollie.sessions.types import Channel, Info, Kind, from_micros, os_user, validate_title


@dataclass
class ImportReport:
    """What an import copied, what it found already there, and what it could not copy (with why)."""

    records: int = 0
    logs: int = 0
    present: int = 0
    failed: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """The report as lines for the terminal."""
        out = [f"imported {self.records} session record(s) and {self.logs} session log(s); "
               f"{self.present} already in the store"]
        return out + [f"not imported: {reason}" for reason in self.failed]


def _import_records(local: store.Store, target: PgStore, user: str, report: ImportReport) -> None:
    with local.reading() as conn:
        rows = [store.row_info(r) for r in conn.execute(f"{store.SELECT} WHERE user_id = ?", (user,))]
    for row in rows:
        try:
            with target.transaction() as conn:
                if store.fetch(conn, row.id) is not None:
                    report.present += 1
                    continue
                store.insert(conn, row)
                if row.team:
                    store.update(conn, row.id, team=row.team)
            report.records += 1
        except store.DuplicateError as exc:
            report.failed.append(f"record {row.id}: the store already has an active {exc.what} session "
                                 "for it (archive one of them, then import again)")
        except InvalidSessionError as exc:  # a row that breaks the invariant is not copied
            report.failed.append(f"record {row.id}: {exc}")


def _owner_record(session: Session, user: str, mtime_s: float) -> Info:
    """The record that makes `user` the owner of a session file no registry knows (a terminal session from before
    the registry): without one, the log in the store would be no one's, and so everyone's to list and read."""
    title = session.title
    try:
        validate_title(title)
    except SessionError:
        title = ""
    created = int(session.id.split("-", 1)[0]) // 1000  # the id's nanoseconds, as the store's microseconds
    return Info(id=session.id, agent_id=session.agent or "default", user_id=user, channel=Channel.CLI,
                kind=Kind.CHAT, title=title, created_at=from_micros(created),
                last_active=from_micros(max(created, int(mtime_s * 1_000_000))))


def _claim(target: PgStore, local: store.Store | None, session: Session, user: str, mtime_s: float) -> str:
    """Make sure the store's record of `session_id` is `user`'s (creating it for a file no registry knows);
    "" when it is, else why the log is not imported (another user's session is never copied)."""
    with target.transaction() as conn:
        row = store.fetch(conn, session.id)
        if row is not None:
            return "" if row.user_id == user else "the store has it as another user's session"
        if local is not None:
            with local.reading() as local_conn:
                mine = store.fetch(local_conn, session.id)
            if mine is not None and mine.user_id != user:
                return "another user's session (its record is not imported)"
        store.insert(conn, _owner_record(session, user, mtime_s))
    return ""


def _import_logs(sessions_dir: Path, url: str, target: PgStore, local: store.Store | None, user: str,
                 report: ImportReport) -> None:
    for session_id in list_saved_files(sessions_dir):
        log = persist.SessionFile(sessions_dir, session_id, storage=PgRounds(url, session_id, author=user))
        try:
            session = persist.SessionFile(sessions_dir, session_id).load()
            mtime_s = (Path(sessions_dir) / f"{session_id}{SUFFIX}").stat().st_mtime
            refused = _claim(target, local, session, user, mtime_s)
            if refused:
                report.failed.append(f"log {session_id}: {refused}")
                continue
            if log.exists():
                report.present += 1
                continue
            log.rewrite(session)
            log.close()
            report.logs += 1
        except (SessionError, SessionFileError, OSError, ValueError) as exc:
            report.failed.append(f"log {session_id}: {exc}")


def import_local(url: str, *, user: str | None, registry_path: Path, sessions_dir: Path) -> ImportReport:
    """Copy `user`'s (None: this process's) records from the SQLite registry, and the session files that are theirs
    (or no one's: they become theirs), into the store at `url` (idempotent); another user's stay behind, reported."""
    report = ImportReport()
    target = PgStore(url)
    if user and target.role and user != target.role:
        target.close()
        raise StoreIdentityError(
            f"cannot import {user}'s sessions: {target.location} connects as role {target.role!r}, which the server "
            f"lets write only rows naming {target.role}: import them as {user}'s role (OLLIE_STORE naming it), or as "
            "the role that owns ollie's tables")
    user = user or os_user()  # once the store is open: it may name the user (a role per person)
    local = store.Store(registry_path) if registry_path.exists() else None
    try:
        if local is not None:
            _import_records(local, target, user, report)
        _import_logs(sessions_dir, url, target, local, user, report)
    finally:
        if local is not None:
            local.close()
        target.close()
    return report
