"""A store shared by processes (two daemons of one user)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ollie.sessions.registry import Registry
from ollie.sessions.types import Scope

CHILD = Path(__file__).with_name("registry_child.py")
ALICE = Scope(user_id="alice")


def _processes(db_path: Path, tmp_path: Path, jobs: list[tuple[str, str]]) -> list[dict]:
    """Start one child per job, release them together, return their JSON results."""
    go = tmp_path / "go"
    procs = [
        subprocess.Popen([sys.executable, str(CHILD), str(db_path), str(go), mode, arg],
                         stdout=subprocess.PIPE, text=True, start_new_session=True)
        for mode, arg in jobs
    ]
    try:
        for proc in procs:
            assert proc.stdout.readline().strip() == "ready"
        go.touch()
        results = [json.loads(proc.communicate(timeout=60)[0]) for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    for result in results:
        assert "escaped" not in result, result
    return results


def test_two_processes_creating_at_once_lose_no_writes(db_path, tmp_path):
    per_process = 40
    results = _processes(db_path, tmp_path, [("create", str(per_process))] * 3)
    created = [session_id for r in results for session_id in r["ids"]]
    assert len(created) == len(set(created)) == 3 * per_process
    registry = Registry(db_path)
    try:
        listed = registry.page(ALICE)[0]
        assert {i.id for i in listed} == set(created)
        # Every follow-up write of each process landed too.
        assert all(i.title.startswith("renamed ") and i.last_turn_started_at is not None for i in listed)
    finally:
        registry.close()
