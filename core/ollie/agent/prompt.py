"""System prompt resolution: an array of entries, or a string (literal, `!cmd`, file, env-expanded).

Commands run sandboxed (commandbox.py): they read the workspace, which may be hostile. `@<file>` fragments are the
agent config's own (read directly); `@environment` is ollie.agent.environment's.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Mapping
from pathlib import Path

from ollie import beneath, regularfile
from ollie.agent import environment
from ollie.agent.commandbox import CommandBox
from ollie.config import Prompt
from ollie.loopshare import loop_share

DEFAULT_TIMEOUT_S = 30.0

_VAR = re.compile(r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)\}|(?P<plain>[A-Za-z_][A-Za-z0-9_]*))")


def expand_vars(text: str, env: Mapping[str, str]) -> str:
    """Replace `$VAR` and `${VAR}` with values from `env`; unknown names stay as written."""

    def sub(match: re.Match[str]) -> str:
        name = match.group("braced") or match.group("plain")
        return env.get(name, match.group(0))

    return _VAR.sub(sub, text)


def box_for(prompt: Prompt, session_id: str = "") -> CommandBox:
    """The command box of `prompt`: its agent's commandSandbox, its config's dir as OLLIE_AGENT_DIR."""
    return CommandBox(policy=prompt.sandbox, agent_dir=prompt.base_dir, session_id=session_id)


def prompt_env(prompt: Prompt, *, cwd: Path, env: Mapping[str, str]) -> dict[str, str]:
    """What a string prompt expands (os.environ, `env`, OLLIE_CWD, OLLIE_AGENT_DIR); commands never get this env."""
    # `env` wins: a caller may point OLLIE_AGENT_DIR elsewhere on purpose.
    minimal = box_for(prompt).env(cwd=cwd, tmp_dir=Path(os.environ.get("TMPDIR") or "/tmp"), session_env=env)
    return {**os.environ, **minimal}


async def _command_output(
    command: str, *, box: CommandBox, cwd: Path, env: Mapping[str, str], timeout: float, warnings: list[str] | None
) -> str | None:
    try:
        run = await box.run(command, cwd=cwd, session_env=env, timeout=timeout, warnings=warnings)
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


def _fragment(name: str, base_dir: Path | None) -> Path:
    """The file an `@<file>` entry names: absolute or `~`, else relative to the agent config's dir."""
    path = Path(os.path.expanduser(name))
    return path if path.is_absolute() or base_dir is None else base_dir / path


def _read_entries(entries: list[str], base_dir: Path | None, cwd: Path) -> dict[str, tuple[str, bool] | OSError]:
    """Every `@` entry's text and whether it found a git repository (`@environment`), or the file's error (sync)."""
    read: dict[str, tuple[str, bool] | OSError] = {}
    for entry in entries:
        if entry == environment.ENTRY:
            read[entry] = environment.facts(cwd)
            continue
        try:
            read[entry] = (regularfile.read_config_sync(_fragment(entry[1:], base_dir), errors="replace").rstrip("\n"), False)
        except OSError as exc:
            read[entry] = exc
    return read


async def _entry_output(
    entry: str, *, prompt: Prompt, box: CommandBox, cwd: Path, env: Mapping[str, str], timeout: float,
    warnings: list[str] | None, late: list[asyncio.Task[str | None]] | None,
    local: asyncio.Future[dict[str, tuple[str, bool] | OSError]] | None,
) -> str | None:
    """One array entry's text: an in-process `@` entry (from `local`), else a shell command's stdout (None: skipped)."""
    if local is None or not entry.startswith("@"):
        return await _command_output(entry, box=box, cwd=cwd, env=env, timeout=timeout, warnings=warnings)
    read = (await local)[entry]
    if isinstance(read, OSError):
        if warnings is not None:
            warnings.append(f"prompt file {_fragment(entry[1:], prompt.base_dir)} unreadable: {read.strerror}; skipped")
        return None
    text, in_repo = read
    if in_repo and late is not None:
        # git must run sandboxed (the repository may be hostile): in the background, not in the turn's way.
        late.append(asyncio.ensure_future(_git_status(box=box, cwd=cwd, env=env, timeout=timeout)))
    return text


async def _git_status(*, box: CommandBox, cwd: Path, env: Mapping[str, str], timeout: float) -> str | None:
    """The late note of `@environment`: the work tree's `git status --short` (None when it failed)."""
    # A moment later: a sandboxed spawn would compete for the CPU with the first turn the prompt was made for
    # (a daemon's default session makes it at start, while its editor sends the first prompt).
    await asyncio.sleep(environment.LATE_START_S)
    out = await _command_output(environment.GIT_STATUS, box=box, cwd=cwd, env=env, timeout=timeout, warnings=None)
    return None if out is None else environment.status_note(out)


async def resolve_prompt(
    prompt: Prompt,
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float = DEFAULT_TIMEOUT_S,
    warnings: list[str] | None = None,
    box: CommandBox | None = None,
    late: list[asyncio.Task[str | None]] | None = None,
) -> str:
    """The system prompt text `prompt` stands for (see README); failed commands are skipped, noted in `warnings`.

    Array entries run concurrently in `box`; their outputs are joined in order. Background work (`@environment`'s
    git status) goes to `late`, never waited for here.
    """
    cwd = Path(cwd)
    box = box or box_for(prompt)
    proc_env = prompt_env(prompt, cwd=cwd, env=env)
    if prompt.is_exec:
        # The `@` entries in one worker-thread hop (the default agent's five were five), beside the commands.
        entries = [c for c in prompt.commands if c.startswith("@")]
        local = asyncio.ensure_future(asyncio.to_thread(_read_entries, entries, prompt.base_dir, cwd)) if entries else None
        outputs = await asyncio.gather(
            *(
                _entry_output(c, prompt=prompt, box=box, cwd=cwd, env=env, timeout=timeout, warnings=warnings,
                              late=late, local=local)
                for c in prompt.commands
            )
        )
        return "\n".join(out for out in outputs if out)
    text = expand_vars(prompt.text, proc_env)
    if not text or "\n" in text:
        return text
    if text.startswith("!"):
        out = await _command_output(text[1:], box=box, cwd=cwd, env=env, timeout=timeout, warnings=warnings)
        return out or ""
    name = text.strip()
    try:
        # A workspace file, through the chokepoint: no symlink out (a link to ~/.ssh/id_rsa would reach the
        # model), no FIFO, device or giant file.
        return await beneath.read_text(cwd, os.path.expanduser(name), errors="replace")
    except (OSError, ValueError):
        pass
    file = _config_file(name, base_dir=prompt.base_dir)
    if file is None:
        return text
    try:
        return await asyncio.to_thread(file.read_text, encoding="utf-8", errors="replace")
    except OSError as exc:
        if warnings is not None:
            warnings.append(f"prompt file {file} unreadable: {exc.strerror}; used as literal text")
        return text


class DeferredPrompt:
    """A prompt whose commands run once on first need, with the session's cwd, env and id as they are then.

    They run in a task of their own: an interrupted caller leaves them running for the next one.
    """

    def __init__(self, prompt: Prompt, *, cwd: Path, env: Mapping[str, str], box: CommandBox) -> None:
        self._prompt = prompt
        self.cwd = Path(cwd)
        self.env = env
        self.box = box
        self._task: asyncio.Task[tuple[str, list[str]]] | None = None
        # What the prompt left running in the background (`@environment`'s git status): notes for later turns.
        self.late: list[asyncio.Task[str | None]] = []

    async def _resolve(self) -> tuple[str, list[str]]:
        await loop_share().wait_turn()  # 50 first turns' prompt commands start over loop passes, not in one
        warnings: list[str] = []
        text = await resolve_prompt(self._prompt, cwd=self.cwd, env=dict(self.env), warnings=warnings, box=self.box,
                                    late=self.late)
        return text, warnings

    def start(self) -> asyncio.Task[tuple[str, list[str]]]:
        """Start the commands now, in their own task, unless they run or ran already (`result` awaits them)."""
        if self._task is None or (self._task.done() and (self._task.cancelled() or self._task.exception())):
            self._task = asyncio.ensure_future(self._resolve())
        return self._task

    async def result(self) -> tuple[str, list[str]]:
        """The prompt text and the warnings of its commands, running them on the first call."""
        return await asyncio.shield(self.start())

    def cancel(self) -> None:
        """Stop commands still running (the session closes)."""
        if self._task is not None:
            self._task.cancel()
        for task in self.late:
            task.cancel()


def needs_commands(prompt: Prompt) -> bool:
    """Whether resolving `prompt` may spawn a process (an array of commands, or a `!cmd` string)."""
    return prompt.is_exec or prompt.text.lstrip().startswith("!")


def _config_file(name: str, *, base_dir: Path | None) -> Path | None:
    """The file `name` names outside the workspace: absolute or `~`, else relative to the agent config's dir."""
    path = Path(os.path.expanduser(name))  # `~nosuchuser` stays as written
    candidate = path if path.is_absolute() else (base_dir / path if base_dir else None)
    try:
        return candidate if candidate is not None and candidate.is_file() else None
    except OSError:
        # A long literal sentence is no file name (ENAMETOOLONG): not an error.
        return None
