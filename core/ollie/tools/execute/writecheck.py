"""Whether a call's file writes would be refused whatever the user answers, asked of the writers themselves.

The bundled file_write and file_edit run as for the write, in the call's sandbox, with OLLIE_WRITE_CHECK set: they
check the path with the very code the write uses (`writable_path` in tools/_toolkit.py) and stop there, writing
nothing. The daemon itself opens nothing of the path (the workspace is hostile) and decides nothing by it: only the
note on a refusal outside the policy resolves it (as a step's refusal note does, in a thread), to say what would allow it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ollie import paths
from ollie.errors import OllieError
from ollie.tools.execute.args import ScriptCall
from ollie.tools.execute.childenv import WRITE_CHECK_ENV
from ollie.tools.execute.languages import with_env
from ollie.tools.execute.sandboxnotes import denied_notes

if TYPE_CHECKING:  # the call machinery loads with the first call (server.py)
    from ollie.tools.execute.context import CallContext

WRITERS = frozenset({"file_write", "file_edit"})


def writes(calls: list[ScriptCall]) -> list[ScriptCall]:
    """The sandboxed file writes among `calls` (an elevated one runs outside the sandbox, after a question of its own)."""
    return [call for call in calls if call.tool in WRITERS and not call.elevated]


async def write_refusal(ctx: CallContext, calls: list[ScriptCall]) -> str | None:
    """The first refusal the writers among `calls` give under the call's policy (`tool: why`); None when none would.

    Only ollie's own writers are asked (another script of that name may not know the check, and would write), and
    only in a sandbox (an unsandboxed agent's writes are as before). A check that fails otherwise (a timeout, a
    crash) refuses nothing: the user is asked, and the write itself says what is wrong.
    """
    if ctx.policy is None:
        return None
    bundled = paths.bundled("tools")
    for call in writes(calls):
        try:
            script = ctx.resolve(call.tool)
        except OllieError:
            return None  # the call itself reports it
        if script.path.parent != bundled:
            continue
        outcome = await ctx.run(
            with_env(ctx.script_invocation(call, script, None), WRITE_CHECK_ENV, "1"), elevated=False
        )
        said = outcome.stderr.decode("utf-8", errors="replace").strip()
        # A refusal is the one `name: why` line a ToolError prints, with exit status 1 (a traceback is no refusal).
        if outcome.error is None and outcome.exit_code == 1 and said.startswith(f"{call.tool}: ") and "\n" not in said:
            # The run's note on a path outside the policy says which file the user would change to allow it.
            notes = await asyncio.to_thread(denied_notes, ctx.policy, outcome.stderr, 1, ctx.runner.cwd)
            return "\n".join([said, *(f"[warning] {note}" for note in notes)])
    return None
