"""Where an agent's prompt commands and hooks run: sandboxed like tool code, with a minimal environment.

They touch the hostile workspace (git reads `.git/config`): by default the read-only policy, only a private temp dir
writable, none of the daemon's environment (API keys); `"commandSandbox"` in an agent config may grant more.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from ollie import beneath, programs
from ollie.errors import OllieError
from ollie.tools.execute.ceiling import UNSANDBOXED

if TYPE_CHECKING:  # the spawn machinery loads with the first command or hook that runs: a plain first turn runs none
    from ollie.agent.shell import ShellResult
    from ollie.sandbox.policy import Policy

DEFAULT_COMMAND_SANDBOX = "readonly"
# Prompt commands and hooks print context, not data: more than this is cut.
OUTPUT_LIMIT = 1024 * 1024
AGENT_DIR_VAR = "OLLIE_AGENT_DIR"


@attrs.frozen(eq=False, repr=False, slots=False)
class CommandBox:
    """How one agent's prompt commands and hooks run: the policy name, the agent's fragment dir, the session."""

    policy: str = DEFAULT_COMMAND_SANDBOX
    agent_dir: Path | None = None
    session_id: str = ""

    def env(self, *, cwd: Path, tmp_dir: Path, session_env: Mapping[str, str] | None = None,
            extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The minimal env: PATH, HOME, LANG, TERM, OLLIE_*, the session's env (never over TMPDIR, OLLIE_CWD)."""
        from ollie.tools.execute.childenv import child_env

        layered = {AGENT_DIR_VAR: str(self.agent_dir)} if self.agent_dir is not None else {}
        layered.update(session_env or {})
        session_id = layered.get("OLLIE_SESSION_ID") or self.session_id
        env = child_env(session_id=session_id, cwd=cwd, session_env=layered, tmp_dir=tmp_dir)
        if not session_id:
            for name in ("OLLIE_SESSION_ID", "OLLIE_PLAN_FILE"):
                env.pop(name, None)
        env.update(extra or {})
        return env

    def sandbox(self, *, cwd: Path, env: Mapping[str, str]) -> tuple[Policy | None, list[str]]:
        """The expanded, protected policy (None for "none") and what protecting it changed."""
        if self.policy == UNSANDBOXED:
            return None, []
        from ollie.sandbox.policy import load_policy
        from ollie.tools.execute.protect import protect

        # The agent's own fragments, never the whole config dir (its env file holds keys): `protect` sees to that.
        grants = [Path(env[AGENT_DIR_VAR])] if env.get(AGENT_DIR_VAR) else []
        policy = load_policy(self.policy, cwd=cwd, env=env).extended(ro=grants, rw=[Path(env["TMPDIR"])])
        return protect(policy, home=Path(env["HOME"]))

    @contextlib.contextmanager
    def tmp_dir(self) -> Iterator[Path]:
        """The session's private TMPDIR; without a session, a private one removed afterwards."""
        from ollie.tools.execute.sessiondirs import SessionDirs, remove_tree, runtime_root

        if self.session_id:
            dirs = SessionDirs.for_session(self.session_id)
            dirs.create()
            yield dirs.tmp
            return
        root = runtime_root()
        made = Path(tempfile.mkdtemp(prefix="cmd-", dir=root))
        try:
            yield made
        finally:
            remove_tree(made)

    async def run(
        self,
        command: str,
        *,
        cwd: Path,
        timeout: float,
        stdin: bytes | None = None,
        session_env: Mapping[str, str] | None = None,
        extra_env: Mapping[str, str] | None = None,
        warnings: list[str] | None = None,
    ) -> ShellResult:
        """Run `sh -c command` in `cwd` under this box; OSError when it cannot start (a bad policy included)."""
        from ollie.agent.shell import run_shell

        # Its real path when set: a link another session's step swapped in leads elsewhere (a policy granting the
        # cwd grants that; an unsandboxed hook's `make clean` runs there).
        if (now := await asyncio.to_thread(beneath.moved, cwd)) is not None:
            raise OSError(f"the working directory {cwd} is now a symlink to {now}: not run there")
        with self.tmp_dir() as tmp:
            env = self.env(cwd=Path(cwd), tmp_dir=tmp, session_env=session_env, extra=extra_env)
            try:
                policy, notes = self.sandbox(cwd=Path(cwd), env=env)
            except OllieError as exc:
                raise OSError(f"command sandbox {self.policy!r}: {exc}") from exc
            if warnings is not None:
                warnings.extend(n for n in notes if n not in warnings)
            if policy is None:  # the agent's commands are trusted, not a program tool code planted on PATH
                env["PATH"] = programs.trusted(env.get("PATH") or programs.FALLBACK_PATH, cwd)
            return await run_shell(command, cwd=cwd, env=env, stdin=stdin, timeout=timeout, policy=policy,
                                   limit_bytes=OUTPUT_LIMIT)
