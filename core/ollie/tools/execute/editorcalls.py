"""The editor tools inside call_tool: listed like tool scripts, answered in-process by the front end's editor.

They are offered only while a front end provides the editor's knowledge
(`ExecuteServer.set_editor`). Each is a ToolScript with no file behind it
(`parallel read`, so it runs beside other reads), never a process.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from ollie.tools.editor.specs import TOOLS, EditorArgumentError
from ollie.tools.execute.args import ScriptCall
from ollie.tools.execute.languages import language
from ollie.tools.execute.tool import ToolScript

if TYPE_CHECKING:  # the call machinery, its results and the editor's knowledge load with the first call (server.py)
    from ollie.tools.editor.knowledge import EditorKnowledge
    from ollie.tools.execute.context import CallContext
    from ollie.tools.execute.results import Section

# No script lives here: the path only marks a script as answered by the editor.
EDITOR_ROOT = Path("/nonexistent/ollie-editor-tools")
EDITOR_SCRIPTS: dict[str, ToolScript] = {
    tool.name: ToolScript(
        name=tool.name, path=EDITOR_ROOT / tool.name, language=language("bash"), shebang_flags=(),
        description=tool.description, args=tool.args, parallel="read", tier=tool.tier, kind=tool.kind,
    )
    for tool in TOOLS.values()
}


def is_editor_script(script: ToolScript) -> bool:
    """Whether `script` is one of the editor tools (answered in-process, never run)."""
    return script.path.parent == EDITOR_ROOT


async def run_editor_call(ctx: CallContext, call: ScriptCall, script: ToolScript, label: str,
                          editor: EditorKnowledge | None) -> Section:
    """Answer one editor-tool call from the editor, within the call's time; failures are error sections."""
    from ollie.tools.execute.results import Section
    from ollie.tools.execute.spawn import RunOutcome
    if editor is None:
        return Section(label, RunOutcome(error=f"{script.name}: no editor is connected to this session"))
    if call.elevated:
        return Section(label, RunOutcome(error=f"{script.name} asks the editor and runs nothing: drop `elevated`"))
    from ollie.tools.editor.answers import answer  # loaded by the first editor call
    from ollie.tools.editor.knowledge import EditorUnavailable
    from ollie.tools.editor.queries import parse_query

    try:
        query = parse_query(script.name, call.args)

        async with asyncio.timeout(max(ctx.deadline.remaining(), 0.01)):
            text = await answer(editor, query, ctx.runner.cwd)
    except (EditorArgumentError, EditorUnavailable) as exc:
        return Section(label, RunOutcome(error=str(exc)))
    except TimeoutError:
        return Section(label, RunOutcome(error=f"{script.name}: the editor did not answer within {ctx.timeout:g} s"))
    data, limit = text.encode("utf-8"), ctx.runner.output_limit
    cut = data[:limit].decode("utf-8", errors="ignore").encode("utf-8") if len(data) > limit else data
    return Section(label, RunOutcome(stdout=cut, exit_code=0, truncated=len(data) > limit))
