"""Copying a forked process's shared pages ahead, so that its step's path takes no copy-on-write faults.

Stdlib only: loaded by path (siblings.py) in the fork server's `-I -S` interpreter. A spare supervisor and
its prepared process are forks of the fork server: every Python object they touch first (a refcount, an
allocator's free list) costs a copy-on-write fault, a few hundred of them between a step's hand-over and
its tool's start. `prefault` takes them while the spare idles: one `madvise(MADV_POPULATE_WRITE)` per run
of pages this process still shares with the fork server (found in /proc/self/pagemap), so only what the
fork left shared is copied: no page that was never touched is allocated.
"""

from __future__ import annotations

import ctypes
import os
import struct

MADV_POPULATE_WRITE = 23  # Linux 5.14
PAGE = os.sysconf("SC_PAGE_SIZE")
_PRESENT, _EXCLUSIVE = 1 << 63, 1 << 56  # pagemap: page present; mapped by this process alone
_libc = ctypes.CDLL(None, use_errno=True)
_libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)


def _private_writable() -> list[tuple[int, int]]:
    """(start, end) of each private writable mapping of this process."""
    ranges = []
    with open("/proc/self/maps", "rb") as maps:
        for line in maps:
            fields = line.split()
            if fields[1][:2] == b"rw" and fields[1][3:4] == b"p":
                start, end = fields[0].split(b"-")
                ranges.append((int(start, 16), int(end, 16)))
    return ranges


def _shared_runs(pagemap: int, start: int, end: int) -> list[tuple[int, int]]:
    """Runs (address, length) of pages in [start, end) that are present and still shared (copy-on-write)."""
    count = (end - start) // PAGE
    data = os.pread(pagemap, count * 8, start // PAGE * 8)
    runs: list[tuple[int, int]] = []
    run_start = -1
    for index, (entry,) in enumerate(struct.iter_unpack("Q", data)):
        shared = entry & _PRESENT and not entry & _EXCLUSIVE
        if shared and run_start < 0:
            run_start = index
        elif not shared and run_start >= 0:
            runs.append((start + run_start * PAGE, (index - run_start) * PAGE))
            run_start = -1
    if run_start >= 0:
        runs.append((start + run_start * PAGE, (len(data) // 8 - run_start) * PAGE))
    return runs


def prefault() -> None:
    """Copy every page this process still shares with its parent now; quietly nothing where the kernel cannot."""
    try:
        pagemap = os.open("/proc/self/pagemap", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        for start, end in _private_writable():
            for address, length in _shared_runs(pagemap, start, end):
                if _libc.madvise(address, length, MADV_POPULATE_WRITE) != 0:
                    return  # EINVAL before 5.14: nothing to gain from the rest either
    except OSError:
        pass
    finally:
        os.close(pagemap)
