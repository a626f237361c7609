"""The registry's schema as versioned migrations, shared by the SQLite and the PostgreSQL store.

Migration n brings a store from version n-1 to n: `common` runs on both, `postgres`
only on PostgreSQL (the session logs and leases, which SQLite keeps in files). A
store whose version is newer than SCHEMA_VERSION was written by a newer ollie and
is refused, never written to.
"""

from __future__ import annotations

from dataclasses import dataclass

from ollie.sessions.errors import SessionError


@dataclass(frozen=True, eq=False, repr=False)
class Migration:
    """One schema step: the statements of both stores and those of PostgreSQL alone."""

    version: int
    summary: str
    common: str
    postgres: str = ""

    def statements(self, *, postgres: bool) -> list[str]:
        """The step's statements, in order, for one kind of store."""
        text = self.common + (";" + self.postgres if postgres else "")
        return [s.strip() for s in text.split(";") if s.strip()]


class StoreVersionError(SessionError):
    """The store's schema is newer than this ollie: refused, so an older ollie never damages it."""


# Schema 4's policies (PostgreSQL). A session's log, compactions and lease are written only by its owner, or by anyone
# once it is shared (the server does not know OLLIE_TEAMS), or by anyone while it has no record (a log with another's
# rows is then nobody's: no record can be made over it, and ollie lists it for no one; from schema 5, by its first
# writer only). Rounds are deleted by their writer, or by whoever may replace the whole log: the owner (compaction,
# /clear, rewind) and, once shared, anyone (the compaction a teammate's full context needs). A lease row is taken over
# by anyone who may write there (after it lapses, by the TTL of the taker's ollie: the server cannot tell), as its
# taker's. No record is deleted, no round updated.
_MAY_WRITE = ("NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = {table}.session_id AND s.user_id <> current_user "
              "AND s.team = '')")


# Schema 5's: a log with no record only while no other role wrote a round of it (then it is its writer's alone).
_UNRECORDED_OWN = ("(EXISTS (SELECT 1 FROM sessions s WHERE s.id = {table}.session_id) OR NOT EXISTS ("
                   "SELECT 1 FROM session_rounds r WHERE r.session_id = {table}.session_id AND r.user_id <> current_user))")


def _may_write(table: str) -> str:
    """Schema 5's check that a row of `table` goes into a session its writer may write."""
    return f"{_MAY_WRITE.format(table=table)} AND {_UNRECORDED_OWN.format(table=table)}"


# Schema 6's: a round goes right after the log's last one, in its epoch (a snapshot's, seq 1, starts an epoch): one far
# ahead or of another epoch stopped its owner's next save, and stayed the log's last round.
_NEXT_ROUND = ("seq = 1 + COALESCE((SELECT max(r.seq) FROM session_rounds r WHERE r.session_id = "
               "session_rounds.session_id), 0) AND (seq = 1 OR epoch = (SELECT r.epoch FROM session_rounds r WHERE "
               "r.session_id = session_rounds.session_id ORDER BY r.seq DESC LIMIT 1))")


# Timestamps are microseconds since the epoch (BIGINT: SQLite's INTEGER is 64-bit anyway).
MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "sessions, one active main per user and agent, one active session per binding", """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    group_id TEXT NOT NULL DEFAULT '',
    guest_id TEXT NOT NULL DEFAULT '',
    channel TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL,
    project_id TEXT NOT NULL DEFAULT '',
    title TEXT NOT NULL DEFAULT '',
    created_at BIGINT,
    last_active BIGINT,
    last_turn_started_at BIGINT,
    last_turn_completed_at BIGINT,
    last_turn_result TEXT NOT NULL DEFAULT '',
    last_viewed_at BIGINT,
    archived INTEGER NOT NULL DEFAULT 0,
    latest_seq BIGINT NOT NULL DEFAULT 0,
    binding TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX sessions_one_main ON sessions(user_id, agent_id) WHERE kind = 'main' AND archived = 0;
CREATE UNIQUE INDEX sessions_one_binding ON sessions(binding) WHERE binding <> '' AND archived = 0;
CREATE INDEX sessions_by_owner ON sessions(user_id, agent_id, last_active);
CREATE INDEX sessions_by_agent ON sessions(agent_id, last_active)
"""),
    Migration(2, "team channels; on PostgreSQL the session logs (a row per round) and the leases", """
ALTER TABLE sessions ADD COLUMN team TEXT NOT NULL DEFAULT '';
CREATE INDEX sessions_by_team ON sessions(team) WHERE team <> ''
""", """
CREATE TABLE session_rounds (
    session_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    -- Set by the snapshot a round follows: a round appends only to the log its writer last saw.
    epoch BIGINT NOT NULL,
    data BYTEA NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE session_compactions (
    session_id TEXT NOT NULL,
    seq BIGSERIAL,
    data BYTEA NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE session_leases (
    session_id TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    user_id TEXT NOT NULL,
    acquired_at TIMESTAMPTZ NOT NULL,
    heartbeat_at TIMESTAMPTZ NOT NULL
)
"""),
    # Who wrote a log (on PostgreSQL): the owner of a session the registry has no record of (a registry call that
    # failed), which would otherwise be no one's, and so every user's to list and read.
    Migration(3, "on PostgreSQL, the writer of each session round", "", """
ALTER TABLE session_rounds ADD COLUMN user_id TEXT NOT NULL DEFAULT ''
"""),
    # Who wrote a row, by the server (docs/TEAM.md): a role that does not own the tables (a role per person) writes
    # only rows naming itself. The owner (a one-role team's) bypasses these policies, as before: unauthenticated.
    Migration(4, "on PostgreSQL, row-level security: a role writes only rows naming itself", "", f"""
ALTER TABLE sessions ENABLE ROW LEVEL SECURITY;
CREATE POLICY ollie_read ON sessions FOR SELECT USING (true);
CREATE POLICY ollie_insert ON sessions FOR INSERT WITH CHECK (user_id = current_user AND NOT EXISTS (
    SELECT 1 FROM session_rounds r WHERE r.session_id = sessions.id AND r.user_id <> current_user));
CREATE POLICY ollie_update ON sessions FOR UPDATE USING (user_id = current_user) WITH CHECK (user_id = current_user);
ALTER TABLE session_rounds ENABLE ROW LEVEL SECURITY;
CREATE POLICY ollie_read ON session_rounds FOR SELECT USING (true);
CREATE POLICY ollie_insert ON session_rounds FOR INSERT
    WITH CHECK (user_id = current_user AND {_MAY_WRITE.format(table="session_rounds")});
CREATE POLICY ollie_delete ON session_rounds FOR DELETE USING (user_id = current_user OR EXISTS (
    SELECT 1 FROM sessions s WHERE s.id = session_rounds.session_id AND (s.user_id = current_user OR s.team <> '')));
ALTER TABLE session_compactions ENABLE ROW LEVEL SECURITY;
CREATE POLICY ollie_read ON session_compactions FOR SELECT USING (true);
CREATE POLICY ollie_insert ON session_compactions FOR INSERT WITH CHECK ({_MAY_WRITE.format(table="session_compactions")});
ALTER TABLE session_leases ENABLE ROW LEVEL SECURITY;
CREATE POLICY ollie_read ON session_leases FOR SELECT USING (true);
CREATE POLICY ollie_insert ON session_leases FOR INSERT
    WITH CHECK (user_id = current_user AND {_MAY_WRITE.format(table="session_leases")});
CREATE POLICY ollie_update ON session_leases FOR UPDATE USING (true)
    WITH CHECK (user_id = current_user AND {_MAY_WRITE.format(table="session_leases")});
CREATE POLICY ollie_delete ON session_leases FOR DELETE USING (user_id = current_user)
"""),
    # A record keeps its id: moved onto a log with no record (another role's rows), it made that log its mover's, to
    # resume or wipe (schema 4's insert check, dodged). The subquery reads the rows as they were before the UPDATE.
    # A log with no record is its writer's alone: another role's round, compaction or lease there made it no one's.
    Migration(5, "on PostgreSQL, a record keeps its id, a log with no record stays its writer's", "", f"""
ALTER POLICY ollie_update ON sessions WITH CHECK (user_id = current_user AND EXISTS (
    SELECT 1 FROM sessions s WHERE s.id = sessions.id AND s.user_id = current_user));
ALTER POLICY ollie_insert ON session_rounds WITH CHECK (user_id = current_user AND {_may_write("session_rounds")});
ALTER POLICY ollie_insert ON session_compactions WITH CHECK ({_may_write("session_compactions")});
ALTER POLICY ollie_insert ON session_leases WITH CHECK (user_id = current_user AND {_may_write("session_leases")});
ALTER POLICY ollie_update ON session_leases WITH CHECK (user_id = current_user AND {_may_write("session_leases")})
"""),
    # A session's log is its owner's to replace (compaction, /clear, /rewind): a teammate carrying a shared session on
    # appends rounds of its own, each right after the last (its epoch, the next seq), and deletes none, not even its
    # own (a gap would cut the owner's later rounds off the log). With no record, the log's writer deletes its own.
    # Its turns bump the record's last activity through one function that changes nothing else: SECURITY DEFINER
    # (the owner's rights), so its search path is pinned to the tables' schema, pg_temp last (never shadowing them).
    Migration(6, "on PostgreSQL, only a session's owner replaces its log; a teammate's turn bumps its last activity",
              "", f"""
SELECT pg_catalog.set_config('search_path', pg_catalog.quote_ident(pg_catalog.current_schema()) || ', pg_temp', true);
ALTER POLICY ollie_delete ON session_rounds USING (EXISTS (
    SELECT 1 FROM sessions s WHERE s.id = session_rounds.session_id AND s.user_id = current_user)
    OR (user_id = current_user AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = session_rounds.session_id)));
ALTER POLICY ollie_insert ON session_rounds WITH CHECK (user_id = current_user AND {_may_write("session_rounds")}
    AND {_NEXT_ROUND});
CREATE OR REPLACE FUNCTION ollie_touch_shared(sid TEXT) RETURNS BIGINT LANGUAGE sql SECURITY DEFINER
    SET search_path FROM CURRENT AS $$
    UPDATE sessions SET last_active = GREATEST(last_active,
        (EXTRACT(EPOCH FROM pg_catalog.statement_timestamp()) * 1000000)::BIGINT)
    WHERE id = sid AND team <> '' AND archived = 0 RETURNING last_active $$;
REVOKE ALL ON FUNCTION ollie_touch_shared(TEXT) FROM PUBLIC
"""),
)
SCHEMA_VERSION = MIGRATIONS[-1].version


def pending(version: int, where: str) -> list[Migration]:
    """The migrations a store at `version` needs; StoreVersionError when it is newer than this code."""
    if version > SCHEMA_VERSION:
        raise StoreVersionError(
            f"{where}: the store's schema is version {version}, newer than this ollie's ({SCHEMA_VERSION}): "
            "upgrade ollie on this machine (an older ollie never writes to a newer store)")
    return [m for m in MIGRATIONS if m.version > version]
