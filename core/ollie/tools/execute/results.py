"""Turning process outcomes into the text a model reads: status, stdout, stderr, notes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ollie.backend.types import Image
from ollie.sandbox.networds import verdict_words
from ollie.tools.execute.spawn import RunOutcome


def _size(limit: int) -> str:
    return f"{limit // 1024} KB" if limit >= 1024 and limit % 1024 == 0 else f"{limit} bytes"


def status_line(outcome: RunOutcome, *, timeout: float | None = None) -> str:
    """`exit 0`, `exit 2`, `killed by signal 9`, `timed out ...` or `error: ...`."""
    if outcome.error is not None:
        return f"error: {outcome.error}"
    if outcome.timed_out:
        after = f" after {timeout:g} s" if timeout is not None else ""
        return f"timed out{after}; its process group was killed"
    code = outcome.exit_code
    if code is not None and code < 0:
        return f"killed by signal {-code}"
    return f"exit {code}"


def network_line(connection: dict) -> str:
    """One connection through the egress proxy: `pypi.org:443 allowed: on the allow list, sent 1.2 KB, received 3 MB`; a
    step's connections past the recorded ones as one: `... 99900 more connections (99900 denied), sent 0 B, ...`."""
    def size(n: int) -> str:
        return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KB" if n < 1 << 20 else f"{n / (1 << 20):.1f} MB"

    how = connection.get("how") or ""
    what = (f"... {connection['more']} more connections" + (f" ({how})" if how else "") if connection.get("more")
            else f"{connection['host']}:{connection['port']} {verdict_words(connection['verdict'], how)}")
    line = f"{what}, sent {size(connection['sent'])}, received {size(connection['received'])}"
    line += f"; {connection['error']}" if connection.get("error") else ""
    return line + (f"; the user's feedback: {connection['feedback']}" if connection.get("feedback") else "")


# Where a line starts for a model (and `str.splitlines`): after a `\n`, `\r`, form feed, U+2028..., then any blanks; the
# blanks are no line break, so each is scanned once (linear, however many breaks or blanks a step prints).
_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
LINE_HEAD = rf"(?:^|(?<=[{_BREAKS}]))[^\S\n{_BREAKS}]*"
LINE_REST = rf"[^\n{_BREAKS}]*"
# How `render` starts a line of its own: a section's `[step 2 bash] exit 0` (or `call`, `stage`), `[stderr]`,
# `[warning]`, `[note]`, `[network]`. A line a step prints so would read as another section of the same result.
_FORGED_HEAD = re.compile(rf"{LINE_HEAD}\[(?:(?:step|call|stage) \d[^]\n{_BREAKS}]*|stderr|warning|note|network)\]"
                          rf"{LINE_REST}", re.MULTILINE)


def _own(text: str) -> str:
    return _FORGED_HEAD.sub(lambda m: m[0].rstrip() + " (this line is the step's output)", text)


@dataclass(eq=False, repr=False)
class Section:
    """One labelled run inside a result: its header label and what it did (None when it did not run)."""

    label: str
    outcome: RunOutcome | None
    note: str = ""
    show_stdout: bool = True
    images: list[Image] = field(default_factory=list)  # what file_read showed the model


def render(section: Section, *, limit: int, timeout: float | None) -> str:
    """One section as text: `[label] status`, stdout, `[stderr]` + stderr, warnings and cap notes."""
    outcome = section.outcome
    if outcome is None:
        return f"[{section.label}] {section.note}"
    lines = [f"[{section.label}] {status_line(outcome, timeout=timeout)}"]
    # Right under the status: a preview of the result (ACP's, an editor's step line) shows them before the output.
    lines += [f"[network] {network_line(c)}" for c in outcome.network]
    out, err = (_own(data.decode("utf-8", errors="replace")) for data in (outcome.stdout, outcome.stderr))
    if section.show_stdout and out:
        lines.append(out.rstrip("\n"))
    if err:
        lines.append("[stderr]")
        lines.append(err.rstrip("\n"))
    for warning in outcome.warnings:
        lines.append(f"[warning] {warning}")
    if outcome.truncated:
        streams = [name for name, data in (("stdout", outcome.stdout), ("stderr", outcome.stderr)) if len(data) >= limit]
        which = " and ".join(streams) or "output"
        lines.append(
            f"[note] {which} truncated: only the first {_size(limit)} per stream are shown; read on from byte "
            f"{limit + 1} (`| tail -c +{limit + 1}`), or narrow the command (head, grep, sed -n, file_read --offset)"
        )
    if section.note:
        lines.append(f"[note] {section.note}")
    return "\n".join(lines)


def render_all(sections: list[Section], *, limit: int, timeout: float | None) -> str:
    """Every section, one after another; one that failed after another ran is named first (`step 2 bash: exit 1`)."""
    # Every front end folds a result to its first line: a batch's was its first step's `exit 0` when a later one failed.
    bad = next((s for s in sections if s.outcome is not None and not s.outcome.ok), None)
    head = [f"{bad.label}: {status_line(bad.outcome, timeout=timeout)}"] if bad and bad.outcome and bad is not sections[0] else []
    return "\n".join(head + [render(s, limit=limit, timeout=timeout) for s in sections])
