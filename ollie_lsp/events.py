"""Event forwarding: one task per session drains its bus subscription into `ollie/event` notifications."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ollie.agent.events import Event, Subscription
from ollie.backend import images

logger = logging.getLogger("ollie.lsp.events")

# How long closing a session waits for its last events to be written.
STOP_WAIT_S = 5.0
# Roles whose consecutive events are text deltas that may be joined into one notification.
DELTA_ROLES = frozenset({"assistant", "reasoning"})
REPLY_ROLES = DELTA_ROLES | {"call"}  # what a model's reply streams


def event_params(session_id: str, seq: int, event: Event) -> dict[str, Any]:
    """The `ollie/event` params of one engine event (`name` only when it has one)."""
    # The wire keeps the usage payload as the space-separated string it has always carried.
    content = event.usage.wire_text() if event.usage is not None else event.content
    params: dict[str, Any] = {"session": session_id, "seq": seq, "role": event.role, "content": content}
    if event.name:
        params["name"] = event.name
    # Protocol v2: the readable step(s) of a call/step/tool event (v1 clients ignore the extra keys).
    if event.tool is not None:
        params["tool"] = event.tool.to_wire()
    if event.steps:
        params["steps"] = [step.to_wire() for step in event.steps]
    if event.role == "user" and event.images:  # a queued prompt's: what each is, as its history message names them
        params["images"] = [{"mime": i.mime, "bytes": i.size} for i in event.images]
    elif event.images:  # a `tool` result's images, as the model was shown them
        params["images"] = images.shown(event.images)[0]
    if event.turn:  # a `turn` end: the number of the turn that ended (a client's "fork from here" names it)
        params["turn"] = event.turn
    if event.changes is not None and event.changes.unknown:  # a `turn` end whose diff failed: why it is not known
        params["turnChanges"] = {"turn": event.changes.turn, "unknown": True, "reason": event.changes.unknown} | (
            {"again": True} if event.changes.again else {})
    elif event.changes is not None:  # a `turn` end: what the history's `turnChanges` says, and the files to list
        changes = event.changes
        params["turnChanges"] = {
            "turn": changes.turn, "files": changes.count,
            "changed": [{"path": f.path, "status": f.status, "added": f.added, "removed": f.removed,
                         "inEditor": f.in_editor} for f in changes.files],
        }
        if changes.count > len(changes.files):  # the list is bounded (ollie.agent.review.END_LISTED_FILES)
            params["turnChanges"]["more"] = changes.count - len(changes.files)
    return params


@dataclass(eq=False, repr=False)
class _Waiting:
    """An event held while the output is paused; `parts` collects a run of deltas (None for other events)."""

    first: Event | None
    parts: list[str] | None

    @property
    def count(self) -> int:
        """How many of the subscription's events it holds."""
        return len(self.parts) if self.parts is not None else 1

    def event(self) -> Event | None:
        """The event to send (a run of deltas joined into one)."""
        if self.first is None or self.parts is None or len(self.parts) == 1:
            return self.first
        return Event(self.first.role, self.first.name, "".join(self.parts))


class EventForwarder:
    """Drains one session's subscription in order, numbering what it sends.

    `state` events are not forwarded: they call `on_state`. `turn` events are
    forwarded and also call `on_turn(event)`. Consecutive text deltas of one
    role are joined when the stream is hot: after a delta sent less than
    `coalesce_s` ago, it waits that long and sends everything that piled up as
    one notification, so a slow client is not flooded with tiny messages.

    While `paused()` (the client is not reading: the daemon's unsent output is
    over its bound) nothing is sent: the events that come meanwhile wait here
    in order, each run of deltas joined as it grows, and go out once
    `writable()` returns.
    """

    def __init__(
        self,
        session_id: str,
        subscription: Subscription,
        *,
        send: Callable[[dict[str, Any]], None],
        on_state: Callable[[], None] = lambda: None,
        on_turn: Callable[[Event], None] = lambda event: None,
        coalesce_s: float = 0.004,
        paused: Callable[[], bool] | None = None,
        writable: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.session_id = session_id
        self.sent = 0  # the `seq` of the last notification sent: per session, from 1, with no gaps
        self._reads: list[Callable[[int], None]] = []  # `after_sent`'s, waiting for the sends to catch up
        self._sub = subscription
        self._send = send
        self._on_state = on_state
        self._on_turn = on_turn
        self._coalesce_s = coalesce_s
        self._paused = paused
        self._writable = writable
        # What came while the output was paused, in order; a run of deltas is one entry (its parts joined later).
        self._backlog: deque[_Waiting] = deque()
        self._held: Event | None = None
        self._held_count = 0  # how many of the subscription's events `_held` joins
        self._ended = False
        self._last_delta_at = 0.0
        self._task: asyncio.Task[None] | None = None
        # Whether the events sent so far leave a turn open (its `turn` start sent, not yet its end).
        self.turn_open = False
        self.turn_started = 0  # the `seq` of the last `turn` start sent
        self.turn_ended = 0  # the `seq` of the last `turn` end sent (0: none yet)
        self.replied = asyncio.Event()  # set once a reply's first part or a turn's end was sent, or the session ended

    def start(self) -> None:
        """Start the draining task."""
        self._task = asyncio.create_task(self._run(), name=f"ollie-events-{self.session_id}")
        self._task.add_done_callback(self._done)

    def _done(self, _task: asyncio.Task[None]) -> None:
        self._sub.finished()  # a killed session's waits end too
        self.replied.set()
        self._read_settled()

    async def stop(self, *, timeout: float = STOP_WAIT_S) -> None:
        """Close the subscription and wait until everything queued was sent (at most `timeout` s).

        A client that has stopped reading for good would hold the wait forever: what is left then is dropped.
        """
        self._sub.close()
        if self._task is not None:
            done, _ = await asyncio.wait({self._task}, timeout=timeout)
            if not done:
                logger.warning("the client is not reading: events left unsent", extra={"session": self.session_id})
                self._task.cancel()
                await asyncio.gather(self._task, return_exceptions=True)

    async def drained(self) -> None:
        """Wait until every event published so far has been handled (not later ones), or the forwarder has ended
        (a killed session); at once, without a loop pass, when they were."""
        await self._sub.caught_up()

    def after_sent(self, read: Callable[[int], None]) -> None:
        """Call `read(seq)` once every event published so far has been sent, `seq` the last one's (0: none yet).

        At once when they have been; else right after the send that catches up, before any later event is handled:
        what `read` reads of the session then is what the events up to `seq` told, and no later one.
        """
        self._reads.append(read)
        self._read_settled()

    def _read_settled(self) -> None:
        if self._reads and self._sub.settled:
            reads, self._reads = self._reads, []
            for read in reads:
                try:
                    read(self.sent)
                except Exception:  # a reader's bug must not stop the session's stream
                    logger.exception("reading after the sent events failed", extra={"session": self.session_id})

    async def _next(self) -> tuple[Event | None, int]:
        """The next event to handle and how many of the subscription's events it joins."""
        if self._held is not None:
            event, self._held = self._held, None
            return event, self._held_count
        if self._backlog:
            return self._take()
        if self._ended:
            return None, 0
        return await self._sub.get(), 1

    def _pending(self) -> bool:
        return bool(self._backlog) or self._sub.pending() > 0

    def _take(self) -> tuple[Event | None, int]:
        if self._backlog:
            waiting = self._backlog.popleft()
            return waiting.event(), waiting.count
        return self._sub.get_nowait(), 1

    async def _wait_writable(self) -> None:
        """While the output is paused, keep taking events (so deltas join as they come) until it is writable."""
        if self._paused is None or self._writable is None:
            return
        while self._paused():
            ready = asyncio.ensure_future(self._writable())
            getter = asyncio.ensure_future(self._sub.get())
            await asyncio.wait({ready, getter}, return_when=asyncio.FIRST_COMPLETED)
            if getter.done():
                self._fold(getter.result())
            else:
                getter.cancel()  # a cancelled Queue.get leaves its item queued
            if not ready.done():
                ready.cancel()

    def _fold(self, event: Event | None) -> None:
        last = self._backlog[-1] if self._backlog else None
        run = last.first if last is not None and last.parts is not None else None
        if event is not None and last is not None and last.parts is not None and run is not None \
                and event.role == run.role and event.name == run.name:
            last.parts.append(event.content)
            return
        if event is not None and event.role in DELTA_ROLES:
            self._backlog.append(_Waiting(event, [event.content]))
        else:
            self._backlog.append(_Waiting(event, None))

    async def _run(self) -> None:
        while True:
            event, count = await self._next()
            if event is None:
                return
            try:
                await self._wait_writable()
                if event.role in DELTA_ROLES:
                    event, count = await self._coalesce(event, count)
                self._handle(event)
            except Exception:
                # One bad event or a failed write must not stop the session's stream.
                logger.exception("forwarding an event failed", extra={"session": self.session_id})
            finally:
                self._sub.handled(count)
                self._read_settled()

    def _handle(self, event: Event) -> None:
        if event.role == "state":
            self._on_state()
            return
        if event.role in ("output", "rewind", "kept"):  # live step output (its result comes whole), internal: not on the wire
            return
        self.sent += 1
        self._send(event_params(self.session_id, self.sent, event))
        if event.role in REPLY_ROLES:
            self.replied.set()
        if event.role == "turn":
            self.turn_open = event.content == "start"
            if self.turn_open:
                self.turn_started = self.sent
            else:
                self.turn_ended = self.sent
                self.replied.set()
            self._on_turn(event)

    async def _coalesce(self, first: Event, count: int) -> tuple[Event, int]:
        now = time.monotonic()
        hot = self._coalesce_s > 0 and now - self._last_delta_at < self._coalesce_s
        if hot:
            await asyncio.sleep(self._coalesce_s)
        parts = [first.content]
        while self._pending():
            nxt, more = self._take()
            if nxt is not None and nxt.role == first.role and nxt.name == first.name:
                parts.append(nxt.content)
                count += more
                continue
            if nxt is None:
                # The subscription closed: end after sending what was joined.
                self._ended = True
            else:
                self._held, self._held_count = nxt, more
            break
        self._last_delta_at = time.monotonic()
        if len(parts) == 1:
            return first, count
        return Event(first.role, first.name, "".join(parts)), count
