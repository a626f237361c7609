"""The bench's modules import against the product as it is now: the suite never runs the bench, so a product name
the bench used could be renamed unnoticed (bench_scale's DEFAULT_MAX_FILES was, and `python -m bench` broke)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.mark.parametrize("module", sorted(p.stem for p in BENCH.glob("*.py") if p.stem != "__main__"))
def test_each_bench_module_imports(module: str) -> None:
    importlib.import_module(f"bench.{module}")
