"""Checkpoints of a workspace in a shadow git repository: snapshot, changes between two, rewind, turn log."""

from __future__ import annotations

import asyncio
import os
import stat
import uuid
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path

from ollie import beneath
from ollie.workspace import modes, objects, startfiles
from ollie.workspace.bounds import Bound
from ollie.workspace.diff import compute_hunks
from ollie.workspace.errors import CheckpointUnavailable, WorkspaceError
from ollie.workspace.guard import check_project, file_limit
from ollie.workspace.refs import is_checkpoint, present_refs, session_ref, shadow_dir, turn_ref
from ollie.workspace.refs import write as write_refs
from ollie.workspace.shadowgit import ShadowGit
from ollie.workspace.treewatch import watch
from ollie.workspace.types import FileChange, Restored, Status, Turn

MAX_FILE_BYTES = 1 << 20
_ZERO = objects.ZERO
_STATUS: dict[str, Status] = {"A": "added", "D": "deleted", "M": "modified", "T": "modified"}
_BINARY_SNIFF = 8000
# The files of a nested repository walked for their newest change, at each scan that lists it (~0.1 s), and how deep
# (an fd held a level: a step's 1,500 nested dirs would run out of them, and of Python's recursion).
NESTED_WALKED, NESTED_DEPTH = 10_000, 32


def _as_text(data: bytes | None, mode: str) -> tuple[str | None, bool]:
    """(text, binary) of a blob: binary when it is a symlink, has a NUL near the start or is not UTF-8."""
    if data is None:
        return None, False
    if mode == "120000" or b"\0" in data[:_BINARY_SNIFF]:
        return None, True
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return None, True


def _readable(st: os.stat_result) -> bool:
    """Whether this process may read a file of this owner and mode, by its permission bits (root: any)."""
    uid = os.geteuid()
    if uid == 0:
        return True
    if st.st_uid == uid:
        return bool(st.st_mode & stat.S_IRUSR)
    if st.st_gid == os.getegid() or st.st_gid in os.getgroups():
        return bool(st.st_mode & stat.S_IRGRP)
    return bool(st.st_mode & stat.S_IROTH)


def _file_changes(entries: list[objects.Entry], blobs: dict[str, bytes]) -> list[FileChange]:
    """The FileChanges (texts, hunks) of diff-tree `entries` whose blobs are in `blobs`."""
    out: list[FileChange] = []
    for rel, code, old_mode, new_mode, old_id, new_id in entries:
        old_data = blobs.get(old_id) if old_id != _ZERO else None
        new_data = blobs.get(new_id) if new_id != _ZERO else None
        old_text, old_bin = _as_text(old_data, old_mode)
        new_text, new_bin = _as_text(new_data, new_mode)
        binary = old_bin or new_bin
        if binary:
            old_text = new_text = None
        hunks = compute_hunks(old_text or "", new_text or "") if not binary else ()
        out.append(FileChange(path=rel, status=_STATUS.get(code, "modified"), old_text=old_text,
                              new_text=new_text, binary=binary, hunks=hunks, old_mode=old_mode,
                              new_mode=new_mode, old_data=old_data, new_data=new_data))
    return out


def _apply(root: Path, changes: list[FileChange], recorded: dict[str, int]) -> None:
    """Make the work tree hold each change's new side: removals (deepest first, emptied dirs too), then writes.

    Refused before anything is touched when a path to be written holds a file the checkpoints do not track
    (ignored, over the size cap, or a FIFO, socket or device): the rewind would destroy it. `root` is the session's
    cwd, held open (`beneath.hold`): a link swapped in on its way, before or during, sends nothing elsewhere.
    """
    for change in changes:
        try:
            found = beneath.kind_sync(root, change.path) if change.old_data is None else None
        except beneath.OutsideRoot:
            continue  # below a symlink the rewind itself removes (else the write is refused)
        if found not in (None, "dir"):
            raise WorkspaceError(f"{change.path} exists but is not checkpointed (ignored, too large or not a file); "
                                 "move it away first")
    gone = sorted((c.path for c in changes if c.new_data is None), key=lambda p: p.count("/"), reverse=True)
    for rel in gone:
        beneath.remove_sync(root, rel)
        parent = os.path.dirname(rel)
        while parent:
            try:
                beneath.remove_sync(root, parent)  # only an empty directory goes
            except OSError:
                break
            parent = os.path.dirname(parent)
    for change in changes:
        if change.new_data is None:
            continue
        if change.new_mode == "120000":
            beneath.symlink_sync(root, change.path, os.fsdecode(change.new_data))
        else:
            beneath.write_bytes_sync(root, change.path, change.new_data, _mode(root, change, recorded))


def _mode(root: Path | str, change: FileChange, recorded: dict[str, int]) -> int:
    """The mode to write `change`'s file with: the file's own read and write bits where it is there, else those it had
    at the checkpoint (git keeps none: a 0600 secret was written back 0644), with the checkpoint's executable bit."""
    info = beneath.lstat_sync(root, change.path)
    bits = stat.S_IMODE(info.st_mode) & 0o666 if info is not None and stat.S_ISREG(info.st_mode) else recorded.get(change.path)
    return modes.restored(bits, change.new_mode == "100755")


class Checkpoints:
    """The checkpoints of one work tree (the session CWD); all state is on disk, so a fresh object sees it all."""

    def __init__(self, cwd: Path | str, *, max_files: int = 0,
                 max_file_bytes: int = MAX_FILE_BYTES) -> None:
        # A real path when set; never resolved again (a link swapped in on its way leads nowhere: beneath.hold).
        self.root = Path(os.path.abspath(cwd))
        self.max_files = max_files  # 0: the default (OLLIE_CHECKPOINT_MAX_FILES), read at the first snapshot
        self.max_file_bytes = max_file_bytes
        self.git = ShadowGit(shadow_dir(self.root), self.root)
        self._ready = False
        self._lock = asyncio.Lock()
        # The tree the index held when it last had this stat key: a snapshot that finds nothing to update
        # reuses it instead of running write-tree (another process changing the index changes the key).
        self._tree: tuple[tuple[int, int, int], str] | None = None
        # The tree's inotify watch, and this object's cursor in it as of its last snapshot.
        self._watch = watch(self.root)
        self._cursor: int | None = None
        # Files no checkpoint keeps (over the cap, no regular file), by path: their lstat as last seen, and as this
        # snapshot saw them. `left_out`: those the last snapshot found new or changed (its first names none).
        self._left: dict[str, tuple[int, ...]] = {}
        self._left_now: dict[str, tuple[int, ...]] = {}
        self.left_out: list[str] = []
        # Start files (`startfiles`) as last seen, and those in ignored paths the last snapshot found new or changed.
        self._starts: dict[str, startfiles.Key] = {}
        self.started: list[str] = []
        # The read and write bits of the files this snapshot lstat'ed (`modes` records them).
        self._bits_now: dict[str, int] = {}
        self._modes = modes.Record(self.git.git_dir)

    async def _ensure(self) -> None:
        """Check the CWD is a project (once) and create the shadow repository."""
        if self._ready:
            return
        if not self.root.is_dir():
            raise CheckpointUnavailable(f"{self.root} is not a directory")
        # Where it is first (/, $HOME: the reason the user needs), then ollie's own state inside it.
        self.max_files = self.max_files or file_limit()
        await check_project(self.root, self.max_files)
        shadow = Path(os.path.realpath(self.git.git_dir))
        if shadow == self.root or self.root in shadow.parents:
            # Tool code may write the workspace: it must not be able to plant config in ollie's own git.
            raise CheckpointUnavailable(f"ollie's state dir {shadow.parent} is inside the workspace {self.root}")
        await self.git.init()
        self._ready = True

    async def snapshot(self) -> str:
        """Record the work tree now; its checkpoint id (a git tree id). Only the paths with kernel events since this
        object's last snapshot are re-read when known (treewatch), else every file changed by the index's stat cache."""
        async with self._lock:
            return await self._snapshot()

    async def _snapshot(self) -> str:
        await self._ensure()
        cached = self._tree
        cursor, paths, known = await asyncio.to_thread(self._events, cached)
        if cached is not None and paths == set():
            # (the last one's said again after a step that changed nothing)
            self._cursor, self.left_out, self.started = cursor, [], []
            return cached[1]
        await self._note_started(paths, first=cached is None)
        update, drop = known if known is not None else await self._listed(paths)
        # A nested repository with events in it (but its bytecode's: a test run's) is told as changed (its walk may
        # stop short of the file).
        nested = {n for n in self._left if n.endswith("/") and any(
            p.startswith(n) and "__pycache__" not in p[len(n):].split("/") for p in paths or ())}
        if nested:
            await asyncio.to_thread(lambda: [self._note_left_out(n) for n in nested])
        seen, self._bits_now = self._bits_now, {}
        now, self._left_now = self._left_now, {}
        self.left_out = [] if cached is None else sorted(
            nested | {rel for rel, key in now.items() if self._left.get(rel) != key})
        # Only what is there now is kept (a step's 50,000 FIFOs a step, each named anew, would pile up here).
        self._left = now if paths is None else {**{rel: k for rel, k in self._left.items() if rel not in paths}, **now}
        if drop:
            await self.git.run("update-index", "--force-remove", "-z", "--stdin",
                               stdin=b"".join(os.fsencode(p) + b"\0" for p in sorted(drop)))
        if update:
            await self.git.run("update-index", "--add", "--remove", "--replace", "-z", "--stdin",
                               stdin=b"".join(os.fsencode(p) + b"\0" for p in sorted(update)))
        if paths is None and self._watch.has_linked:  # files with other names matter unless ignored (never read)
            out = await self.git.run("ls-files", "-z", "-o", "-i", "--directory", "--exclude-standard")
            self._watch.keep_linked({os.fsdecode(p).rstrip("/") for p in out.split(b"\0") if p})
        if not update and not drop and cached is not None and cached[0] == self._index_key():
            if seen:
                await asyncio.to_thread(self._modes.note, seen)
            self._cursor = cursor
            return cached[1]
        tree = (await self.git.run("write-tree")).decode().strip()
        await asyncio.to_thread(self._modes.keep, tree, seen)
        key = self._index_key()  # after write-tree: it may store its cache-tree in the index
        self._tree = (key, tree) if key is not None else None
        self._cursor = cursor  # only now: a failed snapshot leaves its paths to the next one
        return tree

    async def _note_started(self, paths: set[str] | None, *, first: bool) -> None:
        """Set `started`: the start files among `paths` (None: all) new or changed since last seen that git ignores
        (the rest are checkpointed and shown); the first snapshot names none (the user's own)."""
        now = await asyncio.to_thread(startfiles.found, self.root, paths)
        changed = sorted(rel for rel, key in now.items() if self._starts.get(rel) != key)
        self.started = []
        if changed and not first:  # (a failed `ls-files` leaves them to be named by the next snapshot)
            out = await self.git.run("ls-files", "-z", "-o", "-i", "--exclude-standard", "--",
                                     *(":(literal)" + rel for rel in changed))
            self.started = sorted(os.fsdecode(p) for p in out.split(b"\0") if p)
        self._starts = now if paths is None else {**{r: k for r, k in self._starts.items() if r not in paths}, **now}

    def _events(self, cached: tuple[tuple[int, int, int], str] | None,
                ) -> tuple[int, set[str] | None, tuple[set[str], set[str]] | None]:
        """(a new cursor, the paths with events since this object's last snapshot, and `_known`'s answer for them);
        no paths (None) when `cached` is not the tree the shadow index holds now. Blocks: in a thread."""
        cursor, paths = self._watch.since(self._cursor)
        if cached is None or cached[0] != self._index_key():
            return cursor, None, None  # no tree yet, or the shadow index changed by another object (or a rewind)
        return cursor, paths, self._known(cached[1], paths) if paths else None

    async def _listed(self, paths: set[str] | None) -> tuple[set[str], set[str]]:
        """(update, drop): the untracked (not ignored), modified and deleted paths among `paths` (None: the whole
        tree), judged by git's `ls-files` with the index's stat cache."""
        # A `.gitignore` is kept whatever ignores it (the command line's `-x` comes first): one holding `*` ignored
        # itself, and the files a step wrote beside it were in no checkpoint, with no change listed to say why.
        listing = await self.git.run("ls-files", "-z", "-t", "-o", "-m", "-d", "--exclude-standard", "-x", "!.gitignore",
                                     *(("--", *(":(literal)" + p for p in sorted(paths))) if paths else ()))
        update: set[str] = set()
        drop: set[str] = set()
        untracked = 0
        items = [(item[:1], os.fsdecode(item[2:])) for item in listing.split(b"\0") if len(item) >= 3]
        over, beyond = await asyncio.to_thread(self._inspect, [rel for _, rel in items])
        # Deleted, or now below a symlinked directory (git would look through it): dropped by name.
        deleted = beyond | {rel for tag, rel in items if tag == b"R"}
        drop.update(deleted)
        for tag, rel in items:
            if rel.endswith("/") or rel in deleted:
                continue  # a nested repository (noted by `_inspect`), or gone
            untracked += tag == b"?"
            if rel in over:
                if tag != b"?":
                    drop.add(rel)  # tracked, and grew past the cap or is no file now: stop tracking it
                continue
            update.add(rel)
        if untracked > self.max_files:
            raise CheckpointUnavailable(f"the workspace has more than {self.max_files:,} files not ignored: "
                                        "too many to checkpoint")
        return update, drop

    def _known(self, tree: str, paths: set[str]) -> tuple[set[str], set[str]] | None:
        """(update, drop) for `paths` without `ls-files`, when each is a file the index holds (as `tree`, its last
        write-tree) or was made and is gone (an atomic write's temporary file): a tracked file is checkpointed whether
        or not git ignores it now, so its `lstat` says all. None when one is not (new: git must judge the ignore
        rules; a dir, whose files may have gone without an event each; no longer a file or a symlink). Blocks: in a
        thread."""
        try:
            modes = objects.held(self.git.git_dir, tree, paths)
        except objects.NotLoose:
            return None
        update: set[str] = set()
        drop: set[str] = set()
        for rel in paths:
            mode = modes.get(rel)
            if mode in (objects.DIR, objects.GITLINK):
                return None
            found = self._lstat_kind(rel)
            if found == "beyond":
                if mode is not None:
                    drop.add(rel)  # now below a symlinked directory (git would look through it)
            elif found == "unreadable":
                return None  # unreadable here: git judges it
            elif mode is None:
                if found != "gone":
                    return None  # new: is it ignored?
            elif found in ("gone", "kept"):
                update.add(rel)  # `--remove` drops it when gone
            elif found == "over":
                drop.add(rel)  # grew past the cap: stop tracking it
                self._note_left_out(rel)
            else:
                return None  # a dir, a FIFO, a device: as git lists it
        return update, drop

    def _index_key(self) -> tuple[int, int, int] | None:
        """The shadow index's (mtime_ns, size, inode): changes whenever any git process rewrites it."""
        try:
            st = os.stat(self.git.git_dir / "index")
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size, st.st_ino

    def _inspect(self, rels: list[str]) -> tuple[set[str], set[str]]:
        """Those of `rels` git must not store (regular files over the size cap; FIFOs, sockets, devices and files the
        daemon may not read or lstat, which `update-index` refuses), left as they are, and those below a symlink."""
        over, beyond = set(), set()
        for rel in rels:
            if rel.endswith("/"):
                # A nested repository (its own history, not ours to snapshot): named as no checkpoint keeps it, else
                # a step's `git init tools` hid the `tools/conftest.py` beside it (pytest runs it) from review unsaid.
                self._note_left_out(rel)
                continue
            found = self._lstat_kind(rel)
            if found == "beyond":
                beyond.add(rel)
            elif found in ("over", "special", "unreadable"):
                # A FIFO where a tracked file was failed every snapshot after it: the writes it hid were never undoable.
                # So did a file git may not lstat (a step's `chmod 600` of its dir, as a normal user).
                over.add(rel)
                self._note_left_out(rel)
        return over, beyond

    def _note_left_out(self, rel: str) -> None:
        """Note `rel`, which no checkpoint keeps, as its lstat is now (a nested repository's `rel/`: with its files'
        state, `_files_changed`): a change of it is told again. Blocks."""
        try:
            st = beneath.lstat_sync(self.root, rel)
        except OSError:
            st = None
        key = (0,) if st is None else (st.st_size, st.st_mtime_ns, st.st_ino)
        self._left_now[rel] = (*key, *self._files_changed(rel)) if rel.endswith("/") and st is not None else key

    def _files_changed(self, rel: str) -> tuple[int, int]:
        """(the newest inode change (ctime: no step can set it back), how many) of the files in the dir `rel`, its
        `.git` and bytecode (a test run's) left out, walking at most NESTED_WALKED of them: an edit of a file already
        in a nested repository leaves the dir's own lstat as it was (a step's `tools/conftest.py` went unsaid). Blocks."""
        newest, walked = 0, 0
        try:
            for top, dirs, files, fd in beneath.walk_sync(self.root, rel):
                dirs[:] = [d for d in dirs if d not in (".git", "__pycache__")] if top.count("/") < NESTED_DEPTH else []
                for name in files:
                    walked += 1
                    if walked > NESTED_WALKED:
                        return newest, walked
                    if (st := beneath.lstat_at(fd, name)) is not None:
                        newest = max(newest, st.st_ctime_ns)
        except OSError:
            pass
        return newest, walked

    def _lstat_kind(self, rel: str) -> str:
        """What a snapshot makes of `rel` by its lstat: "kept" (a symlink, or a file within the size cap), "over" (a
        file past it), "gone", "dir", "special" (a FIFO, socket or device, or a file this process may not read),
        "beyond" (below a symlink) or "unreadable" (no lstat)."""
        try:
            st = beneath.lstat_sync(self.root, rel)
        except beneath.OutsideRoot:
            return "beyond"
        except OSError:
            return "unreadable"
        if st is None:
            return "gone"
        if stat.S_ISLNK(st.st_mode):
            return "kept"
        if stat.S_ISREG(st.st_mode):
            if not _readable(st):
                return "special"  # a step's `chmod 000`: git, failing to read it, failed every snapshot after it
            self._bits_now[rel] = stat.S_IMODE(st.st_mode) & 0o666
            return "kept" if st.st_size <= self.max_file_bytes else "over"
        return "dir" if stat.S_ISDIR(st.st_mode) else "special"

    async def changes(self, before: str, after: str | None = None) -> list[FileChange]:
        """The files that differ from checkpoint `before` to `after` (None: the work tree now), with hunks."""
        return await self.read_changes(await self.diff_entries(before, after))

    async def diff_entries(self, before: str, after: str | None = None) -> list[objects.Entry]:
        """The files that differ from checkpoint `before` to `after` (None: the work tree now), as diff entries: paths
        and blob ids, no content read (`read_changes` reads it)."""
        if after is None:
            after = await self.snapshot()
        else:
            await self._ensure()
        if before == after:
            return []  # one tree: nothing differs (a step that wrote nothing runs no diff)
        return await self._raw_diff(before, after)

    async def read_changes(self, items: Sequence[objects.Entry | FileChange],
                           bound: Bound | None = None) -> list[FileChange]:
        """The changes of the first `items` (diff entries, or changes already read), in order, until `bound`: its
        count, or its bytes of content, which the next file would pass (the first file is always read). Reads no
        blob past it: a step may change 50,000 files of up to 1 MiB each."""
        taken: list[objects.Entry | FileChange] = []
        blobs: dict[str, bytes] = {}
        if bound is None:  # all of it (a rewind writes every file): the blobs in one hop
            taken = list(items)
            blobs = await self._blobs([i for t in taken if not isinstance(t, FileChange) for i in t[4:] if i != _ZERO])
            return await self._read(taken, blobs)
        spent = 0
        for item in items[:bound.files]:
            if isinstance(item, FileChange):
                got: dict[str, bytes] = {}
                size = len(item.old_text or "") + len(item.new_text or "")
            else:
                got = await self._blobs([i for i in item[4:] if i != _ZERO])
                size = sum(len(b) for b in got.values())
            if taken and spent + size > bound.text_bytes:
                break
            taken.append(item)
            blobs.update(got)
            spent += size
        return await self._read(taken, blobs)

    @staticmethod
    async def _read(taken: list[objects.Entry | FileChange], blobs: dict[str, bytes]) -> list[FileChange]:
        """`taken` as changes, each entry's from `blobs`."""
        entries = [t for t in taken if not isinstance(t, FileChange)]
        # The hunks are CPU work on content tool code chose (a 1 MiB file of short lines): off the event loop.
        read = iter(await asyncio.to_thread(_file_changes, entries, blobs))
        return [t if isinstance(t, FileChange) else next(read) for t in taken]

    async def _blobs(self, ids: list[str]) -> dict[str, bytes]:
        """The contents of blobs `ids`: from the shadow's loose objects (no git process), else by git (packed)."""
        try:
            return await asyncio.to_thread(objects.blobs, self.git.git_dir, ids)
        except objects.NotLoose:
            return await self.git.cat_blobs(ids)

    async def _raw_diff(self, before: str, after: str) -> list[objects.Entry]:
        """(path, status letter, old mode, new mode, old id, new id) of each file differing between two trees."""
        try:
            return await asyncio.to_thread(objects.tree_diff, self.git.git_dir, before, after)
        except objects.NotLoose:
            return await self._git_diff(before, after)

    async def _git_diff(self, before: str, after: str) -> list[objects.Entry]:
        """`_raw_diff` by `git diff-tree` (the objects are packed)."""
        raw = await self.git.run("diff-tree", "-r", "-z", "--no-renames", "--no-abbrev", "--raw", before, after)
        fields = raw.split(b"\0")
        entries: list[objects.Entry] = []
        for meta, rel in zip(fields[0::2], fields[1::2], strict=False):
            if not meta.startswith(b":"):
                continue
            old_mode, new_mode, old_id, new_id, code = meta[1:].decode().split()
            if "160000" in (old_mode, new_mode):
                continue  # nested repositories are never snapshotted
            entries.append((os.fsdecode(rel), code[0], old_mode, new_mode, old_id, new_id))
        return entries

    async def restore(self, checkpoint: str) -> Restored:
        """Rewind the work tree to `checkpoint`; a snapshot is taken first (restore it to undo the rewind).

        Files added since are removed, changed and deleted ones restored; ignored and over-cap files are
        left alone. The daemon writes them itself, through `ollie.beneath`: relative to held directory
        fds, never through a symlink, so a directory swapped for one (before or during) cannot send a
        write outside the root; git only updates the shadow index.
        """
        if not is_checkpoint(checkpoint):  # handed to git: `--output=<path>` would write any file
            raise WorkspaceError(f"cannot rewind {self.root}: {checkpoint[:80]!r} is no checkpoint id")
        async with self._lock:
            current = await self._snapshot()
            changed = await self.changes(current, checkpoint)
            try:
                await asyncio.to_thread(_apply, self.root, changed, modes.at(self.git.git_dir, checkpoint))
            except (OSError, WorkspaceError) as exc:
                raise WorkspaceError(f"cannot rewind {self.root} to {checkpoint[:12]}: {exc}") from exc
            finally:
                # The index takes the checkpoint's entries for the paths that differ, with no stat info: the
                # next snapshot re-reads just those, so even a partial rewind is recorded as it is.
                entries = await self._raw_diff(current, checkpoint)
                for removals in (True, False):  # a file and a directory of one name: the old one goes first
                    info = b"".join(f"{new_mode} {new_id}\t".encode() + os.fsencode(rel) + b"\0"
                                    for rel, _, _, new_mode, _, new_id in entries if (new_id == _ZERO) == removals)
                    if info:
                        await self.git.run("update-index", "-z", "--index-info", stdin=info)
                self._tree = None
            await self.git.run("update-ref", f"refs/ollie/rewinds/{current}", current)
            return Restored(checkpoint=checkpoint, undo_checkpoint=current, changes=tuple(changed))

    async def tree_with(self, tree: str, files: Mapping[str, tuple[bytes | None, str]]) -> str:
        """Checkpoint `tree` with each of `files` holding its data (None: without it) in its mode ("": the one the path
        has in `tree`, 100644 for a new file): one index for them all, three git processes and one per blob (it was
        five per file)."""
        index = self.git.git_dir / f"tree-{uuid.uuid4().hex}.index"
        try:
            await self.git.run("read-tree", tree, index_file=index)
            # An edited executable script stays one: its step diff shows no mode change.
            unmoded = {path for path, (data, mode) in files.items() if data is not None and not mode}
            had = await self._modes_in(tree, unmoded, index)
            info = b""
            for path, (data, mode) in files.items():
                entry = f"0 {_ZERO}\t"  # mode 0: removed
                if data is not None:
                    blob = (await self.git.run("hash-object", "-w", "--stdin", stdin=data)).decode().strip()
                    entry = f"{mode or had.get(path) or '100644'} {blob}\t"
                info += entry.encode() + os.fsencode(path) + b"\0"
            await self.git.run("update-index", "-z", "--index-info", stdin=info, index_file=index)
            return (await self.git.run("write-tree", index_file=index)).decode().strip()
        finally:
            index.unlink(missing_ok=True)

    async def _modes_in(self, tree: str, paths: set[str], index: Path) -> dict[str, str]:
        """The mode of each of `paths` that `tree` (read into `index`) holds: read in-process, else (packed) by git."""
        if not paths:
            return {}
        with suppress(objects.NotLoose):
            held = await asyncio.to_thread(objects.held, self.git.git_dir, tree, paths)
            return {path: mode for path, mode in held.items() if mode != objects.DIR}
        listed = await self.git.run("ls-files", "-z", "--stage", "--", *(f":(literal){path}" for path in paths),
                                    index_file=index)
        return {os.fsdecode(name): meta.split(b" ", 1)[0].decode()
                for meta, _, name in (entry.partition(b"\t") for entry in listed.split(b"\0") if entry)}

    async def record_turn(self, session_id: str, turn: int, checkpoint: str) -> Turn:
        """Log `checkpoint` as the state before `turn` of `session_id` (a ref in the shadow repository)."""
        await self.record_turns([(session_id, turn, checkpoint)])
        return Turn(session_id=session_id, turn=turn, checkpoint=checkpoint)

    async def record_turns(self, records: list[tuple[str, int, str]]) -> None:
        """Log each (session, turn, checkpoint) as `record_turn` does: written as git writes refs (`ollie.workspace.refs`),
        else all in one `update-ref --stdin` (one process)."""
        updates = [(turn_ref(session_id, turn), checkpoint) for session_id, turn, checkpoint in records]
        if not updates:
            return
        await self._ensure()
        if not await asyncio.to_thread(write_refs, self.git.git_dir, updates):
            await self.git.run("update-ref", "--stdin", stdin="".join(f"update {ref} {oid}\n" for ref, oid in updates).encode())

    async def delete_refs(self, refs: list[str]) -> None:
        """Delete those of `refs` that may exist, in one git call; none (and no scan) when none can."""
        present = present_refs(self.root, refs)
        if not present:
            return
        await self._ensure()
        listed = await self.git.run("for-each-ref", "--format=%(refname) %(objectname)", "refs/ollie")
        named = dict(line.split(" ", 1) for line in listed.decode().splitlines())
        await self.git.run("update-ref", "--stdin", stdin="".join(f"delete {ref}\n" for ref in present).encode())
        # The file modes of the checkpoints no ref names now go with them.
        gone = {named.pop(ref) for ref in present if ref in named} - set(named.values())
        if self._tree is not None and self._tree[1] in gone:
            self._tree = None  # its next snapshot keeps its modes again
        await asyncio.to_thread(modes.prune, self.git.git_dir, gone)

    async def list_turns(self, session_id: str) -> list[Turn]:
        """The turns logged for `session_id`, oldest first."""
        await self._ensure()
        prefix = session_ref(session_id)
        out = await self.git.run("for-each-ref", "--format=%(refname) %(objectname)", prefix)
        turns = []
        for line in out.decode().splitlines():
            ref, _, tree = line.partition(" ")
            turns.append(Turn(session_id=session_id, turn=int(ref[len(prefix):]), checkpoint=tree))
        return sorted(turns, key=lambda t: t.turn)
