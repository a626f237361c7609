"""A front end's start-up: what loading left in cycles is freed once, unless more was frozen since (a resumed
history), and resuming the collector counts no frozen objects."""

from __future__ import annotations

import gc
import weakref

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
