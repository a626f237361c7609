"""Reliability suite fixtures: the daemon over a raw pipe, a Core on the real execute server, fault helpers."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
for _path in (REPO, Path(__file__).parent):
    # The raw LSP client lives in bench/ (shared with the benchmarks); helpers beside this file.
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from bench.lspwire import LSPProcess  # noqa: E402
from ollie.agent.core import Core  # noqa: E402
from ollie.agent.limits import LoopLimits  # noqa: E402

DAEMON = [sys.executable, "-m", "ollie_lsp"]
# Retries at once; a hook's timeout only bounds a hang (a sandboxed hook starts slowly on a loaded machine).
FAST_LIMITS = dict(backoff_base_s=0.01, drop_backoff_base_s=0.01, max_retry_after_s=0.05, hook_timeout_s=30.0)


def write_agent(directory: Path, name: str, **config: Any) -> None:
    """An agent config with a short literal prompt (the bundled ones run shell commands)."""
    config.setdefault("prompt", f"You are the {name} reliability agent. Be brief.")
    (directory / f"{name}.json").write_text(json.dumps(config), encoding="utf-8")


def daemon_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment (its private XDG dirs included) plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OLLIE_")}
    env["OLLIE_LSP_COALESCE_MS"] = "0"
    env.update(extra or {})
    return env


@pytest.fixture
def start_daemon(workdir: Path) -> Iterator[Callable[..., LSPProcess]]:
    """`start_daemon(env=..., options=...)`: a daemon initialized on `workdir`; shut down (or killed) at teardown."""
    started: list[LSPProcess] = []

    def start(*, env: dict[str, str] | None = None, options: Any = None, root: Path | None = None,
              preexec_fn: Callable[[], None] | None = None) -> LSPProcess:
        daemon = LSPProcess(DAEMON, env=daemon_env(env), preexec_fn=preexec_fn)
        started.append(daemon)
        daemon.initialize(root or workdir, options=options)
        return daemon

    yield start
    for daemon in started:
        if daemon.alive():
            daemon.shutdown(timeout=30)


@pytest.fixture(scope="module")
def _module_daemon(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LSPProcess]:
    """A daemon on the module's DAEMON_ENV that its tests of hostile input share (a start is ~1 CPU-s), with private
    XDG dirs of its own (it starts before a test's `_private_dirs`), its default session ready."""
    home = tmp_path_factory.mktemp("shared")
    xdg = {var: str(home / var) for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")}
    env = {k: v for k, v in daemon_env({**request.module.DAEMON_ENV, **xdg}).items() if k != "XDG_RUNTIME_DIR"}
    daemon = LSPProcess(DAEMON, env=env)
    daemon.initialize(tmp_path_factory.mktemp("work"))
    daemon.request("ollie/state", {}, timeout=60)
    yield daemon
    daemon.shutdown(timeout=30)


@pytest.fixture
def served(_module_daemon: LSPProcess) -> LSPProcess:
    """The module's shared daemon (over a raw pipe, as `start_daemon`'s), still running, with no answer of the tests
    before left in `unmatched`."""
    assert _module_daemon.alive(), _module_daemon.stderr_text()[-2000:]
    _module_daemon.unmatched.clear()
    return _module_daemon


@pytest.fixture
async def make_core(tmp_path: Path, workdir: Path, agents_dir: Path) -> AsyncIterator[Callable[..., Any]]:
    """`await make_core(srv, limits={...}, ...)`: a Core on the scripted server and the real execute server."""
    cores: list[Core] = []

    async def make(srv: Any, *, limits: dict[str, Any] | None = None, **options: Any) -> Core:
        options.setdefault("sessions_dir", tmp_path / "sessions")
        options.setdefault("cwd", workdir)
        options.setdefault("agents_dirs", [agents_dir])
        core = await Core.create(env={**srv.env(), **options.pop("env", {})},
                                 limits=LoopLimits(**{**FAST_LIMITS, **(limits or {})}), **options)
        cores.append(core)
        return core

    yield make
    for core in cores:
        await asyncio.wait_for(core.close(), 20)


def pid_gone(pid: int) -> bool:
    """True when no live process has this pid (a zombie waiting for init counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):  # ProcessLookupError: reaped between open and read
        return True


async def wait_gone(pid: int, *, timeout: float = 15.0) -> bool:
    """Wait until `pid` is gone; False when it still runs after `timeout`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not pid_gone(pid):
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True
