"""LLM backends: shared types, typed errors, and the OpenAI, Anthropic and Ollama providers.

Their names are imported from their submodules (`ollie.backend.types`, `.errors`, `.base`...).
"""

from __future__ import annotations

import sys

# httpx imports its command-line client (`httpx._main`: click, rich, pygments) unless that import fails, which
# httpx expects (its `main` then says to install httpx[cli]); the engine never runs it, and httpx has no public
# switch. Measured (python -X importtime, 2026-12): a plain install (click comes with mcp's uvicorn) ~10 ms and
# 1.4 MiB; with a dev tool's rich and pygments >= 68 ms and 5.8 MiB, on every cold start. This one entry blocks
# the import; nothing of httpx's is called or patched.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
