"""call_tool: named tool scripts in order; consecutive read-only scripts fan out at the same time."""

from __future__ import annotations

import asyncio
import shlex

from ollie.tools.base import ToolResult
from ollie.tools.editor.knowledge import EditorKnowledge
from ollie.tools.execute.args import CallRequest, ScriptCall
from ollie.tools.execute.context import CallContext
from ollie.tools.execute.editorcalls import is_editor_script, run_editor_call
from ollie.tools.execute.editordocs import DocumentBridge
from ollie.tools.execute.results import Section
from ollie.tools.execute.spawn import RunOutcome
from ollie.tools.execute.tool import ToolScript

Resolved = tuple[int, ScriptCall, ToolScript]


def shares_lock(item: Resolved) -> bool:
    """Whether a call may run beside others under the shared lock: read-safe and sandboxed.

    An elevated call runs outside the sandbox, where the script's "read" promise
    holds nothing back: it takes the session's exclusive lock.
    """
    return item[2].parallel == "read" and not item[1].elevated


def batches(calls: list[Resolved]) -> list[list[Resolved]]:
    """Consecutive `ollie:parallel read` calls grouped together; every other call (an elevated one too) alone."""
    groups: list[list[Resolved]] = []
    for item in calls:
        is_read = shares_lock(item)
        if is_read and groups and all(shares_lock(other) for other in groups[-1]):
            groups[-1].append(item)
        else:
            groups.append([item])
    return groups


async def _run_call(ctx: CallContext, item: Resolved, documents: DocumentBridge | None,
                    editor: EditorKnowledge | None = None) -> Section:
    n, call, script = item
    # An editor tool is answered by the editor, in-process (see editorcalls).
    if is_editor_script(script):
        return await run_editor_call(ctx, call, script, f"call {n} {script.name}", editor)
    # A file tool on a document open in the editor works on its unsaved text (see editordocs).
    if documents is not None and (done := await documents.run(ctx, call, script, f"call {n} {script.name}")):
        return done
    approved = None
    if call.elevated:
        # The bytes the user approves are the bytes that run (a private copy, checked against the script).
        try:
            approved = script.path.read_bytes()
        except OSError as exc:
            return Section(f"call {n} {script.name} (elevated)", RunOutcome(error=f"cannot read {script.path}: {exc}"))
    outcome = await ctx.run_locked(
        "global" if call.elevated else script.parallel or "global",
        ctx.script_invocation(call, script, None, approved=approved),
        elevated=call.elevated, what=shlex.join([script.name, *call.args]),
    )
    label = f"call {n} {script.name}" + (" (elevated)" if call.elevated else "")
    return Section(label, outcome)


async def call_tool(ctx: CallContext, request: CallRequest, documents: DocumentBridge | None = None,
                    editor: EditorKnowledge | None = None) -> ToolResult:
    """Resolve every call first (nothing runs if one is unknown), then run them batch by batch."""
    resolved = [(n, call, ctx.resolve(call.tool)) for n, call in enumerate(request.calls, 1)]
    sections: list[Section] = []
    failed = False
    for group in batches(resolved):
        if failed:
            sections.extend(Section(f"call {n} {s.name}", None, "skipped: an earlier call failed") for n, _, s in group)
            continue
        done = await asyncio.gather(*(_run_call(ctx, item, documents, editor) for item in group))
        sections.extend(done)
        failed = any(s.outcome is not None and not s.outcome.ok for s in done)
    return ctx.result(sections, failed=failed)
