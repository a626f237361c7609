"""One round of tool calls: classify, batch reads concurrently, dedup, hooks, inject, truncate, cache."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ollie.agent.events import Bus
from ollie.agent.hooks import HookCaller, blocked_by, hook_note
from ollie.agent.runtime import Runtime
from ollie.backend.types import ToolCall
from ollie.tools.base import ToolResult


@dataclass
class CallOutcome:
    """What one tool call produced, as recorded in the history."""

    call: ToolCall
    text: str
    is_error: bool
    tier: str = "hot"


def truncate_utf8(text: str, limit: int) -> str:
    """Cut `text` to at most `limit` UTF-8 bytes (never inside a character) and say so."""
    data = text.encode("utf-8")
    if limit <= 0 or len(data) <= limit:
        return text
    kept = data[:limit].decode("utf-8", errors="ignore")
    return (f"{kept}\n[truncated: the result was {len(data)} bytes, {limit} kept; to read the rest, ask for less "
            f"at a time: file_read --offset=N --limit=N, head/tail/sed -n, grep]")


def canonical_args(arguments: str) -> str:
    """A stable text form of a call's JSON arguments (for dedup and caching); unparsable text as it is."""
    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True, separators=(",", ":"))
    except json.JSONDecodeError:
        return arguments


def parse_arguments(call: ToolCall) -> tuple[dict[str, Any] | None, str]:
    """The call's arguments as a dict, or (None, why) when they are not a JSON object."""
    try:
        args = json.loads(call.arguments or "{}")
    except json.JSONDecodeError as exc:
        return None, f"error: the arguments of {call.name} are not valid JSON ({exc.msg} at column {exc.colno}); resend the call with a JSON object"
    if not isinstance(args, dict):
        return None, f"error: the arguments of {call.name} must be a JSON object, got {type(args).__name__}"
    return args, ""


class ToolRound:
    """Runs the tool calls of one model reply. The read cache lives as long as the turn."""

    def __init__(
        self,
        *,
        runtime: Runtime,
        bus: Bus,
        hook: HookCaller,
        pop_inject: Callable[[], str],
        set_state: Callable[[str], None],
        count_call: Callable[[], None],
        cache: dict[tuple[str, str], CallOutcome],
        max_bytes: int,
    ) -> None:
        self._rt = runtime
        self._bus = bus
        self._hook = hook
        self._pop_inject = pop_inject
        self._set_state = set_state
        self._count_call = count_call
        self._cache = cache
        self._max_bytes = max_bytes

    async def run(self, calls: list[ToolCall]) -> list[CallOutcome]:
        """Run `calls`: consecutive read-safe calls concurrently, the rest one at a time, in order."""
        outcomes: list[CallOutcome] = []
        batch: list[tuple[ToolCall, dict[str, Any]]] = []
        for call in calls:
            args, problem = parse_arguments(call)
            if args is None:
                outcomes.extend(await self._flush(batch))
                batch = []
                self._bus.emit("call", call.arguments, name=call.name)
                outcomes.append(self._finish(CallOutcome(call, problem, True)))
                continue
            if self._rt.classify_parallel(call.name, args) == "read":
                batch.append((call, args))
                continue
            outcomes.extend(await self._flush(batch))
            batch = []
            self._bus.emit("call", call.arguments, name=call.name)
            outcome = await self._lifecycle(call, args, read_safe=False)
            # A write may change what earlier reads returned.
            self._cache.clear()
            outcomes.append(self._finish(outcome))
        outcomes.extend(await self._flush(batch))
        return outcomes

    def _finish(self, outcome: CallOutcome) -> CallOutcome:
        self._bus.emit("tool", outcome.text, name=outcome.call.name)
        return outcome

    async def _flush(self, batch: list[tuple[ToolCall, dict[str, Any]]]) -> list[CallOutcome]:
        """Fan a batch of read-safe calls out; identical calls share one execution."""
        if not batch:
            return []
        groups: dict[tuple[str, str], list[tuple[ToolCall, dict[str, Any]]]] = {}
        for call, args in batch:
            self._bus.emit("call", call.arguments, name=call.name)
            groups.setdefault((call.name, canonical_args(call.arguments)), []).append((call, args))
        shared: dict[tuple[str, str], CallOutcome] = {}

        async def lead(key: tuple[str, str]) -> None:
            cached = self._cache.get(key)
            if cached is None:
                call, args = groups[key][0]
                cached = await self._lifecycle(call, args, read_safe=True)
            shared[key] = cached
            for call, _ in groups[key]:
                self._bus.emit("tool", cached.text, name=call.name)

        # A TaskGroup: if one call fails unexpectedly its siblings are cancelled, not left running.
        async with asyncio.TaskGroup() as group:
            for key in groups:
                group.create_task(lead(key))
        out = []
        for call, _ in batch:
            done = shared[(call.name, canonical_args(call.arguments))]
            out.append(CallOutcome(call, done.text, done.is_error, done.tier))
        return out

    async def _lifecycle(self, call: ToolCall, args: dict[str, Any], *, read_safe: bool) -> CallOutcome:
        """preTool → execute → postTool → inject → truncate → cache."""
        self._set_state(f"calling: {call.name}")
        pre = await self._hook("preTool", {"tool": call.name, "args": args, "tool_call_id": call.id})
        if pre is not None and pre.blocked:
            return CallOutcome(call, blocked_by("preTool", pre), True)

        result = await self._execute(call.name, args)
        text, is_error = result.text, result.is_error

        post = await self._hook(
            "postTool", {"tool": call.name, "args": args, "tool_call_id": call.id, "result": text, "is_error": is_error}
        )
        notes = [hook_note("preTool", pre)]
        if post is not None and post.blocked:
            # A blocking postTool hook replaces the result with its reason.
            text = post.output
        else:
            notes.append(hook_note("postTool", post))
        text = "\n\n".join([text, *filter(None, notes)])

        injected = self._pop_inject()
        if injected:
            text = f"{text}\n\n[user, while this tool ran]\n{injected}"

        text = truncate_utf8(text, self._max_bytes)
        outcome = CallOutcome(call, text, is_error, self._rt.classify_tier(call.name, args))
        if read_safe and not is_error and not injected:
            self._cache[(call.name, canonical_args(call.arguments))] = outcome
        return outcome

    async def _execute(self, tool: str, args: dict[str, Any]) -> ToolResult:
        if self._rt.executor is None:
            return ToolResult("error: no tools are available to this agent", True)
        try:
            result = await self._rt.executor(tool, args)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a failing tool is a result the model can act on, not a crash
            result = ToolResult(f"error: {tool} failed: {exc}", True)
        self._count_call()
        return result
