"""The engine's modules import one another without cycles (type-only imports count too)."""

from __future__ import annotations

import ast
from pathlib import Path

import ollie.agent

AGENT = Path(ollie.agent.__file__).parent


def _imports() -> dict[str, set[str]]:
    mods = {path.stem for path in AGENT.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for stem in mods:
        found: set[str] = set()
        for node in ast.walk(ast.parse((AGENT / f"{stem}.py").read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "ollie.agent":
                found |= {alias.name for alias in node.names} & mods
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ollie.agent."):
                found.add(node.module.split(".")[2])
            elif isinstance(node, ast.Import):
                found |= {a.name.split(".")[2] for a in node.names if a.name.startswith("ollie.agent.")}
        graph[stem] = (found & mods) - {stem}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    seen: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> list[str] | None:
        seen[node] = 1
        for nxt in sorted(graph[node]):
            if seen.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in seen and (found := visit(nxt, [*path, nxt])):
                return found
        seen[node] = 2
        return None

    for start in sorted(graph):
        if start not in seen and (found := visit(start, [start])):
            return found
    return None


def test_the_graph_is_read():
    graph = _imports()
    assert {"context", "toolround"} <= graph["loop"] and "loop" in graph["turnhost"]


def test_no_module_of_the_engine_imports_its_way_back_to_itself():
    assert _cycle(_imports()) is None

