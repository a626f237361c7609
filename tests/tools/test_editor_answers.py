"""The editor tools' pure parts: arguments and titles, workspace filtering, answers, and what counts as a new error."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ollie.tools.editor.answers import MAX_DIAGNOSTICS, Workspace, name_column, render_diagnostics, render_open_files
from ollie.tools.editor.knowledge import Diagnostic, DiagnosticsAnswer, OpenFile, Span, Symbol
from ollie.tools.editor.postedit import PostEditDiagnostics, new_errors, wait_settings
from ollie.tools.editor.queries import (
    DiagnosticsQuery,
    OpenFilesQuery,
    PositionQuery,
    SymbolsQuery,
    describe_call,
    parse_query,
)
from ollie.tools.editor.specs import EditorArgumentError


def test_arguments_take_every_documented_form() -> None:
    assert parse_query("editor_diagnostics", ()) == DiagnosticsQuery()
    assert parse_query("editor_diagnostics", ("a.ts", "src", "--all")) == DiagnosticsQuery(("a.ts", "src"), True)
    assert parse_query("editor_definition", ("a.ts", "3", "7")) == PositionQuery("definition", "a.ts", 3, 7)
    assert parse_query("editor_references", ("a.ts:3:7",)) == PositionQuery("references", "a.ts", 3, 7)
    assert parse_query("editor_definition", ("--symbol=add",)) == PositionQuery("definition", symbol="add")
    assert parse_query("editor_references", ("--symbol", "add", "u.ts")) == PositionQuery("references", "u.ts",
                                                                                           symbol="add")
    assert parse_query("editor_symbols", ("add", "All")) == SymbolsQuery("add All")
    assert parse_query("editor_open_files", ()) == OpenFilesQuery()


@pytest.mark.parametrize(("tool", "args", "says"), [
    ("editor_definition", ("a.ts", "3"), "PATH LINE COLUMN"),
    ("editor_definition", ("a.ts", "0", "1"), "LINE must be a number from 1"),
    ("editor_references", ("a.ts", "3", "x"), "COLUMN must be a number from 1"),
    ("editor_definition", ("--symbol=",), "--symbol=NAME"),
    ("editor_definition", ("--symbol",), "--symbol needs a name"),
    ("editor_diagnostics", ("--errors",), "unknown option --errors"),
    ("editor_symbols", (), "give a QUERY"),
    ("editor_open_files", ("x",), "takes no arguments"),
])
def test_bad_arguments_say_how_to_call_the_tool(tool: str, args: tuple[str, ...], says: str) -> None:
    with pytest.raises(EditorArgumentError, match=says.replace("(", r"\(")):
        parse_query(tool, args)


def test_titles_read_like_a_person_wrote_them() -> None:
    rel = {"/ws/src/a.ts": "src/a.ts"}.get
    assert describe_call("editor_diagnostics", ("/ws/src/a.ts", "b.ts"), lambda p: rel(p) or p).title == (
        "Diagnostics for src/a.ts and 1 more")
    assert describe_call("editor_definition", ("a.ts", "3", "7")).locations == (("a.ts", 3),)
    assert describe_call("editor_references", ("--symbol=add",)).title == "References to `add`"
    bad = describe_call("editor_definition", ("a.ts",))
    assert (bad.kind, bad.title) == ("search", "Ask the editor (editor_definition)")


def test_the_workspace_keeps_its_own_paths_and_follows_symlinks(tmp_path: Path) -> None:
    ws_dir, outside = tmp_path / "ws", tmp_path / "out"
    (ws_dir / "src").mkdir(parents=True)
    outside.mkdir()
    (ws_dir / "escape").symlink_to(outside)
    ws = Workspace(ws_dir)
    assert ws.relative(ws_dir / "src" / "a.ts") == "src/a.ts"
    assert ws.relative(outside / "x.ts") is None
    assert ws.relative(ws_dir / "escape" / "x.ts") is None  # inside by name, outside in fact
    assert ws.relative(tmp_path / "ws2" / "a.ts") is None  # a sibling sharing the prefix
    with pytest.raises(EditorArgumentError, match="outside the workspace"):
        ws.resolve("../out/x.ts")
    assert ws.resolve("src/a.ts") == ws_dir / "src" / "a.ts"


def _diag(path: Path, line: int, message: str, severity: str = "error", **extra: str) -> Diagnostic:
    return Diagnostic(path, line, 1, severity, message, **extra)  # type: ignore[arg-type]


def test_diagnostics_come_errors_first_capped_with_a_summary(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    found = [_diag(b, 9, "unused", "warning"), _diag(a, 2, "bad\ntype", source="pyright", code="x1"),
             _diag(a, 1, "hint", "hint"), _diag(Path("/elsewhere/c.py"), 1, "secret")]
    text = render_diagnostics(found, ws, DiagnosticsQuery(), None)
    assert text == ("a.py:2:1: error: bad\n    type [pyright x1]\nb.py:9:1: warning: unused\n"
                    "1 error, 1 warning in 2 files")
    assert "a.py:1:1: hint: hint" in render_diagnostics(found, ws, DiagnosticsQuery((), True), None)
    only_b = render_diagnostics(found, ws, DiagnosticsQuery(("b.py",)), [b])
    assert only_b.startswith("b.py:9:1: warning") and "a.py" not in only_b
    many = render_diagnostics([_diag(a, n, f"e{n}") for n in range(1, MAX_DIAGNOSTICS + 6)], ws, DiagnosticsQuery(),
                              None)
    assert f"... and 5 more diagnostics not shown; narrow the request\n{MAX_DIAGNOSTICS + 5} errors in 1 file" in many
    assert render_diagnostics([], ws, DiagnosticsQuery(("a.py",)), [a]).startswith("no errors or warnings in a.py")


def test_open_files_mark_the_focused_and_unsaved_ones(tmp_path: Path) -> None:
    files = [OpenFile(tmp_path / "a.py", focused=True), OpenFile(tmp_path / "b.py", dirty=True),
             OpenFile(Path("/elsewhere/c.py"), dirty=True)]
    assert render_open_files(files, Workspace(tmp_path)) == "a.py (focused)\nb.py (unsaved changes)"


def test_a_symbol_is_asked_about_at_its_name_not_at_the_start_of_its_range() -> None:
    assert name_column("export function add(a, b) {", "add", 1) == 17
    assert name_column("def add(): add()", "add", 9) == 12
    assert name_column(None, "add", 4) == 4


def test_new_errors_are_counted_by_message_so_moved_lines_are_not_new(tmp_path: Path) -> None:
    f = tmp_path / "a.ts"
    before = [_diag(f, 3, "old"), _diag(f, 10, "twice"), _diag(f, 1, "a warning", "warning")]
    after = [_diag(f, 5, "old"), _diag(f, 10, "twice"), _diag(f, 2, "twice"), _diag(f, 4, "brand new"),
             _diag(f, 6, "another warning", "warning")]
    assert [(d.line, d.message) for d in new_errors(before, after)] == [(2, "twice"), (4, "brand new")]
    assert len(new_errors(None, after)) == 4  # nothing known before: every error is news


def test_wait_settings_come_from_the_environment_with_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLIE_EDITOR_DIAGNOSTICS_WAIT_MS", raising=False)
    monkeypatch.delenv("OLLIE_EDITOR_DIAGNOSTICS_SETTLE_MS", raising=False)
    assert wait_settings() == (1.5, 0.3)
    monkeypatch.setenv("OLLIE_EDITOR_DIAGNOSTICS_WAIT_MS", "0")
    assert wait_settings()[0] == 0
    monkeypatch.setenv("OLLIE_EDITOR_DIAGNOSTICS_WAIT_MS", "soon")
    monkeypatch.setenv("OLLIE_EDITOR_DIAGNOSTICS_SETTLE_MS", "20")
    assert wait_settings() == (1.5, 0.02)


class SlowServer:
    """An editor whose language server republishes a while after the file changed (the rest it never knows)."""

    def __init__(self, path: Path, lag: float) -> None:
        self.path, self.lag = path, lag
        self.changed_at: float | None = None
        self.asked = 0

    async def diagnostics(self, paths: list[Path] | None) -> list[Diagnostic]:
        self.asked += 1
        found = [_diag(self.path, 1, "old problem")]
        loop = asyncio.get_running_loop()
        if self.changed_at is not None and loop.time() - self.changed_at >= self.lag:
            found.append(_diag(self.path, 2, "what the edit broke"))
        return found

    async def definition(self, path: Path, line: int, column: int) -> list[Span]:
        return []

    async def references(self, path: Path, line: int, column: int) -> list[Span]:
        return []

    async def symbols(self, query: str) -> list[Symbol]:
        return []

    async def open_files(self) -> list[OpenFile]:
        return []


async def test_the_check_waits_past_a_stale_answer_for_the_republished_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "a.ts"
    target.write_text("x\n")
    editor = SlowServer(target, lag=0.25)
    monkeypatch.setenv("OLLIE_EDITOR_DIAGNOSTICS_WAIT_MS", "800")
    monkeypatch.setenv("OLLIE_EDITOR_DIAGNOSTICS_SETTLE_MS", "50")
    check = PostEditDiagnostics(editor, lambda: tmp_path)
    await check.before(["a.ts"])
    editor.changed_at = asyncio.get_running_loop().time()
    note = await check.after(["a.ts", "gone.ts", "../outside.ts"])
    # The first answers were the old ones (the server had not redone the file yet): it asked on. Asked once before,
    # at least once while stale and once more for the new answer; how many stale ones depends on the machine's load.
    assert note == "[editor] 1 new error after this change:\na.ts:2:1: error: what the edit broke"
    assert editor.asked >= 3
    # A later change that breaks nothing more says nothing, and gives up at the wait's end: asked at most once per
    # settle time (50 ms) within the 800 ms wait, however slow the machine (a longer wait would ask more).
    asked_before = editor.asked
    assert await asyncio.wait_for(check.after(["a.ts"]), 30) == ""
    assert editor.asked - asked_before <= 800 // 50 + 1, editor.asked - asked_before


class CurrentEditor(SlowServer):
    """An editor that says its answer is of the files as they are now (VS Code for a file no server reads)."""

    async def diagnostics(self, paths: list[Path] | None) -> list[Diagnostic]:
        found = await super().diagnostics(paths)
        return DiagnosticsAnswer(found, up_to_date=frozenset(paths or []))


async def test_an_answer_the_editor_says_is_current_ends_the_check_at_once_without_a_settle_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "notes.md").write_text("x\n")
    editor = CurrentEditor(tmp_path / "notes.md", lag=0)
    # A settle time far past the bound below: only an answer taken at once ends the check within it.
    monkeypatch.setenv("OLLIE_EDITOR_DIAGNOSTICS_WAIT_MS", "120000")
    monkeypatch.setenv("OLLIE_EDITOR_DIAGNOSTICS_SETTLE_MS", "60000")
    check = PostEditDiagnostics(editor, lambda: tmp_path)
    await check.before(["notes.md"])
    assert await asyncio.wait_for(check.after(["notes.md"]), 30) == ""
    assert editor.asked == 2  # once before the step, once after it


async def test_a_wait_of_zero_asks_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.ts").write_text("x\n")
    editor = SlowServer(tmp_path / "a.ts", lag=0)
    monkeypatch.setenv("OLLIE_EDITOR_DIAGNOSTICS_WAIT_MS", "0")
    check = PostEditDiagnostics(editor, lambda: tmp_path)
    await check.before(["a.ts"])
    assert not check.enabled and await check.after(["a.ts"]) == "" and editor.asked == 0


async def test_files_nobody_asked_about_before_the_step_get_every_error_said_plainly(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.ts").write_text("x\n")
    editor = SlowServer(tmp_path / "a.ts", lag=0)
    editor.changed_at = 0.0
    monkeypatch.setenv("OLLIE_EDITOR_DIAGNOSTICS_SETTLE_MS", "20")
    check = PostEditDiagnostics(editor, lambda: tmp_path)
    # A script changed the file (no edit step named it): what was there before is not known.
    assert await check.after(["a.ts"]) == ("[editor] 2 errors in the files this step changed:\n"
                                           "a.ts:1:1: error: old problem\na.ts:2:1: error: what the edit broke")
