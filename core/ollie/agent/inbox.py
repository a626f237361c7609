"""What the user sent that waits for the agent: queued prompts, injects, and hook notes for the next prompt."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ollie.backend.images import MAX_IMAGES, max_image_bytes
from ollie.errors import OllieError
from ollie.sizes import size_text

if TYPE_CHECKING:
    from ollie.backend.types import Image

# A postTurn hook that keeps exiting 2 would loop forever: after this many continuations in a row, stop.
MAX_CONTINUATIONS = 10
# What waits is held in memory (and the editors save it): a client queueing without end made the daemon hold gigabytes.
# Past these a prompt is refused; the bytes bound (text and images) holds two prompts of images at the cap (80 MiB).
MAX_QUEUED = 32
QUEUED_PROMPTS_OF_IMAGES = 2
# Prompts waiting for their turn and other sessions' queues held theirs besides, without end (many at once made the
# daemon, and `ollie acp`, hold gigabytes): a front end holds this many prompts of images at the cap at most.
HELD_PROMPTS_OF_IMAGES = 4


# A client's context item as it sent it (ollie_lsp.params.EditorContext's wire form, declared there): the core only
# holds it, to hand it back with its queued prompt.
ContextItem = Mapping[str, Any]


class QueueFull(OllieError):
    """No room in the queue for a prompt (MAX_QUEUED, or its bytes): it is refused, what waits is kept."""

    rpc_code = -32010


@dataclass(eq=False, repr=False)
class Held:
    """The bytes of the images one request read, held until its prompt runs or is queued (`take_images`)."""

    images: int = 0


def take_images(holder: Held, size: int, *, held: int, where: str) -> None:
    """Count `size` more bytes (fewer when negative) to `holder`; QueueFull when the front end (`where`: "this
    daemon"), which holds `held` bytes for prompts not run yet in all its sessions, would hold more than it may."""
    cap = HELD_PROMPTS_OF_IMAGES * MAX_IMAGES * max_image_bytes()
    if size > 0 and held + size > cap:
        raise QueueFull(f"this prompt's {size_text(size)} of images and the {size_text(held)} of prompts waiting in"
                        f" {where}'s sessions are over the {size_text(cap)} it holds: let them run first, or send fewer"
                        " or smaller images")
    holder.images += size


@dataclass(eq=False, repr=False, slots=True)
class _Prompt:
    """One queued prompt; an object, so the one holding idle injects is found by identity, not by text."""

    text: str
    # It runs once more than this many turns have ended: one its sender queued after seeing the last turn end
    # waits for the next turn's end, even when a loop still draining the queue for that ended turn comes to it.
    after: int = -1
    # Queued before an interrupt: it waits for the user's word (`release`), never runs on its own.
    held: bool = False
    images: tuple[Image, ...] = ()  # the prompt's pictures, sent with its text as a submit's are
    # The client's context items as it sent them (their blocks are in `text`): handed back when it is popped.
    context: tuple[ContextItem, ...] = ()


def _size(text: str, images: tuple[Image, ...] = (), context: tuple[ContextItem, ...] = ()) -> int:
    """The bytes a queued prompt holds: its text and images, and its context items besides their blocks in its text."""
    return len(text) + sum(i.size for i in images) + sum(len(json.dumps(item)) for item in context)


class Inbox:
    """The waiting input of one core: queued prompts (turns of their own), injects (the next tool result's), notes.

    Injects sent while idle wait together in one queued prompt, which a later one extends and `/irw` replaces.
    """

    def __init__(self, *, on_queued: Callable[[], None]) -> None:
        self._prompts: deque[_Prompt] = deque()
        self._injects: list[str] = []
        self._notes: list[str] = []
        self._inject_entry: _Prompt | None = None
        self._inject_after: _Prompt | None = None  # the last prompt queued before the pending injects (None: none)
        self._continuation = ""
        self._continued = 0
        self._taken: _Prompt | None = None  # the queued prompt `next_prompt` last gave (None: a continuation)
        self._ran_through = False  # the last run of turns ended, and not by an interrupt
        self._ends = 0  # turns ended so far (their `turn` end published)
        self._on_queued = on_queued

    def turns_ended(self, *, interrupted: bool) -> None:
        """A run of turns ended: an interrupt holds what is queued; else a prompt meant for them may still run."""
        if interrupted:  # what is queued waits for the user's word (`release`) instead of running next
            self._continuation = ""  # a stop after postTurn asked for one: it never runs
            for prompt in self._prompts:
                prompt.held = True
        self._ran_through = not interrupted
        self._on_queued()  # the queue may now be held: observers re-read it

    def turn_over(self) -> None:
        """A turn's end was published: what was queued for the turn after it may run."""
        self._ends += 1

    def follows_on(self) -> bool:
        """Whether a prompt queued for the last run of turns runs now: they ended, not interrupted, and nothing
        queued is held."""
        return self._ran_through and not self.held

    def continue_with(self, text: str) -> None:
        """A postTurn hook exited 2: its output is the prompt of another turn, before any queued one."""
        self._continuation = text

    def user_prompt(self) -> None:
        """The user started a turn: the count of continuations in a row starts again."""
        self._continued = 0

    def next_prompt(self) -> str | None:
        """What runs after a turn: a postTurn continuation (at most MAX_CONTINUATIONS in a row), else the
        oldest queued prompt, else None."""
        text, self._continuation = self._continuation, ""
        self._taken = None
        if text and self._continued < MAX_CONTINUATIONS:
            self._continued += 1
            return text
        self._continued = 0
        waiting = next((p for p in self._prompts if not p.held and p.after < self._ends), None)
        if waiting is None:
            return None
        self._prompts.remove(waiting)
        self._taken = waiting
        return waiting.text

    @property
    def taken_images(self) -> tuple[Image, ...]:
        """The images of the queued prompt `next_prompt` last gave (none for a continuation)."""
        return self._taken.images if self._taken is not None else ()

    def put_back(self) -> None:
        """The queued prompt `next_prompt` last gave is first in the queue again: its turn never began."""
        if self._taken is not None:
            self._prompts.appendleft(self._taken)
            self._taken = None

    def release(self) -> None:
        """The user's word: held prompts, and those waiting for a turn's end, may run now."""
        for prompt in self._prompts:
            prompt.held, prompt.after = False, -1

    @property
    def held(self) -> bool:
        """Whether some queued prompt waits for the user's word."""
        return any(p.held for p in self._prompts)

    def inject(self, text: str, *, running: bool) -> None:
        """Hold `text` for the running turn's next tool result; with no turn running, queue it (QueueFull: no room)."""
        self.room(text, (), prompts=0)
        if running:
            self._pend([*self._injects, text])
        else:
            self._queue_inject(text, replace=False)

    def replace_injects(self, text: str, *, running: bool) -> None:
        """Make `text` the only pending inject; with no turn running it replaces the queued injects, if any."""
        if running:
            self._pend([text])
        else:
            self._injects.clear()
            self._queue_inject(text, replace=True)

    def _pend(self, injects: list[str]) -> None:
        if not self._injects:  # the first pending: a turn that ends before taking it queues it after what waits now
            self._inject_after = self._prompts[-1] if self._prompts else None
        self._injects = injects

    def drop_injects(self) -> None:
        """Forget the pending injects: those for the running turn's next tool result, and the prompt idle ones became."""
        self._injects.clear()
        if self._inject_entry in self._prompts:  # by identity: a prompt queued with the same text stays
            self._prompts.remove(self._inject_entry)
            self._on_queued()
        self._inject_entry = None

    def _queue_inject(self, text: str, *, replace: bool) -> None:
        entry = self._inject_entry
        if entry is not None and any(p is entry for p in self._prompts):
            entry.text = text if replace else f"{entry.text}\n{text}"
            self._on_queued()
            return
        self._inject_entry = _Prompt(text)
        self._prompts.append(self._inject_entry)
        self._on_queued()

    def pop_inject(self) -> str:
        """Take every pending inject, joined (empty when none)."""
        text = "\n".join(self._injects)
        self._injects.clear()
        return text

    def requeue_injects(self) -> None:
        """At a turn's end: injects that came too late for a tool result become a prompt, not lost, before those queued
        after them (they came first)."""
        if self._injects:
            at = next((i + 1 for i, p in enumerate(self._prompts) if p is self._inject_after), 0)
            self._inject_entry = _Prompt(self.pop_inject())
            self._prompts.insert(at, self._inject_entry)
            self._on_queued()

    def queue(self, text: str, images: tuple[Image, ...] = (), *, for_next_end: bool = False, held: bool = False,
              context: tuple[ContextItem, ...] = ()) -> int:
        """Add a prompt (with its images and context items) to the FIFO; returns its depth. With `for_next_end` it waits
        for a turn to end after now; `held`, for the user's word (`release`). QueueFull when there is no room for it."""
        self.room(text, images, prompts=1, context=context)
        self._prompts.append(_Prompt(text, self._ends if for_next_end else -1, held, images, context))
        self._on_queued()
        return len(self._prompts)

    def room(self, text: str, images: tuple[Image, ...] = (), *, prompts: int = 1,
             context: tuple[ContextItem, ...] = ()) -> None:
        """QueueFull when `prompts` more (or an inject) of `text`, `images` and `context` would pass the queue's
        bounds."""
        if len(self._prompts) + prompts > MAX_QUEUED:
            raise QueueFull(f"{len(self._prompts)} prompts wait in this session, the most it queues: let them run"
                            " first, or drop them (/queued clear)")
        cap = QUEUED_PROMPTS_OF_IMAGES * MAX_IMAGES * max_image_bytes()
        waiting = self.waiting_bytes()
        size = _size(text, images, context)
        if waiting + size > cap:
            raise QueueFull(f"this prompt's {size_text(size)} and the {size_text(waiting)} waiting in this session are"
                            f" over the {size_text(cap)} it queues: let them run first, or send fewer or smaller"
                            " images")

    def waiting_bytes(self) -> int:
        """The bytes (text, images, context items) of the queued prompts and injects."""
        return sum(_size(p.text, p.images, p.context) for p in self._prompts) + sum(map(len, self._injects))

    def pop_queue(self) -> tuple[str, tuple[Image, ...], tuple[ContextItem, ...]] | None:
        """Take back the latest queued prompt (the one the user just sent), with its images and context items, to edit
        and send again."""
        if not self._prompts:
            return None
        prompt = self._prompts.pop()
        self._on_queued()
        return prompt.text, prompt.images, prompt.context

    def queued(self) -> list[str]:
        """The queued prompts, oldest first."""
        return [p.text for p in self._prompts]

    def clear_queue(self) -> int:
        """Drop every queued prompt; returns how many."""
        count = len(self._prompts)
        self._prompts.clear()
        return count

    def add_note(self, note: str, first: bool = False) -> None:
        """Keep `note` (hook output; `first`: before the others) for the next prompt; empty notes are ignored."""
        if note:
            self._notes.insert(0 if first else len(self._notes), note)

    def take_notes(self) -> list[str]:
        """The notes waiting for the next prompt, handed over once."""
        notes, self._notes = self._notes, []
        return notes
