"""Lifecycle hooks: shell commands fed a JSON payload; exit 0 adds context, 2 blocks, others warn.

They run sandboxed (see commandbox.py), with a minimal env: the workspace they touch may be hostile.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ollie.agent.commandbox import CommandBox
from ollie.config import HOOK_NAMES

BLOCK_EXIT_CODE = 2
DEFAULT_TIMEOUT_S = 60.0

# How the loop's parts run a hook: (name, payload) -> HookResult, or None when the agent sets no such hook.
HookCaller = Callable[[str, dict[str, Any]], Awaitable["HookResult | None"]]


@dataclass(repr=False)
class HookResult:
    """The outcome of one hook's commands: their joined stdout (when `blocked`, the reason), each exit code in order."""

    blocked: bool = False
    output: str = ""
    warnings: list[str] = field(default_factory=list)
    exit_codes: list[int] = field(default_factory=list)


def hook_note(name: str, result: HookResult | None) -> str:
    """The hook's output headed `[<name> hook]`, as it joins a prompt or a tool result; '' when it printed nothing."""
    output = result.output.strip() if result is not None else ""
    return f"[{name} hook]\n{output}" if output else ""


def blocked_by(name: str, result: HookResult) -> str:
    """`blocked by the <name> hook: <reason>`, the line a hook that exited 2 leaves."""
    return f"blocked by the {name} hook: {result.output.strip() or 'no reason given'}"


def _check_name(name: str) -> None:
    if name not in HOOK_NAMES:
        raise ValueError(f"unknown hook {name!r} (known: {', '.join(HOOK_NAMES)})")


# Linux refuses an exec whose environment holds a string over 128 KiB (MAX_ARG_STRLEN): a value is cut to this many
# characters (4 bytes each at most), the whole payload being on stdin.
_ENV_VALUE_CHARS = 30_000


def payload_env(payload: Mapping[str, Any]) -> dict[str, str]:
    """`OLLIE_<KEY>` for every payload key: strings as-is, other values as JSON, each as an exec takes it."""
    env = {}
    for key, value in payload.items():
        name = "OLLIE_" + re.sub(r"[^A-Za-z0-9]", "_", str(key)).upper()
        text = "" if value is None else value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        # A NUL (no C string holds one) and a lone surrogate (no UTF-8 has one) failed the exec: the hook "could not
        # start", and a preTool hook's tool ran unchecked (a model picks its call's id and arguments).
        env[name] = text[:_ENV_VALUE_CHARS].replace("\0", "\ufffd").encode(errors="replace").decode()
    return env


class Hooks:
    """The hook commands of one agent config, by hook name."""

    def __init__(self, config_hooks: dict[str, list[str]], box: CommandBox | None = None) -> None:
        for name in config_hooks:
            _check_name(name)
        self._hooks = {name: list(cmds) for name, cmds in config_hooks.items() if cmds}
        # Where the commands run: the agent's commandSandbox (read-only unless the config says otherwise).
        self.box = box or CommandBox()

    def has(self, name: str) -> bool:
        """True when hook `name` has at least one command."""
        return bool(self._hooks.get(name))

    async def run(
        self,
        name: str,
        payload: dict,
        *,
        cwd: Path,
        env: dict[str, str],
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> HookResult:
        """Run hook `name`'s commands in order, stopping at the first that exits 2 (minimal env, never the daemon's)."""
        _check_name(name)
        result = HookResult()
        commands = self._hooks.get(name)
        if not commands:
            return result
        full_payload = {"hook": name, **payload}
        stdin = json.dumps(full_payload, ensure_ascii=False, default=str).encode(errors="replace")  # a lone surrogate: "?"
        payload_vars = payload_env(full_payload)
        outputs = []
        for command in commands:
            try:
                run = await self.box.run(command, cwd=cwd, session_env=env, extra_env=payload_vars, stdin=stdin,
                                         timeout=timeout, warnings=result.warnings)
            except OSError as exc:
                result.warnings.append(f"hook {name}: {command!r} could not start: {exc}")
                continue
            result.exit_codes.append(run.code)
            if run.timed_out:
                result.warnings.append(f"hook {name}: {command!r} timed out after {timeout:g}s and was killed")
            elif run.code == 0:
                if run.stdout.strip():
                    outputs.append(run.stdout.rstrip("\n"))
            elif run.code == BLOCK_EXIT_CODE:
                reason = run.stderr.strip() or run.stdout.strip() or f"blocked by {name} hook"
                result.blocked = True
                result.output = reason
                return result
            else:
                detail = run.stderr.strip() or run.stdout.strip()
                result.warnings.append(
                    f"hook {name}: {command!r} exited {run.code}" + (f": {detail}" if detail else "")
                )
        result.output = "\n".join(outputs)
        return result
