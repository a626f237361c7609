"""A proxied connection's verdict in words: for the `[network]` lines the user reads and the refusal a step reads."""

from __future__ import annotations

# What a verdict's `how` (the wire value, docs/PROTOCOL.md) says to a reader: "denied (deny)" said the same twice.
_HOW_WORDS = {("allowed", "policy"): "allowed: on the allow list", ("denied", "policy"): "denied: on the deny list",
              ("allowed", "once"): "allowed once", ("allowed", "session"): "allowed for this session",
              ("allowed", "always"): "allowed: always (saved)", ("denied", "deny"): "denied (you said no)",
              ("denied", "timeout"): "denied (no answer in time)"}
# Refusals the user gave: listing the host in network.allow is no answer to her "no".
_USERS_NO = {"deny": "the user said no", "refused earlier in this step": "the user said no earlier in this step"}


def verdict_words(verdict: str, how: str) -> str:
    """A connection's verdict with its `how` as a user reads it: `allowed once`, `denied (you said no)`."""
    return _HOW_WORDS.get((verdict, how)) or (f"{verdict} ({how})" if how else verdict)


def refusal(host: str, port: int, how: str) -> str:
    """What a step whose connection was refused reads (its 403's body): why, and the remedy where there is one."""
    if how in _USERS_NO:
        return f"ollie: the network connection to {host}:{port} was denied: {_USERS_NO[how]}"
    return (f"ollie: the network connection to {host}:{port} was {verdict_words('denied', how)}; the sandbox policy's "
            "network.allow lists what may go out")
