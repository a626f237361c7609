"""Hunks of a text change (difflib, no context) and the text after undoing one of them."""

from __future__ import annotations

from ollie.workspace.types import FileChange, Hunk


def compute_hunks(old: str, new: str) -> tuple[Hunk, ...]:
    """The changed regions between `old` and `new`, each its own hunk (no context, so each undoes alone)."""
    import difflib  # at the first diff, not in the daemon's start-up path

    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    out: list[Hunk] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
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
