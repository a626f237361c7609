"""Sessions sit below the engine: importing every sessions module loads no engine, tool, sandbox or daemon code."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import ollie.sessions

ABOVE = ("ollie.agent", "ollie.tools", "ollie.sandbox", "ollie.cli", "ollie_lsp")


def test_the_sessions_package_imports_nothing_above_it():
    modules = [f"ollie.sessions.{m.name}" for m in pkgutil.iter_modules(ollie.sessions.__path__)]
    assert {"ollie.sessions.persist", "ollie.sessions.session", "ollie.sessions.registry"} <= set(modules)
    # A fresh interpreter: this one has loaded the engine for other tests.
    probe = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        f"print(sorted(m for m in sys.modules if m.startswith({ABOVE!r})))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
