"""Inline completions (ghost text): the prefix/suffix windows around the cursor, and the backend that fills them."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ollie.escapes import has_controls

if TYPE_CHECKING:
    from ollie.backend.base import Backend

# How much of the file around the cursor the model sees: most of what matters is just before it.
PREFIX_CHARS = 6_000
SUFFIX_CHARS = 2_000
# Other open files, as context before the prefix: a few, and the start of each.
NEIGHBOUR_FILES = 3
NEIGHBOUR_CHARS = 1_500
MAX_TOKENS = 128
# A line comment per language, to mark the other files' snippets as not this file's code.
_HASH = {"python", "shellscript", "sh", "bash", "ruby", "perl", "r", "yaml", "toml", "makefile", "dockerfile",
         "elixir", "nix", "julia", "coffeescript", "powershell"}
_DASHES = {"lua", "sql", "haskell", "elm", "ada", "vhdl"}


@dataclass(frozen=True)
class Neighbour:
    """Another open file: its path as the user sees it and its text."""

    path: str
    text: str


def windows(text: str, offset: int, *, language_id: str | None = None,
            neighbours: Sequence[Neighbour] = ()) -> tuple[str, str]:
    """(prefix, suffix) for the cursor at `offset` of `text`: a window each side, other files first."""
    start = max(0, offset - PREFIX_CHARS)
    if start:
        start = text.find("\n", start, offset) + 1 or start
    prefix, suffix = text[start:offset], text[offset:offset + SUFFIX_CHARS]
    language = (language_id or "").lower()
    mark = "#" if language in _HASH else "--" if language in _DASHES else "//"  # `//` when unknown
    blocks = []
    for other in list(neighbours)[:NEIGHBOUR_FILES]:
        snippet = "\n".join(f"{mark} {line}" for line in other.text[:NEIGHBOUR_CHARS].splitlines())
        blocks.append(f"{mark} Path: {other.path}\n{snippet}\n")
    return "".join(f"{block}\n" for block in blocks) + prefix, suffix


class Completer:
    """The session's backend with `OLLIE_COMPLETION_MODEL`, built once off the loop, with its own HTTP client."""

    def __init__(self, *, backend: str | None = None, model: str | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        self._backend_name = backend
        self._model = model
        self._extra_env = dict(env or {})
        self._backend: Backend | None = None
        self._building: asyncio.Future[Backend] | None = None

    def _build(self) -> Backend:
        from ollie.backend.registry import environment, make_backend

        env = {**environment(), **self._extra_env}
        return make_backend(self._backend_name, env.get("OLLIE_COMPLETION_MODEL") or self._model,
                            environ=env)

    async def backend(self) -> Backend:
        """The completion backend (BackendConfigError when the configuration is wrong)."""
        if self._backend is not None:
            return self._backend
        if self._building is None or (self._building.done() and self._building.exception() is not None):
            self._building = asyncio.ensure_future(asyncio.to_thread(self._build))  # a failed build is tried again
        self._backend = backend = await asyncio.shield(self._building)
        return backend

    @property
    def model(self) -> str:
        """The model completions go to ("" until its backend is built)."""
        return self._backend.model if self._backend is not None else ""

    async def complete(self, prefix: str, suffix: str, *, max_tokens: int = MAX_TOKENS) -> str:
        """The text the model puts between `prefix` and `suffix` ("" when it has none)."""
        backend = await self.backend()
        fill = getattr(backend, "fill_in_middle", None)
        if fill is None:  # a Backend of another kind (a plugin): no ghost text rather than an error per keystroke
            return ""
        text = await fill(prefix, suffix, max_tokens=max_tokens)
        # Put into her file as it is, with one key: a bidi override made the line read otherwise than it runs (Trojan
        # Source), a zero-width or control character went in unseen. Such text is none (red team round 68).
        return "" if has_controls(text.replace("\r\n", "\n")) else text

    async def aclose(self) -> None:
        """Release the backend's HTTP client."""
        if self._backend is not None:
            await self._backend.aclose()
