"""Line editing at the terminal's idle prompt: GNU readline (arrows, history), its history kept per project."""

from __future__ import annotations

import contextlib
import hashlib
import sys
from pathlib import Path
from typing import Any

from ollie import paths

# The prompts kept per project: enough to find last week's, small enough to rewrite at every line.
HISTORY_LINES = 1000
# A Ctrl-C at the prompt, as the line readline hands back: the terminal's interrupt key is off while it reads (its
# signal would reach the loop, which cannot stop a read in another thread: `lines._interrupt_key_off`), so the key
# types this and Enter.
CTRL_C = "\x03"

_readline: Any = None  # the module, once `available` loaded it
_history: Path | None = None


def available() -> bool:
    """Whether the prompt can be edited: stdin and stdout a terminal and Python's readline is GNU readline (its
    bindings and hooks below); loaded at the first call."""
    global _readline
    if _readline is None:
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            return False
        try:
            import readline
        except ImportError:
            return False
        if "libedit" in (readline.__doc__ or ""):  # (macOS's: none of the bindings below)
            return False
        readline.set_auto_history(False)  # a prompt goes in once sent (`remember`), never a Ctrl-C'd line
        readline.parse_and_bind(r'"\C-c": "\C-v\C-c\C-j"')  # the key typed, then Enter: `CTRL_C` in the line
        # A Ctrl-D typed just before readline took the terminal comes as \0 (its line mode's mark of the end): the end.
        readline.parse_and_bind(r'"\C-@": "\C-d"')
        _readline = readline
    return True


def open_history(cwd: Path) -> None:
    """Load the prompts sent earlier in the project `cwd`, kept in ollie's state dir (never in the workspace)."""
    global _history
    if not available():
        return
    name = hashlib.sha256(str(cwd.resolve()).encode()).hexdigest()[:32]
    _history = paths.state_dir() / "history" / name
    _readline.clear_history()
    _readline.set_history_length(HISTORY_LINES)
    with contextlib.suppress(OSError):
        _readline.read_history_file(str(_history))


def read_line(prompt: str, start: str = "") -> str | None:
    """A line typed at `prompt` with `start` already typed, edited as in a shell (without its newline); None at EOF.
    Blocking: in the thread that reads stdin."""
    _readline.set_startup_hook(lambda: _readline.insert_text(start) if start else None)
    try:
        return input(prompt)
    except EOFError:
        return None
    finally:
        _readline.set_startup_hook(None)


def remember(line: str) -> None:
    """Keep a prompt sent in the project's history (Up recalls it, in the next run too). Blocking."""
    if _readline is None or not line.strip():
        return
    _readline.add_history(line)
    if _history is not None:
        with contextlib.suppress(OSError):
            _history.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            _readline.write_history_file(str(_history))
