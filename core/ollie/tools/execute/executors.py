"""The three executors: execute_code's steps in order (`{parallel: [...]}` groups at the same time), call_tool's
named scripts (consecutive read-only ones at the same time) and pipe's stages, each stdout fed to the next."""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path

from ollie.tools.base import ToolResult
from ollie.tools.editor.knowledge import EditorKnowledge
from ollie.tools.execute.args import CallRequest, CodeRequest, CodeStep, ParallelGroup, PipeRequest, ScriptCall
from ollie.tools.execute.context import CallContext
from ollie.tools.execute.editorcalls import is_editor_script, run_editor_call
from ollie.tools.execute.editordocs import DocumentBridge
from ollie.tools.execute.languages import script_bytes
from ollie.tools.execute.results import Section
from ollie.tools.execute.spawn import RunOutcome
from ollie.tools.execute.tool import ToolScript
from ollie.tools.execute.validation import ValidationGate

Resolved = tuple[int, ScriptCall, ToolScript]
# Intermediate output is handed on whole up to this size (a model reads only the last stage).
PIPE_LIMIT = 16 * 1024 * 1024


def refuse_dangerous(gate: ValidationGate, steps: list[CodeStep]) -> ToolResult | None:
    """A refusal naming every dangerous pattern in `steps` (counted by the gate), or None when all pass."""
    problems = [f"program {n} ({step.language.name}) {finding.describe()}"
                for n, step in enumerate(steps, 1) for finding in gate.check(step.code, step.language.name)]
    if not problems:
        return None
    return ToolResult("refused: the code matches dangerous patterns and was not run:\n" + "\n".join(problems), is_error=True)


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
            parallel = isinstance(step, ParallelGroup)
            group = await asyncio.gather(*(_run_step(ctx, s, scratch, f"{n}.{i}" if parallel else str(n))
                                           for i, s in enumerate(step.steps if parallel else (step,), 1)))
            sections.extend(group)
            failed = any(s.outcome is not None and not s.outcome.ok for s in group)
    return ctx.result(sections, failed=failed)


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


# What tools/file_read prints, alone, for an image (its IMAGE_MARK): never a numbered line of a text file.
IMAGE_MARK = b"[image:"


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
            approved = await asyncio.to_thread(script_bytes, script.path)
        except OSError as exc:
            return Section(f"call {n} {script.name} (elevated)", RunOutcome(error=f"cannot read {script.path}: {exc}"))
    outcome = await ctx.run_locked(
        "global" if call.elevated else script.parallel or "global",
        ctx.script_invocation(call, script, None, approved=approved),
        elevated=call.elevated, what=shlex.join([script.name, *call.args]),
    )
    label = f"call {n} {script.name}" + (" (elevated)" if call.elevated else "")
    if script.name == "file_read" and outcome.ok and outcome.stdout.startswith(IMAGE_MARK) and call.args:
        return await _with_image(ctx, Section(label, outcome), call.args[-1], n - 1)  # its path: after any option
    return Section(label, outcome)


async def _with_image(ctx: CallContext, section: Section, path: str, step: int) -> Section:
    """file_read found an image: the daemon reads it itself, through the guarded path (beneath the working
    directory, no symlink, FIFO or device, capped and checked by its bytes), for the model to see; it belongs to the
    batch's `step` (0-based), where a client shows it."""
    import dataclasses

    from ollie.backend import images

    ctx.images += 1  # counted before it is read: one image asked for a hundred times is read eight times
    if ctx.images > images.MAX_IMAGES:
        section.note = f"the image is not shown to the model: more than {images.MAX_IMAGES} images in one result"
        return section
    try:
        section.images.append(dataclasses.replace(await images.read(ctx.runner.cwd, path), step=step))
    except images.ImageError as exc:
        section.note = f"the image is not shown to the model: {exc}"
    return section


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


async def pipe(ctx: CallContext, request: PipeRequest) -> ToolResult:
    """Run the stages under the session's global lock; the result is the last stdout plus every stderr."""
    stages = request.stages
    scripts = {i: ctx.resolve(s.tool) for i, s in enumerate(stages) if isinstance(s, ScriptCall)}
    sections: list[Section] = []
    failed = False
    piped: bytes | None = None
    async with ctx.exclusive_scratch() as scratch:
        for i, stage in enumerate(stages):
            last = i == len(stages) - 1
            if isinstance(stage, CodeStep):
                build = ctx.code_invocation(stage, scratch, f"stage{i + 1}", piped)
                name = stage.language.name
            else:
                build = ctx.script_invocation(stage, scripts[i], piped)
                name = stage.tool
            outcome = await ctx.run(build, elevated=False, limit=None if last else PIPE_LIMIT)
            section = Section(f"stage {i + 1} {name}", outcome, show_stdout=last)
            if not last and outcome.truncated:
                section.note = f"its output was cut at {PIPE_LIMIT} bytes before the next stage"
            sections.append(section)
            # Like `set -o pipefail`: a failing stage makes the pipe fail, but later stages
            # still see its output, as in a shell; a stage that did not run stops the pipe.
            failed = failed or not outcome.ok
            if outcome.error is not None or outcome.timed_out:
                sections.extend(
                    Section(f"stage {j + 1}", None, "skipped: an earlier stage did not finish")
                    for j in range(i + 1, len(stages))
                )
                break
            piped = outcome.stdout
    return ctx.result(sections, failed=failed)
