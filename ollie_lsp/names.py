"""The ollie/* method names, kept apart from their handlers so start-up need not import them.

The one list: tests/editors/test_method_names.py checks PROTOCOL.md and what VS Code and Lua send against it."""

from __future__ import annotations

METHOD_NAMES = (
    "ollie/submit",
    "ollie/interrupt",
    "ollie/inject",
    "ollie/queue",
    "ollie/popQueue",
    "ollie/queue/run",
    "ollie/queue/clear",
    "ollie/state",
    "ollie/context",
    "ollie/command",
    "ollie/listModels",
    "ollie/listAgents",
    "ollie/listCommands",
    "ollie/mcp/list",
    "ollie/setCwd",
    "ollie/setEnv",
    "ollie/setGenerationParams",
    "ollie/setApproval",
    "ollie/changes",
    "ollie/review/undo",
    "ollie/rewind",
    "ollie/session/new",
    "ollie/session/list",
    "ollie/session/load",
    "ollie/session/fork",
    "ollie/session/rename",
    "ollie/session/archive",
    "ollie/session/unarchive",
    "ollie/session/close",
)

def command_name(method_name: str) -> str:
    """`ollie/session/new` -> `ollie.session.new`."""
    return method_name.replace("/", ".")

# The command every `Ollie: ...` code action carries (ollie_lsp.codeactions runs it).
ACTION_COMMAND = "ollie.codeAction"
