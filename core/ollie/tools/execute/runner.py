"""The session side of running tool code: the child's env, the sandbox policy, deadlines, scratch files."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from ollie import paths, programs
from ollie.sandbox import writers
from ollie.sandbox.policy import Policy, load_policy
from ollie.sandbox.runtimedir import make_private_dir
from ollie.tools.execute.childenv import DEFAULT_PATH, child_env, memory_dir, memory_root, plan_file
from ollie.tools.execute.languages import Invocation
from ollie.tools.execute.protect import protect
from ollie.tools.execute.pythonenvs import python_envs
from ollie.tools.execute.sessiondirs import SessionDirs, remove_tree
from ollie.tools.execute.spawn import RunOutcome, run_process
from ollie.tools.execute.tool import mtime_ns


def make_notes_dir(own: Path) -> None:
    """Create a project's notes dir, every project's notes private (0700) as the sessions they come from (an older
    ollie made them 0755: anyone reaching the data dir read them)."""
    make_private_dir(memory_root())
    own.mkdir(exist_ok=True)


@dataclass(eq=False, repr=False)
class Deadline:
    """A call's time budget shared by all of its processes."""

    seconds: float
    started: float = field(default_factory=lambda: asyncio.get_running_loop().time())

    def remaining(self) -> float:
        """Seconds left (0 when spent)."""
        return max(0.0, self.started + self.seconds - asyncio.get_running_loop().time())

    async def paused(self, wait: Awaitable[str | None]) -> str | None:
        """`wait`'s result, the time it took (a person answering a question) added to the budget."""
        begun = asyncio.get_running_loop().time()
        try:
            return await wait
        finally:
            self.seconds += asyncio.get_running_loop().time() - begun


def python_home() -> Path:
    """The Python installation ollie runs on: python3 steps and tool scripts may fall back to its interpreter.

    It may live anywhere (pyenv, uv, conda, a distro): granting it read+execute
    keeps those working under any policy, and grants nothing that is not code.
    """
    return Path(sys.base_prefix).resolve()


@dataclass(eq=False, repr=False)
class Runner:
    """Runs invocations for one session: sandboxed by the named policy unless elevated."""

    session_id: str
    cwd: Path
    lock_dir: Path
    session_env: dict[str, str] = field(default_factory=dict)
    output_limit: int = 64 * 1024

    tools_dirs: list[Path] = field(default_factory=list)
    # Loading and expanding a policy costs ~10 ms: keep each named one while nothing it depends on changed
    # (a call that narrows the sandbox needs both its own policy and the session's, every time).
    _policy_cache: dict[str, tuple[tuple[object, ...], Policy, list[str]]] = field(default_factory=dict, repr=False)

    @property
    def dirs(self) -> SessionDirs:
        """The session's private dirs (its root is the lock dir)."""
        return SessionDirs(self.lock_dir)

    def env(self) -> dict[str, str]:
        """The env a child of this session gets (a sandboxed one also learns its policy's paths: spawn_sandboxed)."""
        return child_env(session_id=self.session_id, cwd=self.cwd, session_env=self.session_env, tmp_dir=self.dirs.tmp)

    def search_path(self) -> str:
        """The PATH a child of this session gets (`env()["PATH"]`, without building the rest of the env)."""
        return self.session_env["PATH"] if "PATH" in self.session_env else os.environ.get("PATH") or DEFAULT_PATH

    def policy(self, name: str, env: Mapping[str, str] | None = None) -> Policy:
        """Sandbox policy `name` for this session, protected (see `protect`), plus the session's own dirs.

        {TMPDIR} is the session's private tmp dir. The plan dir (task_* tools) is
        granted read-write, the scratch dir of inline programs and the tools dirs
        in use read(-execute): the session's own files, whatever the project policy
        says about the rest of the data dir. So is the Python installation ollie
        runs on (`python_home`), which runs Python tools, and the Python installs
        the tools' PATH runs (`python_envs`: an activated venv or conda env, what
        `python3` resolves to, and their base installs), once per policy build. `env`: the call's (`env()`).
        """
        env = self.env() if env is None else env
        source = paths.policy_file(name)
        # The cwd's mtime: a workspace split around a secret (see `protect`) lists its entries.
        key = (name, str(source), mtime_ns(source), str(self.cwd), mtime_ns(self.cwd), str(self.lock_dir),
               tuple(sorted(env.items())), tuple(self.tools_dirs))
        cached = self._policy_cache.get(name)
        # Kept while its read paths lead where they did when `protect` looked (another step may swap one for a link).
        if cached is not None and cached[0] == key and writers.pinned(cached[1].pinned) == cached[1].pinned:
            return cached[1]
        self.dirs.create()
        loaded = load_policy(name, cwd=self.cwd, env=env)
        protected, warnings = protect(loaded, home=Path(env["HOME"]))
        envs = python_envs(env.get("PATH", ""), Path(env["HOME"]), protected.writable())
        policy = self._with_session_dirs(protected, envs)
        self._policy_cache[name] = (key, policy, warnings)
        return policy

    def policy_warnings(self, policy: Policy) -> list[str]:
        """What protecting `policy` changed (a workspace at $HOME granted read-only...), for the call's result."""
        for _, cached, warnings in self._policy_cache.values():
            if cached is policy:
                return list(warnings)
        return []

    def _with_session_dirs(self, policy: Policy, envs: list[Path]) -> Policy:
        dirs = self.dirs
        # A policy grants the notes of every project (`{OLLIE_DATA_PATH}/memory`): tool code gets this one's only.
        policy = replace(policy, rw=self._own_notes(policy.rw), ro=self._own_notes(policy.ro))
        extra_rw = tuple(p for p in (plan_file(self.session_id).parent,) if p not in policy.writable())
        extra_rwx = tuple(p for p in (dirs.tmp,) if p not in policy.writable())
        extra_ro = tuple(p for p in (dirs.scratch,) if p.exists() and p not in policy.readable())
        extra_rox = tuple(d for d in dict.fromkeys((*self.tools_dirs, python_home(), *envs))
                          if d.is_dir() and d not in policy.rox)
        return replace(policy, rw=policy.rw + extra_rw, ro=policy.ro + extra_ro, rox=policy.rox + extra_rox,
                       rwx=policy.rwx + extra_rwx)

    def _own_notes(self, grants: tuple[Path, ...]) -> tuple[Path, ...]:
        everyone, own = memory_root(), memory_dir(self.cwd)
        if everyone not in grants:
            return grants
        make_notes_dir(own)  # a grant must name a path that exists
        return tuple(dict.fromkeys(own if path == everyone else path for path in grants))

    @staticmethod
    def drop_scratch(path: Path) -> None:
        """Remove a call's scratch dir in a worker thread: an rmdir can take milliseconds (a filesystem mounted
        with `discard` trims the freed blocks), which neither the call's answer nor the event loop need wait for."""
        try:
            asyncio.get_running_loop().run_in_executor(None, remove_tree, path)
        except RuntimeError:  # no running loop
            remove_tree(path)

    def prepare_dirs(self) -> None:
        """Create the dirs tool code may write (memory store, plan dir) so the sandbox can grant them."""
        wanted = (memory_dir(self.cwd), plan_file(self.session_id).parent)
        dirs = self.dirs
        # Made at the first call; a later one only checks them (a sweep, a tmp cleaner or the user may remove them).
        if dirs.ready() and all(map(os.path.isdir, wanted)):
            return
        make_notes_dir(wanted[0])
        wanted[1].mkdir(parents=True, exist_ok=True)
        dirs.create()

    async def run(
        self,
        invocation: Invocation,
        *,
        policy: Policy | None,
        deadline: Deadline,
        limit_bytes: int | None = None,
        trusted_path: bool = False,
        env: Mapping[str, str] | None = None,
    ) -> RunOutcome:
        """Run one invocation inside the call's deadline (policy None: outside the sandbox), in the call's `env`.

        With `trusted_path` (an elevated step) PATH holds no workspace, venv, temp or `.` entry.
        """
        remaining = deadline.remaining()
        if remaining <= 0:
            return RunOutcome(timed_out=True)
        env = {**(self.env() if env is None else env), **dict(invocation.env)}
        if trusted_path:
            env["PATH"] = programs.trusted_path()
        outcome = await run_process(
            invocation.argv,
            policy=policy,
            cwd=self.cwd,
            env=env,
            stdin=invocation.stdin,
            tmp_at_tmp=invocation.tmp_at_tmp,
            # Only under a sandbox: an unsandboxed step (elevated, yolo) runs exactly the bytes it names.
            python=invocation.python if policy is not None else None,
            timeout=remaining,
            limit_bytes=limit_bytes or self.output_limit,
        )
        deadline.seconds += outcome.asked_s  # the call's later steps keep the time its questions took
        if policy is not None:
            outcome.warnings[:0] = self.policy_warnings(policy)
        return outcome
