"""Start-up of a long-lived front end: no cycle collections while its modules load; room for many descriptors."""

from __future__ import annotations

import gc
import resource


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


def raise_fd_limit() -> None:
    """Raise the soft limit on open descriptors to the hard one: each connection of a step through the egress proxy
    holds six of them, and a soft limit of 1024 (common) would run out at a few busy steps."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (OSError, ValueError):  # a hard limit the kernel caps lower (nr_open): keep what it is
            pass
