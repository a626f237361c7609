"""How a Core builds its backend and its tool dispatcher, unless the caller brings factories."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from ollie.backend.base import Backend
from ollie.config import AgentConfig
from ollie.tools.dispatcher import Dispatcher

BackendFactory = Callable[[str | None, str | None], Backend]
DispatcherFactory = Callable[[Path, str, dict[str, str]], Dispatcher]


def new_dispatcher_for(
    factory: DispatcherFactory | None, cfg: AgentConfig, cwd: Path, session_id: str, env: dict[str, str]
) -> Dispatcher:
    """A fresh dispatcher: the caller's factory, else the execute server under the agent's sandbox."""
    if factory is not None:
        return factory(cwd, session_id, env)
    from ollie.tools.execute import new_dispatcher

    return new_dispatcher(cwd=cwd, session_id=session_id, env=env, sandbox=cfg.sandbox)


def env_backend_factory(extra_env: Mapping[str, str]) -> BackendFactory:
    """`make_backend` over the env file, the environment, and the core's extra env (later wins)."""

    def factory(name: str | None, model: str | None) -> Backend:
        from ollie.backend.registry import make_backend
        from ollie.env import env_file, parse_env_file

        try:
            file_values = parse_env_file(env_file().read_text(encoding="utf-8"))
        except OSError:
            file_values = {}
        return make_backend(name, model, environ={**file_values, **os.environ, **extra_env})

    return factory
