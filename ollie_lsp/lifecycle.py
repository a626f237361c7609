"""The LSP lifecycle: initialize, initialized, shutdown, workspace folders and the progress bar's cancel."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from ollie_lsp.editorwatch import start_watching
from ollie_lsp.errors import NoFolder
from ollie_lsp.options import parse_init_options
from ollie_lsp.server import OllieServer


def workspace_dirs(params: types.InitializeParams) -> list[str]:
    """The folders the client names, first first: workspaceFolders, then rootUri and rootPath."""
    folders = [to_fs_path(f.uri) for f in params.workspace_folders or []]
    return [p for p in (*folders, params.root_uri and to_fs_path(params.root_uri), params.root_path) if p]


def walk_folders(ls: OllieServer, named: list[str], *, first: bool) -> None:
    """New sessions start in the first of `named` walked through no link inside a workspace folder or where a step may
    write (a workspace file, or a step, can name one leading anywhere), the user told of each refused; `first`: the
    root too. Off the loop (an NFS or FUSE folder may stall each lstat), after the walk before: session/new waits."""
    before = ls.folders

    async def walk() -> None:
        if before:
            await asyncio.gather(before, return_exceptions=True)
        await ls.engine_loaded()
        from ollie.agent.setup import walked_dir
        from ollie.beneath import OutsideRoot
        from ollie.escapes import one_name

        # Every folder of the workspace, as initialize's are (an added link inside one of them is refused there too).
        folders = [p for f in ls.workspace.folders.values() if (p := to_fs_path(f.uri))]
        refused, guarded = "", [*map(Path, [*named, *folders]), *([] if first else [ls.root_cwd, ls.default_cwd])]
        for path in named:
            try:
                ls.default_cwd = await asyncio.to_thread(walked_dir, Path(path).absolute(), guarded)
            except OutsideRoot as exc:
                refused = one_name(str(exc.strerror), 500)
                ls.show(f"ollie: new sessions do not start in this workspace folder: {refused}")
                continue
            except OSError:  # gone, no directory: the next one
                continue
            if first or not ls.rooted:  # (each folder initialize named refused: the first one added since is the root)
                ls.root_cwd, ls.rooted = ls.default_cwd, True
            return
        if first and refused:  # never the daemon's own directory: an editor starts it in that folder, link followed
            ls.rooted = False
            raise NoFolder(f"no workspace folder to start sessions in: {refused} (they start in the next folder "
                           "added)")
        if before:
            await before  # none taken: new sessions start where they did (or still cannot)

    ls.folders = asyncio.ensure_future(walk())


def register_lifecycle(server: OllieServer) -> None:
    """initialize/initialized/shutdown/exit and the workspace folder changes."""

    @server.feature(types.INITIALIZE)
    def initialize(ls: OllieServer, params: types.InitializeParams) -> None:
        options, problems = parse_init_options(params.initialization_options)
        for problem in problems:
            ls.show(f"ollie: {problem}")
        ls.init_options = options
        ls.client_name = params.client_info.name if params.client_info else ""
        ls.initialized = True
        loop = asyncio.get_running_loop()
        if ls.start_problem:  # said once, here: before the handshake the editor would only say the server died
            ls.show(ls.start_problem, types.MessageType.Error)
        else:
            walk_folders(ls, workspace_dirs(params), first=True)
            # The engine starts loading once this answer is out (pygls writes it before the loop's next callback): in
            # the client's round trip to `initialized` (1-30 ms measured), not after it, and never before the answer.
            loop.call_soon(ls.load_engine)
        # LSP: the server exits once the client's process has, even if a wrapper keeps its pipe or socket open.
        writer = ls.protocol.writer
        conn = writer.get_extra_info("socket") if isinstance(writer, asyncio.StreamWriter) else None
        loop.call_soon(start_watching, params.process_id, conn, lambda: ls.serving() and ls.exit_asked())

    @server.feature(types.INITIALIZED)
    async def initialized(ls: OllieServer, params: types.InitializedParams) -> None:
        await ls.warm_up()

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: OllieServer, *args: Any) -> None:
        await ls.close_sessions()

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def folders_changed(ls: OllieServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        # New sessions start in the first folder added (VS Code's Add Folder, a workspace file's folders).
        walk_folders(ls, [p for f in params.event.added or [] if (p := to_fs_path(f.uri))], first=False)

    @server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    async def progress_cancelled(ls: OllieServer, params: types.WorkDoneProgressCancelParams) -> None:
        token = str(params.token)
        for live in ls.live_sessions():
            if live.progress.token == token:
                await live.stop("cancelled from the progress bar")  # as ollie/interrupt: what it would start next too
