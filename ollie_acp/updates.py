"""Engine events as ACP `session/update`s: message and thought chunks, tool steps, plan, usage."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from acp import (
    image_block,
    plan_entry,
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_plan,
    update_tool_call,
)
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    ContentToolCallContent,
    Cost,
    CurrentModeUpdate,
    FileEditToolCallContent,
    ImageContentBlock,
    SessionInfoUpdate,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
    UserMessageChunk,
)

from ollie.agent.events import Event
from ollie.agent.steps import Diff, Location, ToolState
from ollie.agent.surface import AcpCore
from ollie.agent.taskstate import PlanEntry
from ollie.backend import images
from ollie.backend.types import Image
from ollie.escapes import escaped

logger = logging.getLogger("ollie.acp.updates")

Update = (AgentMessageChunk | AgentThoughtChunk | ToolCallStart | ToolCallProgress | AgentPlanUpdate | UsageUpdate
          | UserMessageChunk | SessionInfoUpdate | AvailableCommandsUpdate | CurrentModeUpdate | ConfigOptionUpdate)
Send = Callable[[Update], Awaitable[None]]

# What a step's update shows of its result: the editor has the full text in the session history.
RESULT_PREVIEW_CHARS = 4000
# A running command step's live output: its last LIVE_OUTPUT_CHARS, at most one update per LIVE_OUTPUT_S.
LIVE_OUTPUT_CHARS = 4000
LIVE_OUTPUT_S = 0.2
# Roles whose content is shown to the user as agent text, with a marker.
NOTE_ROLES = {"info": "", "exec": "", "error": "⚠ ", "limitretry": "… "}
# Ends the note of a retry after an attempt that streamed text: ACP takes no text back, so the client keeps it.
CUT_ATTEMPT = "; the reply above was cut off: the retry answers anew"
# Ends the thinking such an attempt streamed, as its text is marked: the retry's thinking is a thought of its own.
CUT_THOUGHT = "\n\n(cut off: the retry thinks anew)"
# A line that opens or closes a fenced code block (CommonMark: up to 3 spaces, 3 or more backticks or tildes).
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$", re.MULTILINE)


def tool_start(step: ToolState, *, cwd: Path, status: str = "pending", arguments: str = "") -> ToolCallStart:
    """The `tool_call` update opening one step: its locations absolute, the call's `arguments` as its raw input."""
    return start_tool_call(step.id, step.title, kind=step.kind, status=status,  # type: ignore[arg-type]
                           locations=[ToolCallLocation(path=str(cwd / loc.path), line=loc.line)
                                      for loc in step.locations],
                           raw_input=raw_input(arguments))


def raw_input(arguments: str) -> object:
    """A call's JSON arguments as ACP's `rawInput` (None when there are none or they are not JSON)."""
    try:
        return json.loads(arguments) if arguments else None
    except (ValueError, RecursionError):  # (nested too deep: the call's card was never sent)
        return None


def tool_result(step_id: str, status: str, result: str, diffs: tuple[Diff, ...] = (), *,
                cwd: Path | None = None, locations: tuple[Location, ...] = (),
                pictures: Sequence[Mapping[str, Any]] = (), step: ToolState | None = None) -> ToolCallProgress:
    """The `tool_call_update` closing one step, with the start of its result, its images (`images.shown`'s: one
    without data named with its size), its diffs (paths absolute), and its locations once one has a line (an edit's,
    known from its result); `step`'s own title and kind again (a batch's one question renamed its first step's card)."""
    preview = result if len(result) <= RESULT_PREVIEW_CHARS else result[:RESULT_PREVIEW_CHARS] + "\n[…]"
    preview += odd_names((d.path for d in diffs), step.title if step else "", before="\n" if preview else "")
    content: list[ContentToolCallContent | FileEditToolCallContent] = [tool_content(text_block(preview))] if preview else []
    content.extend(tool_content(picture_block(p)) for p in pictures)
    for diff in diffs:
        path = str((cwd / diff.path) if cwd is not None else Path(diff.path))
        # ACP's diff has no "removed" form: a deleted file shows as emptied.
        content.append(tool_diff_content(path, diff.new_text or "", diff.old_text))
    where = [ToolCallLocation(path=str((cwd / loc.path) if cwd is not None else Path(loc.path)), line=loc.line)
             for loc in locations] if any(loc.line for loc in locations) else None
    return update_tool_call(step_id, status=status,  # type: ignore[arg-type]
                            content=content or None, locations=where, title=step.title if step else None,
                            kind=step.kind if step else None)  # type: ignore[arg-type]


def odd_names(paths: Iterable[str], title: str, *, before: str = "\n") -> str:
    """A note naming with escapes the files of `paths` named with controls or bidi overrides, unless `title` names
    them so ("" when none, else `before` and the note): a client draws a diff's header and a location as the path is
    (a line break splits the name, a U+202E draws what follows reversed)."""
    odd = [shown for path in dict.fromkeys(paths) if (shown := escaped(path, keep="")) != path and shown not in title]
    return f"{before}(files named with controls or bidi overrides, shown escaped: {', '.join(odd)})" if odd else ""


def picture_block(picture: Mapping[str, Any]) -> ImageContentBlock | TextContentBlock:
    """One of `images.shown`'s images as ACP content: the image while it had room, else named with its size."""
    if "data" in picture:
        return image_block(picture["data"], picture["mime"])
    return text_block(f"[image: {picture['mime']}, {max(1, round(picture['bytes'] / 1024))} KB, not sent]")


def user_chunks(text: str, pictures: Sequence[Image]) -> list[UserMessageChunk]:
    """A prompt as `user_message_chunk`s: its text, then its images as they were sent (capped as a step's are)."""
    blocks = ([text_block(text)] if text else []) + [picture_block(p) for p in images.shown(pictures)[0]]
    return [UserMessageChunk(session_update="user_message_chunk", content=block) for block in blocks]


def step_pictures(pictures: Sequence[Mapping[str, Any]], count: int) -> list[list[Mapping[str, Any]]]:
    """A call's images for each of its `count` steps: each on the step that returned it (`step`), one without (an
    MCP tool's, a session saved before steps were kept) or past the steps on the last."""
    out: list[list[Mapping[str, Any]]] = [[] for _ in range(count)]
    for picture in pictures:
        step = picture.get("step")
        out[step if isinstance(step, int) and 0 <= step < count else count - 1].append(picture)
    return out


def shown_results(result: str, statuses: Sequence[str]) -> list[str]:
    """What each step of a call shows of the call's one result: a batch's last step shows it, and each failed one
    (a failed card says why: a batch's rejection, the error of its call); the others nothing."""
    last = len(statuses) - 1
    return [result if n == last or status == "failed" else "" for n, status in enumerate(statuses)]


def open_fence(text: str) -> str:
    """The fence of the code block `text` leaves open ("" when none): what closes it."""
    left = ""
    for fence, rest in _FENCE.findall(text):
        if not left:
            left = fence
        elif fence[0] == left[0] and len(fence) >= len(left) and not rest.strip():  # (a closing one has no info)
            left = ""
    return left


def _steps_of(tool: ToolState, steps: tuple[ToolState, ...]) -> list[ToolState]:
    """The steps a call/tool event carries: its inner steps for a batch, else the call itself."""
    return list(steps) or [tool]


class UpdateForwarder:
    """Drains one session's bus in order into `session/update`s; tracks the open tool steps."""

    def __init__(self, core: AcpCore, send: Send) -> None:
        self._core = core
        self._out = send
        self._sub = core.bus.subscribe()
        # Open steps by the engine's call id (the `tool` object's id): a `tool` event closes its own.
        self._open: dict[str, list[str]] = {}
        self._task: asyncio.Task[None] | None = None
        # Live output by step id (its tail), the steps whose tail the client has not seen, when it last saw one.
        self._live: dict[str, str] = {}
        self._unsent: set[str] = set()
        self._live_sent_at = 0.0
        # The end of the agent text the client got last (none yet: nothing to part from): a client joins the chunks,
        # so a note after "done" read "donewaiting for MCP server ..." (`paragraph`).
        self.tail = "\n\n"
        # The model's text and thinking of this request so far (since its last step or retry): what a retry marks cut.
        self._attempt: list[str] = []
        self._thought: list[str] = []
        self._title = ""  # the session's title the client was last told
        self._plan: list[PlanEntry] = []  # the plan the client was sent last (none: it shows none)
        self._usage: UsageUpdate | None = None  # the context use the client was sent last
        # Called at the next reply part sent, and awaited before the next tool call's card (each once): what the
        # session does as its reply begins, and tells before its first step.
        self.on_reply: Callable[[], object] | None = None
        self.before_call: Callable[[], Awaitable[None]] | None = None
        # The class of the model's failure that ended the turn (its `error` event's name): the prompt's answer says it.
        self.failed_as = ""

    def start(self) -> None:
        """Start draining (once: a second call does nothing)."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="ollie-acp-updates")

    async def stop(self) -> None:
        """Close the subscription and wait until what was queued is sent."""
        self._sub.close()
        if self._task is not None:
            await self._task

    async def drained(self) -> None:
        """Wait until every event published so far has been sent (woken by the sender, not polled)."""
        await self._sub.caught_up()

    async def _send(self, update: Update) -> None:
        await self._out(update)
        self.sent(update)

    def sent(self, update: Update) -> None:
        """Keep the end of the agent text `update` brings (each sent to the client, whoever sent it)."""
        if isinstance(update, AgentMessageChunk) and isinstance(update.content, TextContentBlock):
            self.tail = (self.tail + update.content.text)[-2:]
        elif isinstance(update, UsageUpdate):
            self._usage = update

    def paragraph(self, text: str) -> str:
        """`text` as a paragraph of its own after the agent text sent before it."""
        return "\n\n"[len(self.tail) - len(self.tail.rstrip("\n")):] + text

    async def fail_open_steps(self, asked: Iterable[str] = ()) -> None:
        """End every step still open as failed, and the cards of the steps `asked` about (a turn cut short: no step
        stays pending, nor waits for an answer nobody will take)."""
        open_steps, self._open = self._open, {}
        self._live.clear()
        self._unsent.clear()
        for step_id in dict.fromkeys([*(i for ids in open_steps.values() for i in ids), *asked]):
            await self._send(tool_result(step_id, "failed", "interrupted"))

    async def _run(self) -> None:
        try:
            while True:
                try:
                    # Output held back by the throttle goes out once no event has come for a while.
                    async with asyncio.timeout(LIVE_OUTPUT_S if self._unsent else None):
                        event = await self._sub.get()
                except TimeoutError:
                    try:
                        await self._send_live()
                    except Exception:
                        logger.exception("sending live output failed")
                    continue
                if event is None:
                    break
                try:
                    await self._handle(event)
                except Exception:
                    # One bad event or a failed write must not stop the session's stream.
                    logger.exception("sending a session update failed")
                self._sub.handled()  # sent (or given up on): who waits for it goes on
        finally:
            self._sub.finished()

    async def _handle(self, event: Event) -> None:
        role = event.role
        if role == "assistant" and event.content:
            await self._say(event.content)
            self._attempt.append(event.content)  # (joined at a retry: not copied at each delta of a long reply)
            self._replying()
        elif role == "reasoning" and event.content:
            await self._think(event.content)
            self._thought.append(event.content)
            self._replying()
        elif role == "user":  # a prompt the client did not send (a queued one, a postTurn hook's), with its images
            for chunk in user_chunks(event.content, event.images):
                await self._send(chunk)
        elif role == "output":
            await self._output(event)
        elif role == "call":
            await self._open_call(event)
        elif role == "tool":
            await self._close_call(event)
        elif role == "usage":
            await self._send(self.usage_update())
        elif role == "state":  # the title, the plan
            if update := self.title_update():
                await self._send(update)
            await self.send_plan()
        elif role == "error" and event.name:  # a failed model turn: its prompt answers an error (AcpSession._run)
            self.failed_as = event.name
        elif role in NOTE_ROLES and event.content:
            cut = ""
            if role == "limitretry":  # the attempt's text and thinking are no answer: said so, their code blocks closed
                if (await self._close(self._thought, self._think)).strip():
                    await self._think(CUT_THOUGHT)
                cut = await self._close(self._attempt, self._say)
            await self._say(self.paragraph(f"{NOTE_ROLES[role]}{event.content.rstrip()}"
                                           f"{CUT_ATTEMPT if cut.strip() else ''}\n\n"))
        if role in ("call", "step", "tool", "turn", "user", "limitretry"):  # the next request's text is its own reply
            self._attempt.clear()
            self._thought.clear()

    async def _say(self, text: str) -> None:
        await self._send(AgentMessageChunk(session_update="agent_message_chunk", content=text_block(text)))

    async def _think(self, text: str) -> None:
        await self._send(AgentThoughtChunk(session_update="agent_thought_chunk", content=text_block(text)))

    @staticmethod
    async def _close(streamed: list[str], send: Callable[[str], Awaitable[None]]) -> str:
        """What an attempt `streamed` (its text or thinking), joined, its open code block closed through `send`."""
        cut = "".join(streamed)
        if fence := open_fence(cut):
            await send(("" if cut.endswith("\n") else "\n") + fence)
        return cut

    def title_update(self, *, again: bool = False) -> SessionInfoUpdate | None:
        """The session's title when the client was not told it (`again`: a thread it reopens, told or not)."""
        # The first prompt's words, `/rn`: Zed names the thread by it (else by the words it sent, never by a rename).
        title = self._core.session.title
        if not title or (title == self._title and not again):
            return None
        self._title = title
        return SessionInfoUpdate(session_update="session_info_update", title=escaped(title, keep=""))

    def _replying(self) -> None:
        if self.on_reply is not None:
            self.on_reply, begin = None, self.on_reply
            begin()

    async def _open_call(self, event: Event) -> None:
        if event.tool is None:
            return
        self._replying()
        if self.before_call is not None:
            self.before_call, tell = None, self.before_call
            await tell()
        steps = _steps_of(event.tool, event.steps)
        self._open[event.tool.id] = [s.id for s in steps]
        for step in steps:
            # The model's arguments of the whole call (a batch's inner steps share them).
            await self._send(tool_start(step, cwd=self._core.cwd, arguments=event.content))
            await self._send(update_tool_call(step.id, status="in_progress"))

    async def _output(self, event: Event) -> None:
        """A running step's new output: kept as its tail, sent at most every LIVE_OUTPUT_S."""
        ids = self._open.get(event.tool.id) if event.tool is not None else None
        if not ids:
            return
        step_id = ids[-1]
        self._live[step_id] = (self._live.get(step_id, "") + event.content)[-LIVE_OUTPUT_CHARS:]
        self._unsent.add(step_id)
        if asyncio.get_running_loop().time() - self._live_sent_at >= LIVE_OUTPUT_S:
            await self._send_live()

    async def _send_live(self) -> None:
        unsent, self._unsent = self._unsent, set()
        self._live_sent_at = asyncio.get_running_loop().time()
        for step_id in unsent:
            if step_id in self._live:
                await self._send(update_tool_call(step_id, content=[tool_content(text_block(self._live[step_id]))]))

    async def _close_call(self, event: Event) -> None:
        if event.tool is None or self._open.get(event.tool.id) is None:
            return
        for step_id in self._open.pop(event.tool.id):
            self._live.pop(step_id, None)
            self._unsent.discard(step_id)
        steps = _steps_of(event.tool, event.steps)
        pictures = step_pictures(images.shown(event.images)[0], len(steps))
        texts = shown_results(event.content, [s.status for s in steps])
        for step, shown, own in zip(steps, texts, pictures, strict=True):
            await self._send(tool_result(step.id, step.status, shown, step.diffs or (), cwd=self._core.cwd,
                                         locations=step.locations, pictures=own, step=step))

    async def send_plan(self) -> None:
        """Send the session's plan (the task_* tools' checklist) when it is not the one the client was sent last."""
        if (plan := self._core.plan) != self._plan:  # (an empty one too: a client keeps a plan until told otherwise)
            self._plan = plan
            await self._send(update_plan([plan_entry(e.content, status=e.status) for e in plan]))

    async def send_usage(self) -> None:
        """Send the context window's use when it is not what the client was sent last (a `/rewind`, a `/compact`, a
        `/clear`), its size known."""
        if (update := self.usage_update()) != self._usage and update.size:
            await self._send(update)

    def usage_update(self) -> UsageUpdate:
        """The context window's use and the session's cost now."""
        info = self._core.context_info()
        cost = self._core.cost_info()["session"]
        return UsageUpdate(session_update="usage_update", used=max(0, int(info["tokens"])),
                           size=max(0, int(info["limit"])), cost=Cost(amount=float(cost), currency="USD"))
