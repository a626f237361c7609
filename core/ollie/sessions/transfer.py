"""Copying a user's local sessions (the SQLite registry and the session files) into a PostgreSQL store."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ollie.sessions import persist, store
from ollie.sessions.errors import SessionError
from ollie.sessions.persist import SessionFileError
from ollie.sessions.pg.log import PgRounds
from ollie.sessions.pg.store import PgStore


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
        rows = [store.row_to_record(r) for r in conn.execute(f"{store.SELECT} WHERE user_id = ?", (user,))]
    for row in rows:
        try:
            with target.transaction() as conn:
                if store.fetch(conn, row.record.id) is not None:
                    report.present += 1
                    continue
                store.insert(conn, row.record, binding=row.binding)
                if row.team:
                    store.update(conn, row.record.id, team=row.team)
            report.records += 1
        except store.DuplicateError as exc:
            report.failed.append(f"record {row.record.id}: the store already has an active {exc.what} session "
                                 "for it (archive one of them, then import again)")


def _import_logs(sessions_dir: Path, url: str, report: ImportReport) -> None:
    for session_id in persist.list_saved_files(sessions_dir):
        log = persist.SessionFile(sessions_dir, session_id, storage=PgRounds(url, session_id))
        try:
            if log.exists():
                report.present += 1
                continue
            log.rewrite(persist.SessionFile(sessions_dir, session_id).load())
            log.close()
            report.logs += 1
        except (SessionError, SessionFileError) as exc:
            report.failed.append(f"log {session_id}: {exc}")


def import_local(url: str, *, user: str, registry_path: Path, sessions_dir: Path) -> ImportReport:
    """Copy `user`'s records from the SQLite registry and every session file into the store at `url` (idempotent)."""
    report = ImportReport()
    target = PgStore(url)
    try:
        if registry_path.exists():
            local = store.Store(registry_path)
            try:
                _import_records(local, target, user, report)
            finally:
                local.close()
        _import_logs(sessions_dir, url, report)
    finally:
        target.close()
    return report
