"""Hunks of a text change (difflib, no context) and the text after undoing one of them."""

from __future__ import annotations

from ollie.workspace.types import FileChange, Hunk

# The steps a diff may take looking for matching lines (~1 us each): each search of a region walks every place in
# `new` of each line of `old` there, so lines repeated many times made it cubic (2,000 lines took 4 minutes).
DIFF_STEPS = 1_000_000
# A side of more lines than this is not diffed: its change has no hunks (undone whole, as a binary one is). The diff
# holds several objects per line: a 1 MiB file of empty lines took 300 MB and 3 s, an editor's 16 MiB buffer ~2 GB.
MAX_DIFF_LINES = 100_000
_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"  # where str.splitlines splits (a CRLF counts twice: never fewer)


def compute_hunks(old: str, new: str) -> tuple[Hunk, ...]:
    """The changed regions between `old` and `new`, each its own hunk (no context, so each undoes alone); none past
    MAX_DIFF_LINES."""
    if any(sum(map(text.count, _BREAKS)) > MAX_DIFF_LINES for text in (old, new)):
        return ()
    import bisect
    import difflib  # at the first diff, not in the daemon's start-up path

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
