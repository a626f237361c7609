"""A round's fdatasync runs on the sync thread, not where `save` is called (the event loop); failures still count."""

from __future__ import annotations

import os
import threading

from ollie.backend.types import Message
from ollie.sessions import syncer
from ollie.sessions.persist import SessionFile
from ollie.sessions.session import Session


def _session_with_file(tmp_path) -> tuple[Session, SessionFile]:
    session = Session(agent="t")
    session.messages.append(Message("user", "first"))
    file = SessionFile(tmp_path, session.id)
    file.save(session)  # the first save is a new log's snapshot: synced on the sync thread too
    file.flush()  # done before a test swaps the sync: what it sees is the round's own
    return session, file


def test_a_rounds_sync_runs_on_the_sync_thread_and_flush_waits_for_it(tmp_path, monkeypatch):
    session, file = _session_with_file(tmp_path)
    gate, synced_on = threading.Event(), []

    def slow_sync(fd: int) -> None:
        gate.wait(10)  # a slow disk: save must not wait for it
        synced_on.append(threading.get_ident())

    monkeypatch.setattr(syncer, "_fdatasync", slow_sync)
    session.messages.append(Message("assistant", "second"))
    file.save(session)  # returns while the sync still waits
    assert synced_on == []
    gate.set()
    file.flush()
    assert synced_on and synced_on[0] != threading.get_ident()
    assert SessionFile(tmp_path, session.id).load().messages == session.messages


def test_a_failed_sync_is_reported_and_the_next_save_writes_the_whole_log(tmp_path, monkeypatch):
    session, file = _session_with_file(tmp_path)
    told: list[str] = []
    file.on_error = told.append

    def failing_sync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(syncer, "_fdatasync", failing_sync)
    session.messages.append(Message("assistant", "second"))
    file.save(session)
    file.flush()
    assert told and "Input/output error" in told[0]
    monkeypatch.undo()
    session.messages.append(Message("user", "third"))
    inode = file.path.stat().st_ino
    file.save(session)
    assert file.path.stat().st_ino != inode  # rewritten whole (a snapshot, synced before its rename)
    assert SessionFile(tmp_path, session.id).load().messages == session.messages


def test_a_new_sessions_first_save_leaves_the_disk_wait_to_the_sync_thread(tmp_path, monkeypatch):
    """No log to protect yet: the snapshot's syncs (file, directory) wait on the sync thread; a rewrite's do not."""
    gate, synced_on, here = threading.Event(), [], []

    def slow_sync(fd: int) -> None:
        gate.wait(10)
        synced_on.append(threading.get_ident())

    monkeypatch.setattr(syncer, "_fdatasync", slow_sync)
    monkeypatch.setattr(os, "fsync", here.append)
    session = Session(agent="t")
    session.messages.append(Message("user", "first"))
    file = SessionFile(tmp_path, session.id)
    file.save(session)  # returns while both syncs still wait
    assert synced_on == [] and here == []
    gate.set()
    file.flush()
    assert len(synced_on) == 2 and threading.get_ident() not in synced_on
    assert SessionFile(tmp_path, session.id).load().messages == session.messages
    file.rewrite(session)  # the log it replaces is kept safe: synced before the rename, where it is called
    assert len(here) == 2
