"""What a core runs with (the agent's runtime and backend, cwd, env, overrides) and the switches that change it."""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from ollie import beneath, paths, programs
from ollie.agent.commandbox import DEFAULT_COMMAND_SANDBOX, UNSANDBOXED
from ollie.agent.factories import BackendFactory, DispatcherFactory, backend_for_agent, build_agent_runtime
from ollie.agent.runtime import Runtime, cancel_prompt, execute_servers
from ollie.backend.base import Backend
from ollie.backend.errors import BackendConfigError
from ollie.backend.types import GenerationParams
from ollie.config import AgentConfig, find_agent, load_agent_config

if TYPE_CHECKING:  # the health check loads at the first ask
    from ollie.backend.health import BackendHealth

# Clients poll ollie/state: a backend that is down is not checked more often than this.
FAILED_HEALTH_REUSE_S = 2.0

Kept = tuple[str, str] | None  # an agent switch's conversation before, kept as a session: (id, title)


@dataclass(eq=False, repr=False, kw_only=True)
class Setup:
    """One core's configuration. A switch builds the new part first (on failure the old stays) and returns the old."""

    agent: str
    runtime: Runtime
    cwd: Path
    env: dict[str, str]
    backend_factory: BackendFactory
    dispatcher_factory: DispatcherFactory | None
    agents_dirs_given: list[Path] | None  # None: ollie.paths.agents_dirs()
    backend_error: str = ""
    params: GenerationParams = field(default_factory=GenerationParams)  # the caller's overrides
    guarded: list[Path] = field(default_factory=list)  # dirs tool code may have written: no symlink there is followed
    _health: BackendHealth | None = field(default=None, init=False)  # None: check on the next ask (a switch resets it)
    _health_at: float = field(default=0.0, init=False)
    _max_steps: int | None = field(default=None, init=False)  # the /maxsteps override of the agent config's
    # The cwd held open from its check to the session's close (`beneath.hold`): every reach of it goes through that fd.
    _release: Callable[[], None] = field(default=lambda: None, init=False)

    @classmethod
    async def create(
        cls,
        cfg: AgentConfig,
        *,
        agent: str,
        cwd: Path,
        env: dict[str, str],
        session_id: str,
        backend: str | None,
        model: str | None,
        backend_factory: BackendFactory,
        dispatcher_factory: DispatcherFactory | None,
        agents_dirs: list[Path] | None,
        prompt_now: bool = False,
    ) -> Setup:
        """Agent `cfg`'s runtime and backend; a missing key is no error (`backend_error`); `prompt_now` overlaps the
        prompt commands with building the backend."""
        release = await asyncio.to_thread(beneath.hold, cwd)
        try:
            runtime = await build_agent_runtime(
                cfg, dispatcher_factory=dispatcher_factory, cwd=cwd, session_id=session_id, env=env
            )
        except BaseException:
            release()
            raise
        setup = cls(agent=agent, runtime=runtime, cwd=cwd, env=env, backend_factory=backend_factory,
                    dispatcher_factory=dispatcher_factory, agents_dirs_given=agents_dirs)
        setup._release = release
        if prompt_now and runtime.deferred_prompt is not None:
            runtime.deferred_prompt.start()
        try:
            if "ollie.backend.stream" not in sys.modules:
                # The HTTP client's import (httpx, httpcore, h11, ssl: 50-100 ms) in a thread, for every front end
                # (daemon, `ollie acp`, terminal): the loop reads the client's requests and sends the prompt
                # commands' spawns meanwhile.
                await asyncio.to_thread(importlib.import_module, "ollie.backend.stream")
            runtime.backend = backend_factory(backend or cfg.backend or None, model or cfg.model or None)
        except BackendConfigError as exc:
            # Not fatal: the first turn says what to set.
            setup.backend_error = str(exc)
        except BaseException:
            cancel_prompt(runtime)
            await runtime.dispatcher.aclose()
            release()
            raise
        return setup

    @property
    def backend(self) -> Backend | None:
        """The active backend (None when it could not be built)."""
        return self.runtime.backend

    @property
    def agents_dirs(self) -> list[Path]:
        """Where agent configs are looked up."""
        return list(self.agents_dirs_given) if self.agents_dirs_given else paths.agents_dirs()

    @property
    def max_steps(self) -> int:
        """Tool rounds per turn (0 = unlimited): the override, else the agent config's."""
        return self._max_steps if self._max_steps is not None else self.runtime.max_steps

    def set_max_steps(self, steps: int) -> None:
        """Override the tool rounds per turn (0 = unlimited)."""
        if steps < 0:
            raise ValueError("max steps must be 0 (unlimited) or more")
        self._max_steps = steps

    def generation_params(self) -> GenerationParams:
        """The agent config's sampling parameters with the caller's overrides on top."""
        return self.runtime.params.merged(self.params)

    async def set_cwd(self, path: Path | str) -> None:
        """Move the working directory of tools, hooks and prompt commands to `path` (relative: from the cwd) walked
        to its real path, never through a symlink tool code could have planted (ValueError: missing or refused)."""
        cwd = self.cwd
        # Where a step may have written: the session's cwds (this and the earlier ones), its policy's writable dirs, and
        # whatever any step of this process (any session, any agent it switched from) was granted or ollie's dirs hold.
        writable = [cwd, *self.guarded, *(p for s in execute_servers(self.runtime.dispatcher) for p in s.writable()),
                    *programs.step_writable()]
        # `~user` (the user database) and the walk (a name at a time: an NFS or FUSE workspace may stall) in a thread,
        # not on the loop every session shares. A link swapped in after it leads nowhere: the daemon holds the dir
        # (beneath.hold), a step's sandbox refuses it (beneath.moved).
        real, release = await asyncio.to_thread(_held_dir, cwd, path, writable)
        self._release()
        self._release = release
        self.guarded.append(cwd)
        self.cwd = real
        if self.runtime.deferred_prompt is not None:  # prompt commands not run yet run where the session is
            self.runtime.deferred_prompt.cwd = self.cwd
        for server in execute_servers(self.runtime.dispatcher):
            server.set_cwd(self.cwd)

    def close(self) -> None:
        """Let go of the cwd held open."""
        self._release()

    def set_env(self, key: str, value: str) -> None:
        """Set an extra environment variable for tools, hooks and prompt commands."""
        self.env[key] = value
        for server in execute_servers(self.runtime.dispatcher):
            server.set_env(key, value)

    def replace_backend(self, name: str) -> Backend | None:
        """Build backend `name` (its default model) and put it in place; returns the backend it replaced."""
        new = self.backend_factory(name, None)
        old, self.runtime.backend = self.runtime.backend, new
        self.backend_error = ""
        self._health = None
        return old

    def switch_model(self, name: str) -> None:
        """Send later requests to model `name` (RuntimeError without a backend)."""
        if self.backend is None:
            raise RuntimeError(f"no backend: {self.backend_error}")
        self.backend.set_model(name)
        self._health = None

    async def backend_health(self) -> dict[str, Any]:
        """PROTOCOL.md's `backendStatus`: checked on the first ask; a good answer is reused until a switch,
        a failed one for FAILED_HEALTH_REUSE_S (the user is fixing it: "Check again" must see the fix)."""
        if self._health is not None and (self._health.ok or time.monotonic() - self._health_at < FAILED_HEALTH_REUSE_S):
            return self._health.to_wire()
        from ollie.backend.health import check_backend, unbuilt  # at the first ask, not before a first token
        backend = self.backend
        name = backend.name if backend is not None else "none"
        health = unbuilt(name, self.backend_error) if backend is None else await check_backend(backend)
        if backend is self.backend:  # a switch during the check: the next ask checks the new one
            self._health, self._health_at = health, time.monotonic()
        return health.to_wire()

    def backend_answered(self) -> None:
        """A turn's model answered: a failed check cached moments ago is stale (the server came up since)."""
        if self._health is not None and not self._health.ok:
            self._health = None

    def confine_commands(self, owner: str) -> None:
        """Run the agent's prompt commands and hooks sandboxed (the default command sandbox) where its config says
        "none": the session is `owner`'s, and the owner's choice is no licence for commands with this user's rights."""
        hooks, deferred = self.runtime.hooks, self.runtime.deferred_prompt
        if hooks is None or hooks.box.policy != UNSANDBOXED:
            return
        hooks.box = attrs.evolve(hooks.box, policy=DEFAULT_COMMAND_SANDBOX)
        if deferred is not None:  # not run yet: `owner` is known before anything of the session runs
            deferred.box = hooks.box
        self.runtime.warnings.append(f"agent {self.agent!r} runs its prompt commands and hooks without a sandbox: in "
                                     f"{owner}'s session they run sandboxed ({DEFAULT_COMMAND_SANDBOX}) for you")

    async def load_agent(self, name: str, *, session_id: str, first: Callable[[], Awaitable[Kept]]
                         ) -> tuple[Runtime, Backend | None, list[str], Kept]:
        """Swap in agent `name`'s runtime, `first` awaited once it is built: (the old runtime, the retired backend or
        None, warnings, what `first` gave); ConfigError, or `first`'s error, changes nothing."""
        cfg = await asyncio.to_thread(load_agent_config, find_agent(name, self.agents_dirs_given))  # off the loop
        runtime = await build_agent_runtime(
            cfg, dispatcher_factory=self.dispatcher_factory, cwd=self.cwd, session_id=session_id, env=self.env
        )
        try:
            kept = await first()
        except BaseException:
            await runtime.dispatcher.aclose()
            raise
        runtime.backend, retired, problem = backend_for_agent(cfg, self.runtime.backend, self.backend_factory)
        old, self.runtime, self.agent = self.runtime, runtime, name
        self._health = None
        if retired is not None:
            self.backend_error = ""
        return old, retired, [*runtime.warnings, *([problem] if problem else [])], kept


def sandbox_warnings(runtime: Runtime) -> list[str]:
    """The runtime's warnings with its sandbox's setup warnings added (a workspace at $HOME granted read-only...).

    Asked for after a session is built, not while: the policy loads here (YAML, its checks, the protected paths:
    ~20-30 ms of CPU once per process, ~5 ms per session), which no first token needs. Once per runtime.
    """
    if not runtime.sandbox_warned:
        runtime.sandbox_warned = True
        for server in execute_servers(runtime.dispatcher):
            runtime.warnings.extend(w for w in server.setup_warnings() if w not in runtime.warnings)
    return runtime.warnings


def sandbox_problem(runtime: Runtime) -> str:
    """Why the session's sandbox policy does not load, "" when it does: told as the session opens (read in a thread)."""
    return next((problem for server in execute_servers(runtime.dispatcher) if (problem := server.policy_problem())), "")


def _held_dir(cwd: Path, path: Path | str, writable: list[Path]) -> tuple[Path, Callable[[], None]]:
    """`path` (from `cwd`, `~` expanded) walked to its real path, through no link inside `writable`, and held open
    (`beneath.hold`: its release); ValueError."""
    target = cwd / os.path.expanduser(path)  # never raises on `~nosuchuser`; an absolute one stays itself
    try:
        real = beneath.real_dir(target, writable)
        return real, beneath.hold(real)
    except beneath.OutsideRoot as exc:
        raise ValueError(exc.strerror) from None
    except OSError:
        raise ValueError(f"no such directory: {target}") from None


async def session_dir(path: str, *, absolute: bool = False, guarded: Iterable[Path] = ()) -> Path:
    """The real path of the existing directory a client names for a session (a relative one from the process's, unless
    `absolute`), walked as `walked_dir`; ValueError saying why not."""
    candidate = Path(os.path.expanduser(path))  # `~nosuchuser` stays as written (Path.expanduser raises)
    # In a thread: an NFS or FUSE workspace may stall each lstat, and the loop serves every session.
    try:
        real = await asyncio.to_thread(
            lambda: walked_dir(candidate.absolute(), guarded) if candidate.is_absolute() or not absolute else None)
    except beneath.OutsideRoot as exc:
        raise ValueError(exc.strerror) from None
    except OSError:  # a name too long, a loop of links, a directory it may not see: none is one to start in
        real = None
    if real is None:
        raise ValueError(f"{path} is not an existing {'absolute ' if absolute else ''}directory")
    return real


def walked_dir(path: Path, guarded: Iterable[Path] = ()) -> Path:
    """The real path of directory `path` (absolute), through no symlink inside `guarded` or where a step of this process
    may write (it may have planted the link): `beneath.OutsideRoot`, else OSError."""
    return beneath.real_dir(path, [*guarded, *programs.step_writable()])
