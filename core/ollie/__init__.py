"""ollie: an LLM coding agent engine (backends, loop, sandboxed tools, sessions)."""

from __future__ import annotations

__version__ = "0.1.0"
