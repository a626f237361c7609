"""A store that silently stops answering (its host frozen, the network dropping its packets), on a real server: given
up on within about a lease, and the daemon serves on."""

from __future__ import annotations

import contextlib
import ctypes
import os
import subprocess
from collections.abc import Iterator

import pytest
from pygls.exceptions import JsonRpcException

from tests.teams.pgserver import PgServer

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
            listed = (await daemon.request("ollie/session/list", {}, timeout=60))["sessions"]
            assert sid in [s["id"] for s in listed]
            await daemon.client.shutdown_session()
        finally:
            server.stop()
