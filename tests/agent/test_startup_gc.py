"""A front end's start-up: what loaded is frozen as the collector resumes, which counts no frozen objects; the
generated methods' source text is dropped."""

from __future__ import annotations

import gc
import linecache
import traceback

import attrs
import pytest
from lsprotocol import types

from ollie import startup


def test_resuming_the_collector_freezes_what_loaded_and_does_not_walk_the_frozen_objects(monkeypatch) -> None:
    def walks() -> int:
        raise AssertionError("gc.get_freeze_count walks every frozen object: ~8 ms before a first answer")

    monkeypatch.setattr(gc, "get_freeze_count", walks)
    was_enabled = gc.isenabled()
    gc.unfreeze()  # what earlier tests froze
    try:
        startup.pause_gc()
        loaded = [[]]  # an object loading made
        startup.resume_gc()
        assert gc.isenabled()
        assert not any(any(o is loaded for o in gc.get_objects(g)) for g in range(3)), "not frozen: every pass walks it"
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()
        else:
            gc.disable()


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
