"""What every executor needs for one call: the runner, locks, policy, deadline and script lookup."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

from ollie import programs
from ollie.sandbox import writers
from ollie.sandbox.policy import Policy
from ollie.tools.base import ParallelClass, ToolResult
from ollie.tools.execute.args import CodeStep, ScriptCall
from ollie.tools.execute.elevation import ElevationGate
from ollie.tools.execute.flock import LockManager, LockTimeout
from ollie.tools.execute.languages import (
    Invocation,
    LanguageError,
    code_invocation,
    script_bytes,
    script_invocation,
)
from ollie.tools.execute.results import Section, render_all
from ollie.tools.execute.runner import Deadline, Runner
from ollie.tools.execute.spawn import RunOutcome
from ollie.tools.execute.tool import ToolScript
from ollie.tools.execute.validation import ValidationGate


class ChangedSinceApproval(Exception):
    """What the user approved to run outside the sandbox is no longer what would run."""


def digest(data: bytes) -> str:
    """The sha256 of `data`, as approvals pin it."""
    return hashlib.sha256(data).hexdigest()


def program_bytes(code: str) -> bytes:
    """The bytes an inline program is saved as (with a final newline)."""
    return (code if code.endswith("\n") else code + "\n").encode("utf-8")


def write_pinned(path: Path, data: bytes) -> Path:
    """Write `data` to `path` (0600), then read it back: ChangedSinceApproval unless it holds exactly `data`."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    if digest(path.read_bytes()) != digest(data):
        raise ChangedSinceApproval(f"elevation refused: {path.name} changed after it was approved; not run")
    return path


@dataclass
class CallContext:
    """One executor call's collaborators and budget."""

    runner: Runner
    locks: LockManager
    gate: ValidationGate
    resolve: Callable[[str], ToolScript]
    policy: Policy | None
    deadline: Deadline
    timeout: float
    elevation: ElevationGate = field(default_factory=ElevationGate)
    env: dict[str, str] | None = None  # built once for the call: its policy's cache key and each step's env
    images: int = 0  # file_read's images the call came to so far (ollie.backend.images.MAX_IMAGES are shown)

    def result(self, sections: list[Section], *, failed: bool) -> ToolResult:
        """The call's ToolResult from its sections."""
        text = render_all(sections, limit=self.runner.output_limit, timeout=self.timeout)
        return ToolResult(text, is_error=failed, images=[image for section in sections for image in section.images])

    @contextlib.asynccontextmanager
    async def exclusive_scratch(self) -> AsyncIterator[Path]:
        """Hold the session's global lock, with a scratch dir for the call's programs (removed afterwards)."""
        scratch = self.runner.dirs.fresh(self.runner.dirs.scratch)  # readable, never writable, by tool code
        try:
            async with self.locks.hold("global", timeout=self.deadline.remaining()):
                yield scratch
        finally:
            self.runner.drop_scratch(scratch)

    async def run_locked(
        self, parallel: ParallelClass, invocation_of: Callable[[], Invocation], *, elevated: bool, what: str = "",
    ) -> RunOutcome:
        """Take the lock for `parallel`, build the invocation, and run it (outside the sandbox if elevated)."""
        try:
            async with self.locks.hold(parallel, timeout=self.deadline.remaining()):
                return await self.run(invocation_of, elevated=elevated, what=what)
        except LockTimeout as exc:
            return RunOutcome(error=str(exc), timed_out=True)

    async def run(
        self, invocation_of: Callable[[], Invocation], *, elevated: bool, limit: int | None = None, what: str = ""
    ) -> RunOutcome:
        """Build the invocation (a missing interpreter is an error outcome) and run it.

        An elevated one first passes the agent's elevation gate; `what` is what the user is shown.
        """
        # The question's wait is not the call's: a person who took a minute to answer did not time the step out.
        if elevated and (refusal := await self.deadline.paused(self.elevation.refusal(what))):
            return RunOutcome(error=refusal)
        named = writers.running.set(" ".join(what.split())[:120])  # an editor's edit it holds up names it
        try:
            try:
                invocation = invocation_of()
            except (LanguageError, OSError, ChangedSinceApproval) as exc:
                return RunOutcome(error=str(exc))
            return await self.runner.run(
                invocation, policy=None if elevated else self.policy, deadline=self.deadline, limit_bytes=limit,
                trusted_path=elevated, env=self.env,
            )
        finally:
            writers.running.reset(named)
            for made in getattr(invocation_of, "private_dirs", ()):
                self.runner.drop_scratch(made)

    def code_invocation(self, step: CodeStep, scratch: Path, label: str, piped: bytes | None) -> Callable[[], Invocation]:
        """A deferred invocation of an inline program saved under `scratch`."""

        def build() -> Invocation:
            program = scratch / f"{label}{step.language.extensions[0]}"
            program.write_bytes(program_bytes(step.code))
            return code_invocation(step.language, program, search_path=self.runner.search_path(), piped_input=piped)

        return build

    def elevated_code_invocation(self, step: CodeStep, label: str) -> Callable[[], Invocation]:
        """A deferred invocation of an approved elevated program: the approved bytes, where no sandbox writes.

        The builder runs after the approval; the file is written to a fresh 0700
        dir no policy grants and checked against the approved bytes right before exec.
        """
        approved = program_bytes(step.code)
        made: list[Path] = []

        def build() -> Invocation:
            made.append(self.runner.dirs.fresh(self.runner.dirs.private))  # a 0700 dir no policy grants
            program = write_pinned(made[-1] / f"{label}{step.language.extensions[0]}", approved)
            # bash itself from a trusted PATH entry: never one the workspace or tool code can plant.
            return code_invocation(step.language, program, search_path=programs.trusted_path(), piped_input=None)

        build.private_dirs = made  # type: ignore[attr-defined]  # removed by `run` once the step is done
        return build

    def script_invocation(
        self, call: ScriptCall, script: ToolScript, piped: bytes | None, *, approved: bytes | None = None
    ) -> Callable[[], Invocation]:
        """A deferred invocation of a tool script with its arguments.

        With `approved` (the script's bytes when the user was asked), the script
        must still hold them right before it starts. It runs in place: tool scripts
        import helpers from their own dir, which a private copy would lose.
        """

        def build() -> Invocation:
            if approved is not None and digest(script_bytes(script.path)) != digest(approved):
                raise ChangedSinceApproval(
                    f"elevation refused: the tool script {script.path} changed after it was approved; not run")
            return script_invocation(
                script.language,
                script.shebang_flags,
                script.path,
                list(call.args),
                search_path=programs.trusted_path() if approved is not None else self.runner.search_path(),
                piped_input=piped,
            )

        return build
