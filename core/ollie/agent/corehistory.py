"""The Core's history members: what changes the conversation as a whole (clear, rewind, compact, fork)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from ollie.agent.attachments import Attachments
from ollie.agent.review import Review
from ollie.agent.rewind import Rewound, rewind, rewind_undo
from ollie.agent.setup import Setup
from ollie.agent.taskstate import plan_before, put_plan, read_plan
from ollie.agent.turnhost import TurnHost
from ollie.backend.errors import BackendConfigError
from ollie.errors import OllieError
from ollie.sessions.session import Session

if TYPE_CHECKING:
    from ollie.agent.surface import Switched


class HistoryMembers:
    """Mixed into the Core: what a session does to its conversation as a whole."""

    _host: TurnHost
    _setup: Setup
    _attached: Attachments
    _turn_lock: asyncio.Lock
    session: Session
    review: Review
    owners_only: Callable[[str], None]  # the Core's: refuses what only the session's owner may do

    async def compact(self) -> str:
        """Compact now (after a running turn); what happened, as a line."""
        self.owners_only("compact its history")  # the rewritten history is the owner's too
        async with self._turn_lock:
            return (await self._host.budget.compact(announce=False)).message

    async def rewind(self, turn: int | None = None) -> Rewound:
        """Files back to before turn `turn` (default: the last), conversation cut there; refused while a turn runs."""
        async with self._rewriting("rewind it", "rewind"):  # the cut history is the owner's too
            documents = self._attached.documents
            # Its revert of a buffer is no agent edit: never told as one made on the user's unsaved text (behind.py).
            done = await rewind(self._host.review, turn, documents=documents and documents.inner)
            self._attached.forget_reads(done)
            return done

    async def rewind_undo(self) -> Rewound:
        """Undo the last rewind (files and conversation as before it); refused while a turn runs."""
        async with self._rewriting("rewind it", "undo a rewind"):
            documents = self._attached.documents
            return await rewind_undo(self._host.review, documents=documents and documents.inner)

    @contextlib.asynccontextmanager
    async def _rewriting(self, owners: str, what: str) -> AsyncIterator[None]:
        """Under the turn lock, `what` rewrites the history (refused while a turn runs; the owner's alone: `owners`),
        then what it left is published."""
        self.owners_only(owners)
        if self._host.running:
            raise RuntimeError(f"cannot {what} while a turn is running; interrupt it first")
        async with self._turn_lock:
            yield
            self._rewound()

    def _rewound(self) -> None:
        """Publish what a rewind, its undo or a clear left: the state, and the turns left (the recorder's title
        follows; a cleared session kept its first prompt's words as its title before)."""
        self._host.notify()
        self._host.bus.emit("rewind", str(len(self._host.session.turn_starts)))

    async def clear(self) -> Switched:
        """Start a new conversation in the session, the one before saved as a session of its own (`Switched`, with no
        warnings); refused while a turn runs."""
        async with self._rewriting("clear its history", "clear"):
            switched = await self._start_over(await self._keep("session not cleared"), [])
            self._host.save()
            return switched

    async def _keep(self, refused: str) -> tuple[str, str] | None:
        """Keep the conversation as a session of its own, its title with it: (its id, its title), None when empty (the
        first half of `/clear` and an agent switch: the user's conversation is never lost). NotKept, starting with
        `refused`, when it cannot be written: before anything else changed."""
        if not self.session.messages:
            return None
        from ollie.agent.agentswitch import NotKept, keep
        from ollie.agent.recorder import first_prompt_title
        from ollie.sessions.session import new_session_id

        self._host.save()
        title = self.session.title or first_prompt_title(self.session) or "untitled"
        try:
            # Its turns' checkpoints are the copy's before its log is: a crash between leaves refs no log names.
            kept_id = new_session_id()
            reviewed = await self.review.copy_turns(self.session.id, len(self.session.turn_starts), kept_id)
            kept = await asyncio.to_thread(keep, self._host.session_file, title, kept_id, reviewed), title
            await put_plan(kept_id, self._host.plan_text)  # the task_* tools' plan goes with it
            return kept
        except (OSError, OllieError) as exc:
            raise NotKept(f"{refused}: the conversation could not be kept as a session of its own ({exc}); "
                          "nothing changed") from exc

    async def _start_over(self, kept: tuple[str, str] | None, warnings: list[str]) -> Switched:
        """Clear the conversation `_keep` kept (an empty one keeps nothing, and its name stays)."""
        from ollie.agent.surface import Switched

        if kept is not None:
            self._host.bus.emit("kept", *kept)  # its record: the recorder's
            self.session.title = ""
        self.session.clear()
        # The task_* tools' plan is the conversation's too (its copy's now): the next one's `task_add` added below its
        # steps.
        await self._host.put_plan("")
        await self.review.start_over(kept is not None)
        return Switched(warnings, *(kept or ()))

    async def fork_from(self, source: Session, *, keep_mode: bool = True) -> None:
        """Start this new, idle session as a copy of `source`'s conversation; "always" answers are not copied, nor,
        with `keep_mode=False` (another user's session), the approval mode, backend and model."""
        if self.session.messages or self._host.running:
            raise RuntimeError("only a new, idle session can take another's history")
        session = self.session
        # Its turns (a fork's cut) are reviewed as the source's were: their checkpoints copied before its log has them.
        reviewed = await self.review.copy_turns(source.id, len(source.turn_starts))
        session.replace_messages(source.messages)
        session.turn_starts = list(source.turn_starts)
        session.turn_changed = [n if turn in reviewed else 0 for turn, n in enumerate(source.turn_changed, 1)]
        session.copied_turns = len(source.turn_starts)
        session.task_state = source.task_state
        # The plan too: its turns carry on the same work (the plan as the first turn the cut left out found it).
        found = plan_before(source.plans_before, len(source.turn_starts) + 1)
        await self._host.put_plan(await read_plan(source.id) if found is None else found)
        if keep_mode:
            session.approval = source.approval
            # It goes on with the source's /backend and /model (it went on with the defaults), unless that backend
            # cannot be built here (its key unset).
            with contextlib.suppress(BackendConfigError):
                if source.backend and (old := self._setup.replace_backend(source.backend)) is not None:
                    self._host.retire(old)  # (closed with the fork's first turn)
                if source.model and self._setup.backend is not None:
                    self._setup.switch_model(source.model)
                session.backend, session.model = source.backend, source.model
                self._host.budget.forget_limit()
        session.result_tiers, session.step_outcomes = source.result_tiers, source.step_outcomes
        session.step_network, session.step_images = source.step_network, source.step_images
        session.step_files, session.step_trees = source.step_files, source.step_trees
        session.decision_index = list(source.decision_index)
        await self._host.save_rewritten()
        self._host.notify()
