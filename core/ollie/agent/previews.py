"""Diff previews for questions about file edits and writes: the new text known before the step runs, read from the
editor's buffer or the disk (through the chokepoint, small files only)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from ollie import beneath
from ollie.agent.questions import StepQuestion
from ollie.agent.steps import Diff
from ollie.tools.execute.fileargs import FileArgsError, parse_file_call

if TYPE_CHECKING:
    from ollie.tools.documents import EditorDocuments
    from ollie.tools.execute.args import ScriptCall

DIFF_PREVIEW_MAX_BYTES = 512 * 1024
PREVIEWED = frozenset({"file_write", "file_edit"})  # the tools whose new text a question previews
# A batch question's diff previews (`diffs`): of its first this many edits, up to the first past the bytes left.
BATCH_DIFFS = 32
BATCH_DIFF_BYTES = 2 * DIFF_PREVIEW_MAX_BYTES


async def with_diff(q: StepQuestion, script: ScriptCall | None, cwd: Path, documents: EditorDocuments | None,
                     batch: dict[str, Diff | None]) -> StepQuestion:
    """The question with a diff preview when the new text can be known before running (file_write, file_edit);
    `batch`: the last preview of each file its call's earlier edits changed (None: not known), which this one edits."""
    if script is None or script.tool not in PREVIEWED:
        return q
    try:
        call = parse_file_call(script.tool, script.args)  # the path the tool will act on, parsed as it does
    except FileArgsError:
        return q
    if not beneath.inside(cwd, call.path):
        return q  # the daemon reads nothing outside the workspace, not even for a preview
    # A call's second edit of a file edits what its first left, not the disk's text (which showed another change);
    # the file tools follow links (`realpath`), so an edit through one edits the file it leads to (only a key here).
    key = await asyncio.to_thread(os.path.realpath, cwd / call.path)
    seen, earlier = key in batch, batch.get(key)
    batch[key] = None  # until this preview is made
    if seen and earlier is None:
        return q  # an earlier edit of it has no preview: what this one edits is not known
    old = earlier.new_text if earlier is not None else await _editor_text(documents, cwd / call.path)
    if old is None and earlier is None:
        try:
            old = await read_small(cwd, call.path)
        except (OSError, UnicodeDecodeError):
            return q  # there, but too big, binary or no regular file: no preview, never one of a new file
    if call.tool == "file_write":
        if call.content == "-":
            return q  # the text comes on stdin: not known here
        new = call.content or ""
    else:
        if old is None or not call.old or old.count(call.old) != 1 and not (call.all and call.old in old):
            return q  # it fails: not found, or found twice without `--all`
        # The result's size before it is made (here, unsandboxed, on the loop): `--all` of one character made 5 GB.
        grows = (old.count(call.old) if call.all else 1) * (len(call.new or "") - len(call.old))
        if len(old) + grows > DIFF_PREVIEW_MAX_BYTES:
            return q
        new = old.replace(call.old, call.new or "", -1 if call.all else 1)
    batch[key] = Diff(q.locations[0].path if q.locations else call.path, old, new)
    return attrs.evolve(q, diff=batch[key])


async def with_diffs(q: StepQuestion, edits: Sequence[tuple[StepQuestion, ScriptCall, bool]], cwd: Path,
                     documents: EditorDocuments | None) -> StepQuestion:
    """A batch's question with previews of its first BATCH_DIFFS file edits and writes (`edits`: each one's question,
    call, and whether a step before it may write files as no preview knows), as one's (`with_diff`), up to the first
    whose texts pass what is left of BATCH_DIFF_BYTES (a 256-edit batch of big files is read no further), one a file
    (what its edits of it do, each on what the one before left); `diffs_more` counts its edits left without one."""
    shown: dict[str, Diff] = {}
    previewed, batch = 0, dict[str, Diff | None]()
    for question, script, after_writes in edits[:BATCH_DIFFS]:
        if after_writes:
            break
        diff = (await with_diff(question, script, cwd, documents, batch)).diff
        if diff is None:
            continue
        if (first := shown.get(diff.path)) is not None:  # one diff a file: what the batch's edits of it do together
            diff = Diff(diff.path, first.old_text, diff.new_text)
        if sum(len(d.old_text or "") + len(d.new_text or "") for d in {**shown, diff.path: diff}.values()) > BATCH_DIFF_BYTES:
            break
        shown[diff.path], previewed = diff, previewed + 1
    return attrs.evolve(q, diffs=tuple(shown.values()), diffs_more=len(edits) - previewed)


async def _editor_text(documents: EditorDocuments | None, path: Path) -> str | None:
    """The editor's text of an open file (the user's unsaved text, which the edit changes: the disk's lacked what they
    typed, and an edit of it was asked about with no diff), when not too big for a preview."""
    try:
        held = None if documents is None else await documents.text(path)
    except Exception:  # a preview is no reason to fail the step: the disk's text is shown instead
        return None
    return held[0] if held is not None and len(held[0].encode()) <= DIFF_PREVIEW_MAX_BYTES else None


async def read_small(root: Path, path: str) -> str | None:
    """The file's text for a preview, through the chokepoint (None: absent); OSError for a symlink, FIFO, device or big
    file."""
    try:
        return await beneath.read_text(root, path, DIFF_PREVIEW_MAX_BYTES)
    except FileNotFoundError:
        return None

