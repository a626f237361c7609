"""Fixtures: the real daemon as a subprocess, driven by pytest-lsp's client, against the scripted LLM server."""

from __future__ import annotations

import asyncio
import functools
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import register_lsp_features

from ollie_lsp.server import raw_params_converter

SERVER_COMMAND = [sys.executable, "-m", "ollie_lsp"]

# One converter for every client of this process: cattrs builds a converter's (un)structure code for each LSP type
# the first time it meets it, ~40 ms of CPU per client for `initialize` alone (4 ms with one built already). It keeps
# no state of a client's.
client_converter = functools.cache(raw_params_converter)


def make_client() -> LanguageClient:
    """A pytest-lsp client whose custom results and notifications stay plain dicts."""
    client = LanguageClient(converter_factory=client_converter)
    register_lsp_features(client)
    client.ollie_events = []  # type: ignore[attr-defined]
    client.ollie_states = []  # type: ignore[attr-defined]
    # Both, and each answer, in arrival order: ("event" | "state", params) or ("answer", result or error).
    client.ollie_wire = []  # type: ignore[attr-defined]
    handle_response = client.protocol._handle_response

    def on_response(msg_id: Any, result: Any = None, error: Any = None) -> None:
        # Read off the wire here: the awaiting test runs later, after notifications that came behind the answer.
        client.ollie_wire.append(("answer", error if error is not None else result))  # type: ignore[attr-defined]
        handle_response(msg_id, result, error)

    client.protocol._handle_response = on_response  # type: ignore[method-assign]

    @client.feature("ollie/event")
    def on_event(params: Any) -> None:
        client.ollie_events.append(params)  # type: ignore[attr-defined]
        client.ollie_wire.append(("event", params))  # type: ignore[attr-defined]

    @client.feature("ollie/stateChanged")
    def on_state(params: Any) -> None:
        client.ollie_states.append(params)  # type: ignore[attr-defined]
        client.ollie_wire.append(("state", params))  # type: ignore[attr-defined]

    return client


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """A daemon's or `ollie`'s environment: this process's (its private XDG dirs included, no OLLIE_*) plus `extra`."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("OLLIE_")}, **(extra or {})}


def capabilities(*, progress: bool = True) -> types.ClientCapabilities:
    """Client capabilities; `progress` says whether it takes work-done progress."""
    return types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=progress))


class Daemon:
    """One running daemon and its client, plus helpers the tests share."""

    def __init__(self, client: LanguageClient, workspace: Path) -> None:
        self.client = client
        self.workspace = workspace
        self.init_result: types.InitializeResult | None = None

    @property
    def events(self) -> list[dict[str, Any]]:
        """Every ollie/event received so far."""
        return self.client.ollie_events  # type: ignore[attr-defined]

    @property
    def states(self) -> list[dict[str, Any]]:
        """Every ollie/stateChanged received so far."""
        return self.client.ollie_states  # type: ignore[attr-defined]

    async def request(self, method: str, params: Any = None, *, timeout: float = 30) -> Any:
        """Send a request and wait for its result (errors raise JsonRpcException)."""
        return await asyncio.wait_for(self.client.protocol.send_request_async(method, params), timeout)

    async def cancelled_at_once(self, method: str, params: Any) -> Any:
        """Send a request and its `$/cancelRequest` right behind it, unawaited (the daemon runs a handler at once up
        to its first wait, the engine loading or its session being built, before it reads the cancel); its result."""
        future = self.client.protocol.send_request(method, params)
        (msg_id,) = [k for k, f in self.client.protocol._request_futures.items() if f is future]
        self.client.protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))
        return await asyncio.wait_for(asyncio.wrap_future(future), 30)

    async def wait_events(self, predicate: Callable[[list[dict[str, Any]]], bool], *, timeout: float = 30) -> None:
        """Wait until the events received satisfy `predicate`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not predicate(self.events):
            if loop.time() > deadline:
                raise AssertionError(f"timed out waiting for events; got {self.events[-10:]}")
            await asyncio.sleep(0.01)

    async def request_in_order(self, method: str, params: Any = None) -> tuple[Any, list[tuple[str, Any]]]:
        """Send a request; its result and what came before its answer on the wire since it was sent (`ollie_wire`)."""
        wire = self.client.ollie_wire  # type: ignore[attr-defined]
        sent_at = len(wire)
        result = await self.request(method, params)
        answered_at = next(n for n in range(sent_at, len(wire)) if wire[n][0] == "answer" and wire[n][1] is result)
        return result, wire[sent_at:answered_at]

    def session_events(self, session: str) -> list[dict[str, Any]]:
        """The events of one session, in arrival order."""
        return [e for e in self.events if e["session"] == session]


@pytest_asyncio.fixture
async def start_daemon(tmp_path: Path, _private_dirs: Path) -> AsyncIterator[Callable[..., Any]]:
    """A factory: `await start_daemon(env=srv.env(), init_options={...})` gives a ready Daemon.

    Every daemon started is shut down (shutdown + exit) at teardown.
    """
    started: list[Daemon] = []

    async def start(
        *, env: dict[str, str] | None = None, init_options: Any = None, workspace: Path | None = None,
        progress: bool = True, initialize: bool = True,
    ) -> Daemon:
        ws = workspace or (tmp_path / f"ws{len(started)}")
        ws.mkdir(parents=True, exist_ok=True)
        config = ClientServerConfig(
            server_command=SERVER_COMMAND, client_factory=make_client, server_env=child_env(env)
        )
        client = await config.start()
        daemon = Daemon(client, ws)
        started.append(daemon)
        if initialize:
            daemon.init_result = await asyncio.wait_for(
                client.initialize_session(
                    types.InitializeParams(
                        capabilities=capabilities(progress=progress),
                        root_uri=ws.as_uri(),
                        workspace_folders=[types.WorkspaceFolder(uri=ws.as_uri(), name="ws")],
                        initialization_options=init_options,
                    )
                ),
                60,  # a bound on a hang: a loaded machine is slow to start the daemon
            )
        return daemon

    yield start
    lingered = []
    for daemon in started:
        try:
            await asyncio.wait_for(daemon.client.shutdown_session(), 20)
        except Exception:
            pass
        try:
            # pygls' stop waits for the process with no bound: a daemon that never exits hung the run for good.
            await asyncio.wait_for(daemon.client.stop(), 60)
        except TimeoutError:
            daemon.client._server.kill()  # type: ignore[union-attr]
            lingered.append(daemon.client._server.pid)  # type: ignore[union-attr]
    assert not lingered, f"daemons {lingered} had not exited 60 s after shutdown and exit (killed)"


@pytest.fixture
def llm(scripted_llm: Callable[..., Any]) -> Any:
    """A started scripted OpenAI-format server (checked for leftovers at teardown)."""
    return scripted_llm("openai")
