"""A per-step cgroup: pids (process-count limit and a complete member list) and memory (the step's memory
limit, and whether the OOM killer struck there); limits.py falls back to rlimits where none is writable.

Stdlib only (loaded by path in the fork server's `-I -S` interpreter). The supervisor creates
`<our cgroup>/ollie/<its pid>` in each hierarchy it may write, the tool process joins it before exec (so all
it starts is counted), and the supervisor removes it after the sweep.
"""

from __future__ import annotations

import functools
import os
from contextlib import suppress

PARENT = "ollie"
CONTROLLERS = ("pids", "memory")
# v1's and v2's names for the memory limit and for where OOM kills are counted.
_MEMORY_LIMIT = {True: "memory.max", False: "memory.limit_in_bytes"}
_MEMORY_EVENTS = {True: "memory.events", False: "memory.oom_control"}
_bases: dict[str, str] | None = None  # controller -> the writable parent of per-step cgroups (None: not looked up)


def _mounts() -> list[tuple[str, str, list[str]]]:
    """(mount point, fs type, options) of every cgroup mount."""
    found = []
    with suppress(OSError), open("/proc/self/mounts", encoding="utf-8") as mounts:
        for line in mounts:
            fields = line.split()
            if len(fields) >= 4 and fields[2] in ("cgroup", "cgroup2"):
                found.append((fields[1], fields[2], fields[3].split(",")))
    return found


def _own_paths() -> dict[str, str]:
    """This process's cgroup path per v1 controller ("pids", "memory") and for v2 (key "")."""
    paths: dict[str, str] = {}
    with suppress(OSError, ValueError), open("/proc/self/cgroup", encoding="utf-8") as cgroups:
        for line in cgroups:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(","):
                paths[controller] = path
    return paths


def _v2_enables(directory: str, controller: str) -> bool:
    """True when children of `directory` get `controller` (enabling it if we may)."""
    control = os.path.join(directory, "cgroup.subtree_control")
    try:
        with open(control, encoding="ascii") as current:
            if controller in current.read().split():
                return True
        with open(control, "w", encoding="ascii") as enable:
            enable.write(f"+{controller}")  # fails (EBUSY) in a non-root cgroup that holds processes: v2's rule
        return True
    except OSError:
        return False


def _find_base(controller: str) -> str | None:
    """The writable directory under which per-step cgroups of `controller` go, creating `ollie` in our own."""
    own = _own_paths()
    candidates = []
    for mount, kind, options in _mounts():
        if kind == "cgroup" and controller in options and controller in own:
            candidates.append(os.path.join(mount, own[controller].lstrip("/")))
        elif kind == "cgroup2" and "" in own:
            directory = os.path.join(mount, own[""].lstrip("/"))
            try:
                with open(os.path.join(directory, "cgroup.controllers"), encoding="ascii") as controllers:
                    usable = controller in controllers.read().split()
            except OSError:
                usable = False
            if usable and _v2_enables(directory, controller):
                candidates.append(directory)
    for directory in candidates:
        base = os.path.join(directory, PARENT)
        try:
            os.makedirs(base, exist_ok=True)
        except OSError:
            continue
        if os.access(base, os.W_OK) and (not _is_v2(base) or _v2_enables(base, controller)):
            if controller == "pids":
                _leave_half(base)
            return base
    return None


def _leave_half(base: str) -> None:
    """Cap every step under `base` together at half the tasks its parent and the kernel allow.

    Each step has its own limit (`limits.processes`), but a parallel group (or sessions side by side) multiplies
    it: together they took every task the daemon's cgroup may have (a systemd user slice's TasksMax, the kernel's
    pid_max), and the daemon, the editor and the user's session could no longer fork.
    """
    limits = ["/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"]
    directory = os.path.dirname(base)
    while os.path.exists(os.path.join(directory, "pids.max")):  # a hierarchy's root has none
        limits.append(os.path.join(directory, "pids.max"))
        directory = os.path.dirname(directory)
    allowed = []
    for path in limits:
        with suppress(OSError, ValueError), open(path, encoding="ascii") as limit:  # "max": no limit there
            allowed.append(int(limit.read()))
    with suppress(OSError):
        if allowed:
            _write(os.path.join(base, "pids.max"), str(max(min(allowed) // 2, 1)))


@functools.cache  # asked of the bases in the fork server: every supervisor inherits the answers
def _is_v2(directory: str) -> bool:
    return os.path.exists(os.path.join(directory, "cgroup.controllers"))


def bases() -> dict[str, str]:
    """Per controller, the per-step cgroups' parent directory, looked up once per process (absent: none writable)."""
    global _bases
    if _bases is None:
        found = {controller: _find_base(controller) for controller in CONTROLLERS}
        _bases = {controller: base for controller, base in found.items() if base is not None}
    return _bases


def base() -> str | None:
    """The pids cgroups' parent directory (None: none writable)."""
    return bases().get("pids")


def remove_stale() -> None:
    """Remove the empty cgroups of supervisors that no longer run (their fork server was killed)."""
    for parent in set(bases().values()):
        try:
            names = os.listdir(parent)
        except OSError:
            continue
        for name in names:
            if name.isdigit() and not os.path.exists(f"/proc/{name}"):
                with suppress(OSError):
                    os.rmdir(os.path.join(parent, name))  # fails on a cgroup still in use: left alone


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)  # not open(): 4 syscalls less (a step's path has a few)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


class Cgroup:
    """One step's cgroup, in every hierarchy that has one of its controllers."""

    def __init__(self, dirs: dict[str, str]) -> None:
        self.dirs = dirs  # controller -> its directory (one directory for both under v2)
        self.joined = False  # True in a spare supervisor: its children are born members
        self._set: dict[str, int] = {}  # the limits written so far: the same value again is not written
        # Its OOM kill count's file, opened with it: only read after the step, on its path (by a spare's step's init,
        # which reports the status itself: spare.py).
        self.oom_events = -1

    @classmethod
    def named(cls, name: str) -> Cgroup:
        """The cgroup `name` under `bases()` (which may or may not exist)."""
        return cls({controller: os.path.join(parent, name) for controller, parent in bases().items()})

    @property
    def paths(self) -> list[str]:
        """Its directories, one per hierarchy."""
        return list(dict.fromkeys(self.dirs.values()))

    @property
    def limits_memory(self) -> bool:
        """Whether it can hold the step's memory (else the tool process falls back to RLIMIT_AS)."""
        return "memory" in self.dirs

    def set_limit(self, max_processes: int) -> None:
        """Set pids.max (0: no limit)."""
        if "pids" in self.dirs and self._set.get("pids") != max_processes:
            _write(os.path.join(self.dirs["pids"], "pids.max"), str(max_processes) if max_processes > 0 else "max")
            self._set["pids"] = max_processes

    def set_memory(self, max_bytes: int) -> None:
        """Set the memory limit of all its members together (0: none), swap included where the kernel counts it."""
        if "memory" not in self.dirs or self._set.get("memory") == max_bytes:
            return
        path = self.dirs["memory"]
        v2 = _is_v2(os.path.dirname(path))  # a step's cgroup is of its base's kind
        value = str(max_bytes) if max_bytes > 0 else "max" if v2 else "-1"
        # A step at its limit is killed, not swapped out (which would slow the whole machine, the daemon too):
        # v2 gets no swap, v1's memory+swap limit equals the memory one. Absent without swap accounting.
        swap, swap_value = ("memory.swap.max", "0" if max_bytes > 0 else "max") if v2 else (
            "memory.memsw.limit_in_bytes", value)
        if not v2 and "memory" in self._set:  # v1 refuses a memory limit above the memory+swap one: lift that
            with suppress(OSError):
                _write(os.path.join(path, swap), "-1")
        _write(os.path.join(path, _MEMORY_LIMIT[v2]), value)
        with suppress(OSError):
            _write(os.path.join(path, swap), swap_value)
        self._set["memory"] = max_bytes

    @classmethod
    def create(cls, name: str, max_processes: int, max_memory: int = 0) -> Cgroup | None:
        """A fresh cgroup `name` with these limits (0: none yet); None where none is writable."""
        made: dict[str, str] = {}
        for controller, path in cls.named(name).dirs.items():
            if path not in made.values():
                try:
                    try:
                        os.mkdir(path)
                    except FileExistsError:
                        os.rmdir(path)  # left by a supervisor that was killed and whose pid came round again
                        os.mkdir(path)
                except OSError:
                    continue
            made[controller] = path
        if not made:
            return None
        group = cls(made)
        try:
            group.set_limit(max_processes)
            group.set_memory(max_memory)
        except OSError:
            group.remove()
            return None
        if "memory" in made:
            events = os.path.join(made["memory"], _MEMORY_EVENTS[_is_v2(os.path.dirname(made["memory"]))])
            with suppress(OSError):  # then no step of it is said to have met its memory limit
                group.oom_events = os.open(events, os.O_RDONLY | os.O_CLOEXEC)
        return group

    def join(self) -> None:
        """Move the calling process in (before exec, so all it starts is counted and listed)."""
        if self.joined:
            return  # already a member: moving again would wait for an RCU grace period for nothing
        for path in self.paths:
            _write(os.path.join(path, "cgroup.procs"), str(os.getpid()))
        self.joined = True

    def procs(self) -> set[int]:
        """The pids of its members now (empty once it is gone)."""
        path = self.dirs.get("pids") or self.paths[0]
        try:
            with open(os.path.join(path, "cgroup.procs"), encoding="ascii") as procs:
                return {int(line) for line in procs.read().split()}
        except OSError:
            return set()

    def oom_killed(self) -> bool:
        """Whether the OOM killer killed one of its members (its memory limit was reached); asked once."""
        fd, self.oom_events = self.oom_events, -1
        if fd < 0:
            return False
        try:  # a raw read: it comes between the step's end and its status
            text = os.read(fd, 4096).decode("ascii", "replace")
        except OSError:
            return False
        finally:
            os.close(fd)
        counts = dict(line.split()[:2] for line in text.splitlines() if len(line.split()) >= 2)
        return counts.get("oom_kill", "0") not in ("0", "")

    def leave_and_remove(self) -> None:
        """For a member (a spare supervisor) whose fork server is gone: move back up, then remove it."""
        for path in self.paths:
            try:
                _write(os.path.join(os.path.dirname(os.path.dirname(path)), "cgroup.procs"), str(os.getpid()))
            except OSError:
                return
        self.remove()

    def remove(self) -> None:
        """Delete it (after the sweep, when it is empty); a failure leaves an empty dir behind, nothing more."""
        for path in self.paths:
            with suppress(OSError):
                os.rmdir(path)
