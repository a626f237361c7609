"""Helpers of the Core tests: a small tool server, agent config files, event and request filters."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

from ollie.agent.events import Event, Subscription
from ollie.tools.base import ToolInfo, ToolResult

FAST_LIMITS = dict(backoff_base_s=0.01, drop_backoff_base_s=0.01, hook_timeout_s=30.0)  # a hook's: a hang's bound


class ToyServer:
    """A small in-process tool server with read/write/cold/warm tools, counting executions."""

    def __init__(self) -> None:
        self.executions: list[tuple[str, dict[str, Any]]] = []
        self.pids: list[int] = []
        # How many slow_read/slow_write calls run now, and the most that ran at once (reset it between turns).
        self.running = 0
        self.most_running = 0
        self._changed: asyncio.Condition | None = None
        # A call with `"gated": true` waits for this (the test sets it): it runs exactly as long as the test needs.
        self.gate = asyncio.Event()

    def list_tools(self) -> list[ToolInfo]:
        obj = {"type": "object", "properties": {}}
        return [
            ToolInfo("slow_read", "Read-safe; sleeps `delay` seconds.", obj, server="toy"),
            ToolInfo("slow_write", "Serial; sleeps `delay` seconds.", obj, server="toy"),
            ToolInfo("fail", "Always fails.", obj, server="toy"),
            ToolInfo("cold_read", "A cold, read-safe result.", obj, server="toy"),
            ToolInfo("warm_read", "A warm, read-safe result.", obj, server="toy"),
            ToolInfo("spawn_sleep", "Starts `sleep` children in its own process group.", obj, server="toy"),
            ToolInfo("big", "Returns `size` bytes.", obj, server="toy"),
        ]

    def classify_parallel(self, tool: str, args: dict[str, Any]) -> str:
        return "read" if tool in ("slow_read", "cold_read", "warm_read", "big") else "write"

    def classify_tier(self, tool: str, args: dict[str, Any]) -> str:
        return {"cold_read": "cold", "warm_read": "warm"}.get(tool, "hot")

    async def call(self, tool: str, args: dict[str, Any]) -> ToolResult:
        self.executions.append((tool, args))
        if tool in ("slow_read", "slow_write"):
            self._changed = self._changed or asyncio.Condition()
            async with self._changed:
                self.running += 1
                self.most_running = max(self.most_running, self.running)
                self._changed.notify_all()
            try:
                if together := int(args.get("together", 0)):
                    # Wait until that many run at once (at most `delay` s): parallel or not, whatever the speed.
                    async with self._changed:
                        await asyncio.wait_for(self._changed.wait_for(lambda: self.most_running >= together),
                                               float(args.get("delay", 10)))
                elif args.get("gated"):
                    await self.gate.wait()
                else:
                    await asyncio.sleep(float(args.get("delay", 0)))
            finally:
                self.running -= 1
            return ToolResult(f"{tool} {args.get('tag', '')} done")
        if tool == "fail":
            return ToolResult(f"error: it failed ({args.get('n', '')})", is_error=True)
        if tool in ("cold_read", "warm_read"):
            return ToolResult(f"CONTENT OF {args.get('path', '?')}\n" + "line\n" * (int(args.get("size", 250)) // 5))
        if tool == "big":
            return ToolResult("é" * (int(args["size"]) // 2))
        if tool == "spawn_sleep":
            proc = await asyncio.create_subprocess_exec(
                "sh", "-c", "sleep 600 & sleep 600; wait", start_new_session=True
            )
            self.pids.append(proc.pid)
            try:
                await proc.wait()
            except asyncio.CancelledError:
                os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()
                raise
            return ToolResult("slept")
        return ToolResult(f"unknown {tool}", is_error=True)


def write_agent(agents_dir: Path, name: str, **config: Any) -> Path:
    """Write `<agents_dir>/<name>.json`; a short literal prompt unless one is given."""
    config.setdefault("prompt", f"You are the {name} test agent.\nBe brief.")
    # These hooks leave files anywhere under tmp_path to prove they ran: outside any sandbox, on purpose
    # (tests/reliability/test_containment_engine.py checks the default, sandboxed case).
    if "hooks" in config:
        config.setdefault("commandSandbox", "none")
    path = agents_dir / f"{name}.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def drain(sub: Subscription) -> list[Event]:
    """Every event waiting in `sub`."""
    events = []
    while sub.pending():
        event = sub.get_nowait()
        if event is not None:
            events.append(event)
    return events


def roles(events: list[Event], *wanted: str) -> list[Event]:
    """The events with one of the `wanted` roles."""
    return [e for e in events if e.role in wanted]


def sent_messages(srv: Any, index: int = -1) -> list[dict[str, Any]]:
    """The `messages` of the chat request at `index` as the server received them."""
    return srv.chat_requests[index].body["messages"]


def tool_messages(srv: Any, index: int = -1) -> list[dict[str, Any]]:
    """The tool-result messages of a chat request."""
    return [m for m in sent_messages(srv, index) if m.get("role") == "tool"]


async def wait_state(core: Any, wanted: str, *, field: str = "state", timeout: float = 30.0) -> None:
    """Wait until `core.state` (`field="running"`: `str(core.is_running)`) reads `wanted`, re-read at each event."""
    read = (lambda: core.state) if field == "state" else (lambda: str(core.is_running))
    sub = core.bus.subscribe()
    try:
        async with asyncio.timeout(timeout):
            while read() != wanted:
                await sub.get()
    except TimeoutError:
        raise AssertionError(f"{field} never became {wanted!r} (last {read()!r})") from None
    finally:
        sub.close()
