"""The tool child's seccomp filter, built with libseccomp (pyseccomp) in the daemon and exported as BPF.

The fork server (`-I -S`, no site-packages) cannot build one, and one per spawn would cost more than the
spawn: so one filter per policy shape is built here, cached, and loaded by the child (confine.py). Default
allow; what it denies, and why, is docs/SECURITY.md's seccomp row.
"""

from __future__ import annotations

import errno
import functools
import os

import pyseccomp as sc

AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16
SOCK_STREAM, SOCK_DGRAM = 1, 2
SOCK_TYPE_MASK = 0xF  # type's low bits; SOCK_NONBLOCK / SOCK_CLOEXEC sit above them
SOCK_MAX = 11  # the kernel answers EINVAL for any type at or above it: no rule needed there
IPPROTO_TCP = 6
NETLINK_ROUTE = 0
INT = 0xFFFFFFFF  # the kernel reads these arguments as 32-bit ints: compare only the low half

CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC = 0x20000, 0x2000000, 0x4000000, 0x8000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWTIME = 0x10000000, 0x20000000, 0x40000000, 0x80
# CLONE_NEWTIME's bit is the exit-signal byte in clone(); only unshare() reads it as a flag.
CLONE_NAMESPACES = (CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID,
                    CLONE_NEWNET)
TIOCSTI, TIOCLINUX = 0x5412, 0x541C
F_SETLEASE = 1024
MSG_FASTOPEN = 0x20000000
# The flags argument of each send call that can carry MSG_FASTOPEN (sendto(fd, buf, len, flags, ...), ...).
SEND_FLAGS_ARG = {"sendto": 3, "sendmsg": 2, "sendmmsg": 3}

S_ISUID, S_ISGID = 0o4000, 0o2000
O_CREAT, O_TMPFILE = 0o100, 0o20000000  # the same on x86-64 and arm64 (O_TMPFILE: its own bit, without O_DIRECTORY)
# The mode argument of each call that sets a file's mode bits: chmod(path, mode), fchmodat(fd, path, mode, flags)...
MODE_ARG = {"chmod": 1, "fchmod": 1, "fchmodat": 2, "mknod": 1, "mknodat": 2}
# Calls that set a mode only when they create: (flags argument, mode argument); creat always creates.
CREATE_ARGS = {"open": (1, 2), "openat": (2, 3)}
FCHMODAT2, OPENAT2 = 452, 437  # the same numbers on every architecture; newer than some libseccomp releases know

DENIED_CALLS = (
    "io_uring_setup", "io_uring_enter", "io_uring_register", "bpf", "perf_event_open", "kexec_load",
    "kexec_file_load", "init_module", "finit_module", "delete_module", "add_key", "keyctl", "request_key",
    "ptrace", "process_vm_readv", "process_vm_writev", "userfaultfd", "setns", "mount", "umount2",
    "pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
)
NETWORK_MODES = ("none", "tcp", "all")  # no inet; TCP only (Landlock restricts its ports); inet unrestricted


def _eq(arg: int, value: int) -> sc.Arg:
    return sc.Arg(arg, sc.MASKED_EQ, INT, value)


def _deny_inet(flt: sc.SyscallFilter, family: int, datagrams: bool) -> None:
    deny = sc.ERRNO(errno.EPERM)
    allowed_types = (SOCK_STREAM, SOCK_DGRAM) if datagrams else (SOCK_STREAM,)
    for kind in range(SOCK_MAX):
        if kind not in allowed_types:
            flt.add_rule(deny, "socket", _eq(0, family), sc.Arg(1, sc.MASKED_EQ, SOCK_TYPE_MASK, kind))
    # Stream sockets: plain TCP only. GT compares all 64 bits, so high garbage is denied too.
    stream = sc.Arg(1, sc.MASKED_EQ, SOCK_TYPE_MASK, SOCK_STREAM)
    for protocol in range(1, IPPROTO_TCP):
        flt.add_rule(deny, "socket", _eq(0, family), stream, _eq(2, protocol))
    flt.add_rule(deny, "socket", _eq(0, family), stream, sc.Arg(2, sc.GT, IPPROTO_TCP))


def _socket_rules(flt: sc.SyscallFilter, network: str, unix: bool) -> None:
    deny = sc.ERRNO(errno.EPERM)
    no_family = sc.ERRNO(errno.EAFNOSUPPORT)
    kept = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK}
    for family in range(AF_NETLINK):
        if family not in kept:
            flt.add_rule(no_family, "socket", _eq(0, family))
    flt.add_rule(no_family, "socket", sc.Arg(0, sc.GT, AF_NETLINK))  # AF_PACKET (17) and every later family
    flt.add_rule(deny, "socket", _eq(0, AF_NETLINK), sc.Arg(2, sc.NE, NETLINK_ROUTE))
    if not unix:
        flt.add_rule(deny, "socket", _eq(0, AF_UNIX))
    for family in (AF_INET, AF_INET6):
        if network == "none":
            flt.add_rule(deny, "socket", _eq(0, family))
        else:
            _deny_inet(flt, family, datagrams=network == "all")
    if network != "all":
        for call, arg in SEND_FLAGS_ARG.items():
            flt.add_rule(deny, call, sc.Arg(arg, sc.MASKED_EQ, MSG_FASTOPEN, MSG_FASTOPEN))


def _build(network: str, unix: bool) -> sc.SyscallFilter:
    flt = sc.SyscallFilter(sc.ALLOW)
    # Only the native arch is in the filter; any other (i386 int 0x80, x32) is killed outright.
    flt.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
    # A binary tree of syscalls: every syscall the tool makes pays a few compares, not one per rule.
    flt.set_attr(sc.Attr.CTL_OPTIMIZE, 2)
    deny = sc.ERRNO(errno.EPERM)
    for name in DENIED_CALLS:
        flt.add_rule(deny, name)
    flt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    # No hard links: a write through one named outside the work tree makes no inotify event there, and the
    # checkpoints trust those events (treewatch). EXDEV, as across mounts, where tools copy instead.
    for name in ("link", "linkat"):
        flt.add_rule(sc.ERRNO(errno.EXDEV), name)
    for flag in CLONE_NAMESPACES:
        flt.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    for flag in (*CLONE_NAMESPACES, CLONE_NEWTIME):
        flt.add_rule(deny, "unshare", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    for request in (TIOCSTI, TIOCLINUX):
        flt.add_rule(deny, "ioctl", _eq(1, request))
    # No file leases: a step's lease on a file it may write made every open of that file by anyone else (the
    # daemon, the editor, the user's git) wait for the step, up to the kernel's lease-break-time (45 s) each time.
    flt.add_rule(deny, "fcntl", _eq(1, F_SETLEASE))
    _socket_rules(flt, network, unix)
    _mode_rules(flt, deny)
    return flt


def _mode_rules(flt: sc.SyscallFilter, deny: int) -> None:
    """No set-user-ID or set-group-ID bit set by any call that sets a file's mode."""
    for bit in (S_ISUID, S_ISGID):
        for call, arg in MODE_ARG.items():
            flt.add_rule(deny, call, sc.Arg(arg, sc.MASKED_EQ, bit, bit))
        flt.add_rule(deny, "creat", sc.Arg(1, sc.MASKED_EQ, bit, bit))
        for call, (flags, mode) in CREATE_ARGS.items():
            for creating in (O_CREAT, O_TMPFILE):
                flt.add_rule(deny, call, sc.Arg(flags, sc.MASKED_EQ, creating, creating),
                             sc.Arg(mode, sc.MASKED_EQ, bit, bit))
    flt.add_rule(sc.ERRNO(errno.ENOSYS), FCHMODAT2)
    # openat2's flags and mode sit in a struct in memory, which seccomp cannot read: it answers ENOSYS, as
    # before Linux 5.6, and callers fall back to openat, checked above.
    flt.add_rule(sc.ERRNO(errno.ENOSYS), OPENAT2)


@functools.cache
def filter_bpf(network: str, unix: bool) -> bytes:
    """The exported BPF program (struct sock_filter array) for this policy shape; built once per shape."""
    if network not in NETWORK_MODES:
        raise ValueError(f"unknown network mode {network!r}")
    flt = _build(network, unix)
    with os.fdopen(os.memfd_create("ollie-seccomp"), "w+b") as out:
        flt.export_bpf(out)  # libseccomp writes to the fd itself
        out.seek(0)
        return out.read()
