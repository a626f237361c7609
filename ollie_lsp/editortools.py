"""The editor's knowledge over the wire: ollie/editor/* requests to a client that announced `editorTools`.

Paths travel absolute both ways. A client that errors, answers nonsense or is too slow gives the engine an
EditorUnavailable (the tool's error): never a hung turn.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pygls.uris import to_fs_path

from ollie.tools.editor.knowledge import (
    SEVERITIES,
    Diagnostic,
    DiagnosticsAnswer,
    EditorUnavailable,
    OpenFile,
    Severity,
    Span,
    Symbol,
)
from ollie_lsp.asking import ask_client

if TYPE_CHECKING:
    from ollie_lsp.server import OllieServer

logger = logging.getLogger("ollie.lsp.editortools")

TIMEOUT_ENV = "OLLIE_EDITOR_TIMEOUT_MS"
DEFAULT_TIMEOUT_S = 5.0
T = TypeVar("T")


def request_timeout() -> float:
    """Seconds the daemon waits for an ollie/editor/* answer ($OLLIE_EDITOR_TIMEOUT_MS, default 5 s)."""
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    try:
        return max(int(raw), 1) / 1000 if raw else DEFAULT_TIMEOUT_S
    except ValueError:
        return DEFAULT_TIMEOUT_S


def wire_path(value: object) -> Path | None:
    """An absolute path from the client (a `file:` URI is taken too); None for anything else."""
    if not isinstance(value, str) or not value:
        return None
    if value.startswith("file:"):
        value = to_fs_path(value) or ""
    return Path(value) if os.path.isabs(value) else None


def _position(item: Mapping[str, Any], key: str) -> int | None:
    value = item.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def _text(item: Mapping[str, Any], key: str) -> str:
    value = item.get(key)
    return str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else ""


def _place(item: Mapping[str, Any]) -> tuple[Path, int, int] | None:
    path, line, column = wire_path(item.get("path")), _position(item, "line"), _position(item, "column")
    return None if path is None or line is None or column is None else (path, line, column)


def parse_span(item: Mapping[str, Any]) -> Span | None:
    """One `{path, line, column}` (an end, when given, is not used)."""
    return None if (place := _place(item)) is None else Span(*place)


def parse_diagnostic(item: Mapping[str, Any]) -> Diagnostic | None:
    """One `{path, line, column, severity, message, ...}`; None when a required field is missing or wrong."""
    place, severity, message = _place(item), item.get("severity"), item.get("message")
    if place is None or not isinstance(message, str):
        return None
    known: Severity = severity if severity in SEVERITIES else "information"  # type: ignore[assignment]
    return Diagnostic(*place, known, message, _text(item, "source"), _text(item, "code"))


def parse_symbol(item: Mapping[str, Any]) -> Symbol | None:
    """One `{name, kind, path, line, column, container?}`."""
    place, name = _place(item), item.get("name")
    if place is None or not isinstance(name, str) or not name:
        return None
    return Symbol(name, _text(item, "kind").lower() or "symbol", *place, _text(item, "container"))


def parse_open_file(item: Mapping[str, Any]) -> OpenFile | None:
    """One `{path, focused, dirty}`."""
    path = wire_path(item.get("path"))
    if path is None:
        return None
    return OpenFile(path, item.get("focused") is True, item.get("dirty") is True)


def parse_list(answer: Mapping[str, Any], key: str, parse: Callable[[Mapping[str, Any]], T | None],
               method: str) -> list[T]:
    """The answer's `key` list, each entry parsed; malformed entries are dropped (and logged)."""
    items = answer.get(key)
    if isinstance(items, Mapping) and not items:
        items = []  # Neovim's JSON encoder writes an empty Lua table as `{}`
    if not isinstance(items, list):
        raise EditorUnavailable(f"the editor's answer to {method} has no `{key}` list")
    parsed = [parse(item) if isinstance(item, Mapping) else None for item in items]
    if any(p is None for p in parsed):
        logger.warning("%s: %d malformed entries dropped", method, sum(p is None for p in parsed))
    return [p for p in parsed if p is not None]


class LspEditorKnowledge:
    """The engine's EditorKnowledge, answered by the LSP client through ollie/editor/* requests."""

    def __init__(self, server: OllieServer) -> None:
        self._server = server
        self.timeout_s = request_timeout()

    async def _ask(self, method: str, params: dict[str, Any]) -> Mapping[str, Any]:
        try:
            # The editor answers by itself: a code action's command waits through it (asking.answer_held).
            answer = await ask_client(self._server.protocol, method, params, self.timeout_s, answer_first=False)
        except TimeoutError:
            raise EditorUnavailable(f"the editor did not answer {method} within {self.timeout_s:g} s") from None
        except asyncio.CancelledError:  # the turn was interrupted
            raise
        except Exception as exc:  # the client answered an error (or the connection broke)
            raise EditorUnavailable(f"the editor could not answer {method}: {exc}") from exc
        if not isinstance(answer, Mapping):
            raise EditorUnavailable(f"the editor answered {method} with {type(answer).__name__}, not an object")
        return answer

    async def diagnostics(self, paths: list[Path] | None) -> list[Diagnostic]:
        """ollie/editor/diagnostics `{paths?}` → `{diagnostics, upToDate?}`."""
        method = "ollie/editor/diagnostics"
        params: dict[str, Any] = {} if paths is None else {"paths": [str(p) for p in paths]}
        answer = await self._ask(method, params)
        found = parse_list(answer, "diagnostics", parse_diagnostic, method)
        listed = answer.get("upToDate")
        current = [p for p in (wire_path(v) for v in listed) if p is not None] if isinstance(listed, list) else []
        return DiagnosticsAnswer(found, up_to_date=frozenset(current))

    async def _ask_list(self, method: str, params: dict[str, Any], key: str,
                        parse: Callable[[Mapping[str, Any]], T | None]) -> list[T]:
        return parse_list(await self._ask(method, params), key, parse, method)

    async def definition(self, path: Path, line: int, column: int) -> list[Span]:
        """ollie/editor/definition `{path, line, column}` → `{locations}`."""
        params = {"path": str(path), "line": line, "column": column}
        return await self._ask_list("ollie/editor/definition", params, "locations", parse_span)

    async def references(self, path: Path, line: int, column: int) -> list[Span]:
        """ollie/editor/references `{path, line, column}` → `{locations}`."""
        params = {"path": str(path), "line": line, "column": column}
        return await self._ask_list("ollie/editor/references", params, "locations", parse_span)

    async def symbols(self, query: str) -> list[Symbol]:
        """ollie/editor/symbols `{query}` → `{symbols}`."""
        return await self._ask_list("ollie/editor/symbols", {"query": query}, "symbols", parse_symbol)

    async def open_files(self) -> list[OpenFile]:
        """ollie/editor/openFiles `{}` → `{files}`."""
        return await self._ask_list("ollie/editor/openFiles", {}, "files", parse_open_file)
