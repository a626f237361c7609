"""A front end's start-up: what loading left in cycles is freed once, unless more was frozen since (a resumed
history), and its free heap handed back; resuming the collector counts no frozen objects; the generated methods'
source text is dropped."""

from __future__ import annotations

import gc
import linecache
import subprocess
import sys
import traceback
import weakref

import attrs
import pytest
from lsprotocol import types

from ollie import startup


class _Node:
    """One half of a reference cycle (only the collector frees it)."""

    other: _Node | None = None


def _cycle() -> weakref.ref[_Node]:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_the_load_garbage_is_freed_once_unless_more_was_frozen_since() -> None:
    was_enabled = gc.isenabled()
    gc.unfreeze()  # what earlier tests froze
    try:
        startup.pause_gc()
        loaded = _cycle()  # garbage that loading made
        startup.resume_gc()
        gc.collect()
        assert loaded() is not None  # frozen with what loaded: no pass walks it
        startup.collect_load_garbage()
        assert loaded() is None

        startup.pause_gc()
        loaded = _cycle()
        startup.resume_gc()
        gc.freeze()  # a resumed history frozen after the load (ollie.gcpause)
        startup.collect_load_garbage()
        assert loaded() is not None  # unfreezing would have put the history back in every pass
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()
        else:
            gc.disable()


def test_resuming_the_collector_does_not_walk_the_frozen_objects(monkeypatch) -> None:
    def walks() -> int:
        raise AssertionError("gc.get_freeze_count walks every frozen object: ~8 ms before a first answer")

    monkeypatch.setattr(gc, "get_freeze_count", walks)
    try:
        startup.pause_gc()
        startup.resume_gc()
        assert gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()
        startup.collect_load_garbage()


# A fresh process: 4 KiB buffers come from the C heap (over pymalloc's 512 bytes, under mmap's threshold), and the one
# made after them keeps the heap's top in use, so freeing them trims nothing by itself.
_FREED_HEAP = """
from ollie import startup

def rss_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))

startup.pause_gc()
startup.resume_gc()
cycles = []
for _ in range(8000):
    cycle = [bytes(4096)]
    cycle.append(cycle)
    cycles.append(cycle)
pin = bytes(4096)
del cycles, cycle
before = rss_kib()
startup.collect_load_garbage()
print(before - rss_kib())
"""


def test_what_the_load_collection_frees_goes_back_to_the_os() -> None:
    out = subprocess.run([sys.executable, "-c", _FREED_HEAP], capture_output=True, text=True, check=True, timeout=60)
    assert int(out.stdout) > 16 * 1024, out  # of the ~32 MiB the cycles held


def _generated_sources() -> list[str]:
    return [name for name in linecache.cache if name.startswith("<") and "generated" in name]


def test_the_generated_methods_source_text_is_dropped_and_tracebacks_still_name_them() -> None:
    attrs.make_class("Made", ["x"])  # the source of its methods is in linecache (this one, or an earlier same one)
    assert _generated_sources()
    startup.drop_generated_sources()
    assert _generated_sources() == []
    with pytest.raises(ValueError) as raised:
        types.Position(line=-1, character=0)  # its generated __init__ runs the validators
    assert "<attrs generated" in "".join(traceback.format_tb(raised.tb))
