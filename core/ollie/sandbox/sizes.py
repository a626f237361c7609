"""Sizes in sandbox.yaml's `limits`: bytes, with a K/M/G/T suffix (powers of 1024), or a share of the RAM ("50%")."""

from __future__ import annotations

import os
import re

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)
_SHARE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
# Below this a step's memory limit could not even start an interpreter (nor be set on a v1 cgroup in use).
MIN_MEMORY = 32 << 20


def check_size(value: object, *, share: bool) -> str:
    """`value` as the canonical text kept in the validated policy; ValueError saying what is accepted."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError("expected a size: bytes, or a number with K, M, G or T" + (", or a share like 50%" if share
                                                                                      else ""))
    text = str(value).strip()
    if share and (match := _SHARE.match(text)):
        if not 0 < float(match.group(1)) <= 100:
            raise ValueError("a share of the RAM must be above 0% and at most 100%")
        return text.replace(" ", "")
    if not _SIZE.match(text):
        raise ValueError(f"{value!r} is not a size: write bytes, or a number with K, M, G or T (like 8G)"
                         + (", or a share of the RAM like 50%" if share else "") + "; 0 for no limit")
    if share and 0 < size_bytes(text) < MIN_MEMORY:
        raise ValueError("a memory limit below 32M would stop every step from starting; 0 for no limit")
    return text.replace(" ", "")


def ram_bytes() -> int:
    """This machine's physical memory (0 when unknown)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


def size_bytes(text: str) -> int:
    """The bytes a checked size (`check_size`) stands for; 0: no limit."""
    if match := _SHARE.match(text):
        return int(ram_bytes() * float(match.group(1)) / 100)
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"not a size: {text!r}")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])

