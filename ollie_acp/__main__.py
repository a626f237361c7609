"""`ollie acp` / `ollie-acp` / `python -m ollie_acp`: ollie as an Agent Client Protocol agent over stdio."""

from __future__ import annotations

import asyncio
import sys
from contextlib import suppress
from dataclasses import dataclass
from typing import BinaryIO, cast

from ollie import __version__


@dataclass
class Args:
    """The parsed command line."""

    agent: str = "default"
    backend: str | None = None
    model: str | None = None
    log_file: str | None = None


def parse_args(argv: list[str] | None = None) -> Args:
    """The command line: --agent, --backend, --model, --log-file, --version."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        return Args()  # what editors start (`ollie acp`): argparse would load before the first chunk for nothing
    import argparse

    parser = argparse.ArgumentParser(
        prog="ollie acp",
        description="Run ollie as an ACP agent over stdin/stdout (Zed, JetBrains, codecompanion, avante, agent-shell).",
    )
    parser.add_argument("--agent", default="default", help="agent config of new sessions (default: default)")
    parser.add_argument("--backend", help="backend of new sessions (default: $OLLIE_BACKEND)")
    parser.add_argument("--model", help="model of new sessions (default: $OLLIE_MODEL or the backend's default)")
    parser.add_argument("--log-file", metavar="PATH", help="where to log (default: the state dir's ollie.log)")
    parser.add_argument("--version", action="version", version=f"ollie-acp {__version__}")
    parsed = parser.parse_args(argv)
    return Args(agent=parsed.agent, backend=parsed.backend, model=parsed.model, log_file=parsed.log_file)


async def serve(args: Args, rpc_in: BinaryIO, rpc_out: BinaryIO) -> None:
    """Serve one client until its stdin ends (a closed pipe, the end of a file, /dev/null); then close every
    session (saved, tool processes ended)."""
    from acp import run_agent
    from acp.interfaces import Agent

    from ollie.startup import resume_gc
    from ollie.stdio import PipeWriter
    from ollie_acp.agent import OllieAgent
    from ollie_acp.streams import LineTransport, streams

    resume_gc()  # paused by main() while the SDK's schema and the engine loaded
    reader, writer = await streams(rpc_in, rpc_out)
    agent = OllieAgent(agent=args.agent, backend=args.backend, model=args.model,
                       read_by_client=writer.read_by_client)
    try:
        # The unstable protocol for session/close, /resume and /fork (advertised in initialize).
        await run_agent(cast(Agent, agent), LineTransport(reader, writer, on_end=agent.stop_turns),
                        use_unstable_protocol=True)
    finally:
        await agent.close_all()
        if isinstance(writer, PipeWriter):  # the process ends next: what the client has not read yet goes out first
            await writer.close()


def main(argv: list[str] | None = None) -> int:
    """Entry point of `ollie-acp` (and `ollie acp`)."""
    from ollie.startup import pause_gc, raise_fd_limit

    pause_gc()  # until serve() has loaded the SDK and the engine
    raise_fd_limit()
    args = parse_args(argv)
    from ollie.log import start_logging
    from ollie.stdio import end_process, protect_stdio

    # Nothing but ACP on stdout: fd 1 becomes stderr for everything else (tools, hooks, stray prints).
    rpc_in, rpc_out = protect_stdio()
    start_logging(args.log_file, "ollie acp")
    with suppress(KeyboardInterrupt, BrokenPipeError):
        asyncio.run(serve(args, rpc_in, rpc_out))
    end_process(0)


if __name__ == "__main__":
    sys.exit(main())
