"""One user's session records, across agents: what the daemon and the ACP agent list, rename and archive."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from ollie.paths import sessions_dir
from ollie.sessions.livelock import held_elsewhere, lock_dir
from ollie.sessions.types import Info, ListOptions, Scope, SortKey, os_user, store_role

if TYPE_CHECKING:
    from ollie.sessions.registry import Registry

T = TypeVar("T")
# How a front end turns the registry's errors into its own: (session id, the request's field for a bad value).
ErrorMap = Callable[[str, str], AbstractContextManager[object]]


class UserRecords:
    """The user's records in the registry's store; the calls block (sqlite3's busy-retry sleeps), so `run` keeps
    them in order on one worker thread."""

    def __init__(self, *, errors: ErrorMap = lambda session_id, field: nullcontext()) -> None:
        self._registry: Registry | None = None
        self._user = os_user()
        self.io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ollie-registry")
        self._errors = errors

    @property
    def user(self) -> str:
        """Whose records these are: OLLIE_USER or the login, unless a PostgreSQL store named the user since."""
        return store_role() or self._user

    @property
    def scope(self) -> Scope:
        """The user's scope: no agent, so every agent of the user."""
        return Scope(user_id=self.user)

    @property
    def registry(self) -> Registry:
        """The registry (opened on first use)."""
        if self._registry is None:
            # Imported here: sqlite3 and the store load with the first registry call, not with the daemon.
            from ollie.sessions.registry import Registry

            self._registry = Registry()
        return self._registry

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run one of these methods on the registry thread and wait for it."""
        return await asyncio.get_running_loop().run_in_executor(self.io, partial(fn, *args, **kwargs))

    def get(self, session_id: str) -> Info:
        """The user's session by id, whatever its agent."""
        with self._errors(session_id, "session"):
            return self.registry.get(self.scope, session_id)

    def rename(self, session_id: str, title: str) -> None:
        """Set a session's title."""
        with self._errors(session_id, ""):
            self.registry.rename(self.scope, session_id, title)

    def set_archived(self, session_id: str, archived: bool) -> None:
        """Archive a session, or bring an archived one back (idempotent)."""
        with self._errors(session_id, "session"):  # (one it would make a second active main: -32602 naming it)
            (self.registry.archive if archived else self.registry.unarchive)(self.scope, session_id)

    def live_elsewhere(self, session_ids: list[str]) -> dict[str, str]:
        """Of these sessions, those another process runs now: id -> "<host> (pid N)" (OLLIE_STORE's leases, and
        this machine's live-session locks: a second editor window, `ollie acp`, a terminal)."""
        with self._errors("", ""):
            leased = self.registry.live_elsewhere(session_ids)
        return {**held_elsewhere(lock_dir(sessions_dir()), session_ids), **leased}

    def page(self, options: ListOptions) -> tuple[list[Info], SortKey | None]:
        """The user's sessions of every agent matching `options`, most recently active first, and the key their next
        page starts after (None: no more); see Registry.page."""
        with self._errors("", ""):
            return self.registry.page(self.scope, options)
