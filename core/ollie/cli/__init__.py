"""`ollie`: the agent in a terminal (interactive, or one turn with -p), and `ollie demo`."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from ollie import __version__


def build_parser() -> argparse.ArgumentParser:
    """The command line of `ollie`."""
    parser = argparse.ArgumentParser(
        prog="ollie",
        description="An LLM coding agent. `ollie` starts an interactive prompt; `ollie -p TEXT` runs one turn; "
        "`ollie demo` shows the editor daemon working against a scripted model; "
        "`ollie doctor` checks the backend, the model, keys, the sandbox and the editors' ollie-lsp.",
    )
    parser.add_argument("command", nargs="?", choices=["demo", "doctor"],
                        help="demo: run the scripted end-to-end demo; doctor: check the setup")
    parser.add_argument("-p", "--prompt", help="run this prompt as one turn and exit")
    parser.add_argument("--agent", default="default", help="agent config name (default: default)")
    parser.add_argument("--backend", help="ollama, openai, openrouter or anthropic (default: $OLLIE_BACKEND)")
    parser.add_argument("--model", help="model name (default: $OLLIE_MODEL or the backend's default)")
    parser.add_argument("--session", help="resume this saved session id")
    parser.add_argument("--cwd", type=Path, default=Path("."), help="working directory (default: here)")
    parser.add_argument("--no-preflight", action="store_true", help="skip the backend reachability check")
    parser.add_argument("--version", action="version", version=f"ollie {__version__}")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `ollie` console script."""
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        from ollie_lsp.demo import run_demo

        return asyncio.run(run_demo())
    if args.command == "doctor":
        from ollie.cli.doctor import doctor

        return doctor(backend=args.backend, model=args.model, cwd=args.cwd)
    if not args.cwd.is_dir():
        print(f"ollie: --cwd {args.cwd} is not a directory", file=sys.stderr)
        return 2
    from ollie.log import setup_logging

    setup_logging()
    if not args.no_preflight:
        from ollie.cli.preflight import backend_problem

        problem = backend_problem(args.backend, model=args.model)
        if problem:
            print(f"ollie: {problem}", file=sys.stderr)
            return 2
    from ollie.cli.terminal import RunOptions, run_interactive, run_once
    from ollie.errors import OllieError

    options = RunOptions(agent=args.agent, backend=args.backend, model=args.model, session=args.session, cwd=args.cwd)
    try:
        if args.prompt is not None:
            return asyncio.run(run_once(options, args.prompt))
        return asyncio.run(run_interactive(options))
    except OllieError as exc:
        from ollie.cli.sanitize import printable

        print(printable(f"ollie: {exc}"), file=sys.stderr)  # an engine error may quote the model or a tool
        return 2
    except KeyboardInterrupt:
        return 130
