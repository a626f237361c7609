"""Each executor call's arguments parsed once: the classifiers and the call itself share the request."""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ollie import paths
from ollie.tools.execute.args import ArgumentError, ExecuteRequest, parse_request
from ollie.tools.execute.tool import ToolScript

# The parallel classifier, the call and the tier classifier see the same arguments
# one after another; a read batch classifies several calls before any runs.
KEPT = 64
# The running call's script lookup as its approval used it (ollie.agent.approval): the run runs the scripts the
# approval judged, never found again (a step of the model's could plant a `file_read` of its own between the two).
# None: the call was judged by no lookup (`auto` asks nothing), and the run finds its scripts itself.
judged: ContextVar[Callable[[str], ToolScript] | None] = ContextVar("judged_scripts", default=None)


def _stamp(path: Path) -> tuple[int, ...]:
    try:
        st = path.stat()
    except OSError:
        return ()
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _found_under(dirs: list[Path], script: ToolScript) -> tuple[object, ...]:
    # A script added, removed or renamed changes its dir's stamp; an edit changes the file's.
    return (*((str(d), _stamp(d)) for d in dirs), _stamp(script.path))


@dataclass(eq=False, repr=False)
class ParsedCall:
    """One call's arguments as parsed (or why they are wrong), and the tool scripts found for it."""

    request: ExecuteRequest | None
    error: str = ""
    # name -> (script, what it was found under)
    found: dict[str, tuple[ToolScript, tuple[object, ...]]] = field(default_factory=dict)

    def get(self) -> ExecuteRequest:
        """The request; ArgumentError (the same message each time) when the arguments were wrong."""
        if self.request is None:
            raise ArgumentError(self.error)
        return self.request


class ParsedCalls:
    """The last few calls' parses, by their arguments' content, and a script lookup that keeps what it found."""

    def __init__(
        self,
        *,
        resolve: Callable[[str], ToolScript],
        allowed: Callable[[str], bool],
    ) -> None:
        self._resolve = resolve
        self._allowed = allowed
        self._kept: OrderedDict[tuple[str, str], ParsedCall] = OrderedDict()

    def parse(self, tool: str, args: dict[str, Any]) -> ParsedCall:
        """`args` of executor `tool`, parsed the first time they are seen."""
        try:
            key: tuple[str, str] | None = (tool, json.dumps(args, sort_keys=True, default=repr))
        except (TypeError, ValueError):  # keys that cannot be sorted: parse without keeping it
            key = None
        if key is not None and (parsed := self._kept.get(key)) is not None:
            self._kept.move_to_end(key)
            return parsed
        try:
            parsed = ParsedCall(parse_request(tool, args))
        except ArgumentError as exc:
            parsed = ParsedCall(None, str(exc))
        if key is not None:
            self._kept[key] = parsed
            while len(self._kept) > KEPT:
                self._kept.popitem(last=False)
        return parsed

    def resolver(self, parsed: ParsedCall) -> Callable[[str], ToolScript]:
        """Script lookup for `parsed`'s call: what was found for it stands while nothing it was found under changed.
        Each name is looked up once by one resolver: a batch of 2,000 calls of one tool stats its directories once."""
        looked: dict[str, ToolScript] = {}

        def resolve(name: str) -> ToolScript:
            if (seen := looked.get(name)) is not None:
                return seen
            dirs = paths.tools_path()
            kept = parsed.found.get(name)
            if kept is not None and kept[1] == _found_under(dirs, kept[0]) and self._allowed(name):
                looked[name] = kept[0]
                return kept[0]
            script = self._resolve(name)
            parsed.found[name] = (script, _found_under(dirs, script))
            looked[name] = script
            return script

        return resolve
