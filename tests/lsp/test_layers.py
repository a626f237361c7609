"""The engine sits below the daemon: nothing under core/ollie imports ollie_lsp, pygls or lsprotocol."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "core" / "ollie"
FORBIDDEN = ("ollie_lsp", "pygls", "lsprotocol")


def _imported(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def test_the_engine_never_imports_the_daemon_or_its_lsp_libraries():
    upward = [
        f"{path.relative_to(CORE)}: {name}"
        for path in sorted(CORE.rglob("*.py"))
        for name in _imported(ast.parse(path.read_text(encoding="utf-8")))
        if name.split(".")[0] in FORBIDDEN
    ]
    assert upward == []
