"""The event bus: the engine's only output channel."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator

import attrs

from ollie.agent.steps import ToolState
from ollie.backend.types import Image

# Roles the engine publishes: assistant, tool, call, step, info, exec, error, usage, reasoning, limitretry, turn,
# state, output, rewind. `turn` marks a turn's edges (content "start" or the stop reason); `state` (internal, empty
# content) a change of state, usage, cwd or context size; `rewind` (internal) a rewind or its undo, its content the
# number of turns it left.
# `call` (a tool call starts), `step` (a step's status moved, e.g. to in_progress; empty content) and
# `tool` (its result) carry `tool`: the call as one step, same id on all three; a batch of several
# calls also carries `steps`, one per inner call (ids `<call id>.<n>`). `output` (with `tool`): a running
# command step's new output, as it comes (its result still comes whole in `tool`); ACP shows it live.


@attrs.frozen(eq=False, repr=False, slots=False)
class UsageReport:
    """One request's token counts and cost (USD): the payload of a `usage` event."""

    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    cache_creation_tokens: int
    cost_usd: float

    def wire_text(self) -> str:
        """The space-separated form the `ollie/event` wire carries (docs/PROTOCOL.md)."""
        return (f"{self.input_tokens} {self.output_tokens} {self.cached_input_tokens} "
                f"{self.cache_creation_tokens} {self.cost_usd:.6f}")


@attrs.frozen(eq=False, repr=False, slots=False)
class ChangedFile:
    """One file a turn changed, as its `turn` end event lists it: lines added and removed, in an open document."""

    path: str
    status: str
    added: int
    removed: int
    in_editor: bool = False


@attrs.frozen(eq=False, repr=False, slots=False)
class TurnFiles:
    """What a turn changed, on its `turn` end event: its number, how many files (build output left out), and the
    first of them (`files`: a bounded list, see ollie.agent.review.END_LISTED_FILES); `unknown`: why its count is
    not known (its end's diff failed), count UNCOUNTED then; `again`: the last such turn said the same (not said again)."""

    turn: int
    count: int
    files: tuple[ChangedFile, ...]
    unknown: str = ""
    again: bool = False


@attrs.frozen(eq=False, repr=False, slots=False)
class Event:
    """One engine event: `role` says what it is (above), `name` the tool, `tool`/`steps` its readable steps,
    `changes` (on a `turn` end) the files the turn changed, `turn` (on a `turn` end) its number (0: not numbered),
    `images` (on a `tool` result) the images the tool returned, (on a `user` event) the prompt's."""

    role: str
    name: str = ""
    content: str = ""
    usage: UsageReport | None = None
    tool: ToolState | None = None
    steps: tuple[ToolState, ...] = ()
    prompt: str = ""
    changes: TurnFiles | None = None
    turn: int = 0
    images: tuple[Image, ...] = ()


class Subscription:
    """One subscriber's unbounded queue: a slow reader never blocks the publisher or loses events."""

    def __init__(self, bus: Bus, roles: frozenset[str] | None = None) -> None:
        self._bus = bus
        self.roles = roles  # None: every role
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._received = 0  # events put so far
        self._handled = 0  # of those, how many the reader said it is done with (`handled`)
        self._waits: deque[tuple[int, asyncio.Future[None]]] = deque()  # (received then, woken once handled)
        self._finished = False

    def _put(self, event: Event | None) -> None:
        if event is not None:
            self._received += 1
        self._queue.put_nowait(event)

    async def get(self) -> Event | None:
        """The next event, or None once the subscription or bus is closed."""
        return await self._queue.get()

    def get_nowait(self) -> Event | None:
        """The next event if one is waiting (raises asyncio.QueueEmpty otherwise)."""
        return self._queue.get_nowait()

    def pending(self) -> int:
        """How many events wait to be read."""
        return self._queue.qsize()

    def close(self) -> None:
        """Stop receiving; the reader gets None after what is queued."""
        self._bus._unsubscribe(self)
        self._put(None)

    def handled(self, count: int = 1) -> None:
        """The reader is done with `count` more events (sent, shown, recorded): who waits for them goes on."""
        self._handled += count
        self._wake(self._handled)

    def finished(self) -> None:
        """The reader stops (the end came, or it was cancelled): nobody waits for the rest."""
        self._finished = True
        self._wake(None)

    def _wake(self, upto: int | None) -> None:
        while self._waits and (upto is None or self._waits[0][0] <= upto):
            _, done = self._waits.popleft()
            if not done.done():  # else its waiter gave up (a timeout)
                done.set_result(None)

    @property
    def settled(self) -> bool:
        """Whether the reader has handled every event received so far, or stopped."""
        return self._finished or self._handled >= self._received

    async def caught_up(self) -> None:
        """Wait until the reader has handled every event received so far, or stopped; at once (no pass) when it has.

        Not later ones: a stream that goes on does not hold the wait.
        """
        if self.settled:
            return
        done = asyncio.get_running_loop().create_future()
        self._waits.append((self._received, done))  # in order: `_received` only grows
        await done

    async def __aiter__(self) -> AsyncIterator[Event]:
        try:
            while (event := await self.get()) is not None:
                yield event
                self.handled()  # the loop's body is done with it: it asks for the next
        finally:
            self.finished()


# The most news a bus keeps for its first listener.
MAX_UNHEARD = 20


class Bus:
    """Fan-out of events to any number of subscribers, in publish order."""

    def __init__(self) -> None:
        self._subs: list[Subscription] = []
        # News said before anyone listened to everything (an MCP server that failed as the session was built):
        # the first such subscriber gets it first.
        self._unheard: list[Event] = []

    def subscribe(self, roles: frozenset[str] | None = None) -> Subscription:
        """A new subscription that sees every event published from now on (only those of `roles` when given);
        the first that takes every role also gets the `info` and `error` events nobody heard before it."""
        sub = Subscription(self, roles)
        self._subs.append(sub)
        if roles is None:
            unheard, self._unheard = self._unheard, []
            for event in unheard:
                sub._put(event)
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        if sub in self._subs:
            self._subs.remove(sub)

    def publish(self, event: Event) -> None:
        """Deliver `event` to every subscriber; never blocks."""
        # A reader woken for events it drops cost 50 streaming sessions a loop callback per delta each.
        heard = False
        for sub in self._subs:
            if sub.roles is None or event.role in sub.roles:
                sub._put(event)
                heard = heard or sub.roles is None
        if not heard and event.role in ("info", "error") and len(self._unheard) < MAX_UNHEARD:
            self._unheard.append(event)

    def emit(self, role: str, content: str = "", name: str = "") -> None:
        """Shorthand for publish(Event(role, name, content))."""
        self.publish(Event(role, name, content))

    def close(self) -> None:
        """End every subscription."""
        for sub in list(self._subs):
            sub.close()
