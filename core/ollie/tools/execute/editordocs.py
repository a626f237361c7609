"""The file tools on documents open in the editor: run on a copy of the unsaved text, edits applied to the buffer.

The tools run as always but on a copy of the editor's text (OLLIE_EDITOR_COPY). A write goes to the editor
(`EditorDocuments.apply`, refused when the document changed since the model saw it), then to the disk so the
next command sees it: saved by the editor, or written here when the buffer held what the disk holds. A buffer
with the user's unsaved changes is never written behind their back; the model is told.
"""

from __future__ import annotations

import asyncio
import os
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ollie import beneath
from ollie.tools.documents import STALE, UNREAD, EditorDocuments, Version, disk_holds, plain_path_beneath
from ollie.tools.execute.args import ScriptCall
from ollie.tools.execute.childenv import EDITOR_COPY_ENV
from ollie.tools.execute.fileargs import FILE_TOOLS, FileArgsError, parse_file_call
from ollie.tools.execute.languages import with_env
from ollie.tools.execute.sandboxnotes import outside_note
from ollie.tools.execute.tool import ToolNameError, ToolScript, find_script

if TYPE_CHECKING:  # the call machinery loads with the first call (server.py)
    from ollie.tools.execute.context import CallContext
    from ollie.tools.execute.results import Section


def _write_copy(directory: Path, name: str, text: str) -> Path:
    """A copy of the editor's text in the session's tmp dir, created through the chokepoint."""
    copy = f".editor-{os.urandom(8).hex()}-{name}"[:255]
    beneath.write_bytes_sync(directory, copy, text.encode("utf-8", errors="surrogatepass"), 0o600)
    return directory / copy


def _read_copy(copy: Path) -> str:
    """The tool's result copy, read outside the sandbox: tool code can write its dir, so through the chokepoint
    (never a symlink, a FIFO or a device it put there; a regular file or nothing)."""
    return beneath.read_text_sync(copy.parent, copy.name, errors="replace")


@dataclass(eq=False, repr=False)
class DocumentBridge:
    """One session's view of the editor's documents: what the model last saw of each, to refuse stale edits."""

    documents: EditorDocuments | None = None
    # path -> (version, text) the model last read or wrote (version None: known by text only).
    seen: dict[Path, tuple[Version | None, str]] = field(default_factory=dict)

    def target(self, call: ScriptCall, script: ToolScript, cwd: Path) -> Path | None:
        """The file a sandboxed file-tool call names (resolved against `cwd`), or None when the editor is not asked."""
        # The bundled tools only, by where they were found: a project's `file_read` ahead of them on the tools path
        # (the model's own script) got the copy of her buffer, and a `file_edit` of its own wrote it.
        if self.documents is None or call.elevated or script.name not in FILE_TOOLS or not script.bundled():
            return None
        try:
            raw = parse_file_call(script.name, call.args).path  # the request's canonical form: one path
        except FileArgsError:
            return None
        if not beneath.inside(cwd, raw):
            return None  # the editor is asked only about files beneath the workspace
        return cwd / beneath.relative(cwd, raw)

    def stale(self, path: Path, text: str, version: Version) -> bool:
        """Whether the document moved on since the model last saw it (an unread document is not stale)."""
        seen = self.seen.get(path)
        return seen is not None and seen[0] != version and seen[1] != text

    async def run(self, ctx: CallContext, call: ScriptCall, script: ToolScript, label: str) -> Section | None:
        """Run a file-tool call against the editor's document; None when `path` is not an open document."""
        from ollie.tools.execute.results import Section
        from ollie.tools.execute.spawn import RunOutcome
        named = self.target(call, script, ctx.runner.cwd)
        # The one resolve of the name: the policy check, the editor's lookup and the copy all take this
        # real path, never the name, which a step of this batch or another session's may swap for a link meanwhile.
        # (A copy in a dir only this call reads would not do: the tool's own check of the name races alike, then
        # prints the copy.)
        path = None if named is None else await plain_path_beneath(ctx.runner.cwd, named)
        if path is None or self.documents is None:
            return None
        writes = script.name != "file_read"
        # The copy sits in the session's TMPDIR, which its every step reads (a read-only tool run beside this one
        # printed it), from before the tool's own check: a path the policy keeps from steps runs on the disk alone,
        # where that check and Landlock refuse it.
        if ctx.policy is not None and await asyncio.to_thread(outside_note, ctx.policy, str(path), write=writes,
                                                              resolved=True):
            return None
        got = await self.documents.text(path)
        if got is None:
            self.seen.pop(path, None)
            return None
        text, version = got
        if writes and self.stale(path, text, version):
            return Section(label, RunOutcome(error=f"{script.name}: {path}: {STALE}"))
        # A whole-file write of a document it never saw (or saw in turns a rewind cut) would drop the user's unsaved
        # typing in it: the model reads it first, and then writes knowing her text.
        if script.name == "file_write" and path not in self.seen and not await asyncio.to_thread(
                disk_holds, path, text):
            return Section(label, RunOutcome(error=f"{script.name}: {path}: {UNREAD}"))
        copy = await asyncio.to_thread(_write_copy, ctx.runner.dirs.tmp, path.name, text)
        try:
            outcome = await ctx.run_locked(
                script.parallel or "global", with_env(ctx.script_invocation(call, script, None), EDITOR_COPY_ENV, str(copy)),
                elevated=False, what=shlex.join([script.name, *call.args]),
            )
            if not outcome.ok:
                return Section(label, outcome)
            if not writes:
                self.seen[path] = (version, text)
                return Section(label, outcome)
            try:
                new_text = await asyncio.to_thread(_read_copy, copy)
            except OSError as exc:  # tool code swapped the copy (a symlink, a FIFO): nothing is applied
                return Section(label, RunOutcome(error=f"{script.name}: the edited copy could not be read back ({exc})"))
            refusal, note = await self._apply(ctx, path, new_text, version, script)
            if refusal is not None:
                return Section(label, RunOutcome(error=f"{script.name}: {path}: {refusal}"))
            self.seen[path] = (None, new_text)
            return Section(label, replace(outcome, warnings=[*outcome.warnings, note]) if note else outcome)
        finally:
            await beneath.remove(copy.parent, copy.name)

    async def _apply(self, ctx: CallContext, path: Path, new_text: str, version: Version,
                     script: ToolScript) -> tuple[str | None, str]:
        """Put `new_text` into the editor and on disk: (the refusal's reason or None, a note for the model)."""
        assert self.documents is not None
        result = await self.documents.apply(path, new_text, version)
        if result.status == "refused":
            return result.reason or STALE, ""
        if result.status == "disk":  # the editor cannot take edits: the disk alone
            return await _write_disk(ctx, path, new_text, script), ""
        if result.changed_on_disk:
            return (f"your edit is in the editor's buffer only, not saved: {path.name} changed on disk since the "
                    "editor last read or wrote it (not by your steps: the user, a formatter or another program), and "
                    "the editor does not save over that. Commands you run see the file without your edit. Ask the "
                    f"user to merge the two and save {path.name} (or reload it), then read it again"), ""
        if result.saved:
            return None, (f"{path.name} had unsaved changes in the editor: your edit was made on top of them and "
                          "the file was saved with them") if result.unsaved else ""
        if result.unsaved:
            # The user's unsaved text is in the buffer: writing the file would save it behind their back.
            return None, (f"{path.name} has unsaved changes in the editor: your edit is in its buffer only, not on "
                          "disk, so commands you run see the file without it; ask the user to save it")
        # The buffer was what the disk holds: the disk gets the edit too, so the next command sees it.
        failed = await _write_disk(ctx, path, new_text, script)
        return None, "" if failed is None else (
            f"your edit is in the editor's buffer, but writing it to disk failed ({failed}): commands you run see "
            "the file without it")


async def _write_disk(ctx: CallContext, path: Path, new_text: str, script: ToolScript) -> str | None:
    """Write `new_text` to `path` with the bundled file_write, under the sandbox; why it failed, else None."""
    try:
        writer = find_script("file_write", [script.path.parent])
    except ToolNameError as exc:
        return f"cannot write {path}: {exc}"
    outcome = await ctx.run_locked(
        "global",
        ctx.script_invocation(ScriptCall("file_write", (str(path), "-")), writer, new_text.encode("utf-8")),
        elevated=False, what=f"file_write {path} -",
    )
    return None if outcome.ok else (
        outcome.error or outcome.stderr.decode("utf-8", errors="replace").strip() or "writing the file failed")
