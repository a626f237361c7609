"""What the user sent that waits for the agent: queued prompts, injects, and hook notes for the next prompt."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable


class Inbox:
    """The waiting input of one core.

    Queued prompts run as turns of their own, oldest first; injects ride on the
    running turn's next tool result; notes (hook output) join the next prompt.
    """

    def __init__(self, *, on_queued: Callable[[], None]) -> None:
        self._prompts: deque[str] = deque()
        self._injects: list[str] = []
        self._notes: list[str] = []
        self._on_queued = on_queued

    def inject(self, text: str, *, running: bool) -> None:
        """Hold `text` for the running turn's next tool result; with no turn running, queue it."""
        if running:
            self._injects.append(text)
        else:
            self.queue(text)

    def replace_injects(self, text: str, *, running: bool) -> None:
        """Make `text` the only pending inject (queued at once when no turn runs)."""
        self._injects = [text]
        if not running:
            self.queue(self.pop_inject())

    def pop_inject(self) -> str:
        """Take every pending inject, joined (empty when none)."""
        text = "\n".join(self._injects)
        self._injects.clear()
        return text

    def requeue_injects(self) -> None:
        """At a turn's end: injects that came too late for a tool result become the next prompt, not lost."""
        if self._injects:
            self._prompts.append(self.pop_inject())

    def queue(self, text: str) -> int:
        """Add a prompt to the FIFO; returns its depth."""
        self._prompts.append(text)
        self._on_queued()
        return len(self._prompts)

    def pop_queue(self) -> str | None:
        """Take the oldest queued prompt."""
        return self._prompts.popleft() if self._prompts else None

    def queued(self) -> list[str]:
        """The queued prompts, oldest first."""
        return list(self._prompts)

    def clear_queue(self) -> int:
        """Drop every queued prompt; returns how many."""
        count = len(self._prompts)
        self._prompts.clear()
        return count

    def add_note(self, note: str) -> None:
        """Keep `note` (hook output) for the next prompt; empty notes are ignored."""
        if note:
            self._notes.append(note)

    def take_notes(self) -> list[str]:
        """The notes waiting for the next prompt, handed over once."""
        notes, self._notes = self._notes, []
        return notes
