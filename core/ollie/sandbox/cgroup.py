"""A per-step pids cgroup (process-count limit and a complete member list), or RLIMIT_NPROC where none is writable.

Stdlib only: the fork server and the launcher load this file by path in an
interpreter started with `-I -S`. The supervisor creates `<our pids cgroup>/ollie/<its pid>`
with `pids.max`, the tool process joins it before exec (so everything it starts
is counted and listed), and the supervisor removes it after the sweep.
"""

from __future__ import annotations

import os
import resource

PARENT = "ollie"
_base: str | None | bool = False  # False: not looked up yet; None: no writable pids cgroup


def _mounts() -> list[tuple[str, str, list[str]]]:
    """(mount point, fs type, options) of every cgroup mount."""
    found = []
    try:
        with open("/proc/self/mounts", encoding="utf-8") as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) >= 4 and fields[2] in ("cgroup", "cgroup2"):
                    found.append((fields[1], fields[2], fields[3].split(",")))
    except OSError:
        pass
    return found


def _own_paths() -> dict[str, str]:
    """This process's cgroup path per v1 controller ("pids") and for v2 (key "")."""
    paths: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as cgroups:
            for line in cgroups:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                for controller in controllers.split(","):
                    paths[controller] = path
    except (OSError, ValueError):
        pass
    return paths


def _v2_has_pids(directory: str) -> bool:
    """True when children of `directory` get the pids controller (enabling it if we may)."""
    control = os.path.join(directory, "cgroup.subtree_control")
    try:
        with open(control, encoding="ascii") as current:
            if "pids" in current.read().split():
                return True
        with open(control, "w", encoding="ascii") as enable:
            enable.write("+pids")  # fails (EBUSY) in a non-root cgroup that holds processes: v2's rule
        return True
    except OSError:
        return False


def _find_base() -> str | None:
    """The writable directory under which per-step cgroups go, creating `ollie` in our own pids cgroup."""
    own = _own_paths()
    candidates = []
    for mount, kind, options in _mounts():
        if kind == "cgroup" and "pids" in options and "pids" in own:
            candidates.append(os.path.join(mount, own["pids"].lstrip("/")))
        elif kind == "cgroup2" and "" in own:
            directory = os.path.join(mount, own[""].lstrip("/"))
            try:
                with open(os.path.join(directory, "cgroup.controllers"), encoding="ascii") as controllers:
                    usable = "pids" in controllers.read().split()
            except OSError:
                usable = False
            if usable and _v2_has_pids(directory):
                candidates.append(directory)
    for directory in candidates:
        base = os.path.join(directory, PARENT)
        try:
            os.makedirs(base, exist_ok=True)
        except OSError:
            continue
        if os.access(base, os.W_OK) and (not _is_v2(base) or _v2_has_pids(base)):
            return base
    return None


def _is_v2(directory: str) -> bool:
    return os.path.exists(os.path.join(directory, "cgroup.controllers"))


def base() -> str | None:
    """The per-step cgroups' parent directory, looked up once per process (None: none writable)."""
    global _base
    if _base is False:
        _base = _find_base()
    return _base  # type: ignore[return-value]


def remove_stale() -> None:
    """Remove the empty cgroups of supervisors that no longer run (their fork server was killed)."""
    parent = base()
    if parent is None:
        return
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        if name.isdigit() and not os.path.exists(f"/proc/{name}"):
            try:
                os.rmdir(os.path.join(parent, name))  # fails on a cgroup still in use: left alone
            except OSError:
                pass


class Cgroup:
    """One step's pids cgroup."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.joined = False  # True in a spare supervisor: its children are born members

    def set_limit(self, max_processes: int) -> None:
        """Set pids.max (0: no limit)."""
        with open(os.path.join(self.path, "pids.max"), "w", encoding="ascii") as limit:
            limit.write(str(max_processes) if max_processes > 0 else "max")

    @classmethod
    def create(cls, name: str, max_processes: int) -> Cgroup | None:
        """A fresh cgroup `name` limited to `max_processes` tasks (0: none yet); None where none is writable."""
        parent = base()
        if parent is None:
            return None
        path = os.path.join(parent, name)
        try:
            try:
                os.mkdir(path)
            except FileExistsError:
                os.rmdir(path)  # left by a supervisor that was killed and whose pid came round again
                os.mkdir(path)
            group = cls(path)
            group.set_limit(max_processes)
        except OSError:
            return None
        return group

    def join(self) -> None:
        """Move the calling process in (before exec, so all it starts is counted and listed)."""
        if self.joined:
            return  # already a member: moving again would wait for an RCU grace period for nothing
        with open(os.path.join(self.path, "cgroup.procs"), "w", encoding="ascii") as procs:
            procs.write(str(os.getpid()))
        self.joined = True

    def procs(self) -> set[int]:
        """The pids of its members now (empty once it is gone)."""
        try:
            with open(os.path.join(self.path, "cgroup.procs"), encoding="ascii") as procs:
                return {int(line) for line in procs.read().split()}
        except OSError:
            return set()

    def leave_and_remove(self) -> None:
        """For a member (a spare supervisor) whose fork server is gone: move back up, then remove it."""
        try:
            with open(os.path.join(os.path.dirname(os.path.dirname(self.path)), "cgroup.procs"), "w",
                      encoding="ascii") as procs:
                procs.write(str(os.getpid()))
        except OSError:
            return
        self.remove()

    def remove(self) -> None:
        """Delete it (after the sweep, when it is empty); a failure leaves an empty dir behind, nothing more."""
        try:
            os.rmdir(self.path)
        except OSError:
            pass


def _user_tasks(uid: int) -> int:
    """How many tasks (threads included, as RLIMIT_NPROC counts them) `uid` runs now."""
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                continue
    return count


def limit_rlimit(max_processes: int) -> bool:
    """Fallback without a cgroup: cap the user's task count at what it runs now plus `max_processes`.

    RLIMIT_NPROC counts every process of the user, not of this step, hence the
    offset; the kernel never enforces it for root (uid 0), so False there.
    """
    uid = os.getuid()
    if uid == 0:
        return False
    limit = _user_tasks(uid) + max_processes
    _, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))
    return True
