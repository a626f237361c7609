"""A package's names loaded with their module at first use (PEP 562), so importing one submodule loads no other."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The package's `__getattr__`: each name in `homes` from its submodule (`homes[name]`), imported when asked."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        setattr(sys.modules[package], name, value)  # later lookups find it without this function
        return value

    return __getattr__
