"""The LSP lifecycle: initialize, initialized, shutdown, workspace folders and the progress bar's cancel."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from ollie_lsp.editorwatch import start_watching
from ollie_lsp.options import parse_init_options
from ollie_lsp.server import OllieServer, start_dir


def workspace_cwd(params: types.InitializeParams) -> Path | None:
    """The CWD the client gives: workspaceFolders[0], else rootUri, else rootPath."""
    folders = [to_fs_path(params.workspace_folders[0].uri)] if params.workspace_folders else []
    return _first_dir([*folders, params.root_uri and to_fs_path(params.root_uri), params.root_path])


def _first_dir(paths: list[str | None]) -> Path | None:
    return next((Path(p) for p in paths if p and Path(p).is_dir()), None)


def register_lifecycle(server: OllieServer) -> None:
    """initialize/initialized/shutdown/exit and the workspace folder changes."""

    @server.feature(types.INITIALIZE)
    def initialize(ls: OllieServer, params: types.InitializeParams) -> None:
        options, problems = parse_init_options(params.initialization_options)
        for problem in problems:
            ls.show(f"ollie: {problem}")
        ls.init_options = options
        ls.root_cwd = ls.default_cwd = workspace_cwd(params) or start_dir()
        ls.initialized = True
        # The engine starts loading once this answer is out (pygls writes it before the loop's next callback): in the
        # client's round trip to `initialized` (1-30 ms measured), not after it, and never before the answer.
        loop = asyncio.get_running_loop()
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
        # New sessions start in the first folder added, walked as session/new's cwd (a link a step planted in the
        # workspace folder, which an editor adds as a workspace file names it, would have them work where it leads);
        # on the loop, as its one stat was: a session/new right after it starts there.
        from ollie.agent.setup import walked_dir
        from ollie.beneath import OutsideRoot
        from ollie.escapes import one_name

        for path in filter(None, (to_fs_path(f.uri) for f in params.event.added or [])):
            try:
                ls.default_cwd = walked_dir(Path(path).absolute(), [ls.root_cwd, ls.default_cwd])
                return
            except OutsideRoot as exc:
                ls.show(f"ollie: new sessions do not start in the workspace folder added: {one_name(str(exc.strerror), 500)}")
            except OSError:
                continue

    @server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    async def progress_cancelled(ls: OllieServer, params: types.WorkDoneProgressCancelParams) -> None:
        token = str(params.token)
        for live in ls.live_sessions():
            if live.progress.token == token:
                await live.stop("cancelled from the progress bar")  # as ollie/interrupt: what it would start next too
