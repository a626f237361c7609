"""System prompt resolution: an array of shell commands, or a string (literal, `!cmd`, file, env-expanded)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from pathlib import Path

from ollie.agent.shell import merged_env, run_shell
from ollie.config import Prompt

DEFAULT_TIMEOUT_S = 30.0
# Prompt commands find fragment files beside their agent config through this variable.
AGENT_DIR_VAR = "OLLIE_AGENT_DIR"

_VAR = re.compile(r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)\}|(?P<plain>[A-Za-z_][A-Za-z0-9_]*))")


def expand_vars(text: str, env: Mapping[str, str]) -> str:
    """Replace `$VAR` and `${VAR}` with values from `env`; unknown names stay as written."""

    def sub(match: re.Match[str]) -> str:
        name = match.group("braced") or match.group("plain")
        return env.get(name, match.group(0))

    return _VAR.sub(sub, text)


def prompt_env(prompt: Prompt, *, cwd: Path, env: Mapping[str, str]) -> dict[str, str]:
    """The environment prompt commands run with: os.environ, `env`, OLLIE_CWD and OLLIE_AGENT_DIR."""
    extra = {"OLLIE_CWD": str(cwd)}
    if prompt.base_dir is not None:
        extra[AGENT_DIR_VAR] = str(prompt.base_dir)
    # `env` wins: a caller may point OLLIE_AGENT_DIR elsewhere on purpose.
    return merged_env(extra, env)


async def _command_output(
    command: str, *, cwd: Path, env: dict[str, str], timeout: float, warnings: list[str] | None
) -> str | None:
    try:
        run = await run_shell(command, cwd=cwd, env=env, timeout=timeout)
    except OSError as exc:
        problem = f"could not start: {exc}"
    else:
        if run.code == 0 and not run.timed_out:
            return run.stdout.rstrip("\n")
        problem = f"timed out after {timeout:g}s" if run.timed_out else f"exited {run.code}"
        if run.stderr.strip() and not run.timed_out:
            problem += f": {run.stderr.strip()[:200]}"
    if warnings is not None:
        warnings.append(f"prompt command {command!r} {problem}; skipped")
    return None


async def resolve_prompt(
    prompt: Prompt,
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float = DEFAULT_TIMEOUT_S,
    warnings: list[str] | None = None,
) -> str:
    """The system prompt text `prompt` stands for; commands that fail are skipped (noted in `warnings`).

    Array form: every command runs (`sh -c`, in `cwd`, concurrently, each with
    `timeout`); the stdouts of those that exit 0 are joined, in order, by newlines.
    String form: env-expanded; multi-line → literal; `!cmd` → its stdout; an
    existing file (absolute, `~`, relative to `cwd` or else to the agent config's
    dir) → its contents; else literal.
    """
    cwd = Path(cwd)
    proc_env = prompt_env(prompt, cwd=cwd, env=env)
    if prompt.is_exec:
        outputs = await asyncio.gather(
            *(
                _command_output(c, cwd=cwd, env=proc_env, timeout=timeout, warnings=warnings)
                for c in prompt.commands
            )
        )
        return "\n".join(out for out in outputs if out)
    text = expand_vars(prompt.text, proc_env)
    if not text or "\n" in text:
        return text
    if text.startswith("!"):
        out = await _command_output(text[1:], cwd=cwd, env=proc_env, timeout=timeout, warnings=warnings)
        return out or ""
    file = _existing_file(text.strip(), cwd=cwd, base_dir=prompt.base_dir)
    if file is None:
        return text
    try:
        return file.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        if warnings is not None:
            warnings.append(f"prompt file {file} unreadable: {exc.strerror}; used as literal text")
        return text


def _existing_file(name: str, *, cwd: Path, base_dir: Path | None) -> Path | None:
    """The file `name` names: absolute or `~`, else relative to `cwd`, then to the agent config's dir."""
    path = Path(name).expanduser()
    candidates = [path] if path.is_absolute() else [cwd / path] + ([base_dir / path] if base_dir else [])
    for candidate in candidates:
        try:
            if candidate.is_file():
                return candidate
        except OSError:
            # A long literal sentence is no file name (ENAMETOOLONG): not an error.
            continue
    return None
