"""A store that silently stops answering (its host frozen, the network dropping its packets), on a real server: given
up on within about a lease, and the daemon serves on."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import subprocess
import time
from collections.abc import Iterator

import pytest
from pygls.exceptions import JsonRpcException

from ollie.sessions.pg import log as pg_log
from ollie.testing import Reply
from tests.teams.pgserver import PgServer
from tests.teams.test_engine_store import _user_texts
from tests.teams.test_store_outage import _saved_with

CLONE_NEWNET = 0x40000000


@contextlib.contextmanager
def network_of_its_own() -> Iterator[None]:
    """This thread, and what it starts, on a network namespace of its own (its loopback up), whose packets a test may
    drop without touching anyone else's; back on the machine's network after."""
    libc = ctypes.CDLL(None, use_errno=True)
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        if libc.unshare(CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNET)")
        try:
            subprocess.run(["ip", "link", "set", "lo", "up"], check=True, timeout=30)
            yield
        finally:
            if libc.setns(home, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns back")
    finally:
        os.close(home)


def _cut_off(cut: bool) -> None:
    """Take this namespace's network down, or up again: a connection's packets then go nowhere and nothing answers
    them, not even with a reset, as when the server's host is frozen or cut off. (Its loopback down: this kernel
    has no netem or packet filters to drop them on the way.)"""
    subprocess.run(["ip", "link", "set", "lo", "down" if cut else "up"], check=True, timeout=30)


async def _listed_once_back(daemon) -> list[str]:
    """The daemon's listing once the store answers again (it is asked every ninth of a lease; fails after 60 s)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return [s["id"] for s in (await daemon.request("ollie/session/list", {}, timeout=60))["sessions"]]
        except JsonRpcException as exc:
            assert exc.code == -32009 and time.monotonic() < deadline, exc
            await asyncio.sleep(0.05)


async def test_a_store_that_stops_answering_is_given_up_on_and_the_daemon_serves_on(start_daemon, scripted_llm):
    llm = scripted_llm("openai", check=False)
    with network_of_its_own():
        server = PgServer()
        try:
            team = {**llm.env(), "OLLIE_STORE": server.url, "OLLIE_USER": "alice", "OLLIE_LEASE_TTL": "3"}
            daemon = await start_daemon("laptop", team)
            sid = (await daemon.request("ollie/session/new", {"title": "kept"}))["session"]
            _cut_off(True)
            try:
                # Each waited on the silent server until TCP gave up retransmitting, some fifteen minutes; the
                # registry's one thread with it, so every later request too.
                for method, params in (("ollie/session/list", {}),
                                       ("ollie/session/rename", {"session": sid, "title": "renamed"})):
                    with pytest.raises(JsonRpcException) as caught:
                        await daemon.request(method, params, timeout=60)
                    assert caught.value.code == -32009, (method, caught.value.message)
                    message = caught.value.message
                    assert message.startswith("store unavailable: session store OLLIE_STORE=postgresql://"), message
                    assert "the server stopped answering: check that its host is up" in message, message
                    assert server.password not in message
            finally:
                _cut_off(False)
            # The network back: the same daemon serves the store again.
            assert sid in await _listed_once_back(daemon)
            await daemon.client.shutdown_session()
        finally:
            server.stop()


async def test_a_frozen_server_on_a_host_that_is_up_is_given_up_on_and_the_session_saved_once_it_is_back(
        start_daemon, scripted_llm, monkeypatch):
    # A SIGSTOPped postgres: its kernel acknowledges every packet, so neither keepalives nor tcp_user_timeout fire, and
    # the turn's save and the registry thread waited on it for as long as it stayed stopped.
    llm = scripted_llm("openai")
    llm.script(*(Reply.text(t) for t in ("first answer", "answer while frozen", "and again", "answer once back")))
    server = PgServer()
    try:
        team = {**llm.env(), "OLLIE_STORE": server.url, "OLLIE_USER": "alice", "OLLIE_LEASE_TTL": "3"}
        daemon = await start_daemon("laptop", team)
        sid = (await daemon.request("ollie/session/new", {"title": "kept"}))["session"]
        assert (await daemon.request("ollie/submit", {"session": sid, "text": "q1"}))["reply"] == "first answer"
        await _saved_with(server.url, sid, b"first answer")
        server.freeze(True)
        try:
            assert (await daemon.request("ollie/submit", {"session": sid, "text": "q2"}, timeout=60))["reply"] == \
                "answer while frozen"
            deadline = time.monotonic() + 60  # a bound: the user is told within about a lease (3 s)
            while not daemon.errors(sid):  # the turn's save, given up on: the user is told why and what to do
                assert time.monotonic() < deadline, "never told"
                await asyncio.sleep(0.05)
            told = daemon.errors(sid)[0]
            assert told.startswith("session not saved: ") and told.endswith("retrying at the next save"), told
            assert "the server stopped answering: check that its host is up" in told, told
            with pytest.raises(JsonRpcException) as caught:  # the registry's thread is not held either
                await daemon.request("ollie/session/list", {}, timeout=60)
            assert caught.value.code == -32009 and "the server stopped answering" in caught.value.message
            # Found silent, the store fails each call at once until it answers again: a turn no longer waits a
            # connect timeout (2 s) for each (the record's archive check, the last turn's save, its own: 8 s a turn).
            began = time.monotonic()
            assert (await daemon.request("ollie/submit", {"session": sid, "text": "q2b"}))["reply"] == "and again"
            assert time.monotonic() - began < 6  # 8 s at least when each call waited its timeout
        finally:
            server.freeze(False)
        assert sid in await _listed_once_back(daemon)
        assert (await daemon.request("ollie/submit", {"session": sid, "text": "q3"}))["reply"] == "answer once back"
        # Nothing saved before was lost, and the turn the store missed is saved with the next one.
        await _saved_with(server.url, sid, b"answer once back")
        monkeypatch.setenv("OLLIE_STORE", server.url)
        monkeypatch.setenv("OLLIE_USER", "alice")
        assert _user_texts(server.url, sid) == ["q1", "first answer", "q2", "answer while frozen", "q2b", "and again",
                                                "q3", "answer once back"]
        await daemon.client.shutdown_session()
    finally:
        pg_log.close_all()  # this process's pool (its reads above)
        server.stop()
