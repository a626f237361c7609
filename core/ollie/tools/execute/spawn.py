"""Running one tool process: spawn (sandboxed or not), cap its output, and kill its group at the end."""

from __future__ import annotations

import asyncio
import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ollie.tools.execute.sandboxnotes import (
    denied_notes,
    disk_notes,
    limit_notes,
    mentions_denial,
    network_notes,
    outside_note,
)

if TYPE_CHECKING:  # the sandbox's spawn machinery loads with the first process (a first turn's answer needs none)
    from ollie.sandbox.egress import StepNet
    from ollie.sandbox.policy import Policy
    from ollie.sandbox.process import SandboxedProcess

# How long the output may stay open after the call's process group was killed.
PIPE_GRACE_S = 0.5


async def _exited(proc: SandboxedProcess) -> None:
    """Return once `proc` has exited (without reaping it: a pidfd) or its status came, whichever is first.

    A step's init sends the status when nothing else is left in its namespace, ~1 ms before its own exit.
    """
    try:
        fd = os.pidfd_open(proc.pid)
    except ProcessLookupError:
        return
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    loop.add_reader(fd, lambda: done.done() or done.set_result(None))
    proc.on_status(lambda: done.done() or done.set_result(None))
    try:
        await done
    finally:
        loop.remove_reader(fd)
        os.close(fd)


async def _exited_in_time(proc: SandboxedProcess, timeout: float) -> bool:
    """Whether `proc` exited within `timeout` and the time its network questions were on screen (a person's, not
    the step's: while one is, its time stands still)."""
    net: StepNet | None = proc.report.get("asks")
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    exited = asyncio.ensure_future(_exited(proc))
    try:
        while not exited.done():
            asked = net.questions() if net is not None else []
            left = end + (net.held_s if net is not None else 0.0) - loop.time()
            if left <= 0 and not asked:
                return False
            await asyncio.wait({exited, *asked}, timeout=None if asked else left, return_when=asyncio.FIRST_COMPLETED)
        return True
    finally:
        exited.cancel()


@dataclass(eq=False, repr=False)
class RunOutcome:
    """What one process did: its output, exit status, and why it stopped if not by itself."""

    stdout: bytes = b""
    stderr: bytes = b""
    exit_code: int | None = None
    timed_out: bool = False
    truncated: bool = False
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    # Each connection through the egress proxy (`network: proxy`): host, port, verdict, how, sent, received.
    network: list[dict] = field(default_factory=list)
    asked_s: float = 0.0  # how long its network questions were on screen (the call's deadline waits as long)

    @property
    def ok(self) -> bool:
        """True when the process ran and exited 0."""
        return self.error is None and not self.timed_out and self.exit_code == 0


async def run_process(
    argv: list[str],
    *,
    policy: Policy | None,
    cwd: Path,
    env: dict[str, str],
    stdin: bytes | None,
    timeout: float,
    limit_bytes: int,
    tmp_at_tmp: bool = False,
    python: tuple[str, tuple[str, ...]] | None = None,
) -> RunOutcome:
    """Run `argv` (policy None: unsandboxed) to completion or `timeout`; every process it started is dead on return.

    `python` (script, args): run by the fork server's pre-imported interpreter instead (see spawn_sandboxed).

    Killing the group ends the tool process; its supervisor then sweeps what left
    the group (setsid, double fork) before it reports the status awaited here.
    """
    from ollie.sandbox.errors import FORK_SERVER_DIED, HelperDiedError
    from ollie.sandbox.spawn import spawn_sandboxed

    try:
        proc = await spawn_sandboxed(argv, policy=policy, cwd=cwd, env=env, stdin=stdin, tmp_at_tmp=tmp_at_tmp,
                                     python=python)
    except HelperDiedError as exc:  # not "could not start": the step may have run
        return RunOutcome(error=str(exc))
    except Exception as exc:  # noqa: BLE001 - any start failure becomes a result the model can read
        blocked = outside_note(policy, argv[0], execute=True) if policy and isinstance(exc, PermissionError) else None
        return RunOutcome(error=f"could not start {argv[0]}: {blocked or exc}")
    reader = asyncio.ensure_future(proc.communicate(limit_bytes=limit_bytes))
    outcome = RunOutcome(warnings=list(proc.warnings))
    try:
        outcome.timed_out = not await _exited_in_time(proc, timeout)
        # Background children still holding the pipes must not outlive the call.
        proc.kill_group()
        try:
            async with asyncio.timeout(PIPE_GRACE_S):
                outcome.stdout, outcome.stderr, outcome.truncated = await asyncio.shield(reader)
        except TimeoutError:
            # Something still holds the output open (the sweep normally closes it first): end it too.
            proc.kill_pipe_holders()
            proc.stop_reading()
            outcome.stdout, outcome.stderr, outcome.truncated = await reader
        try:
            outcome.exit_code = await proc.wait()
        except HelperDiedError as exc:
            outcome.error = str(exc)
        if proc.report.get("orphaned"):
            outcome.error = FORK_SERVER_DIED
        outcome.network = list(proc.report.get("network") or ())
        outcome.asked_s = proc.report["asks"].held_s if "asks" in proc.report else 0.0
        if policy is not None:
            if mentions_denial(outcome.stderr):
                # Resolving paths the step named (symlinks it planted, an automount) must not hold the event loop.
                outcome.warnings += await asyncio.to_thread(denied_notes, policy, outcome.stderr, outcome.exit_code,
                                                            cwd)
            outcome.warnings += limit_notes(policy, status=outcome.exit_code, stderr=outcome.stderr,
                                            oom=bool(proc.report.get("oom")))
            outcome.warnings += network_notes(policy, outcome.network)
        outcome.warnings += disk_notes(dict.fromkeys(map(Path, (cwd, env.get("TMPDIR") or cwd))), outcome.stderr)
    except BaseException:
        proc.kill_group()
        proc.kill_pipe_holders()
        reader.cancel()
        with contextlib.suppress(BaseException):
            async with asyncio.timeout(2.0):
                await asyncio.shield(proc.wait())
        raise
    return outcome
