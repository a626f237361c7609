"""`ollie store`: where sessions are kept; `migrate` its schema, `import` local sessions, `share` one to a team."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ollie import paths
from ollie.errors import OllieError

if TYPE_CHECKING:
    from ollie.sessions.pg.store import PgStore
    from ollie.sessions.store import Store as SqliteStore


def build_parser() -> argparse.ArgumentParser:
    """The command line of `ollie store`."""
    parser = argparse.ArgumentParser(
        prog="ollie store",
        description="The session store: files and SQLite on this machine by default, or PostgreSQL when "
        "OLLIE_STORE=postgresql://... (see docs/TEAM.md).")
    parser.add_argument("--url", help="the PostgreSQL store (default: $OLLIE_STORE)")
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("status", help="where the store is and its schema version")
    sub.add_parser("migrate", help="bring the store's schema up to this ollie's version (also done on start)")
    share = sub.add_parser("share", help="share one of your sessions to a team channel (OLLIE_TEAMS of its "
                           "members); an empty team stops sharing")
    share.add_argument("session")
    share.add_argument("team")
    imp = sub.add_parser("import", help="copy this user's local sessions (registry and logs) into PostgreSQL")
    imp.add_argument("--user", help="whose sessions (default: $OLLIE_USER, else the OS user)")
    imp.add_argument("--sessions-dir", type=Path, help="the session files (default: the sessions dir)")
    imp.add_argument("--registry", type=Path, help="the local registry (default: <data dir>/sessions.db)")
    return parser


@contextmanager
def _opened(url: str) -> Iterator[tuple[SqliteStore | PgStore, str]]:
    """The store (PostgreSQL not yet migrated; SQLite migrates when opened) and what it is, closed after."""
    if url:
        from ollie.sessions.pg.store import PgStore

        store: SqliteStore | PgStore = PgStore(url, migrate=False)
        kind = "PostgreSQL"
    else:
        from ollie.sessions.store import Store, default_path

        store, kind = Store(default_path()), f"SQLite; session files in {paths.sessions_dir()}"
    try:
        yield store, kind
    finally:
        store.close()


def _status(url: str) -> int:
    from ollie.sessions.schema import SCHEMA_VERSION

    with _opened(url) as (store, kind):
        print(f"store: {store.location} ({kind})")
        print(f"schema version {store.version()} (this ollie: {SCHEMA_VERSION})")
    return 0


def _migrate(url: str) -> int:
    with _opened(url) as (store, _):
        before, after = store.migrate()  # SQLite: already done when it was opened
    change = f"migrated from version {before} to {after}" if after != before else f"already at version {after}"
    print(f"{store.location}: {change}")
    return 0


def _import(url: str, args: argparse.Namespace) -> int:
    if not url:
        print("ollie store import: no PostgreSQL store: set OLLIE_STORE=postgresql://... or pass --url",
              file=sys.stderr)
        return 2
    from ollie.sessions.store import default_path
    from ollie.sessions.transfer import import_local

    report = import_local(url, user=args.user, registry_path=args.registry or default_path(),
                          sessions_dir=args.sessions_dir or paths.sessions_dir())
    for line in report.lines():
        print(line)
    return 1 if report.failed else 0


def _share(url: str, session_id: str, team: str) -> int:
    from ollie.sessions.registry import Registry
    from ollie.sessions.types import Scope, os_user

    registry = Registry(url or None)
    try:
        registry.share(Scope(user_id=os_user()), session_id, team)
    finally:
        registry.close()
    print(f"session {session_id}: " + (f"shared to team {team}" if team else "no longer shared"))
    return 0


def main(argv: list[str]) -> int:
    """Entry point of `ollie store ...`; 0 when it did what was asked."""
    args = build_parser().parse_args(argv)
    from ollie.sessions.location import store_url

    try:
        url = args.url or store_url()
        if args.action in ("status", "migrate"):
            return (_status if args.action == "status" else _migrate)(url)
        return _share(url, args.session, args.team) if args.action == "share" else _import(url, args)
    except (OllieError, OSError) as exc:
        print(f"ollie store {args.action}: {exc}", file=sys.stderr)
        return 2
