"""`ollie-lsp` / `python -m ollie_lsp`: start the daemon over stdio (default) or TCP."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

from ollie import __version__

if TYPE_CHECKING:  # the server module (pygls) loads after the command line is parsed
    from ollie_lsp.server import OllieServer


@dataclass
class Args:
    """The parsed command line (`tcp` None: stdio)."""

    tcp: str | None = None
    token_file: str | None = None
    log_file: str | None = None
    host: str = ""
    port: int = 0


def parse_args(argv: list[str] | None = None) -> Args:
    """The command line: --stdio | --tcp HOST:PORT [--token-file PATH], --log-file, --version."""
    argv = sys.argv[1:] if argv is None else argv
    if all(arg == "--stdio" for arg in argv):
        # What editors start: argparse and its parser would stay resident (~0.7 MiB) for nothing.
        return Args()
    import argparse

    parser = argparse.ArgumentParser(prog="ollie-lsp", description="The ollie agent daemon (an LSP server).")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="speak JSON-RPC over stdin/stdout (the default)")
    mode.add_argument("--tcp", metavar="HOST:PORT",
                      help="listen on a loopback TCP address instead; clients must send the token (PROTOCOL.md)")
    parser.add_argument("--token-file", metavar="PATH",
                        help="--tcp: read the client token from PATH (0600), or write a new one there if absent "
                        "(default: $OLLIE_LSP_TOKEN, else a new token in the state dir)")
    parser.add_argument("--log-file", metavar="PATH", help="where to log (default: the state dir's ollie.log)")
    parser.add_argument("--version", action="version", version=f"ollie-lsp {__version__}")
    parsed = parser.parse_args(argv)
    args = Args(tcp=parsed.tcp, token_file=parsed.token_file, log_file=parsed.log_file)
    if args.tcp:
        host, sep, port = args.tcp.rpartition(":")
        if not sep or not port.isdigit():
            parser.error(f"--tcp wants HOST:PORT, got {args.tcp!r}")
        from ollie_lsp.tcp import TcpSetupError, loopback_host

        try:
            args.host, args.port = loopback_host(host), int(port)
        except TcpSetupError as exc:
            parser.error(str(exc))
    elif args.token_file:
        parser.error("--token-file goes with --tcp (stdio needs no token)")
    return args


def setup_logs(log_file: str | None) -> str:
    """Log to a file; pygls' per-message logging is kept to warnings (it would log every delta).

    Where the log cannot be written (a read-only or full state dir, one owned by root): what is wrong and what to do,
    logged to stderr (the editor's log) instead; else "".
    """
    from ollie.log import log_problem, setup_logging

    problem = ""
    try:
        setup_logging(log_file)
    except OSError as exc:
        # Not an exit before the handshake: the editor would only say the server died. The daemon answers
        # `initialize`, shows this, and refuses what would need the state (server.start_problem).
        problem = log_problem(log_file, "ollie-lsp", exc)
        print(problem, file=sys.stderr)
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    for name in ("pygls", "pygls.protocol", "pygls.server", "pygls.feature_manager"):
        logging.getLogger(name).setLevel(logging.WARNING)
    return problem


def coalesce_window() -> float:
    """Seconds over which hot assistant deltas are joined (`OLLIE_LSP_COALESCE_MS`, default 4)."""
    try:
        return max(0.0, float(os.environ.get("OLLIE_LSP_COALESCE_MS", "4")) / 1000)
    except ValueError:
        return 0.004


async def serve_stdio(server: OllieServer, rpc_in: BinaryIO, rpc_out: BinaryIO) -> None:
    """Serve one client on the private stdio copies; close every session when it goes away."""
    from ollie.stdio import open_writer
    from ollie_lsp.stdio import StdinFrames

    # Never StdoutWriter: a client that stops reading would hold the whole loop in write(2).
    server.protocol.set_writer(await open_writer(rpc_out))  # type: ignore[arg-type]
    serving = asyncio.ensure_future(server.serve_client(StdinFrames(rpc_in)))
    loop = asyncio.get_running_loop()

    def signalled(signum: int) -> None:
        # Not asked to stop (no `shutdown`): the status says so, 128 + the signal as a shell's, and the editor restarts
        # it as after a crash (with status 0 Neovim took it for stopped on purpose, and left the chats without one).
        if not server.shutdown_asked:
            server.exit_code = 128 + signum
        serving.cancel()

    for signum in (signal.SIGTERM, signal.SIGHUP):  # as the client leaving: sessions saved, tools ended
        loop.add_signal_handler(signum, signalled, signum)
    try:
        await serving
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():  # this coroutine itself is cancelled, not just the serving
            raise
    finally:  # the client is gone (EOF, `exit`): close what runs, and end even if that hangs
        await server.finish_with_client()
        # The last answers the client has not read yet go out before the loop ends (bounded).
        closing = server.protocol.writer.close() if server.protocol.writer is not None else None
        if closing is not None:
            await closing


def run_tcp(server: OllieServer, args: Args) -> int:
    """Serve one authenticated client on the loopback address; 2 when the token cannot be set up."""
    from functools import partial

    from ollie_lsp.tcp import TcpSetupError, resolve_token, serve_tcp

    try:
        return run_server(server, serve_tcp(server, args.host, args.port, partial(resolve_token, args.token_file)))
    except TcpSetupError as exc:
        print(f"ollie-lsp: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"ollie-lsp: --tcp {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2


def run_server(server: OllieServer, serving: Coroutine[Any, Any, None],
               quiet: tuple[type[BaseException], ...] = (KeyboardInterrupt,)) -> int:
    """Run `serving` to its end, then shut the server down: SystemExit's code, else 0 (`quiet` errors end it too)."""
    try:
        asyncio.run(serving)
    except quiet:
        pass
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 0
    finally:
        server.shutdown()
    return server.exit_code


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `ollie-lsp` console script."""
    from ollie.startup import drop_generated_sources, pause_gc, raise_fd_limit
    from ollie.stdio import end_process, protect_stdio

    raise_fd_limit()
    args = parse_args(argv)
    problem = setup_logs(args.log_file)
    import pygls.lsp.server  # noqa: F401 - pygls and lsprotocol load with the collector on, as in a bare server

    drop_generated_sources()  # before the daemon's and the engine's modules load, so that they fill the room
    # The daemon's own modules, then the engine (resumed by load_engine), load without it: with lsprotocol in, a
    # full pass (~35 ms of CPU) fell in the daemon's import, before `initialize` was even answered.
    pause_gc()
    from ollie_lsp.daemon import build_server

    server = build_server(coalesce_s=coalesce_window())
    server.start_problem = problem
    if args.tcp:
        end_process(run_tcp(server, args))
    rpc_in, rpc_out = protect_stdio()
    end_process(run_server(server, serve_stdio(server, rpc_in, rpc_out), quiet=(KeyboardInterrupt, BrokenPipeError)))


if __name__ == "__main__":
    sys.exit(main())
