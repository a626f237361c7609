"""A teammate's round that fails to save in a shared session is saved by their next save, after the owner's log."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from psycopg import sql

from ollie.backend.types import Message
from ollie.sessions import persist
from ollie.sessions.errors import SessionError
from ollie.sessions.pg.lease import LeaseLostError
from ollie.sessions.pg.log import GuestWriteError
from ollie.sessions.session import Session
from ollie.testing import Reply
from tests.procs import eventually
from tests.teams.test_engine_store import _user_texts
from tests.teams.test_guard import _share, _writers
from tests.teams.test_roles import _session_id, _terminals

# What `turn` saves of her four turns, in order.
HER_FOUR_TURNS = [t for n in ("first", "second", "third", "fourth") for t in (f"her {n}", f"re: her {n}")]


def _refuse_rounds(store_url: str, refused: bool) -> None:
    """The server refuses (or lets through again) every team role's rounds in this store: a write that fails."""
    schema = store_url.rpartition("%3D")[2]
    statement = "REVOKE INSERT ON {}.session_rounds FROM ollie_team" if refused else \
        "GRANT INSERT ON {}.session_rounds TO ollie_team"
    with psycopg.connect(store_url, autocommit=True) as conn:
        conn.execute(sql.SQL(statement).format(sql.Identifier(schema)))


def teammate_turns(url: str, sid: str, monkeypatch: pytest.MonkeyPatch, *, user: str = ""
                   ) -> tuple[persist.SessionFile, Session, Callable[[str], None], list[str]]:
    """Alice (of team backend) resumes Bob's shared session in this process: (log, session, turn(text), reported).

    `user`: her OLLIE_USER, in a store of one role for the team (else she is the role `url` connects as).
    """
    from ollie.sessions import types

    monkeypatch.setattr(types, "_role", "")  # restored after: her role's store names this process's user
    monkeypatch.setenv("OLLIE_STORE", url)
    monkeypatch.setenv("OLLIE_TEAMS", "backend")
    if user:
        monkeypatch.setenv("OLLIE_USER", user)
    else:
        monkeypatch.delenv("OLLIE_USER", raising=False)
    log, session = persist.open_session("unused", sid)
    assert log.owner == "bob"
    reported: list[str] = []
    log.on_error = reported.append  # what the Core emits as an `error` event, from the log's writer thread

    def turn(text: str) -> None:
        session.messages += [Message("user", text), Message("assistant", f"re: {text}")]
        log.save(session)

    return log, session, turn, reported


def _first_then_refused(store_url: str, log: persist.SessionFile, turn: Callable[[str], None]) -> None:
    """Her first turn is saved; the server refuses her second's round (told, and raised by `flush`)."""
    turn("her first")
    log.flush()
    _refuse_rounds(store_url, True)
    try:
        turn("her second")
        with pytest.raises(SessionError, match="permission denied"):
            log.flush()
    finally:
        _refuse_rounds(store_url, False)


def _refused_while_her_lease_goes(team_store: Callable[[str], str], store_url: str, sid: str,
                                  monkeypatch: pytest.MonkeyPatch, lease: str) -> tuple[Any, Session, Any, list[str]]:
    """`_first_then_refused` in Alice's session, then `lease` (SQL, `%s` the session) changes her lease's row: what
    `teammate_turns` gives."""
    monkeypatch.setenv("OLLIE_LEASE_TTL", "600")  # her heartbeat (a third of it) never renews what the test changes
    log, session, turn, reported = teammate_turns(team_store("alice"), sid, monkeypatch)
    _first_then_refused(store_url, log, turn)
    with psycopg.connect(store_url, autocommit=True) as conn:
        conn.execute(lease, (sid,))  # type: ignore[arg-type]  # the tests' literal SQL
    return log, session, turn, reported


@pytest.fixture
def bobs_shared_session(team_store, scripted_llm, tmp_path) -> tuple[Callable[..., Any], Any, str]:
    """Bob's session (one turn, by his terminal as his role), shared with team backend: (ollie, llm, its id)."""
    llm = scripted_llm("openai", check=False)
    llm.script(Reply.text("noted"))
    ollie = _terminals(tmp_path, llm, team_store)
    sid = _session_id(ollie("bob", ["-p", "remember 9"]))
    _share(tmp_path, team_store("bob"), sid)
    return ollie, llm, sid


def test_a_teammates_refused_round_is_saved_by_her_next_save_and_so_are_the_next_two(
        bobs_shared_session, team_store, store_url, monkeypatch):
    # A round of hers that failed to save ended her saving to his session until she reopened it: told once, every
    # later round of hers was lost without a word.
    _, _, sid = bobs_shared_session
    his = _writers(store_url, sid)
    log, _, turn, reported = teammate_turns(team_store("alice"), sid, monkeypatch)
    _first_then_refused(store_url, log, turn)
    assert len(reported) == 1 and reported[0].endswith("retrying at the next save"), reported
    assert _user_texts(team_store("alice"), sid)[-2:] == ["her first", "re: her first"]
    turn("her third")
    log.flush()  # raises nothing: the round that failed is stored now
    turn("her fourth")
    log.close()
    assert _user_texts(team_store("alice"), sid) == ["remember 9", "noted", *HER_FOUR_TURNS]
    assert _writers(store_url, sid) == [*his, *["alice"] * 4]
    assert len(reported) == 1, reported


def test_a_teammates_unsaved_round_that_no_longer_follows_the_owners_log_is_named_once_and_his_log_kept(
        bobs_shared_session, team_store, store_url, monkeypatch):
    ollie, llm, sid = bobs_shared_session
    # Meanwhile her lease lapses (her machine cut off) and Bob carries his session on from what is stored.
    log, session, turn, reported = _refused_while_her_lease_goes(
        team_store, store_url, sid, monkeypatch,
        "UPDATE session_leases SET heartbeat_at = now() - interval '1 hour' WHERE session_id = %s")
    llm.script(Reply.text("his answer"))
    his_turn = ollie("bob", ["-p", "his second", "--session", sid])
    assert his_turn.returncode == 0, his_turn.stderr
    kept = _user_texts(team_store("alice"), sid)
    assert kept[-4:] == ["her first", "re: her first", "his second", "his answer"], kept
    writers = _writers(store_url, sid)
    # Her unsaved round would follow "her first", no longer the log's last: told once, naming it; his log stays whole.
    turn("her third")
    with pytest.raises(GuestWriteError):
        log.flush()
    assert len(reported) == 2, reported
    assert 'your last 4 messages (from "her second" on) could not be saved: bob wrote to it after your last saved ' \
        "message" in reported[1], reported
    assert "session is bob's, so only they may rewrite its log" in reported[1] and "retrying" not in reported[1]
    turn("her fourth")
    with pytest.raises(GuestWriteError):
        log.close()
    assert len(reported) == 2, reported
    assert _user_texts(team_store("alice"), sid) == kept and _writers(store_url, sid) == writers
    # What she wrote is still hers to read in the session she has open.
    assert [m.content for m in session.messages][-6:] == ["her second", "re: her second", "her third",
                                                          "re: her third", "her fourth", "re: her fourth"]


def test_a_teammate_whose_lease_was_taken_while_her_round_waited_is_told_which_rounds_were_not_saved(
        bobs_shared_session, team_store, store_url, monkeypatch):
    _, _, sid = bobs_shared_session
    # Her lease is taken over and given up again, nothing written.
    log, _, turn, reported = _refused_while_her_lease_goes(team_store, store_url, sid, monkeypatch,
                                                           "DELETE FROM session_leases WHERE session_id = %s")
    turn("her third")
    with pytest.raises(LeaseLostError):
        log.flush()
    assert len(reported) == 2 and "lease lapsed" in reported[1], reported
    assert 'took the session over (your last 4 messages (from "her second" on) could not be saved)' in reported[1]
    assert _user_texts(team_store("alice"), sid)[-2:] == ["her first", "re: her first"]


async def test_a_teammates_daemon_tells_her_of_a_refused_round_and_saves_it_with_her_next_turns(
        bobs_shared_session, team_store, store_url, start_daemon, monkeypatch):
    _, llm, sid = bobs_shared_session
    llm.script(*(Reply.text(f"re: her {n}") for n in ("first", "second", "third", "fourth")))
    alice = await start_daemon("alice", {**llm.env(), "OLLIE_STORE": team_store("alice"), "OLLIE_TEAMS": "backend"})
    await alice.request("ollie/session/load", {"session": sid})
    assert (await alice.request("ollie/submit", {"session": sid, "text": "her first"}))["reply"] == "re: her first"
    _refuse_rounds(store_url, True)
    try:
        assert (await alice.request("ollie/submit", {"session": sid, "text": "her second"}))["stop"] == "end"
        # The turn saves twice (its prompt, its end): each save the server refuses is told as it is tried.
        await eventually(lambda: alice.errors(sid), "the refused round told")
    finally:
        _refuse_rounds(store_url, False)
    for n in ("third", "fourth"):
        assert (await alice.request("ollie/submit", {"session": sid, "text": f"her {n}"}))["reply"] == f"re: her {n}"
    assert await alice.request("ollie/session/close", {"session": sid}) == {}  # her rounds stored: nothing to tell
    assert not [m.message for m in alice.client.messages if "without saving" in m.message]
    monkeypatch.setenv("OLLIE_STORE", store_url)
    assert _user_texts(store_url, sid) == ["remember 9", "noted", *HER_FOUR_TURNS]
    # Told of the refused saves (the turn's second was tried before or after the grant: one or two), of nothing else.
    told = alice.errors(sid)
    assert told and all("permission denied" in e and e.endswith("retrying at the next save") for e in told), told


def test_neovim_shows_a_teammate_the_refused_round_then_which_rounds_no_longer_fit_his_log(
        bobs_shared_session, team_store, store_url, tmp_path, monkeypatch):
    from tests.editors.test_nvim_tui import assert_clean, start_nvim

    ollie, llm, sid = bobs_shared_session
    # Her third answer streams slowly: the error of its prompt's save may come between its words, and must not split it.
    llm.script(*(Reply.text(f"re: her {n}") for n in ("first", "second")), Reply.text("his answer"),
               Reply(text="re: her third", chunk_size=4, delay=0.2))
    # Her daemon's heartbeat (a third of its TTL) never renews the lease the test lapses.
    with start_nvim(tmp_path, {**llm.env(), "OLLIE_STORE": team_store("alice"), "OLLIE_TEAMS": "backend",
                               "OLLIE_LEASE_TTL": "600"}, {"notes.md": "notes\n"}) as tmux:
        keep = tmux.keep
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":OllieSessions", "Enter")
        picker = tmux.wait(lambda s: "Type number" in s and "remember 9" in s, "the sessions to pick from")
        tmux.keys(next(line.split(".")[0].strip() for line in picker.splitlines() if "remember 9" in line), "Enter")
        tmux.wait(lambda s: "noted" in s, "his session resumed")
        tmux.keys(":Ollie her first", "Enter")
        tmux.wait(lambda s: "re: her first" in s, "her first answer")
        _refuse_rounds(store_url, True)
        try:
            tmux.keys(":Ollie her second", "Enter")
            keep("1-refused", tmux.wait(lambda s: "re: her second" in s and "retrying at the next save" in s,
                                        "the refused round told"))
        finally:
            _refuse_rounds(store_url, False)
        with psycopg.connect(store_url, autocommit=True) as conn:
            conn.execute("UPDATE session_leases SET heartbeat_at = now() - interval '1 hour' WHERE session_id = %s",
                         (sid,))
        assert ollie("bob", ["-p", "his second", "--session", sid]).returncode == 0
        tmux.keys(":Ollie her third", "Enter")
        told = keep("2-cut-off", tmux.wait(lambda s: "re: her third" in s and "could not be saved" in s,
                                           "the rounds that no longer fit told"))
        assert 'from "her second" on' in told and "bob wrote to it" in told, told
        assert "re: her second" in told  # what she wrote stays in her chat
        assert_clean(tmux.screens)
    monkeypatch.setenv("OLLIE_STORE", store_url)
    assert "her second" not in _user_texts(store_url, sid) and "his second" in _user_texts(store_url, sid)
