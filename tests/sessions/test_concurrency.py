"""Rotation races and a store shared by threads and by processes (two daemons of one user)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ollie.sessions import (
    Channel,
    ChannelRequest,
    ListOptions,
    MainRequest,
    Registry,
    Scope,
    StaleRotationError,
)

CHILD = Path(__file__).with_name("registry_child.py")
ALICE = Scope(user_id="alice", agent_id="coding")
TELEGRAM = ChannelRequest(user_id="alice", agent_id="coding", channel=Channel.TELEGRAM)


def _race(calls) -> list[object]:
    """Run the calls at the same instant in threads; each result is a value or the exception raised."""
    barrier = threading.Barrier(len(calls))
    results: list[object] = [None] * len(calls)

    def run(i, call):
        barrier.wait()
        try:
            results[i] = call()
        except Exception as exc:  # noqa: BLE001 - the race's loser is an expected outcome
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results


def _one_wins(results) -> object:
    stale = [r for r in results if isinstance(r, StaleRotationError)]
    won = [r for r in results if not isinstance(r, Exception)]
    assert len(won) == 1 and len(stale) == len(results) - 1, results
    return won[0]


@pytest.mark.parametrize("shared", [True, False], ids=["one-registry", "two-registries"])
def test_two_threads_rotating_a_channel_one_wins(db_path, shared):
    first = Registry(db_path)
    second = first if shared else Registry(db_path)
    try:
        old = first.resolve_chat_channel(TELEGRAM)
        req = ChannelRequest(user_id="alice", agent_id="coding", channel=Channel.TELEGRAM, expected_session_id=old.id)
        winner = _one_wins(_race([lambda: first.rotate_channel(req), lambda: second.rotate_channel(req)]))
        assert first.resolve_chat_channel(TELEGRAM).id == winner.id
        assert len(first.list(ALICE, ListOptions(include_archived=True))) == 2
    finally:
        first.close()
        if not shared:
            second.close()


def test_two_threads_rotating_main_one_wins(db_path):
    first, second = Registry(db_path), Registry(db_path)
    try:
        old = first.resolve_main(MainRequest(user_id="alice", agent_id="coding"))
        req = MainRequest(user_id="alice", agent_id="coding", expected_session_id=old.id)
        winner = _one_wins(_race([lambda: first.rotate_main(req), lambda: second.rotate_main(req)]))
        assert second.resolve_main(MainRequest(user_id="alice", agent_id="coding")).id == winner.id
    finally:
        first.close()
        second.close()


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


@pytest.mark.parametrize("mode", ["rotate_channel", "rotate_main"])
def test_two_processes_rotating_with_the_same_expected_id_one_wins(db_path, tmp_path, mode):
    registry = Registry(db_path)
    try:
        if mode == "rotate_channel":
            old = registry.resolve_chat_channel(TELEGRAM)
        else:
            old = registry.resolve_main(MainRequest(user_id="alice", agent_id="coding"))
        results = _processes(db_path, tmp_path, [(mode, old.id), (mode, old.id)])
        winners = [r["id"] for r in results if "id" in r]
        assert len(winners) == 1, results
        assert [r.get("error") for r in results if "id" not in r] == ["StaleRotationError"]
        if mode == "rotate_channel":
            assert registry.resolve_chat_channel(TELEGRAM).id == winners[0]
        else:
            assert registry.resolve_main(MainRequest(user_id="alice", agent_id="coding")).id == winners[0]
        assert registry.get(ALICE, old.id).archived
    finally:
        registry.close()


def test_two_processes_creating_at_once_lose_no_writes(db_path, tmp_path):
    per_process = 40
    results = _processes(db_path, tmp_path, [("create", str(per_process))] * 3)
    created = [session_id for r in results for session_id in r["ids"]]
    assert len(created) == len(set(created)) == 3 * per_process
    registry = Registry(db_path)
    try:
        listed = registry.list(ALICE)
        assert {i.id for i in listed} == set(created)
        # Every follow-up write of each process landed too.
        assert all(i.title.startswith("renamed ") and i.last_turn_started_at is not None for i in listed)
    finally:
        registry.close()
