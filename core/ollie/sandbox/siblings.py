"""Loading a sibling file of this package by path, once per process.

The fork server and the launcher run in an interpreter started with `-I -S` (no
`ollie` package, no site-packages): the stdlib-only modules they need load each
other through `load`, by file. Each is loaded once and shared through
`sys.modules`, so that state such as the running step's pid has a single home.
"""

from __future__ import annotations

import importlib.util
import os
import sys

PREFIX = "_ollie_"


def load(name: str):
    """The sibling module `name` (`<this dir>/<name>.py`), executed on first use."""
    key = PREFIX + name
    module = sys.modules.get(key)
    if module is None:
        spec = importlib.util.spec_from_file_location(key, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                        f"{name}.py"))
        assert spec is not None and spec.loader is not None  # a sibling file of this one
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module  # before it runs: a sibling it loads in turn may load it back
        spec.loader.exec_module(module)
    return module
