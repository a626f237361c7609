"""Resume after kill -9: a real subprocess appending rounds is SIGKILLed at random instants."""

from __future__ import annotations

import importlib.util
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from ollie.sessions.logformat import SessionFileNotFoundError
from ollie.sessions.persist import load
from ollie.sessions.session import Session, new_session_id

CHILD = Path(__file__).with_name("crash_child.py")


def _child_module():
    spec = importlib.util.spec_from_file_location("crash_child", CHILD)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _expected(rounds: int) -> list[dict]:
    session = Session(id=new_session_id(), agent="crash")
    apply_round = _child_module().apply_round
    for r in range(1, rounds + 1):
        apply_round(session, r)
    return [m.to_dict() for m in session.messages]


def _run_and_kill(sessions_dir: Path, session_id: str, delay: float) -> tuple[int, int]:
    """Start the child, kill -9 it `delay` s after it resumed; (round it started from, last round it reported saved)."""
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), str(sessions_dir), session_id],
        stdout=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        first = proc.stdout.readline().split()
        assert first[0] == "start", first
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGKILL)
        rest = proc.stdout.read()
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    saved = [int(line.split()[1]) for line in rest.splitlines() if line.startswith("saved ")]
    start = int(first[1])
    return start, max(saved, default=start)


def test_kill_minus_9_at_random_instants_loses_at_most_the_round_in_progress(tmp_path):
    rng = random.Random(int(os.environ.get("OLLIE_CRASH_SEED", "5")))
    session_id = new_session_id()
    previous = 0
    for iteration in range(8):
        start, last_saved = _run_and_kill(tmp_path, session_id, rng.uniform(0.0, 0.12))
        # Each run resumes exactly where the committed state of the last one ended.
        assert start == previous, f"iteration {iteration}: resumed at {start}, expected {previous}"
        try:
            session = load(tmp_path, session_id)
        except SessionFileNotFoundError:
            # Killed before its first save (a slow start on a loaded machine): none reported saved, none there.
            assert last_saved == previous == 0, (iteration, last_saved, previous)
            continue
        rounds = session.total_requests
        # Every round reported saved is there; at most the one in progress beyond it.
        assert last_saved <= rounds <= last_saved + 1, (iteration, last_saved, rounds)
        # The prefix property: the history is exactly the replay of the committed rounds.
        assert [m.to_dict() for m in session.messages] == _expected(rounds)
        assert session.total_input_tokens == rounds * (rounds + 1) // 2
        previous = rounds
    assert previous > 8, "the child made too little progress for the test to mean anything"
