"""Leases: one process at a time holds a live session; a killed holder is taken over; a lapsed one writes nothing."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ollie.backend.types import Message
from ollie.sessions import persist
from ollie.sessions.persist import SessionFile
from ollie.sessions.pg import log as pg_log
from ollie.sessions.pg.lease import LeaseLostError, Leases, SessionLeasedError
from ollie.sessions.session import Session, new_session_id

CHILD = Path(__file__).with_name("log_child.py")
# A heartbeat every second: two may be late on a loaded machine before a live holder's lease lapses.
TTL = "3"


@pytest.fixture
def store(store_url, monkeypatch):
    monkeypatch.setenv("OLLIE_STORE", store_url)
    monkeypatch.setenv("OLLIE_LEASE_TTL", TTL)
    monkeypatch.setenv("OLLIE_USER", "alice")  # the children's user: their logs have no record, so they are hers only
    return store_url


def _holder(session_id: str, env_url: str, rounds: int = 3, mode: str = "loop") -> subprocess.Popen[str]:
    """A child process holding the session, after it has saved (and flushed) `rounds` rounds (log_child.py)."""
    import os

    env = {**os.environ, "OLLIE_STORE": env_url, "OLLIE_LEASE_TTL": TTL, "OLLIE_USER": "alice"}
    child = subprocess.Popen([sys.executable, str(CHILD), session_id, str(rounds), mode], stdout=subprocess.PIPE,
                             stdin=subprocess.PIPE, text=True, env=env, start_new_session=True)
    assert child.stdout is not None
    for n in range(1, rounds + 1):
        assert child.stdout.readline().strip() == f"saved {n}"
    return child


def _pairs_in_order(session: Session) -> int:
    """The number of whole rounds in the history, checking that none is missing, torn or out of order."""
    texts = [m.content for m in session.messages]
    assert len(texts) % 2 == 0, texts[-3:]
    for i in range(0, len(texts), 2):
        assert texts[i:i + 2] == [f"question {i // 2}", f"answer {i // 2}"], texts[i:i + 2]
    return len(texts) // 2


def test_a_killed_holder_is_named_then_taken_over_without_losing_a_round(store):
    sid = new_session_id()
    child = _holder(sid, store)
    try:
        with pytest.raises(SessionLeasedError) as caught:
            persist.open_session("unused", sid)
        message = str(caught.value)
        assert f"live on {socket.gethostname()} (pid {child.pid}, user alice)" in message, message
        assert "lapses" in message
    finally:
        child.send_signal(signal.SIGKILL)  # mid-round, likely: it saves as fast as it can
        child.wait()
    # Until the lease lapses the dead holder still holds it; then the session is ours, every committed round whole.
    log, session = _open_once_lapsed(sid)
    rounds = _pairs_in_order(session)
    assert rounds >= 3  # every round the child flushed is there
    session.messages += [Message("user", f"question {rounds}"), Message("assistant", f"answer {rounds}")]
    log.save(session)
    log.close()
    assert _pairs_in_order(persist.load("unused", sid)) == rounds + 1


def _open_once_lapsed(session_id: str) -> tuple[SessionFile, Session]:
    """open_session, retried until the holder's lease lapses."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return persist.open_session("unused", session_id)
        except SessionLeasedError:
            assert time.monotonic() < deadline, "the lease never lapsed"
            time.sleep(0.1)


def _tell(child: subprocess.Popen[str], command: str) -> str:
    """Send log_child.py one command; its answer."""
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(command + "\n")
    child.stdin.flush()
    return child.stdout.readline().strip()


def test_a_holder_frozen_past_its_lease_never_writes_again_even_once_the_session_is_free(store):
    """A suspended laptop: frozen past its lease, taken over, the other machine's turn closed; then it wakes up."""
    sid = new_session_id()
    laptop = _holder(sid, store, rounds=1, mode="commands")
    try:
        laptop.send_signal(signal.SIGSTOP)
        log, session = _open_once_lapsed(sid)  # the other machine, once the frozen one's lease lapsed
        session.messages += [Message("user", "desk question"), Message("assistant", "desk answer")]
        log.save(session)
        persist.release(sid)  # closed there: the session is free again
        laptop.send_signal(signal.SIGCONT)
        # Every write of the woken holder is refused, the retries too (a whole rewrite from its memory would
        # delete the other machine's turn).
        for command in ("save late", "save later", "rewrite"):
            answer = _tell(laptop, command)
            assert answer.startswith("refused: ") and "lease lapsed" in answer, (command, answer)
        assert "open the session again" in answer
        assert _tell(laptop, "close") == "ok"  # it was told already: closing writes nothing either
        assert laptop.wait(timeout=30) == 0
    finally:
        laptop.kill()
        laptop.wait()
    texts = [m.content for m in persist.load("unused", sid).messages]
    assert texts == ["question 0", "answer 0", "desk question", "desk answer"], texts
    # Opened again from the store, the laptop's process may write again, after the other machine's turn.
    log, session = persist.open_session("unused", sid)
    session.messages += [Message("user", "late question"), Message("assistant", "late answer")]
    log.save(session)
    log.close()
    assert [m.content for m in persist.load("unused", sid).messages][2:] == [
        "desk question", "desk answer", "late question", "late answer"]


def test_a_holder_that_lapsed_writes_nothing_after_the_takeover(store):
    session = Session()
    first, _ = persist.open_session("unused", session.id)
    session.messages.append(Message("user", "question 0"))
    session.messages.append(Message("assistant", "answer 0"))
    first.save(session)
    first.flush()
    # Another process (its own holder id) finds the lease lapsed, as if this one had hung: simulate by expiring it.
    pg_store, _ = pg_log.shared(store)
    with pg_store.connection() as conn:
        conn.execute("UPDATE session_leases SET heartbeat_at = now() - interval '1 hour' WHERE session_id = ?",
                     (session.id,))
    rounds = pg_log.PgRounds(store, session.id)
    rounds.leases = Leases(pg_store, user="bob-machine")
    second = SessionFile("unused", session.id, storage=rounds)
    taken = second.load()
    assert [m.content for m in taken.messages] == ["question 0", "answer 0"]
    reported: list[str] = []
    first.on_error = reported.append  # what the Core emits as an `error` event, from the writer thread
    session.messages.append(Message("user", "late question"))
    first.save(session)
    with pytest.raises(LeaseLostError, match="lease lapsed"):
        first.flush()
    assert len(reported) == 1 and reported[0].startswith("session not saved: ") and "lease lapsed" in reported[0]
    assert "retrying" not in reported[0] and "open the session again" in reported[0]
    # The next save would write the whole session again: refused without a try (told once), even once the
    # new holder let the session go.
    rounds.leases.close()
    first.save(session)
    with pytest.raises(LeaseLostError, match="lease lapsed"):
        first.flush()
    assert len(reported) == 1, reported
    assert [m.content for m in persist.load("unused", session.id).messages] == ["question 0", "answer 0"]


def test_a_closed_session_is_free_at_once_and_a_second_load_in_the_holder_is_fine(store):
    session = Session()
    log, _ = persist.open_session("unused", session.id)
    session.messages.append(Message("user", "hello"))
    log.save(session)
    again, resumed = persist.open_session("unused", session.id)  # the same process: it holds the lease already
    assert [m.content for m in resumed.messages] == ["hello"]
    persist.release(session.id)
    pg_store, _ = pg_log.shared(store)
    with pg_store.reading() as conn:
        assert conn.execute("SELECT count(*) FROM session_leases").fetchone()[0] == 0
