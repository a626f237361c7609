"""After a step changed files: wait briefly for the editor's fresh diagnostics and tell the model the new errors."""

from __future__ import annotations

import asyncio
import logging
import os
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path

from ollie import beneath
from ollie.tools.editor.answers import Workspace, diagnostic_line
from ollie.tools.editor.knowledge import Diagnostic, DiagnosticsAnswer, EditorKnowledge, EditorUnavailable

logger = logging.getLogger("ollie.tools.editor")

WAIT_ENV = "OLLIE_EDITOR_DIAGNOSTICS_WAIT_MS"
SETTLE_ENV = "OLLIE_EDITOR_DIAGNOSTICS_SETTLE_MS"
DEFAULT_WAIT_MS = 1500
DEFAULT_SETTLE_MS = 300
MAX_SHOWN = 30

# An error "is the same" across an edit when these match: lines move when code above them changes.
Key = tuple[str, str, str, str]


def wait_settings() -> tuple[float, float]:
    """(most seconds to wait, seconds between asks) from the environment; 0 wait turns the check off."""
    def millis(name: str, default: int) -> float:
        raw = os.environ.get(name, "").strip()
        try:
            value = int(raw) if raw else default
        except ValueError:
            value = default
        return max(value, 0) / 1000

    return millis(WAIT_ENV, DEFAULT_WAIT_MS), max(millis(SETTLE_ENV, DEFAULT_SETTLE_MS), 0.01)


def _key(d: Diagnostic) -> Key:
    return (os.path.realpath(d.path), d.message.strip(), d.source, d.code)


def new_errors(before: list[Diagnostic] | None, after: list[Diagnostic]) -> list[Diagnostic]:
    """The errors of `after` that `before` did not have (by message, source and code; lines may move)."""
    errors = [d for d in after if d.severity == "error"]
    if before is None:
        return errors
    had = Counter(_key(d) for d in before if d.severity == "error")
    where = {(_key(d), d.line, d.column) for d in before if d.severity == "error"}
    grew = Counter(_key(d) for d in errors)
    grew.subtract(had)
    out: list[Diagnostic] = []
    for key, extra in grew.items():
        if extra <= 0:
            continue
        same = [d for d in errors if _key(d) == key]
        # The ones at a place the old error was not are the likelier new ones.
        same.sort(key=lambda d: (_key(d), d.line, d.column) in where)
        out.extend(same[:extra])
    return sorted(out, key=lambda d: (str(d.path), d.line, d.column))


def render_new_errors(found: list[Diagnostic], ws: Workspace, *, compared: bool = True) -> str:
    """The note appended to the step's result ('' when there is nothing); `compared`: measured against before."""
    lines = [diagnostic_line(rel, d) for d in found if (rel := ws.relative(d.path)) is not None]
    if not lines:
        return ""
    errors = f"{len(lines)} {'new ' if compared else ''}error{'s' if len(lines) != 1 else ''}"
    head = f"[editor] {errors} after this change:" if compared else f"[editor] {errors} in the files this step changed:"
    if len(lines) > MAX_SHOWN:
        lines = [*lines[:MAX_SHOWN], f"... and {len(lines) - MAX_SHOWN} more (editor_diagnostics lists them all)"]
    return "\n".join([head, *lines])


def _up_to_date(answer: list[Diagnostic], files: list[Path]) -> bool:
    """Whether the editor said the answer is of every one of `files` as it is now (see DiagnosticsAnswer)."""
    if not isinstance(answer, DiagnosticsAnswer):
        return False
    current = {os.path.realpath(p) for p in answer.up_to_date}
    return all(str(f) in current for f in files)


class PostEditDiagnostics:
    """One session's check of what its edits broke: diagnostics before a step, fresh ones after it."""

    def __init__(self, editor: EditorKnowledge, cwd: Callable[[], Path]) -> None:
        self._editor = editor
        self._cwd = cwd
        # The last diagnostics seen of each file (what "new" is measured against).
        self._known: dict[str, list[Diagnostic]] = {}

    @property
    def enabled(self) -> bool:
        """Whether the check runs (OLLIE_EDITOR_DIAGNOSTICS_WAIT_MS is not 0)."""
        return wait_settings()[0] > 0

    async def _files(self, paths: list[str]) -> list[Path]:
        def existing() -> list[Path]:
            ws = Workspace(self._cwd())
            found: list[Path] = []
            for given in dict.fromkeys(paths):
                full = Path(os.path.realpath(ws.cwd / given))
                if ws.relative(full) is not None and _is_file(ws.cwd, full) and full not in found:
                    found.append(full)
            return found

        return await asyncio.to_thread(existing)

    async def _ask(self, files: list[Path], timeout: float) -> list[Diagnostic] | None:
        try:
            async with asyncio.timeout(max(timeout, 0.01)):
                return await self._editor.diagnostics(files)
        except (EditorUnavailable, TimeoutError) as exc:
            logger.info("editor diagnostics unavailable: %s", exc or "timed out")
            return None
        except Exception:  # a broken answer must not break the step it only annotates
            logger.exception("editor diagnostics failed")
            return None

    async def before(self, paths: list[str]) -> None:
        """Remember the diagnostics of `paths` (relative to the CWD) before a step changes them."""
        wait, _ = wait_settings()
        files = await self._files(paths) if wait > 0 else []
        if not files:
            return
        found = await self._ask(files, wait)
        if found is not None:
            self._remember(files, found)

    def _remember(self, files: list[Path], found: list[Diagnostic]) -> None:
        for f in files:
            self._known[str(f)] = [d for d in found if os.path.realpath(d.path) == str(f)]

    async def after(self, paths: list[str]) -> str:
        """The note on the new errors in `paths` once the editor's diagnostics settle ('' when none or off)."""
        wait, settle = wait_settings()
        files = await self._files(paths) if wait > 0 else []
        if not files:
            return ""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        baseline = [self._known.get(str(f)) for f in files]
        known_before = None if any(b is None for b in baseline) else [d for b in baseline for d in (b or [])]
        # Asked at once first: an editor that says the files' diagnostics are current (none of its servers reads
        # them, say) ends the check here, without a settle time. Else that answer may predate the edit: asked anew.
        latest = await self._ask(files, deadline - loop.time())
        if latest is not None and not _up_to_date(latest, files):
            await asyncio.sleep(min(settle, max(deadline - loop.time(), 0)))
            latest = await self._ask(files, deadline - loop.time())
        if latest is None:
            return ""
        # Ask again until two answers agree; an answer that is still the old one may just be stale, unless
        # the editor says it is of the files' content now (then an edit that changed nothing ends here).
        while not _up_to_date(latest, files) and loop.time() + settle < deadline:
            await asyncio.sleep(settle)
            again = await self._ask(files, deadline - loop.time())
            if again is None:
                break
            stale = known_before is not None and Counter(again) == Counter(known_before)
            settled = Counter(again) == Counter(latest)
            latest = again
            if settled and not stale:
                break
        fresh = [d for f, before in zip(files, baseline, strict=True)
                 for d in new_errors(before, [d for d in latest if os.path.realpath(d.path) == str(f)])]
        self._remember(files, latest)
        compared = all(before is not None for before in baseline)
        return await asyncio.to_thread(partial(render_new_errors, compared=compared), fresh, Workspace(self._cwd()))


def _is_file(root: Path, path: Path) -> bool:
    try:
        return beneath.kind_sync(root, path) == "file"
    except OSError:
        return False
