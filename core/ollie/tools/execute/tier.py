"""Result retention tiers: how long the loop keeps a tool's result verbatim."""

from __future__ import annotations

from collections.abc import Iterable

from ollie.tools.base import Tier
from ollie.tools.execute.tool import ToolScript

# Results the model consumes at once; the loop may collapse them to a one-line summary.
COLD_TOOLS = frozenset(
    {"file_read", "memory_recall", "web_fetch", "web_search", "lsp_definition", "lsp_references", "lsp_hover"}
)
_HEAT = {"cold": 0, "warm": 1, "hot": 2}


def script_tier(name: str, script: ToolScript | None) -> Tier:
    """One script's tier: the built-in cold list, then its `ollie:tier` annotation, else hot."""
    if name in COLD_TOOLS:
        return "cold"
    if script is not None and script.tier is not None:
        return script.tier
    return "hot"


def hottest(tiers: Iterable[Tier]) -> Tier:
    """The tier that keeps a combined result longest (hot > warm > cold); hot when empty."""
    seen = list(tiers)
    return max(seen, key=_HEAT.__getitem__) if seen else "hot"
