"""The client's files (`fs/read_text_file`, `fs/write_text_file`) as the engine's EditorDocuments."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import stat
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ollie import beneath
from ollie.env import env_seconds
from ollie.sandbox import writers
from ollie.tools.documents import STALE, ApplyResult, Version, disk_bytes, disk_text, holds

if TYPE_CHECKING:
    from acp.interfaces import Client
    from acp.schema import FileSystemCapabilities

logger = logging.getLogger("ollie.acp.fs")

# An editor answers a read from its buffer or the disk at once. It is asked while every step that may write the path
# waits (`_alone`): one that never answers must not hold them all, in every session of the workspace, for good.
READ_ANSWER_S = env_seconds("OLLIE_ACP_READ_ANSWER_S", 5.0)  # (shorter: a test of a client that never answers)


def text_version(text: str) -> str:
    """ACP documents have no versions: the digest of the text read stands for one."""
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


class ClientFiles:
    """One session's view of the client's files: reads include unsaved buffers; writes go through the client.

    The client opens the path by name with the user's rights, following links: it is asked only while no step of any
    session may write there (`writers.quiet`), the path checked again inside (still a plain file beneath the root),
    and its answer taken only when the name is still that file after (st_dev, st_ino).
    """

    def __init__(self, client: Client, session_id: str, *, write: bool, root: Callable[[], Path]) -> None:
        self._client = client
        self._session_id = session_id
        self._write = write
        self._root = root

    @asynccontextmanager
    async def _pinned(self, path: Path) -> AsyncIterator[tuple[int, int, int] | None]:
        """`path`'s identity and size (st_dev, st_ino, st_size; zeros when absent) while it resolves beneath the root as
        itself, with no link, to a file; else None. The file is held open inside: no other takes its inode's number."""
        try:
            real, fd = await asyncio.to_thread(beneath.pin_sync, self._root(), path)
        except OSError:
            yield None
            return
        try:
            info = None if fd is None else os.fstat(fd)
            plain = real == path and (info is None or stat.S_ISREG(info.st_mode))
            yield None if not plain else (0, 0, 0) if info is None else (info.st_dev, info.st_ino, info.st_size)
        finally:
            if fd is not None:
                os.close(fd)

    async def _read(self, path: Path) -> str | None:
        """The client's text; None when it cannot read it; TimeoutError past READ_ANSWER_S."""
        async with asyncio.timeout(READ_ANSWER_S):
            try:
                response = await self._client.read_text_file(session_id=self._session_id, path=str(path))
            except Exception as exc:  # the client cannot read it (no such file...): the tool reads the disk
                logger.debug("fs/read_text_file %s failed: %s", path, exc)
                return None
        return response.content

    async def text(self, path: Path) -> tuple[str, Version] | None:
        """The client's text of `path` (its unsaved buffer when open); None when the client has none, or while a
        step may write there (the tool then reads the disk, sandboxed)."""
        content = None
        # Inside `quiet` nothing but the user's own programs can swap a link in.
        async with writers.quiet(path) as quiet, self._pinned(path) as before:
            if quiet and before is not None and _small(before):
                with contextlib.suppress(TimeoutError):  # a slow client: the tool reads the disk
                    content = await self._read(path)
                # The client opened the name, following links: its answer is this file's only while the name is still
                # that file (round 68a), not a link or another file a program put there and back as the client read.
                async with self._pinned(path) as after:
                    content = content if after is not None and after[:2] == before[:2] else None
        return None if content is None else (content, text_version(content))

    async def apply(self, path: Path, new_text: str, version: Version) -> ApplyResult:
        """Write through `fs/write_text_file`, refused when the client's text is no longer the one read (asked only
        while no step may write there: `RootedDocuments.apply` holds `writers.quiet`)."""
        if not self._write:
            return ApplyResult("disk")
        async with self._pinned(path) as found:
            if found is None or not _small(found):  # grown since it was read: the client is not asked to read it whole
                return ApplyResult("refused", f"{path.name} is now larger than {beneath.cap():,} bytes; read it again")
        try:
            current = await self._read(path)
        except TimeoutError:  # its buffer may differ from what the model read: not overwritten unseen
            return ApplyResult("refused", f"the editor did not answer a read within {READ_ANSWER_S:g} s")
        if current is not None and text_version(current) != version:
            return ApplyResult("refused", STALE)
        try:
            disk = await asyncio.to_thread(disk_bytes, path)
        except OSError:  # a link, a FIFO, a giant file: no text a buffer holds
            disk, unsaved = None, current is not None
        else:  # (Not `disk != current`: a Latin-1 file's buffer is no UTF-8 reading of its bytes: taken for unsaved.)
            unsaved = current is not None and not holds(disk, current)
        try:
            await self._client.write_text_file(session_id=self._session_id, path=str(path), content=new_text)
        except Exception as exc:  # the client refused the write: the model is told, nothing changed
            return ApplyResult("refused", f"the editor did not write the file: {exc}")
        # Zed saves what it writes; a client that only changes its buffer leaves the disk to the engine. One whose
        # format on save changed it saved too: taken for buffer-only, the formatter's file was written over.
        written = await asyncio.to_thread(disk_text, path)
        saved = written == new_text or written not in (None, None if disk is None else disk.decode("utf-8", "replace"))
        return ApplyResult("applied", saved=saved, unsaved=unsaved,
                           formatted=written if saved and written != new_text else None)

def _small(found: tuple[int, int, int]) -> bool:
    """Whether a file `_pinned` found is within the workspace read cap: the client reads it whole to answer (a sparse
    20 GB file a step made would fill its memory, then the daemon's); the tool reads a larger one, sandboxed."""
    return found[2] <= beneath.cap()


def client_files(client: Client, session_id: str, fs: FileSystemCapabilities | None,
                 root: Callable[[], Path]) -> ClientFiles | None:
    """The session's ClientFiles when the client offers fs/read_text_file (None: the tools use the disk)."""
    if fs is None or not fs.read_text_file:
        return None
    return ClientFiles(client, session_id, write=bool(fs.write_text_file), root=root)
