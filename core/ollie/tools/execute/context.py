"""What every executor needs for one call: the runner, locks, policy, deadline and script lookup."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

from ollie.sandbox import Policy
from ollie.tools.base import ParallelClass, ToolResult
from ollie.tools.execute.args import CodeStep, ScriptCall
from ollie.tools.execute.elevation import ElevationGate
from ollie.tools.execute.flock import LockManager, LockTimeout
from ollie.tools.execute.languages import Invocation, LanguageError, code_invocation, script_invocation
from ollie.tools.execute.results import Section, render_all
from ollie.tools.execute.runner import Deadline, Runner
from ollie.tools.execute.spawn import RunOutcome
from ollie.tools.execute.tool import ToolScript
from ollie.tools.execute.validation import ValidationGate


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

    def result(self, sections: list[Section], *, failed: bool, limit: int | None = None) -> ToolResult:
        """The call's ToolResult from its sections."""
        text = render_all(sections, limit=limit or self.runner.output_limit, timeout=self.timeout)
        return ToolResult(text, is_error=failed)

    @contextlib.asynccontextmanager
    async def exclusive_scratch(self) -> AsyncIterator[Path]:
        """Hold the session's global lock, with a scratch dir for the call's programs (removed afterwards)."""
        scratch = self.runner.scratch_dir()
        try:
            async with self.locks.hold("global", timeout=self.deadline.remaining()):
                yield scratch
        finally:
            self.runner.drop_scratch(scratch)

    async def run_locked(
        self, parallel: ParallelClass, invocation_of: Callable[[], Invocation], *, elevated: bool,
        limit: int | None = None, what: str = "",
    ) -> RunOutcome:
        """Take the lock for `parallel`, build the invocation, and run it (outside the sandbox if elevated)."""
        try:
            async with self.locks.hold(parallel, timeout=self.deadline.remaining()):
                return await self.run(invocation_of, elevated=elevated, limit=limit, what=what)
        except LockTimeout as exc:
            return RunOutcome(error=str(exc), timed_out=True)

    async def run(
        self, invocation_of: Callable[[], Invocation], *, elevated: bool, limit: int | None = None, what: str = ""
    ) -> RunOutcome:
        """Build the invocation (a missing interpreter is an error outcome) and run it.

        An elevated one first passes the agent's elevation gate; `what` is what the user is shown.
        """
        if elevated and (refusal := await self.elevation.refusal(what)):
            return RunOutcome(error=refusal)
        try:
            invocation = invocation_of()
        except (LanguageError, OSError) as exc:
            return RunOutcome(error=str(exc))
        return await self.runner.run(
            invocation, policy=None if elevated else self.policy, deadline=self.deadline, limit_bytes=limit
        )

    def code_invocation(self, step: CodeStep, scratch: Path, label: str, piped: bytes | None) -> Callable[[], Invocation]:
        """A deferred invocation of an inline program saved under `scratch`."""

        def build() -> Invocation:
            program = scratch / f"{label}{step.language.extensions[0]}"
            program.write_text(step.code if step.code.endswith("\n") else step.code + "\n", encoding="utf-8")
            return code_invocation(step.language, program, search_path=self.runner.env()["PATH"], piped_input=piped)

        return build

    def script_invocation(self, call: ScriptCall, script: ToolScript, piped: bytes | None) -> Callable[[], Invocation]:
        """A deferred invocation of a tool script with its arguments."""

        def build() -> Invocation:
            return script_invocation(
                script.language,
                script.shebang_flags,
                script.path,
                list(call.args),
                search_path=self.runner.env()["PATH"],
                piped_input=piped,
            )

        return build
