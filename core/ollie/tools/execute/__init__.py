"""The execute server: inline code, tool scripts and pipelines, sandboxed, for one session."""

from __future__ import annotations

from ollie.tools.execute.runner import plan_file
from ollie.tools.execute.server import ExecuteServer, new_dispatcher

__all__ = ["ExecuteServer", "new_dispatcher", "plan_file"]
