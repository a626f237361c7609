"""The client's files (`fs/read_text_file`, `fs/write_text_file`) as the engine's EditorDocuments."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ollie import beneath
from ollie.env import env_seconds
from ollie.sandbox import writers
from ollie.tools.documents import STALE, ApplyResult, Version, disk_holds, disk_text, plain_path_beneath

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
    session may write there (`writers.quiet`), the path checked again inside (still a plain file beneath the root).
    """

    def __init__(self, client: Client, session_id: str, *, write: bool, root: Callable[[], Path]) -> None:
        self._client = client
        self._session_id = session_id
        self._write = write
        self._root = root

    @asynccontextmanager
    async def _alone(self, path: Path) -> AsyncIterator[bool]:
        """True inside while nothing but the user's own programs can swap `path` for a link, and it is none now."""
        async with writers.quiet(path) as quiet:
            yield quiet and await plain_path_beneath(self._root(), path) == path and await self._small(path)

    async def _small(self, path: Path) -> bool:
        """Whether `path` on disk is within the workspace read cap: the client reads it whole to answer (a sparse
        20 GB file a step made would fill its memory, then the daemon's); a larger one is read by the tool, sandboxed."""
        try:
            info = await asyncio.to_thread(beneath.lstat_sync, self._root(), path)
        except OSError:
            return False
        return info is None or info.st_size <= beneath.cap()

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
        async with self._alone(path) as alone:
            with contextlib.suppress(TimeoutError):  # a slow client: the tool reads the disk
                content = await self._read(path) if alone else None
        return None if content is None else (content, text_version(content))

    async def apply(self, path: Path, new_text: str, version: Version) -> ApplyResult:
        """Write through `fs/write_text_file`, refused when the client's text is no longer the one read (asked only
        while no step may write there: `RootedDocuments.apply` holds `writers.quiet`)."""
        if not self._write:
            return ApplyResult("disk")
        if not await self._small(path):  # grown since it was read: the client is not asked to read it whole
            return ApplyResult("refused", f"{path.name} is now larger than {beneath.cap():,} bytes; read it again")
        try:
            current = await self._read(path)
        except TimeoutError:  # its buffer may differ from what the model read: not overwritten unseen
            return ApplyResult("refused", f"the editor did not answer a read within {READ_ANSWER_S:g} s")
        if current is not None and text_version(current) != version:
            return ApplyResult("refused", STALE)
        disk = await asyncio.to_thread(disk_text, path)
        # (Not `disk != current`: a Latin-1 file's buffer is no UTF-8 reading of its bytes, and was taken for unsaved.)
        unsaved = current is not None and not await asyncio.to_thread(disk_holds, path, current)
        try:
            await self._client.write_text_file(session_id=self._session_id, path=str(path), content=new_text)
        except Exception as exc:  # the client refused the write: the model is told, nothing changed
            return ApplyResult("refused", f"the editor did not write the file: {exc}")
        # Zed saves what it writes; a client that only changes its buffer leaves the disk to the engine. One whose
        # format on save changed it saved too: taken for buffer-only, the formatter's file was written over.
        written = await asyncio.to_thread(disk_text, path)
        saved = written == new_text or written not in (None, disk)
        return ApplyResult("applied", saved=saved, unsaved=unsaved,
                           formatted=written if saved and written != new_text else None)

def client_files(client: Client, session_id: str, fs: FileSystemCapabilities | None,
                 root: Callable[[], Path]) -> ClientFiles | None:
    """The session's ClientFiles when the client offers fs/read_text_file (None: the tools use the disk)."""
    if fs is None or not fs.read_text_file:
        return None
    return ClientFiles(client, session_id, write=bool(fs.write_text_file), root=root)
