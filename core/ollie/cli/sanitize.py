"""Text from the model or a tool, made safe for a terminal: no escape sequences, no controls, no bidi overrides.

A terminal obeys what it is sent (`ESC]52;...` writes the clipboard, `\\r` overwrites what was shown): model and
tool text goes through `printable`; what the user approves through `ollie.escapes`, so what runs is what is shown.
"""

from __future__ import annotations

import re

# Whole sequences, so that their parameters do not litter the text. A string
# sequence (OSC, DCS, SOS, PM, APC) is removed only up to its terminator; one
# without a terminator loses just its introducer, and the rest stays visible.
_SEQUENCES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI (colours, cursor moves, erase)
    r"|\x9b[0-?]*[ -/]*[@-~]"  # CSI, 8-bit form
    r"|[\x1b][\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"  # OSC, DCS, SOS, PM, APC
    r"|[\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"  # the same, 8-bit introducers
    r"|\x1b[ -/]*[0-~]?",  # any other escape (ESC c reset, ESC 7, ESC ( B); a lone ESC
)
# What is left: C0 controls but \n and \t, DEL, C1 controls, and the bidi embeddings/overrides/isolates.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# A sequence still open at the end of a piece of streamed text: ESC, `ESC[31`, `ESC]0;ti`, 8-bit forms alike.
_OPEN_AT_END = re.compile(
    r"(?:\x1b(?:\[[0-?]*[ -/]*|[\]PX^_][^\x07\x1b\x9c]*\x1b?|[ -/]*)|\x9b[0-?]*[ -/]*"
    r"|[\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c]*\x1b?)\Z"
)
# How much of an open sequence is held back waiting for its end; past that it is cleaned and shown.
HELD_MAX = 4096


def printable(text: str) -> str:
    """`text` without terminal escape sequences, C0/C1 controls (but newline and tab) and bidi overrides."""
    return _CONTROLS.sub("", _SEQUENCES.sub("", text))


class StreamCleaner:
    """`printable` for text that arrives in pieces: a cut sequence is held until whole (else litter like `[31m`)."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        """The printable part of what has arrived so far, less an open sequence at its end."""
        text = self._held + piece
        match = _OPEN_AT_END.search(text)
        if match and len(text) - match.start() <= HELD_MAX:
            text, self._held = text[: match.start()], text[match.start():]
        else:
            self._held = ""
        return printable(text)

    def flush(self) -> str:
        """What was held back, cleaned (the stream ended inside a sequence)."""
        held, self._held = self._held, ""
        return printable(held)
