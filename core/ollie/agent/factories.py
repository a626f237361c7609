"""How a Core builds its backend, its tool dispatcher and an agent's runtime, unless the caller brings factories."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from ollie.agent.runtime import Runtime, build_runtime
from ollie.backend.base import Backend
from ollie.backend.errors import BackendConfigError
from ollie.config import AgentConfig
from ollie.mcp.attach import attach_configured
from ollie.tools.dispatcher import Dispatcher

BackendFactory = Callable[[str | None, str | None], Backend]
DispatcherFactory = Callable[[Path, str, dict[str, str]], Dispatcher]


async def build_agent_runtime(
    cfg: AgentConfig, *, dispatcher_factory: DispatcherFactory | None, cwd: Path, session_id: str, env: dict[str, str]
) -> Runtime:
    """The runtime of `cfg` over a fresh dispatcher, the caller's or the execute server under the agent's sandbox (no
    backend; prompt commands wait for the first turn)."""
    if dispatcher_factory is not None:
        dispatcher = dispatcher_factory(cwd, session_id, env)
    else:
        from ollie.tools.execute.server import new_dispatcher

        dispatcher = new_dispatcher(cwd=cwd, session_id=session_id, env=env, sandbox=cfg.sandbox)
    try:
        warnings: list[str] = []
        await attach_configured(dispatcher, cfg, cwd=cwd, warnings=warnings)
        runtime = await build_runtime(cfg, dispatcher, cwd, env, session_id=session_id, defer_prompt=True)
        runtime.warnings.extend(warnings)
        return runtime
    except BaseException:
        await dispatcher.aclose()
        raise


def backend_for_agent(
    cfg: AgentConfig, current: Backend | None, make: BackendFactory
) -> tuple[Backend | None, Backend | None, str]:
    """The backend an agent switch lands on: (backend, the one it retires or None, a warning or '')."""
    current_name = current.name if current is not None else "none"
    if cfg.backend and cfg.backend != current_name:
        try:
            return make(cfg.backend, cfg.model or None), current, ""
        except BackendConfigError as exc:
            return current, None, f"kept backend {current_name}: {exc}"
    if cfg.model and current is not None:
        current.set_model(cfg.model)
    return current, None, ""


def env_backend_factory(extra_env: Mapping[str, str]) -> BackendFactory:
    """`make_backend` over the env file, the environment, and the core's extra env (later wins)."""

    def factory(name: str | None, model: str | None) -> Backend:
        from ollie.backend.registry import environment, make_backend

        return make_backend(name, model, environ={**environment(), **extra_env})

    return factory
