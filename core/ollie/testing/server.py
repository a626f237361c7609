"""Run a ScriptedLLMServer from the command line: `python -m ollie.testing.server --fmt openai --script s.json`.

The first stdout line is `URL <base url>`, then one line per request as it comes (`REQUEST POST /v1/… (2 messages;
last user: "…")`); it serves until SIGTERM/SIGINT, then
exits 1 (with the reason on stderr) if replies were left over or a request was unexpected.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path

from ollie.testing.reply import Reply
from ollie.testing.scripted import RecordedRequest, ScriptedLLMServer
from ollie.testing.wire import FORMATS


def load_script(path: Path) -> list[Reply]:
    """Read a JSON list of reply objects; a bad file names itself and the entry."""
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"{path}: cannot read script: {exc}") from exc
    if not isinstance(entries, list):
        raise SystemExit(f"{path}: a script is a JSON list of reply objects")
    replies = []
    for number, entry in enumerate(entries):
        try:
            replies.append(Reply.from_dict(entry))
        except (ValueError, TypeError, KeyError) as exc:
            raise SystemExit(f"{path}: entry {number}: {exc}") from exc
    return replies


def describe(request: RecordedRequest) -> str:
    """One line for a request: its method, path and, for a chat, its last message's role and text's start."""
    messages = request.body.get("messages") if isinstance(request.body, dict) else None
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return f"{request.method} {request.path}"
    last = messages[-1]
    said = f"last {last.get('role')}: {json.dumps(last.get('content'))[:160]}"
    return f"{request.method} {request.path} ({len(messages)} messages; {said})"


def main(argv: list[str] | None = None) -> int:
    """Start the server, print its URL, serve until a signal, report leftovers."""
    parser = argparse.ArgumentParser(prog="python -m ollie.testing.server", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--fmt", choices=FORMATS, default="openai")
    parser.add_argument("--script", type=Path, help="JSON list of replies, e.g. [{\"text\": \"hi\"}]")
    parser.add_argument("--model", default="scripted-model")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--text-model", action="append", default=[],
                        help="a model listed too that refuses images, as a vendor does (repeatable)")
    args = parser.parse_args(argv)
    server = ScriptedLLMServer(args.fmt, model=args.model, port=args.port, text_models=args.text_model)
    if args.script:
        server.script(*load_script(args.script))
    server.on_request = lambda request: print(f"REQUEST {describe(request)}", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server.start()
    print(f"URL {server.url}", flush=True)
    stop.wait()
    server.stop()
    try:
        server.assert_done()
    except AssertionError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
