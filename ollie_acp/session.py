"""One ACP session: its Core, its update forwarder, its approval mode and its running prompt."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from acp import RequestError, text_block, tool_content, tool_diff_content, update_tool_call
from acp.helpers import update_agent_message, update_current_mode
from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    PermissionOption,
    PromptResponse,
    TerminalToolCallContent,
    ToolCallLocation,
    ToolCallUpdate,
    Usage,
)

from ollie.agent.agentswitch import AgentSwitchRefused, NotKept
from ollie.agent.editorcontext import SLASH, is_command
from ollie.agent.recorder import close_session
from ollie.escapes import escaped
from ollie_acp.errors import invalid_params
from ollie_acp.options import backend_models, options_update
from ollie_acp.updates import Update, UpdateForwarder, odd_names

if TYPE_CHECKING:
    from acp.interfaces import Client

    from ollie.agent.commands_info import AgentInfo
    from ollie.agent.inbox import Held
    from ollie.agent.questions import Answer, StepQuestion
    from ollie.agent.recorder import Recorder
    from ollie.agent.surface import AcpCore
    from ollie.backend.types import Image

logger = logging.getLogger("ollie.acp.session")



def _options(**names: str) -> list[PermissionOption]:
    """Permission options, each's id its kind (`allow_once=...`), in the order given."""
    return [PermissionOption(option_id=kind, name=name, kind=kind) for kind, name in names.items()]  # type: ignore[arg-type]


PERMISSION_OPTIONS = _options(allow_once="Allow once", allow_always="Allow always (this session)",
                              reject_once="Reject", reject_always="Reject always (this session)")
# A network question's "always" is kept in the user's config (sandbox/netsaved.py), for later sessions too; "for this
# session", either way, is remembered (ACP's `*_always` kinds), not kept: no front end keeps a denial (the policy's
# `network.deny` is the lasting one). Allowing for the session has its own id.
NETWORK_OPTIONS = [*_options(allow_once="Allow once"),
                   PermissionOption(option_id="allow_session", name="Allow for this session", kind="allow_always"),
                   *_options(allow_always="Always allow (this and later sessions)", reject_once="Deny",
                             reject_always="Deny for this session")]
# A workspace's MCP server: "always" is remembered for the workspace; no blanket rejection of its other servers.
MCP_SERVER_OPTIONS = _options(allow_once="Allow once", allow_always="Allow always (this workspace)", reject_once="Reject")
# A step that runs outside the sandbox, whether its approval question covers the elevation or it is asked alone: asked
# each time, as every front end asks it, so no "always" either way.
OUTSIDE_OPTIONS = _options(allow_once="Allow once (outside the sandbox)", reject_once="Reject")
# A switch to an agent without a sandbox (a question with the id `agent/<name>`): asked each time, no "always".
UNSANDBOXED_OPTIONS = _options(allow_once="Switch (no sandbox)", reject_once="Keep the current agent")
# The commands for the running turn (`/i`, `/irw`): a prompt of one that comes while a turn runs runs at once.
FOR_THE_TURN = {"i", "irw"}
# `/i` or `/irw` with no turn running: the engine would queue its text, and ACP has no turn of its own to run it in, so
# it ran inside the next prompt's, unasked; its prompt is the turn instead (`/irw`'s in place of the injects waiting).
INJECT_RUNS_NOW = "no turn is running, so `/{}` runs its text as a prompt now\n\n"
# ACP stop reasons of the engine's TurnResult.stop values (an `error` the model did not cause was shown as text; the
# model's failure is the prompt's error answer).
STOP_REASONS = {"end": "end_turn", "command": "end_turn", "error": "end_turn", "interrupted": "cancelled",
                "max_steps": "max_turn_requests", "refusal": "refusal", "max_tokens": "max_tokens"}


@dataclass
class AcpSession:
    """A live session of this agent."""

    id: str
    core: AcpCore
    forwarder: UpdateForwarder
    client: Client
    recorder: Recorder | None = None
    turn_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # One options sync at a time: a slow one (it lists agents and models) finished after a later one and left the
    # client showing the older mode.
    sync_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    prompt_task: asyncio.Task[PromptResponse] | None = None
    # Held while session/load replays the history: the forwarder's live updates wait behind it, not amid it.
    replaying: asyncio.Lock = field(default_factory=asyncio.Lock)
    # Prompts received, and how many had been when the last session/cancel came: a cancel ends every prompt sent
    # before it, one not begun yet too (its images decoding, or waiting behind the turn before it).
    received: int = 0
    cancelled_upto: int = 0
    # `/kill` closed the Core (and its event bus): the agent no longer lists the session, its prompt ends the close.
    killed: bool = False
    # The steps rejected always (by what "Allow always" would cover), for this session only.
    rejected_always: set[str] = field(default_factory=set)
    # Warnings told at the start of the next prompt's reply, each once (an agent config the selector leaves out).
    untold: list[str] = field(default_factory=list)
    # The client failed a question (it has no session/request_permission, as the SDK's example client): said once.
    cannot_ask_told: bool = False
    # Why its sandbox policy does not load ("" when it does), read in a thread once (`read_policy`), told once.
    policy: asyncio.Future[str] | None = None
    policy_told: bool = False
    # The images of the prompts received and not begun (`inbox.take_images` bounds them across the sessions).
    waiting: set[Held] = field(default_factory=set)
    # The steps whose question was withdrawn unanswered (a session/cancel came): no step event opened their cards.
    withdrawn: list[str] = field(default_factory=list)

    @property
    def mode(self) -> str:
        """The session mode: the Core's approval mode."""
        return self.core.approval

    async def approve_step(self, question: StepQuestion) -> Answer:
        """The Core's questions (a step's approval, its elevation, an agent switch): session/request_permission, with
        no feedback text but a "Reject always" answer's, named when it rejects a later step unasked."""
        from ollie.agent.questions import Answer

        options = (NETWORK_OPTIONS if question.network is not None else MCP_SERVER_OPTIONS
                   if question.id.startswith("mcp/") else UNSANDBOXED_OPTIONS if question.id.startswith("agent/")
                   else OUTSIDE_OPTIONS if question.outside else PERMISSION_OPTIONS)
        options = [o for o in options if o.option_id != "allow_always" or "allow_always" in question.outcomes()]
        covers = question.always_label()
        # Only a question that offers "Reject always" is answered by it: one leaving the sandbox is asked every time,
        # though its label (`touch` commands) was another step's. The step's result says why, to user and model (a
        # connection's only that it was `denied`: its answer reaches only the proxy, not this note).
        if covers in self.rejected_always and any(o.option_id == "reject_always" for o in options):
            return Answer("reject_with_feedback", f'"Reject always" ({covers}, this session)')
        await self.forwarder.drained()
        # The model's controls and bidi overrides as escapes (a client obeys a U+202E: what is read would not run).
        note = ("runs outside the sandbox:\n" + escaped("\n\n".join(question.outside)) if question.outside
                else f"(\"always\" covers {question.always_text()})" if "allow_always" in question.outcomes() else "")
        # A file named with a control or bidi override: its location and diff header are drawn as the path is (a
        # batch's title names its first step's file alone).
        diffs = (question.diff,) if question.diff is not None else question.diffs
        note += odd_names([*(loc.path for loc in question.locations), *(d.path for d in diffs)], question.title)
        content: list[ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent] = [
            tool_content(text_block(f"{question.title}\n" + (f"{escaped(question.code)}\n" if question.code else "") + note))]
        if question.diffs_more:  # a batch's edits past its previews: the user knows what they were not shown
            content.append(tool_content(text_block(question.diffs_more_text())))
        # The edit's diff, or each of a batch's, before the text: what the user says yes to.
        content[:0] = [tool_diff_content(str(self.core.cwd / diff.path), diff.new_text or "", diff.old_text)
                       for diff in diffs]
        tool_call = ToolCallUpdate(tool_call_id=question.id, title=question.title, kind=question.kind,
                                   status="pending", content=content,
                                   locations=[ToolCallLocation(path=str(self.core.cwd / loc.path),
                                                               line=loc.line or _edit_line(question, loc.path))
                                              for loc in question.locations],
                                   # A network question's connection, for a client to say it its own way.
                                   raw_input={"network": question.network} if question.network is not None else None)
        # A connection's, a server's or an agent switch's question is no step: its card ends with the answer.
        choice = await self._ask(tool_call, options, ends=not question.is_steps())
        if choice == "reject_always":
            self.rejected_always.add(covers)
        return Answer(choice if choice in ("allow_once", "allow_session", "allow_always") else "reject")  # type: ignore[arg-type]

    async def _ask(self, tool_call: ToolCallUpdate, options: list[PermissionOption] = PERMISSION_OPTIONS, *,
                   ends: bool = False) -> str | None:
        """The option the client chose (None: cancelled or the request failed); `ends`: the question is a tool call
        of its own, not a step's, and the answer ends it (a client shows an allowed one running until told)."""
        choice = None
        try:
            choice = await self._choice(tool_call, options)
            return choice
        except asyncio.CancelledError:  # the client drew the card from the question alone: the turn's end ends it
            if not ends:
                self.withdrawn.append(tool_call.tool_call_id)
            raise
        finally:  # withdrawn unanswered (its step ended first) too
            if ends:
                allowed = choice is not None and choice.startswith("allow")
                await self.send(update_tool_call(tool_call.tool_call_id, status="completed" if allowed else "failed"),
                                what="question end")

    async def send(self, *updates: Update, what: str) -> None:
        """Send `updates` in order; a client gone (stdin closed) is only logged, as `what` not sent."""
        try:
            for update in updates:
                await self.client.session_update(session_id=self.id, update=update)
                self.forwarder.sent(update)
        except Exception as exc:  # the client went away: nothing to tell
            logger.info("%s not sent: %s", what, exc)

    async def _choice(self, tool_call: ToolCallUpdate, options: list[PermissionOption]) -> str | None:
        try:
            answer = await self.client.request_permission(session_id=self.id, tool_call=tool_call, options=options)
        except RequestError as exc:
            logger.info("permission request failed: %s", exc)
            if not self.cannot_ask_told:  # else each step just fails, "rejected", with no word of why or what to do
                self.cannot_ask_told = True
                await self._tell(f'"{tool_call.title}" was rejected: this client failed ollie\'s question about it '
                                 f"(session/request_permission: {exc}), as it will every question. To let steps run "
                                 "unasked, pick the mode `auto-edit` (edits) or `auto` (edits and commands), or send "
                                 "`/approval auto`.\n\n")
            return None
        outcome = answer.outcome
        if outcome.outcome == "cancelled":  # ACP: what a client answers as it cancels the turn, sent session/cancel or not
            self.core.stop("the client cancelled the question")  # (not awaited: the turn it stops is this one)
            return None
        if outcome.option_id not in {o.option_id for o in options}:
            return None  # an option it was not offered (a network question's to a command)
        return outcome.option_id

    async def set_mode(self, mode: str, *, field_name: str = "modeId") -> None:
        """Switch the approval mode (`field_name` names the request's field in the error for an unknown one)."""
        with invalid_params(field_name, ValueError):  # checked as every front end's is: the engine names the modes
            self.core.set_approval(mode)

    async def switch_agent(self, name: str) -> bool:
        """Switch to agent config `name` (an unsandboxed one asks first: `ask_agent_switch`); False: not switched."""
        try:
            switched = await self.core.switch_agent(name)
        except (AgentSwitchRefused, NotKept) as exc:  # NotKept: the disk full, nothing changed
            await self._tell(f"{str(exc).capitalize()}.\n\n")
            return False
        # As `/agent` says them: from the picker, the user would never hear of the warnings, nor of where the
        # conversation before went.
        if lines := switched.lines(self.core.resume_how):
            await self._tell("".join(f"{line}\n\n" for line in lines))
        await self.forwarder.send_plan()  # the conversation it ended took its plan along
        return True

    async def sync_options(self) -> None:
        """Tell the client the current mode and config options (after a change it did not make through them)."""
        async with self.sync_lock:
            options = await options_update(self.core)  # read now: what the client last hears is the latest
            await self.send(update_current_mode(self.mode), options, what="options")

    def offered(self, agent_list: list[AgentInfo]) -> list[AgentInfo]:
        """`agent_list` for the agent selector; one that cannot load is left out of it, and told of (`untold`)."""
        self.untold += [f"agent config {a.name!r} cannot load, so the agent selector leaves it out: {a.error}"
                        for a in agent_list if a.error]
        return agent_list

    async def send_models(self, agent_list: list[AgentInfo] | None = None) -> None:
        """Offer the backend's models once it has listed them (`session/new` answers before it asks; `agent_list`:
        the agent configs it read)."""
        if not set(await backend_models(self.core)) - {self.core.model_name}:
            return  # no other model: the answer's option is already complete
        async with self.sync_lock:
            await self.send(await options_update(self.core, agent_list), what="model list")

    def receive(self) -> int:
        """Count a prompt in as it comes (before anything is awaited); its number, for `run_prompt`."""
        self.received += 1
        return self.received

    async def run_prompt(self, number: int, text: str, images: Sequence[Image], holder: Held) -> PromptResponse:
        """Run prompt `number` (or slash command) to its end; the ACP stop reason and the turn's token usage. Its
        images (`holder`) wait no longer once its turn begins."""
        self.forwarder.start()  # as the opening answer went out; one that failed after the open never started it
        if self.turn_lock.locked() and _turn_command(text) is not None:  # after the turn it would reach nothing
            await self.core.submit(text)
            await self.forwarder.drained()
            return PromptResponse(stop_reason="end_turn")
        async with self.turn_lock:
            self.waiting.discard(holder)
            self.prompt_task = asyncio.ensure_future(self._run(number, text, images))
            try:
                response = await asyncio.shield(self.prompt_task)
            finally:
                self.prompt_task = None
        if self.killed:  # the rest of a session/close; the command's own reply went with the closed bus
            await self.close()
            await self._tell(f"session {self.id} killed: session/load opens it again\n\n")
        return response

    async def _run(self, number: int, text: str, images: Sequence[Image]) -> PromptResponse:
        if number <= self.cancelled_upto:  # before it began (the engine had nothing to stop yet)
            return PromptResponse(stop_reason="cancelled")
        if self.untold:
            told, self.untold = self.untold, []
            await self._tell("".join(f"warning: {w}\n\n" for w in told))
        if is_command(text):  # it streams no reply, and a !step would meet a broken policy first
            await self.tell_policy()
        elif not self.policy_told:
            # The reply's first text first: the read (YAML and its checks, ~25 ms of CPU, the GIL held) held back a
            # cold first chunk. It starts as the reply does; a broken one is told before the reply's first tool call
            # (whose steps read the policy themselves, and are refused), or after its text.
            self.forwarder.on_reply, self.forwarder.before_call = self.read_policy, self.tell_policy
        settings = self._settings()
        before = _totals(self.core)
        if (inject := _turn_command(text)) and inject[1]:  # under the turn lock: no turn runs
            command, injected = inject
            if command == "irw":
                self.core.drop_injects()
            await self._tell(INJECT_RUNS_NOW.format(command))
            result = await self.core.submit(injected, images, as_prompt=True)
        else:
            result = await self.core.submit(text, images)
        usage = _turn_usage(before, _totals(self.core))
        await self.forwarder.drained()
        # A command's changes too: `/clear` dropped the plan the client showed, `/rewind` shrank the context.
        await self.forwarder.send_plan()
        await self.forwarder.send_usage()
        await self.tell_policy()
        if self._settings() != settings:  # `/approval`, `/agent` or `/model` changed one: the client shows it
            await self.sync_options()
        withdrawn, self.withdrawn = self.withdrawn, []
        if result.stop == "interrupted":
            await self.forwarder.fail_open_steps(withdrawn)
        if self.recorder is not None:
            await self.recorder.drained()
        stop = "cancelled" if number <= self.cancelled_upto else STOP_REASONS.get(result.stop, "end_turn")
        failed_as, self.forwarder.failed_as = self.forwarder.failed_as, ""
        if failed_as and result.stop == "error" and stop != "cancelled":
            # ACP (v1) has no stop reason for a failed turn: an error answer is what a client shows as one (Zed's
            # error banner), in the engine's words; what streamed before stays, the session takes the next prompt.
            raise RequestError(-32603, result.error or failed_as, {"sessionId": self.id, "class": failed_as})
        return PromptResponse(stop_reason=stop, usage=usage)  # type: ignore[arg-type]

    def _settings(self) -> tuple[str, str, str]:
        return (self.mode, self.core.agent_name, self.core.model_name)

    async def cancel(self) -> None:
        """session/cancel: stop the running turn and any its prompt would start next (their tools' processes
        killed), and the prompts received but not begun; return once the running prompt has answered."""
        self.cancelled_upto = self.received
        task = self.prompt_task
        if task is None:
            return
        await self.core.stop("cancelled by the client")
        await asyncio.wait({task})

    def read_policy(self) -> asyncio.Future[str]:
        """The read of the session's sandbox policy (in a thread: YAML and its checks), started at the first call."""
        if self.policy is None:
            self.policy = asyncio.ensure_future(asyncio.to_thread(self.core.sandbox_problem))
        return self.policy

    async def tell_policy(self) -> None:
        """Tell why the session's sandbox policy does not load, once (as agent text, after what the turn said)."""
        if self.policy_told:
            return
        self.policy_told = True
        if problem := await self.read_policy():
            await self._tell(f"warning: {problem}\n\n")

    async def _tell(self, text: str) -> None:
        """Show the user a paragraph of agent text in this session (nothing when the client is gone)."""
        await self.send(update_agent_message(text_block(self.forwarder.paragraph(text))), what="agent text")

    async def close(self) -> None:
        """Interrupt, save, end the tools, the record; then the last updates."""
        if problem := await close_session(self.core, self.recorder):
            await self._tell(f"⚠ {problem}")
        await self.forwarder.stop()


def _turn_command(text: str) -> tuple[str, str] | None:
    """The command and text of an `/i` or `/irw` line (its text "" when it has none); None for any other."""
    match = SLASH.fullmatch(text.strip())
    name = match["name"].lower() if match else ""
    return (name, (match["arg"] or "").strip()) if match and name in FOR_THE_TURN else None


def _totals(core: AcpCore) -> tuple[int, int, int, int]:
    """The session's token totals: input, output, cache reads, cache writes."""
    s = core.session
    return (s.total_input_tokens, s.total_output_tokens, s.total_cached_input_tokens, s.total_cache_creation_tokens)


def _turn_usage(before: tuple[int, int, int, int], after: tuple[int, int, int, int]) -> Usage | None:
    """What the prompt's requests used (None when it made none: a slash command)."""
    # An agent switch starts a fresh session whose totals restart: never report less than nothing.
    fresh, out, read, write = (max(0, a - b) for a, b in zip(after, before, strict=True))
    if not (fresh or out or read or write):
        return None
    # As the session's totals (and Anthropic) count them: input_tokens leaves the cache reads and writes out.
    return Usage(input_tokens=fresh, output_tokens=out, cached_read_tokens=read or None,
                 cached_write_tokens=write or None, total_tokens=fresh + read + write + out)


def _edit_line(question: StepQuestion, path: str) -> int | None:
    """Where an edit question's diff of `path` starts (a client following the agent opens the file there)."""
    diff = question.diff
    return diff.first_line() if diff is not None and diff.path == path else None
