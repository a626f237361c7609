"""Shebang parsing, script languages, and how outcomes are rendered for the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from ollie.tools.execute.languages import LanguageError, language, parse_shebang, script_language
from ollie.tools.execute.results import Section, render, status_line
from ollie.tools.execute.spawn import RunOutcome


@pytest.mark.parametrize(
    ("line", "program", "flags"),
    [
        ("#!/bin/bash", "bash", ()),
        ("#!/usr/bin/env bash", "bash", ()),
        ("#!/usr/bin/env -S python3 -I", "python3", ("-I",)),
        ("#!/usr/bin/perl -w", "perl", ("-w",)),
        ("#!/usr/bin/awk -f", "awk", ("-f",)),
    ],
)
def test_parse_shebang(line: str, program: str, flags: tuple[str, ...]) -> None:
    shebang = parse_shebang(line)
    assert shebang is not None and (shebang.program, shebang.flags) == (program, flags)


def test_script_language_from_shebang_or_extension() -> None:
    assert script_language(Path("t"), "#!/usr/bin/python3.11")[0].name == "python3"
    lang, flags = script_language(Path("t"), "#!/usr/bin/awk -f")
    assert lang.name == "awk" and flags == ()
    assert script_language(Path("t.jq"), ".name")[0].name == "jq"
    assert script_language(Path("t.sh"), "echo")[0].name == "bash"
    with pytest.raises(LanguageError, match="no #! line and no known extension"):
        script_language(Path("t.txt"), "hello")
    with pytest.raises(LanguageError, match="unknown language 'node'"):
        script_language(Path("t"), "#!/usr/bin/env node")
    assert language("sh").name == "bash" and language("Python").name == "python3"


def test_status_lines() -> None:
    assert status_line(RunOutcome(exit_code=0)) == "exit 0"
    assert status_line(RunOutcome(exit_code=-9)) == "killed by signal 9"
    assert status_line(RunOutcome(timed_out=True), timeout=2) == "timed out after 2 s; its process group was killed"
    assert status_line(RunOutcome(error="boom")) == "error: boom"


def test_render_shows_warnings_and_which_stream_was_cut() -> None:
    outcome = RunOutcome(stdout=b"ok\n", stderr=b"e" * 8, exit_code=0, truncated=True,
                         warnings=["Landlock is not available: ran unsandboxed"])
    text = render(Section("step 1 bash", outcome), limit=8, timeout=None)
    assert text.splitlines() == [
        "[step 1 bash] exit 0",
        "ok",
        "[stderr]",
        "eeeeeeee",
        "[warning] Landlock is not available: ran unsandboxed",
        "[note] stderr truncated: only the first 8 bytes per stream are shown; read on from byte 9 "
        "(`| tail -c +9`), or narrow the command (head, grep, sed -n, file_read --offset)",
    ]
    assert render(Section("step 2", None, "skipped: an earlier step failed"), limit=8, timeout=None) == (
        "[step 2] skipped: an earlier step failed"
    )
    assert "\ufffd" in render(Section("x", RunOutcome(stdout=b"\xff", exit_code=0)), limit=8, timeout=None)
