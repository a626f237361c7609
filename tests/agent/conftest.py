"""Fixtures for driving a real Core through the scripted LLM server (real HTTP) and small tool servers."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# The tests import their helpers (agentkit.py) by module name; importlib mode does not add this dir.
sys.path.insert(0, str(Path(__file__).parent))

from agentkit import FAST_LIMITS, ToyServer  # noqa: E402

from ollie.agent.core import Core  # noqa: E402
from ollie.agent.limits import LoopLimits  # noqa: E402
from ollie.testing.pytest_plugin import scripted_llm  # noqa: E402,F401  (the fixture)
from ollie.tools.dispatcher import Dispatcher  # noqa: E402


@pytest.fixture
async def make_core(scripted_llm, tmp_path: Path, agents_dir: Path, workdir: Path):  # noqa: F811
    """`await make_core(srv, toy=ToyServer(), ...)`: a Core on the scripted server; closed at teardown.

    `toy=None` uses the real execute server (ollie.tools.execute.new_dispatcher).
    """
    cores: list[Core] = []

    async def factory(srv: Any, *, toy: ToyServer | None = None, limits: dict[str, Any] | None = None,
                      **options: Any) -> Core:
        dispatcher_factory: Callable[..., Dispatcher] | None = None
        if toy is not None:
            def dispatcher_factory(cwd: Path, session_id: str, env: dict[str, str]) -> Dispatcher:
                dispatcher = Dispatcher()
                dispatcher.add_server("toy", toy)
                return dispatcher
        options.setdefault("sessions_dir", tmp_path / "sessions")
        options.setdefault("cwd", workdir)
        core = await Core.create(
            env={**srv.env(), **options.pop("env", {})},
            agents_dirs=[agents_dir],
            dispatcher_factory=dispatcher_factory,
            limits=LoopLimits(**{**FAST_LIMITS, **(limits or {})}),
            **options,
        )
        cores.append(core)
        return core

    yield factory
    for core in cores:
        await core.close()


@pytest.fixture
def outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A dir no sandbox policy grants (TMPDIR moves away from the pytest tmp root)."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    path = tmp_path / "outside"
    path.mkdir()
    return path
