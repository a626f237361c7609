"""`ollie`: the agent in a terminal (interactive, or one turn with -p), and `ollie demo`."""

from __future__ import annotations

import sys

from ollie import __version__

# Nothing else at the top (not even typing): `ollie acp` runs the agent before it would load (argparse, pathlib and
# what they import: ~15 ms of CPU that no ACP first chunk needs).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from pathlib import Path
    from typing import NoReturn

# `-m` alone puts the working directory first on the import path: `ollie demo` starts in the user's project, whose
# `ollie/` (or `yaml/`...) would run as the user, with the API keys. `-P` leaves it off.
PYTHON_M = (sys.executable, "-P", "-m")
# `ollie --session ID` of a session another process runs now.
EXIT_LIVE_ELSEWHERE = 5


def build_parser() -> argparse.ArgumentParser:
    """The command line of `ollie`."""
    import argparse
    from pathlib import Path

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            if message.startswith("argument command: invalid choice"):  # `ollie "fix the tests"`: a prompt
                message += "; a prompt goes after -p (`ollie -p 'fix the tests'`), or at `ollie`'s own prompt"
            super().error(message)

    parser = Parser(
        prog="ollie",
        description="An LLM coding agent. `ollie` starts an interactive prompt; `ollie -p TEXT` runs one turn; "
        "`ollie demo` runs one turn against a scripted model; "
        "`ollie doctor` checks the backend, the model, keys, the sandbox and the editors' ollie-lsp; "
        "`ollie acp` serves ACP editors (Zed, JetBrains, ...) over stdio; "
        "`ollie store status|migrate|import|share` manages the session store (docs/TEAM.md).",
    )
    # `store` is dispatched before this parser (it has its own); listed here so that --help names it.
    parser.add_argument("command", nargs="?", choices=["demo", "doctor", "acp", "store"],
                        help="demo: run the scripted end-to-end demo; doctor: check the setup; "
                        "acp: run as an Agent Client Protocol agent over stdio; "
                        "store: the session store (`ollie store --help`)")
    parser.add_argument("-p", "--prompt", nargs="?", const="",
                        help="run this prompt as one turn and exit; text piped in goes after it "
                             "(`git diff | ollie -p 'review this'`), or is the prompt when none is given")
    parser.add_argument("--agent", help="agent config name (default: a resumed session's, else default)")
    parser.add_argument("--backend", help="ollama, openai, openrouter or anthropic (default: $OLLIE_BACKEND)")
    parser.add_argument("--model", help="model name (default: $OLLIE_MODEL or the backend's default)")
    parser.add_argument("--session", help="resume this saved session id")
    parser.add_argument("-c", "--continue", dest="continue_latest", action="store_true",
                        help="resume the newest session started in this directory (--cwd)")
    parser.add_argument("--cwd", type=Path, default=Path("."), help="working directory (default: here)")
    parser.add_argument("--approval", choices=["ask", "auto-edit", "auto", "read-only"],
                        help="which steps ask first (default: the agent's, usually ask; -p cannot ask, so "
                             "steps that would are refused)")
    parser.add_argument("--no-preflight", action="store_true", help="skip the backend reachability check")
    parser.add_argument("--version", action="version", version=f"ollie {__version__}")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `ollie` console script."""
    try:
        return _run(argv)
    except KeyboardInterrupt:  # Ctrl-C at any moment, as it starts (imports, the preflight) too: 130, no traceback
        return 130


def _run(argv: list[str] | None) -> int:
    rest = sys.argv[1:] if argv is None else argv
    if rest[:1] == ["acp"]:
        # An editor spawns `ollie acp` and waits for its first chunk: the agent runs at once (it parses its own
        # options: --agent, --backend, --model, --log-file, --version), before this module imports anything more.
        return run_acp(rest[1:])
    if rest[:1] == ["store"]:
        from ollie.cli.store import main as store_main

        return store_main(rest[1:])
    if rest[:1] in (["demo"], ["doctor"]):  # its own options, help and errors (`ollie doctor --bogus`)
        return _run_subcommand(rest[0], rest[1:])
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        from ollie.cli.demo import run_demo

        return run_demo()
    if args.command == "acp":
        return run_acp(["--agent", args.agent or "default", *(["--backend", args.backend] if args.backend else []),
                        *(["--model", args.model] if args.model else [])])
    if args.command == "store":  # after other options (`ollie --cwd x store`): its own options go first
        _say("`store` takes its own options: `ollie store status|migrate|import|share` (see `ollie store --help`)")
        return 2
    if args.command == "doctor":
        from ollie.cli.doctor import doctor

        return doctor(backend=args.backend, model=args.model, cwd=args.cwd)
    piped = ""
    if args.prompt is not None:
        from ollie.cli.piped import PipedError, piped_text

        try:
            piped = piped_text()
        except PipedError as exc:
            _say(str(exc))
            return 2
        if not (args.prompt.strip() or piped.strip()):
            _say("-p needs a prompt: `ollie -p TEXT`, or pipe one in (`echo TEXT | ollie -p`)")
            return 2
    if not args.cwd.is_dir():
        _say(f"--cwd {args.cwd} is not a directory")
        return 2
    from ollie.log import start_logging
    from ollie.startup import raise_fd_limit

    start_logging(None, "ollie")
    raise_fd_limit()  # its steps' proxied connections are this process's descriptors
    if args.continue_latest:
        if args.session:
            _say("--continue resumes this directory's newest session; --session names one: give one of them")
            return 2
        args.session = _latest_here(args.cwd)
        if args.session is None:
            return 1
    if args.session:
        problem = _session_problem(args.session)
        if problem:
            _say(problem)
            return 1
    from ollie.cli.preflight import agent_problem, backend_problem

    # The agent's config first (local and fast), then the backend: both said when both are wrong, not the config only
    # at the next run once the backend answers. A resumed session's agent is its record's, checked as it opens.
    problems = [agent_problem(args.agent or "default") if args.agent or not args.session else None,
                None if args.no_preflight else backend_problem(args.backend, model=args.model)]
    for problem in filter(None, problems):
        _say(problem)
    if any(problems):
        return 2
    from ollie.backend.registry import url_note
    from ollie.backend.settings import env_file_note

    if note := env_file_note():  # a misspelt OLLIE_MODLE: the turn would go on with the default model, unsaid
        _say(note.strip(" ()"))
    if note := url_note(args.backend):  # OLLAMA_HOST: the turn would go to another server, unsaid
        _say(note)
    import asyncio

    from ollie.cli.terminal import RunOptions, run_interactive, run_once
    from ollie.errors import OllieError
    from ollie.sessions.errors import LiveElsewhereError

    options = RunOptions(agent=args.agent, backend=args.backend, model=args.model, session=args.session, cwd=args.cwd,
                         approval=args.approval)
    from ollie.stdio import end_process

    try:
        # Everything is saved and closed once the run returns: no interpreter teardown to wait for after it.
        if args.prompt is not None:
            end_process(asyncio.run(run_once(options, args.prompt, piped)))
        end_process(asyncio.run(run_interactive(options)))
    except LiveElsewhereError as exc:  # another window or terminal runs the session: resuming it here would lose turns
        _say(str(exc))
        return EXIT_LIVE_ELSEWHERE
    except OllieError as exc:
        from ollie.cli.sanitize import printable

        _say(printable(str(exc)))  # an engine error may quote the model or a tool
        return 2


def _say(text: str) -> None:
    """`ollie: <text>` on stderr, broken between words on a terminal (a full row broke `OLLI` / `E_OPENAI_URL`)."""
    from ollie.cli.render import fitted

    print(fitted(f"ollie: {text}", sys.stderr), file=sys.stderr)


def _run_subcommand(command: str, argv: list[str]) -> int:
    """`ollie demo ...`, `ollie doctor ...`: parsed by the subcommand's own parser (its options, help and errors)."""
    import argparse
    from pathlib import Path

    if command == "demo":
        demo = argparse.ArgumentParser(prog="ollie demo", description="Run one turn end to end against a scripted "
                                       "model (no backend, no key), in a scratch workspace: the model reads a sample file "
                                       "through a sandboxed tool and answers. Exit status 0 when the whole round trip "
                                       "worked.")
        demo.parse_args(argv)
        from ollie.cli.demo import run_demo

        return run_demo()
    parser = argparse.ArgumentParser(prog="ollie doctor", description="Check the setup: the backend answers, the model "
                                     "is there, the keys, the env file, Landlock, the sandbox policy, the sessions dir, "
                                     "the session store and the editors' ollie-lsp on PATH; one line per check, with the "
                                     "fix of each that fails. Exit status 0 when all pass, 1 when something needs fixing.")
    parser.add_argument("--backend", help="the backend to check (default: $OLLIE_BACKEND)")
    parser.add_argument("--model", help="the model to check (default: $OLLIE_MODEL or the backend's default)")
    parser.add_argument("--cwd", type=Path, default=Path("."),
                        help="the project whose sandbox policy is checked (default: here)")
    args = parser.parse_args(argv)
    from ollie.cli.doctor import doctor

    return doctor(backend=args.backend, model=args.model, cwd=args.cwd)


def _session_problem(session_id: str) -> str | None:
    """Why `--session ID` cannot be resumed (no saved session has the id), else None; nothing is created."""
    from ollie import paths
    from ollie.cli.sanitize import printable
    from ollie.errors import OllieError
    from ollie.sessions import persist

    try:
        if persist.exists(paths.sessions_dir(), session_id):
            return None
    except OllieError as exc:  # the store cannot be read (OLLIE_STORE down): say so rather than guess
        return printable(f"cannot check session {session_id}: {exc}")
    # Resuming an id that was never saved would silently start a new session under it.
    return (printable(f"--session {session_id}: no saved session has this id; ")
            + "`ollie -p /sessions` lists the saved sessions")


def _latest_here(cwd: Path) -> str | None:
    """The newest session started in `cwd` for `--continue`; None (said on stderr) when there is none."""
    from ollie.agent.commands_info import latest_session
    from ollie.cli.sanitize import printable
    from ollie.errors import OllieError

    try:
        found = latest_session(cwd)
    except OllieError as exc:  # the store cannot be read (OLLIE_STORE down)
        _say(printable(f"cannot list the saved sessions: {exc}"))
        return None
    if found is None:
        _say(printable(f"no saved session was started in {cwd.resolve()}; `ollie` starts one"))
    return found


def run_acp(argv: list[str]) -> int:
    """Run `ollie_acp` (the ACP agent, above the engine: loaded by name) here, as `python -P -m ollie_acp` would."""
    # Not exec'd: a second interpreter's start (~41 M instructions, ~10 ms of CPU) came before an editor's first chunk.
    if not sys.flags.safe_path:  # the script's directory, or the working directory (`-m`, `-c`): what -P leaves off
        del sys.path[0]
    return __import__("ollie_acp.__main__", fromlist=["main"]).main(argv)
