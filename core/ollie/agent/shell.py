"""Run one `sh -c` command in its own process group, output captured, the whole group killed on timeout."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# After the group is killed, how long to wait for the pipes to close: a process
# that left the group (setsid) could keep them open forever.
_DRAIN_AFTER_KILL_S = 2.0


@dataclass
class ShellResult:
    """What a shell command did: exit code (negative = killed by that signal), output, timeout flag."""

    code: int
    stdout: str
    stderr: str
    timed_out: bool = False


def merged_env(*layers: Mapping[str, str] | None) -> dict[str, str]:
    """`os.environ` overlaid with each layer in turn (later wins)."""
    env = dict(os.environ)
    for layer in layers:
        if layer:
            env.update(layer)
    return env


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    # The child leads its own group (start_new_session), so its pid is the pgid.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


async def run_shell(
    command: str,
    *,
    cwd: Path | str,
    env: Mapping[str, str],
    stdin: bytes | None = None,
    timeout: float,
    merge_stderr: bool = False,
) -> ShellResult:
    """Run `sh -c command` in `cwd` with exactly `env`; on timeout or cancellation kill its whole group.

    Nothing reaches this process's own stdout/stderr (the daemon's stdout is its
    JSON-RPC channel). With `merge_stderr`, stderr is interleaved into stdout.
    """
    spawning = asyncio.ensure_future(asyncio.create_subprocess_exec(
        "sh",
        "-c",
        command,
        cwd=str(cwd),
        env=dict(env),
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT if merge_stderr else asyncio.subprocess.PIPE,
        start_new_session=True,
    ))
    try:
        proc = await asyncio.shield(spawning)
    except asyncio.CancelledError:
        # Cancelled while asyncio was still connecting the pipes: the command may
        # already run (and have children). Cancelling the set-up would kill only
        # `sh` and then wait for every pipe holder; kill the whole group instead.
        with contextlib.suppress(BaseException):
            started = await spawning
            _kill_group(started)
            await asyncio.wait_for(started.wait(), _DRAIN_AFTER_KILL_S)
        raise
    talk = asyncio.ensure_future(proc.communicate(stdin))
    timed_out = False
    try:
        await asyncio.wait_for(asyncio.shield(talk), timeout)
    except asyncio.TimeoutError:
        timed_out = True
        _kill_group(proc)
    except asyncio.CancelledError:
        _kill_group(proc)
        talk.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(proc.wait(), _DRAIN_AFTER_KILL_S)
        raise
    if timed_out:
        try:
            await asyncio.wait_for(asyncio.shield(talk), _DRAIN_AFTER_KILL_S)
        except asyncio.TimeoutError:
            talk.cancel()
            with contextlib.suppress(BaseException):
                await talk
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(proc.wait(), _DRAIN_AFTER_KILL_S)
    out, err = talk.result() if talk.done() and not talk.cancelled() else (b"", b"")
    return ShellResult(
        code=proc.returncode if proc.returncode is not None else -signal.SIGKILL,
        stdout=(out or b"").decode("utf-8", "replace"),
        stderr=(err or b"").decode("utf-8", "replace"),
        timed_out=timed_out,
    )
