"""execute_code: inline programs run in order, `{parallel: [...]}` groups at the same time."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ollie.tools.base import ToolResult
from ollie.tools.execute.args import CodeRequest, CodeStep, ParallelGroup
from ollie.tools.execute.context import CallContext
from ollie.tools.execute.results import Section
from ollie.tools.execute.validation import ValidationGate


def refuse_dangerous(gate: ValidationGate, steps: list[CodeStep]) -> ToolResult | None:
    """A refusal naming every dangerous pattern in `steps` (counted by the gate), or None when all pass."""
    problems = []
    for n, step in enumerate(steps, 1):
        for finding in gate.check(step.code, step.language.name):
            problems.append(f"program {n} ({step.language.name}) {finding.describe()}")
    if not problems:
        return None
    return ToolResult(
        "refused: the code matches dangerous patterns and was not run:\n" + "\n".join(problems),
        is_error=True,
    )


async def _run_step(ctx: CallContext, step: CodeStep, scratch: Path, number: str) -> Section:
    # An elevated program is written after the approval, where no sandboxed step can reach it.
    build = (ctx.elevated_code_invocation(step, f"step{number}") if step.elevated
             else ctx.code_invocation(step, scratch, f"step{number}", None))
    outcome = await ctx.run(build, elevated=step.elevated, what=step.code)
    label = f"step {number} {step.language.name}" + (" (elevated)" if step.elevated else "")
    return Section(label, outcome)


async def execute_code(ctx: CallContext, request: CodeRequest) -> ToolResult:
    """Run execute_code's steps under the session's global lock."""
    sections: list[Section] = []
    failed = False
    async with ctx.exclusive_scratch() as scratch:
        for n, step in enumerate(request.steps, 1):
            if failed:
                sections.append(Section(f"step {n}", None, "skipped: an earlier step failed"))
                continue
            if isinstance(step, ParallelGroup):
                group = await asyncio.gather(
                    *(_run_step(ctx, s, scratch, f"{n}.{i}") for i, s in enumerate(step.steps, 1))
                )
                sections.extend(group)
                failed = any(not s.outcome.ok for s in group if s.outcome is not None)
            else:
                section = await _run_step(ctx, step, scratch, str(n))
                sections.append(section)
                failed = section.outcome is not None and not section.outcome.ok
    return ctx.result(sections, failed=failed)
