"""Byte counts as a person reads them: a backend's cap, a step's limit, a disk's free space (a base module: the tools
say sizes without loading the HTTP client)."""

from __future__ import annotations


def size_text(count: int) -> str:
    """A byte count as a person reads it (8 GiB, 1.5 MiB, 1000 MiB, 100 bytes): a backend's cap, a step's limit."""
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if count >= 1 << shift:
            return f"{count / (1 << shift):.1f}".removesuffix(".0") + f" {unit}"
    return f"{count} bytes"
