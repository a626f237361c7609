"""The user's `!cmd`: `sh -c` through the tool runner's spawn, outside the sandbox, its whole group killed at the end."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ollie.tools.execute.spawn import run_process

if TYPE_CHECKING:
    from ollie.sandbox.policy import Policy

SHELL = "/bin/sh"
# What the user reads back; more than this per stream is cut.
OUTPUT_LIMIT = 16 * 1024 * 1024
# Sends the shell's stderr (and every child's) into its stdout from the first command on, so the two
# interleave as they were written. On the command's own first line: error messages keep their line numbers.
_MERGE = "exec 2>&1; "


@dataclass(eq=False, repr=False)
class ShellResult:
    """What a shell command did: exit code (negative = killed by that signal), output, timeout flag."""

    code: int
    stdout: str
    stderr: str
    timed_out: bool = False


async def run_shell(
    command: str,
    *,
    cwd: Path | str,
    env: Mapping[str, str],
    stdin: bytes | None = None,
    timeout: float,
    merge_stderr: bool = False,
    policy: Policy | None = None,
    limit_bytes: int = OUTPUT_LIMIT,
) -> ShellResult:
    """Run `sh -c command` in `cwd` with exactly `env` (policy None: unsandboxed); OSError when it cannot start.

    Its process group is killed on timeout or cancel; nothing reaches our stdout (the daemon's JSON-RPC channel).
    """
    script = _MERGE + command if merge_stderr else command
    outcome = await run_process(
        [SHELL, "-c", script, "sh"], policy=policy, cwd=Path(cwd), env=dict(env), stdin=stdin,
        timeout=timeout, limit_bytes=limit_bytes,
    )
    if outcome.error is not None:
        raise OSError(outcome.error)
    out, err = outcome.stdout, outcome.stderr
    if merge_stderr:
        # Only a syntax error on the first line, before the redirection ran, is left on stderr.
        out, err = out + err, b""
    return ShellResult(
        code=outcome.exit_code if outcome.exit_code is not None and not outcome.timed_out else -9,
        stdout=out.decode("utf-8", "replace"),
        stderr=err.decode("utf-8", "replace"),
        timed_out=outcome.timed_out,
    )
