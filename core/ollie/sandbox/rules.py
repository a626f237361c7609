"""From a Policy to the child's confinement spec (Landlock, read-only .git, seccomp), with best_effort's warnings."""

from __future__ import annotations

import base64
import functools
import os
import stat
from collections.abc import Sequence

from ollie.sandbox import landlock
from ollie.sandbox.errors import SandboxUnavailableError
from ollie.sandbox.policy import Policy

# Tests set this to force a lower ABI (0 = a kernel without Landlock); it can never raise the real one.
FORCE_ABI_ENV = "OLLIE_LANDLOCK_ABI"
# Tests set these to "0" to act as if the kernel lacked mount namespaces / seccomp (never the reverse).
FORCE_MOUNTNS_ENV = "OLLIE_SANDBOX_MOUNTNS"
FORCE_SECCOMP_ENV = "OLLIE_SANDBOX_SECCOMP"
FORCE_PIDNS_ENV = "OLLIE_SANDBOX_PIDNS"
FORCE_NETNS_ENV = "OLLIE_SANDBOX_NETNS"  # "0": as on a machine without namespaces (network: proxy means none)
NETWORK_ABI = 4
CAP_SYS_ADMIN = 21


# The kernel's answer, asked once (a syscall); `landlock_abi` itself is not cached: $OLLIE_LANDLOCK_ABI may change.
@functools.cache
def _kernel_abi() -> int:
    return landlock.kernel_abi()


def landlock_abi() -> int:
    """The Landlock ABI to use: the kernel's, or lower when `$OLLIE_LANDLOCK_ABI` says so; 0 = unsupported."""
    real = _kernel_abi()
    forced = os.environ.get(FORCE_ABI_ENV, "").strip()
    return min(real, int(forced)) if forced.isdigit() else real


def _forced_off(var: str) -> bool:
    return os.environ.get(var, "").strip() == "0"


def _read(path: str, limit: int = 1 << 16) -> str:
    """A small regular file's text ("" if unreadable); never blocks: tool code may plant a FIFO named .git."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        return os.read(fd, limit).decode("utf-8", "replace").strip()
    except OSError:
        return ""
    finally:
        os.close(fd)


@functools.cache
def _mount_namespaces() -> bool:
    """Whether a child can make a private mount namespace: as root with CAP_SYS_ADMIN, or via a user namespace."""
    status = dict(line.split(":", 1) for line in _read("/proc/self/status").splitlines() if ":" in line)
    if os.geteuid() == 0 and int(status.get("CapEff", "0").strip() or "0", 16) >> CAP_SYS_ADMIN & 1:
        return True
    return (_read("/proc/sys/user/max_user_namespaces") not in ("", "0")
            and _read("/proc/sys/kernel/unprivileged_userns_clone") != "0"
            and _read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") != "1")


@functools.cache
def _seccomp_available() -> bool:
    if "errno" not in _read("/proc/sys/kernel/seccomp/actions_avail"):
        return False  # no CONFIG_SECCOMP_FILTER
    try:
        import pyseccomp  # noqa: F401 - loads libseccomp
    except (ImportError, OSError, RuntimeError):
        return False
    return True


def _git_dir_of(pointer: str) -> str | None:
    """The repository a `.git` file points at (a worktree's `gitdir: ...`), up to the main `.git` directory."""
    text = _read(pointer)
    if not text.startswith("gitdir:"):
        return None
    target = candidate = os.path.realpath(os.path.join(os.path.dirname(pointer), text.partition(":")[2].strip()))
    while os.path.basename(candidate) != ".git":
        if candidate == (candidate := os.path.dirname(candidate)):
            return target
    return candidate


def readonly_git(policy: Policy) -> list[str]:
    """Every `.git` the sandboxed code could write: directly under a writable root, or the repository around one.

    A worktree's `.git` file counts, and the repository it points at when under a writable root; a deeper
    `.git` (a nested checkout in TMPDIR) is not looked for.
    """
    # Strings, not pathlib: this runs for every step (~30 lstats), and Path's parsing cost twice the syscalls.
    roots = [os.path.realpath(root) for root in policy.writable() if os.path.isdir(root)]
    prefixes = tuple(root.rstrip("/") + "/" for root in roots)

    def writable(path: str) -> bool:
        return path in roots or path.startswith(prefixes)

    found: list[str] = []

    def add(path: str) -> None:
        if writable(path) and path not in found:
            found.append(path)
        if os.path.isfile(path):
            # One hop only, to a directory: tool code may have written this file ("gitdir: .git" loops).
            target = _git_dir_of(path)
            if target is not None and os.path.isdir(target) and writable(target) and target not in found:
                found.append(target)

    walked: set[str] = set()  # roots share parents (the data dir's, /tmp): each is looked at once
    for root in roots:
        # `git rev-parse --git-dir` from the root: its own .git, else the nearest parent's.
        directory = root
        while directory not in walked:
            walked.add(directory)
            git = os.path.join(directory, ".git")
            if os.path.lexists(git):
                add(os.path.realpath(git) if os.path.islink(git) else git)
                break
            if directory == (directory := os.path.dirname(directory)):
                break
    return found


def _network_mode(policy: Policy, proxy: bool) -> str:
    if not policy.network.enabled or (policy.network.proxied and not proxy):
        return "none"  # `network: proxy` without a namespace of its own: no network rather than the host's
    if proxy:
        return "tcp"  # TCP on the namespace's loopback (the proxy); no UDP, no raw sockets
    return "all" if policy.network.unrestricted else "tcp"


def _seccomp(policy: Policy, warnings: list[str], proxy: bool) -> str | None:
    if _forced_off(FORCE_SECCOMP_ENV) or not _seccomp_available():
        _shortfall(policy, "seccomp unavailable",
                   "sockets and kernel interfaces unfiltered, capabilities still dropped", warnings)
        return None
    return _bpf_text(_network_mode(policy, proxy), policy.network.unix)


@functools.cache
def _bpf_text(mode: str, unix: bool) -> str:
    from ollie.sandbox.seccomp_filter import filter_bpf  # loads libseccomp: only once a filter is needed

    return base64.b64encode(filter_bpf(mode, unix)).decode()


def _shortfall(policy: Policy, reason: str, consequence: str, warnings: list[str]) -> None:
    if not policy.best_effort:
        raise SandboxUnavailableError(
            f"{reason}, and sandbox policy {policy.name!r} ({policy.source}) has best_effort: false: refusing to run")
    warnings.append(f"{reason}: {consequence} (best_effort)")


def ruleset_for(policy: Policy, abi: int, *, extra_fs: Sequence[tuple[str, int]] = ()) -> tuple[dict | None, list[str]]:
    """The spec for `confine.apply` (None: run unsandboxed) and the warnings to show.

    Landlock's keys plus `writable`, `readonly_binds`, `pid_namespace`, `best_effort` and `seccomp`.
    """
    warnings: list[str] = []
    if abi < 1:
        _shortfall(policy, "Landlock unavailable", "running unsandboxed", warnings)
        return None, warnings
    fs = [[str(path), access] for kind, access in landlock.ACCESS_BY_KIND.items() for path in getattr(policy, kind)]
    fs.extend([path, access] for path, access in extra_fs)
    net: list[list[int]] = []
    handled_net = 0
    if policy.network.restricted and not policy.network.proxied:
        if abi < NETWORK_ABI:
            _shortfall(policy, f"Landlock ABI {abi} cannot restrict TCP (needs {NETWORK_ABI})",
                       "network unrestricted", warnings)
        else:
            handled_net = landlock.handled_net(abi)
            if policy.network.enabled:
                net += [[port, landlock.NET_BIND_TCP] for port in policy.network.bind_tcp]
                net += [[port, landlock.NET_CONNECT_TCP] for port in policy.network.connect_tcp]
    binds = readonly_git(policy)
    # Everything but the writable paths is seen read-only (confine.readonly_view): Landlock does not
    # mediate chmod, chown, utime or xattrs, which a read-only mount refuses (EROFS), for root too.
    writable: list[str] | None = [str(path) for path in policy.writable()]
    if _forced_off(FORCE_MOUNTNS_ENV) or not _mount_namespaces():
        left = ", ".join([*binds, "modes, owners, times and xattrs of files outside the writable paths"])
        _shortfall(policy, "no mount namespace", f"{left} writable by the sandboxed code", warnings)
        binds, writable = [], None
    # A PID namespace per step (supervise.py) with a fresh procfs: a /proc grant then shows the step's own
    # processes only. It needs what a mount namespace needs (the proc mount); without it /proc narrows to /proc/self.
    pidns = not _forced_off(FORCE_PIDNS_ENV) and not _forced_off(FORCE_MOUNTNS_ENV) and _mount_namespaces()
    if not pidns and any(path == landlock.PROC for path, _ in fs):
        _shortfall(policy, "no PID namespace", "/proc narrowed to /proc/self (the step's first process only)",
                   warnings)
        fs = landlock.per_process_proc(fs)
    # `network: proxy`: the step's own network namespace (netns.py), which needs what the PID one needs.
    proxy = policy.network.proxied and not _forced_off(FORCE_NETNS_ENV) and _mount_namespaces()
    if policy.network.proxied and not proxy:
        warnings.append("no network namespace for network: proxy: this step has no network at all")
    spec = {"abi": abi, "handled_fs": landlock.handled_fs(abi), "handled_net": handled_net,
            "scoped": landlock.scopes(abi), "fs": fs, "net": net, "readonly_binds": binds, "writable": writable,
            "pid_namespace": pidns, "best_effort": policy.best_effort, "seccomp": _seccomp(policy, warnings, proxy),
            "proxy": proxy}
    return spec, warnings
