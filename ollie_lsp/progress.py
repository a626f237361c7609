"""`$/progress` per turn: begin with the prompt's first words, report the state, end with the stop reason."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable

from lsprotocol import types
from pygls.progress import Progress

from ollie.escapes import escaped
from ollie.sessions.types import prompt_title

logger = logging.getLogger("ollie.lsp.progress")

_tokens = itertools.count(1)


class TurnProgress:
    """One session's progress reporting; each step runs after the previous one, in order."""

    def __init__(self, progress: Progress, session_id: str, *, enabled: bool) -> None:
        self._progress = progress
        self._session_id = session_id
        self._enabled = enabled
        self.token: str | None = None  # the running turn's progress (None between turns)
        self._last_message = ""
        self._chain: asyncio.Future[None] | None = None

    def _then(self, step: Callable[[], Awaitable[None]]) -> None:
        previous = self._chain

        async def run() -> None:
            if previous is not None:
                await asyncio.gather(previous, return_exceptions=True)
            try:
                await step()
            except Exception:
                # A client that refuses progress must not disturb the turn.
                logger.warning("progress step failed", exc_info=True, extra={"session": self._session_id})

        self._chain = asyncio.ensure_future(run())

    def begin(self, prompt: str) -> None:
        """Start a progress for a new turn, titled by its prompt's first words (editor context left out)."""
        if not self._enabled:
            return
        token = f"ollie-{self._session_id}-{next(_tokens)}"
        self.token = token
        self._last_message = ""

        async def step() -> None:
            await self._progress.create_async(token)
            self._progress.begin(
                # Any client's own status line: a workspace file's `# ollie:` question is a prompt (red team round 68).
                token, types.WorkDoneProgressBegin(title="ollie", message=escaped(prompt_title(prompt)) or "…",
                                                   cancellable=True)
            )

        self._then(step)

    def report(self, state: str) -> None:
        """Report a state change (`thinking`, `calling: file_read`) of the running turn."""
        token = self.token
        if not self._enabled or token is None or state == self._last_message:
            return
        self._last_message = state

        async def step() -> None:
            if token in self._progress.tokens:
                self._progress.report(token, types.WorkDoneProgressReport(message=state))

        self._then(step)

    def end(self, stop: str) -> None:
        """End the turn's progress with its stop reason."""
        token, self.token = self.token, None
        if not self._enabled or token is None:
            return

        async def step() -> None:
            if token in self._progress.tokens:
                self._progress.end(token, types.WorkDoneProgressEnd(message=stop))
                self._progress.tokens.pop(token, None)

        self._then(step)

    async def settled(self, timeout: float | None = None) -> None:
        """Wait for every scheduled step (at most `timeout` s: a client may never answer `create`)."""
        if self._chain is not None:
            await asyncio.wait({self._chain}, timeout=timeout)
