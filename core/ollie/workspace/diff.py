"""Hunks of a text change (difflib, no context) and the text after undoing one of them."""

from __future__ import annotations

import bisect
import difflib  # this module loads at the first diff, not in the daemon's start-up path

from ollie.workspace.types import FileChange, Hunk

# The steps a diff may take looking for matching lines (~1 us each): each search of a region walks every place in
# `new` of each line of `old` there, so lines repeated many times made it cubic (2,000 lines took 4 minutes).
DIFF_STEPS = 1_000_000
# A side of more lines than this is not diffed: its change has no hunks (undone whole, as a binary one is). The diff
# holds several objects per line: a 1 MiB file of empty lines took 300 MB and 3 s, an editor's 16 MiB buffer ~2 GB.
MAX_DIFF_LINES = 100_000
_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"  # where str.splitlines splits (a CRLF counts twice: never fewer)


class Bounded(difflib.SequenceMatcher[str]):
    """Past DIFF_STEPS, a region still to search is one change (coarser hunks, never hours of CPU)."""

    a: list[str]
    b: list[str]
    b2j: dict[str, list[int]]  # each line's places in b, in order (set by SequenceMatcher)
    steps = DIFF_STEPS

    def find_longest_match(self, alo: int = 0, ahi: int | None = None, blo: int = 0,
                           bhi: int | None = None) -> difflib.Match:
        ahi, bhi = len(self.a) if ahi is None else ahi, len(self.b) if bhi is None else bhi
        # What the search walks: for each line of a[alo:ahi], its places in b before bhi.
        self.steps -= ahi - alo + sum(bisect.bisect_left(self.b2j.get(line, ()), bhi) for line in self.a[alo:ahi])
        return super().find_longest_match(alo, ahi, blo, bhi) if self.steps >= 0 else difflib.Match(alo, blo, 0)


def compute_hunks(old: str, new: str) -> tuple[Hunk, ...]:
    """The changed regions between `old` and `new`, each its own hunk (no context, so each undoes alone); none past
    MAX_DIFF_LINES."""
    if any(sum(map(text.count, _BREAKS)) > MAX_DIFF_LINES for text in (old, new)):
        return ()
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    out: list[Hunk] = []
    matcher = Bounded(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        lines = tuple(["-" + line for line in a[i1:i2]] + ["+" + line for line in b[j1:j2]])
        # Unified numbering: a side with no lines names the line before the change.
        out.append(Hunk(old_start=i1 + 1 if i2 > i1 else i1, old_lines=i2 - i1,
                        new_start=j1 + 1 if j2 > j1 else j1, new_lines=j2 - j1, lines=lines))
    return tuple(out)


def line_counts(change: FileChange) -> tuple[int, int]:
    """Lines `change` added and removed: its hunks'; for a text past MAX_DIFF_LINES (no hunks), the lines between
    those both sides begin and end with, found without a matcher (a valid diff's counts, coarser than difflib's)."""
    if change.hunks or change.binary or change.old_text == change.new_text:
        return sum(h.new_lines for h in change.hunks), sum(h.old_lines for h in change.hunks)
    old, new = change.old_text or "", change.new_text or ""
    head = _common(old, new, 1)
    while not (_starts_line(old, head) and _starts_line(new, head)):
        head = max(old.rfind(br, 0, head - 1) for br in _BREAKS) + 1  # back to whole lines
    old, new = old[head:], new[head:]
    tail = _common(old, new, -1)
    ends = len(old) - tail
    if not (_starts_line(old, ends) and _starts_line(new, len(new) - tail)):
        # The shared tail begins inside a line: it is whole lines from the break after that.
        starts = [at + 1 for br in _BREAKS if (at := old.find(br, ends)) >= 0 and old[at:at + 2] != "\r\n"]
        tail = len(old) - min(starts) if starts else 0
    return _lines(new[:len(new) - tail]), _lines(old[:len(old) - tail])


def _starts_line(text: str, at: int) -> bool:
    """Whether a line of `text` starts at `at` (a CRLF is one break)."""
    return at == 0 or text[at - 1] in _BREAKS and text[at - 1:at + 1] != "\r\n"


def _common(a: str, b: str, way: int) -> int:
    """How many characters `a` and `b` share at their start (way 1) or end (-1): compared a block at a time in C."""
    n, block = 0, 1 << 16
    while (size := min(block, len(a) - n, len(b) - n)) > 0:
        if (a[n:n + size] == b[n:n + size]) if way > 0 else (a[len(a) - n - size:len(a) - n] ==
                                                             b[len(b) - n - size:len(b) - n]):
            n += size
        elif size == 1:
            break
        else:
            block = size // 2  # narrowing to the first differing character: log2(block) halvings
    return n


def _lines(text: str) -> int:
    """The lines of `text` (str.splitlines's count: a CRLF one break), counted without splitting it."""
    return sum(map(text.count, _BREAKS)) - text.count("\r\n") + (bool(text) and text[-1] not in _BREAKS)


def text_after_undo(change: FileChange, hunk_index: int | None) -> str | None:
    """The file's text once hunk `hunk_index` (None: the whole file) of `change` is undone; None means no file."""
    if hunk_index is None:
        if change.binary:
            raise ValueError(f"{change.path}: a binary file is undone as bytes (restore_bytes), not as text")
        return change.old_text
    if change.binary or change.new_text is None or change.old_text is None:
        raise ValueError(f"{change.path}: only a text file changed in place has hunks (undo the whole file)")
    if not 0 <= hunk_index < len(change.hunks):
        raise IndexError(f"{change.path}: no hunk {hunk_index} (it has {len(change.hunks)})")
    hunk = change.hunks[hunk_index]
    new = change.new_text.splitlines(keepends=True)
    start = hunk.new_start - 1 if hunk.new_lines else hunk.new_start
    old_lines = [line[1:] for line in hunk.lines if line.startswith("-")]
    return "".join(new[:start] + old_lines + new[start + hunk.new_lines:])


def undo_onto(change: FileChange, hunk_index: int | None, current: str) -> str | None:
    """`current` (the file edited since `change`, by the user or a later turn) with hunk `hunk_index` (None: every
    hunk) of `change` undone; None when an edit since touched that hunk's lines (its undo would lose or misplace it)."""
    if change.binary or change.new_text is None or change.old_text is None or not change.hunks:
        return None
    if sum(map(current.count, _BREAKS)) > MAX_DIFF_LINES:
        return None
    new = change.new_text.splitlines(keepends=True)
    now = current.splitlines(keepends=True)
    # What changed since the turn, as places in the turn's text: a hunk none of them reaches moves, unchanged, by the
    # lines they added and removed before it.
    since = [(i1, i2, (j2 - j1) - (i2 - i1))
             for tag, i1, i2, j1, j2 in Bounded(None, new, now, autojunk=False).get_opcodes() if tag != "equal"]
    picked = change.hunks if hunk_index is None else (change.hunks[hunk_index],)
    for hunk in reversed(picked):  # from the last: an undone hunk does not move those before it
        start = hunk.new_start - 1 if hunk.new_lines else hunk.new_start
        end = start + hunk.new_lines
        # A hunk that only removed lines is a point: an edit since at or around it leaves no sure place to put them.
        if any((i1 < end and i2 > start) or (start == end and i1 <= start <= i2) for i1, i2, _ in since):
            return None
        at = start + sum(moved for _, i2, moved in since if i2 <= start)
        now[at:at + hunk.new_lines] = [line[1:] for line in hunk.lines if line.startswith("-")]
    return "".join(now)
