"""The execute server: inline code, tool scripts and pipelines, sandboxed, for one session.

Its names load with their module at first use (PEP 562): a submodule (the arguments' shapes, the schemas) loads
without the server and its runner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ollie.lazyexports import lazy_exports

if TYPE_CHECKING:
    from ollie.tools.execute.childenv import plan_file
    from ollie.tools.execute.server import ExecuteServer, new_dispatcher

_HOMES = {"ExecuteServer": "server", "new_dispatcher": "server", "plan_file": "childenv"}

__all__ = ["ExecuteServer", "new_dispatcher", "plan_file"]

__getattr__ = lazy_exports(__name__, _HOMES)
