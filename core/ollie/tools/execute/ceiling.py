"""The session's sandbox policy is a ceiling: a tool call may pick a narrower policy, never a wider one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ollie.errors import OllieError

if TYPE_CHECKING:
    from ollie.sandbox.policy import Policy

# An agent config's `"sandbox": "none"` (the yolo agent) runs tool code unsandboxed.
UNSANDBOXED = "none"


class SandboxCeilingError(OllieError):
    """A tool call asked for a sandbox policy wider than its session's."""


def widening(narrow: Policy, wide: Policy) -> str | None:
    """Why `narrow` grants more than `wide`, or None when it stays within it."""
    for kind, mine, theirs in (
        ("write", narrow.writable(), wide.writable()),
        ("read", narrow.readable(), wide.readable()),
        ("execute", narrow.rox + narrow.rwx, wide.rox + wide.rwx),
    ):
        if extra := [p for p in mine if not any(p == root or root in p.parents for root in theirs)]:
            return f"it may {kind} {extra[0]}"
    mine, theirs = narrow.network, wide.network
    if not theirs.enabled and mine.enabled:
        return "it allows network access"
    if theirs.proxied and mine.enabled and not mine.proxied:
        return "it allows the host's network (network.mode open)"
    if theirs.proxied and mine.proxied:
        if not set(mine.allow) <= set(theirs.allow):
            return "it allows more hosts"
        if not set(theirs.deny) <= set(mine.deny):
            return "it denies fewer hosts"
        if theirs.max_sent and not 0 < mine.max_sent <= theirs.max_sent:
            return "it may send more"
    if theirs.enabled and not theirs.unrestricted and mine.enabled:
        if mine.unrestricted:
            return "it allows any TCP connection"
        if not set(mine.connect_tcp) <= set(theirs.connect_tcp) or not set(mine.bind_tcp) <= set(theirs.bind_tcp):
            return "it allows more TCP ports"
    if mine.unix and not theirs.unix:
        return "it allows unix sockets"
    if narrow.max_processes > wide.max_processes:
        return f"it allows {narrow.max_processes} processes"
    return None


def check_within(requested: Policy, session: Policy) -> None:
    """Raise SandboxCeilingError when `requested` is wider than the session's policy."""
    reason = widening(requested, session)
    if reason:
        raise SandboxCeilingError(
            f"sandbox policy {requested.name!r} is wider than this session's policy {session.name!r} ({reason}); "
            "a tool call may only narrow the sandbox"
        )
