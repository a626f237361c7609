"""`ollie -p` with text piped in: it goes with the prompt (`git diff | ollie -p "review this"`), as in other agents."""

from __future__ import annotations

import os
import stat
import sys

# Beyond this, piped text is refused rather than cut: half a log or diff would mislead the model.
PIPED_MAX_BYTES = 1 << 20


class PipedError(Exception):
    """What was piped in cannot go with the prompt (too large)."""


def piped_text() -> str:
    """What stdin holds when it is a pipe or a file ("" for a terminal, /dev/null or a socket: nothing was piped)."""
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError):  # stdin closed
        return ""
    if not (stat.S_ISFIFO(mode) or stat.S_ISREG(mode)):
        return ""
    data = sys.stdin.buffer.read(PIPED_MAX_BYTES + 1)
    if len(data) > PIPED_MAX_BYTES:
        raise PipedError(f"the text piped in is larger than {PIPED_MAX_BYTES} bytes; pipe in less (head, a path "
                         "to read instead)")
    return data.decode("utf-8", "replace")


def with_piped(prompt: str, piped: str) -> str:
    """The prompt with the piped text after it (a blank line between), or the piped text alone when no prompt."""
    if not piped.strip():
        return prompt
    return f"{prompt}\n\n{piped}" if prompt.strip() else piped
