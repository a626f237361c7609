"""pipe: stages run one after another, each stage's stdout fed to the next stage's stdin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ollie.tools.base import ToolResult
from ollie.tools.execute.args import CodeStep, PipeRequest, ScriptCall
from ollie.tools.execute.results import Section

if TYPE_CHECKING:  # the call machinery loads with the first call (server.py)
    from ollie.tools.execute.context import CallContext

# Intermediate output is handed on whole up to this size (a model reads only the last stage).
PIPE_LIMIT = 16 * 1024 * 1024


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
