"""Landlock through ctypes: ABI detection, access masks per ABI, and applying a ruleset to this process.

Stdlib only: the fork server and the launcher load this file by path in an
interpreter started with `-I -S`, where the `ollie` package is not importable.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat

# Syscall numbers are the same on x86-64 and arm64 (the generic table).
SYS_CREATE_RULESET = 444
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
PR_SET_NO_NEW_PRIVS = 38
CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1
RULE_NET_PORT = 2

# The filesystem rights, bit by bit; REFER came with ABI 2, TRUNCATE with 3, IOCTL_DEV with 5.
(FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR, FS_REMOVE_DIR, FS_REMOVE_FILE, FS_MAKE_CHAR, FS_MAKE_DIR,
 FS_MAKE_REG, FS_MAKE_SOCK, FS_MAKE_FIFO, FS_MAKE_BLOCK, FS_MAKE_SYM, FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV) = (
    1 << bit for bit in range(16))

NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4

SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

# Rights that make sense on a file (not a directory): the kernel rejects others with EINVAL.
FS_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV

READ = FS_READ_FILE | FS_READ_DIR
WRITE = (
    FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_DIR | FS_MAKE_REG | FS_MAKE_SOCK
    | FS_MAKE_FIFO | FS_MAKE_SYM | FS_REFER | FS_TRUNCATE | FS_IOCTL_DEV
)  # no MAKE_CHAR / MAKE_BLOCK: device nodes are never a tool's business
ACCESS_BY_KIND = {
    "ro": READ,
    "rox": READ | FS_EXECUTE,
    "rw": READ | WRITE,
    "rwx": READ | WRITE | FS_EXECUTE,
}


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long


def check(result: int, what: str) -> int:
    """`result` of a libc call or syscall, or OSError naming `what` when it failed (negative)."""
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def kernel_abi() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is missing or disabled."""
    result = _syscall(ctypes.c_long(SYS_CREATE_RULESET), None, ctypes.c_size_t(0),
                      ctypes.c_uint32(CREATE_RULESET_VERSION))
    return max(int(result), 0)


def handled_fs(abi: int) -> int:
    """Every filesystem right this ABI knows, so that whatever no rule grants is denied."""
    if abi < 1:
        return 0
    mask = (FS_MAKE_SYM << 1) - 1
    if abi >= 2:
        mask |= FS_REFER
    if abi >= 3:
        mask |= FS_TRUNCATE
    if abi >= 5:
        mask |= FS_IOCTL_DEV
    return mask


def handled_net(abi: int) -> int:
    """The TCP rights this ABI can restrict (none before ABI 4)."""
    return NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0


def scopes(abi: int) -> int:
    """IPC scopes: no signals to, and no abstract unix sockets of, processes outside the sandbox."""
    return SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0


def _attr_size(abi: int) -> int:
    if abi >= 6:
        return 24
    return 16 if abi >= 4 else 8


def _add_rule(ruleset: int, rule_type: int, rule: ctypes.Structure, what: str) -> None:
    check(_syscall(ctypes.c_long(SYS_ADD_RULE), ctypes.c_int(ruleset), ctypes.c_int(rule_type), ctypes.byref(rule),
                   ctypes.c_uint32(0)), f"landlock_add_rule({what})")


PROC = "/proc"
PER_PROCESS_PROC = ("/proc/self", "/proc/thread-self")


def in_proc(path: str) -> bool:
    """Whether `path` is /proc or beneath it."""
    return path == PROC or path.startswith(PROC + "/")


def per_process_proc(fs: list) -> list:
    """`fs` with a grant of all of /proc narrowed to the process's own /proc/self and /proc/thread-self.

    For a step without its own PID namespace: the real /proc lists every process's command line.
    """
    narrowed = []
    for path, access in fs:
        narrowed.extend([[own, access] for own in PER_PROCESS_PROC] if path == PROC else [[path, access]])
    return narrowed


def open_rules(spec: dict, proc: bool | None = None) -> list[tuple[int, int, str]]:
    """(O_PATH fd, access, path) of each of `spec`'s filesystem rules whose path exists now.

    Opened early when a mount is about to cover some of these paths (a private
    /tmp): a rule follows the inode it was opened on, not the path. `proc`: only
    the rules under /proc (True) or only the others (False); None: all.
    """
    opened = []
    pinned = spec.get("pinned") or {}
    for path, access in spec["fs"]:
        if proc is not None and in_proc(path) != proc:
            continue
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
        st = os.fstat(fd)
        # A writable path leads to the directory or file the daemon locked (writers.places), or the step is refused:
        # a step that may write its parent could have swapped a link in since, and the lock would guard another one.
        if path in pinned and pinned[path].lstrip("~") != f"{st.st_dev}:{st.st_ino}":
            now = os.readlink(f"/proc/self/fd/{fd}")
            os.close(fd)
            if not pinned[path]:
                continue  # none was there, so no lock: what appeared since is covered by a parent's rule, or not at all
            close_rules(opened)
            raise OSError(errno.ELOOP, f"{path} leads to {now}, not to what it led to when its lock was taken")
        if not stat.S_ISDIR(st.st_mode):
            access &= FS_FILE_RIGHTS
        opened.append((fd, access, path))
    return opened


def close_rules(opened: list[tuple[int, int, str]]) -> None:
    """Close the descriptors `open_rules` opened."""
    for fd, _, _ in opened:
        os.close(fd)


def apply_ruleset(spec: dict, opened: list[tuple[int, int, str]] | None = None) -> None:
    """Restrict this process (and its future children) to `spec`; raises OSError on failure.

    `spec`: `abi`, `handled_fs`, `handled_net`, `scoped`, `fs` and `net` ([path or port, access] pairs);
    `opened`: the fs rules from `open_rules`, closed here. Must run single-threaded, just before exec.
    """
    if opened is None:
        opened = open_rules(spec)
    abi = spec["abi"]
    check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    attr = _RulesetAttr(spec["handled_fs"], spec["handled_net"], spec["scoped"])
    ruleset = check(_syscall(ctypes.c_long(SYS_CREATE_RULESET), ctypes.byref(attr),
                             ctypes.c_size_t(_attr_size(abi)), ctypes.c_uint32(0)), "landlock_create_ruleset")
    try:
        for fd, access, path in opened:
            _add_rule(ruleset, RULE_PATH_BENEATH, _PathBeneathAttr(access & spec["handled_fs"], fd), path)
        for port, access in spec["net"]:
            _add_rule(ruleset, RULE_NET_PORT, _NetPortAttr(access, port), f"port {port}")
        check(_syscall(ctypes.c_long(SYS_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0)),
              "landlock_restrict_self")
    finally:
        os.close(ruleset)
        close_rules(opened)
