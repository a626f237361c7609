"""call_tool: named tool scripts in order; consecutive read-only scripts fan out at the same time."""

from __future__ import annotations

import asyncio
import shlex
from typing import Any

from ollie.tools.base import ToolResult
from ollie.tools.execute.args import ScriptCall, calls_of
from ollie.tools.execute.context import CallContext
from ollie.tools.execute.results import Section
from ollie.tools.execute.spawn import RunOutcome
from ollie.tools.execute.tool import ToolScript

Resolved = tuple[int, ScriptCall, ToolScript]


def batches(calls: list[Resolved]) -> list[list[Resolved]]:
    """Consecutive `ollie:parallel read` calls grouped together; every other call alone."""
    groups: list[list[Resolved]] = []
    for item in calls:
        is_read = item[2].parallel == "read"
        if is_read and groups and all(other[2].parallel == "read" for other in groups[-1]):
            groups[-1].append(item)
        else:
            groups.append([item])
    return groups


async def _run_call(ctx: CallContext, item: Resolved) -> Section:
    n, call, script = item
    approved = None
    if call.elevated:
        # The bytes the user approves are the bytes that run (a private copy, checked against the script).
        try:
            approved = script.path.read_bytes()
        except OSError as exc:
            return Section(f"call {n} {script.name} (elevated)", RunOutcome(error=f"cannot read {script.path}: {exc}"))
    outcome = await ctx.run_locked(
        script.parallel or "global", ctx.script_invocation(call, script, None, approved=approved),
        elevated=call.elevated, what=shlex.join([script.name, *call.args]),
    )
    label = f"call {n} {script.name}" + (" (elevated)" if call.elevated else "")
    return Section(label, outcome)


async def call_tool(ctx: CallContext, args: dict[str, Any]) -> ToolResult:
    """Resolve every call first (nothing runs if one is unknown), then run them batch by batch."""
    calls = calls_of(args)
    resolved = [(n, call, ctx.resolve(call.tool)) for n, call in enumerate(calls, 1)]
    sections: list[Section] = []
    failed = False
    for group in batches(resolved):
        if failed:
            sections.extend(Section(f"call {n} {s.name}", None, "skipped: an earlier call failed") for n, _, s in group)
            continue
        done = await asyncio.gather(*(_run_call(ctx, item) for item in group))
        sections.extend(done)
        failed = any(s.outcome is not None and not s.outcome.ok for s in done)
    return ctx.result(sections, failed=failed)
