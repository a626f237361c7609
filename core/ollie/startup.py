"""Start-up of a long-lived front end: no cycle collections while its modules load."""

from __future__ import annotations

import gc


def pause_gc() -> None:
    """Stop the cycle collector while the modules load (each run walks every class so far: a tenth of the start)."""
    gc.disable()


def resume_gc() -> None:
    """Once the modules are loaded: the collector runs again."""
    if not gc.isenabled():  # only after pause_gc: a process that never paused it keeps its own settings
        # Not frozen: loading makes some cyclic garbage (~10 MiB with the engine) that gc.freeze would keep for the
        # process's life; and not collected here: one full pass (~50 ms) would sit before the first token. The
        # collector's next full pass, during the session, takes it.
        gc.enable()
