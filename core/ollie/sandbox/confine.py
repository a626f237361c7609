"""Confine this process before it execs tool code: read-only .git mounts, Landlock, no capabilities, seccomp.

Stdlib only: the fork server and the launcher load this file by path in an
interpreter started with `-I -S` (no `ollie`, no site-packages). The seccomp
filter arrives ready-made as libseccomp-exported BPF in the ruleset (built in
the daemon by seccomp_filter.py), so nothing here needs libseccomp itself.

The order matters, and `apply` keeps it:
0. network namespace (`network: proxy`, netns.py): needs CAP_SYS_ADMIN;
1. mount namespace: every mount read-only but the writable paths (Landlock does
   not mediate chmod, chown, utime or xattrs: a read-only mount makes them fail
   with EROFS, for root too), read-only `.git` binds inside those, and a fresh
   procfs on /proc when this process is PID 1 of the step's own PID namespace
   (supervise.py made it): needs CAP_SYS_ADMIN, and Landlock forbids mount
   topology changes once restricted, so it comes first;
2. Landlock (which sets no_new_privs): needs no capability;
3. securebits and capability drop: needs CAP_SETPCAP, which step 4's filter
   would not block but which must go before anything untrusted runs;
4. seccomp last, so the filter never gets in the way of the setup calls above.
"""

from __future__ import annotations

import base64
import ctypes
import errno
import os
import stat
import sys
from typing import TYPE_CHECKING

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
PROC = "/proc"
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
# statvfs's ST_* bits equal MS_* for these; a remount must keep them or a user namespace refuses (EPERM).
KEPT_MOUNT_FLAGS = MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME | MS_RELATIME

# mount_setattr(2) (Linux 5.12; the same number on every architecture): one call makes a whole tree read-only.
SYS_MOUNT_SETATTR = 442
AT_FDCWD, AT_EMPTY_PATH, AT_RECURSIVE = -100, 0x1000, 0x8000
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV = 1, 2, 4
# open_tree(2) and move_mount(2) (Linux 5.2, the same numbers everywhere): a bind made from and onto descriptors.
SYS_OPEN_TREE, SYS_MOVE_MOUNT = 428, 429
OPEN_TREE_CLONE = 1
MOVE_MOUNT_F_EMPTY_PATH, MOVE_MOUNT_T_EMPTY_PATH = 0x4, 0x40

PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
CAPABILITY_VERSION_3 = 0x20080522
# Root gains nothing at exec (NOROOT), setuid transitions don't touch caps, KEEP_CAPS stays off,
# no ambient raise; each locked so the child cannot undo it.
SECUREBITS = 0b11101111

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p)
for _name in ("unshare", "capget", "capset", "prctl"):
    getattr(_libc, _name)  # looked up once here, in the fork server, rather than in every tool process


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64),
                ("userns_fd", ctypes.c_uint64)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


if TYPE_CHECKING or __package__:  # a type checker reads the package import
    from ollie.sandbox import landlock, netns
else:  # loaded by path (siblings.py)
    landlock, netns = map(sys.modules["_ollie_siblings"].load, ("landlock", "netns"))


def _last_cap() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap", "rb") as source:
            return int(source.read())
    except (OSError, ValueError):
        return 40  # CAP_CHECKPOINT_RESTORE, the last one as of Linux 5.9


_LAST_CAP = _last_cap()  # read at load: Landlock hides /proc/sys by the time the capabilities go
_locked = False  # lock_capabilities ran in this process
_ipc_ahead = False  # new_ipc_namespace ran in this process


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _mount(source: str | None, target: str, flags: int) -> None:
    landlock.check(_libc.mount(source.encode() if source else None, target.encode(), None, flags, None),
                   f"mount({target})")


def unshare(flags: int, what: str) -> None:
    """unshare(2) `flags`; as non-root (or root without CAP_SYS_ADMIN), inside a new user namespace too."""
    if _libc.unshare(flags) == 0:
        return
    global _locked
    uid, gid = os.geteuid(), os.getegid()
    landlock.check(_libc.unshare(CLONE_NEWUSER | flags), f"unshare(CLONE_NEWUSER|{what})")
    _locked = False  # a new user namespace comes with a full bounding set and default securebits
    # Identity maps: files keep their owners, and the child is who it was.
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")


def new_ipc_namespace() -> None:
    """Make this process's IPC namespace now (a spare's prepared process, ahead of its step): `private_mounts` then
    unshares the mount namespace alone. Raises OSError (that call makes both then)."""
    global _ipc_ahead
    unshare(CLONE_NEWIPC, "CLONE_NEWIPC")
    _ipc_ahead = True


def _remount_readonly(path: str) -> None:
    kept = os.statvfs(path).f_flag & KEPT_MOUNT_FLAGS
    _mount(None, path, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | kept)


def _set_readonly(path: str, fd: int = AT_FDCWD, flags: int = AT_RECURSIVE, attrs: int = MOUNT_ATTR_RDONLY) -> bool:
    """mount_setattr `path`'s mount (beneath `fd`; with AT_RECURSIVE every mount below it too) read-only (`attrs`);
    False where the kernel lacks it."""
    attr = _MountAttr(attrs, 0, 0, 0)
    if _libc.syscall(SYS_MOUNT_SETATTR, fd, path.encode(), flags, ctypes.byref(attr), ctypes.sizeof(attr)) == 0:
        return True
    if ctypes.get_errno() == 38:  # ENOSYS: before Linux 5.12
        return False
    landlock.check(-1, f"mount_setattr({path})")
    return True


def _clone(fd: int, recursive: int = AT_RECURSIVE) -> int:
    """A detached copy of the mount of what `fd` (O_PATH) leads to, with the mounts below it, each keeping its flags;
    its descriptor. No name is looked up again: a link swapped in meanwhile is never followed."""
    return landlock.check(_libc.syscall(SYS_OPEN_TREE, fd, b"", OPEN_TREE_CLONE | os.O_CLOEXEC | AT_EMPTY_PATH
                                        | recursive), f"open_tree({os.readlink(f'/proc/self/fd/{fd}')})")


def _open_unlinked(path: str, at: int | None = None) -> int | None:
    """An O_PATH descriptor of the resolved `path` (beneath the directory `at`, else absolute), its parts looked up one
    by one and none followed (None: not there). A link on the way raises ELOOP: a step that may write a directory
    there swapped it in since."""
    fd = os.open("/", os.O_PATH | os.O_CLOEXEC) if at is None else os.dup(at)
    try:
        for part in filter(None, path.split("/")):
            fd, parent = os.open(part, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd), fd
            os.close(parent)
            if stat.S_ISLNK(os.fstat(fd).st_mode):
                raise OSError(errno.ELOOP, f"{path}: {part} is now a link, swapped in since it was checked")
    except FileNotFoundError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _bind_readonly(path: str) -> None:
    """`path` (a `.git`) bound read-only onto itself, from and onto one descriptor (`_open_unlinked`): a link swapped
    in on the way between the daemon's check and the bind gets no bind, and the real `.git` is never left writable."""
    fd = _open_unlinked(path)
    if fd is None:
        return
    tree = -1
    try:
        tree = _clone(fd, recursive=0)
        readonly = _set_readonly("", tree, AT_EMPTY_PATH, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)
        _attach(tree, fd)
        if not readonly:  # before Linux 5.12: the new mount, through its own descriptor
            _remount_readonly(f"/proc/self/fd/{tree}")
    finally:
        for opened in (fd, tree):
            if opened >= 0:
                os.close(opened)


def _attach(tree: int, fd: int) -> None:
    """Mount the detached `tree` onto what `fd` (O_PATH) leads to."""
    landlock.check(_libc.syscall(SYS_MOVE_MOUNT, tree, b"", fd, b"", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH),
                   f"move_mount({os.readlink(f'/proc/self/fd/{fd}')})")


def _mount_points() -> list[str]:
    """Every mount point of this namespace, from /proc/self/mountinfo (octal escapes undone)."""
    with open("/proc/self/mountinfo", "rb") as info:
        points = [line.split()[4] for line in info]
    return [point.decode("unicode_escape").encode("latin-1").decode("utf-8", "surrogateescape") for point in points]


def _dir_or_file(path: str) -> bool:
    """Whether `path` (followed) is a directory or a regular file: one stat, where isdir and isfile took two."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISDIR(mode) or stat.S_ISREG(mode)


def readonly_view(writable: list[str], opened: list[tuple[int, int, str]]) -> None:
    """Every mount read-only but the `writable` dirs and files (each becomes a mount of its own, writable), each bound
    where its descriptor in `opened` (landlock.open_rules', its path checked there) leads.

    A path is never looked up by name again: a step that may write its parent could swap it for a link and back meanwhile
    (the link's target would get the writable mount). Devices and sockets are left out: writing one needs no writable
    mount. A path with no descriptor (none there when the rules were opened) is left read-only, but one under /proc
    (the rules there are opened later, on the step's procfs), where no step makes a link.
    """
    fds = {path: fd for fd, _, path in opened}
    in_proc = [os.open(path, os.O_PATH | os.O_CLOEXEC) for path in writable
               if path not in fds and landlock.in_proc(path) and _dir_or_file(path)]
    places = [fd for fd in [*(fds[path] for path in writable if path in fds), *in_proc]
              if _dir_or_file(f"/proc/self/fd/{fd}")]
    trees: list[int] = []
    try:
        # Copied before the rest is made read-only, put back after: each mount there keeps its own flags (one that
        # is read-only for the user, a container's `:ro` volume inside the project, stays so for the step).
        trees.extend(_clone(fd) for fd in places)
        readonly = _set_readonly("/")
        for tree, fd in zip(trees, places, strict=True):
            _attach(tree, fd)
        real = [os.readlink(f"/proc/self/fd/{fd}") for fd in places]
        _reenter(os.getcwd(), list(zip(real, trees, strict=True)))
        if readonly:
            return
        # An older kernel: one remount per mount point outside the binds (a few dozen, ~10 µs each).
        for point in _mount_points():
            if not any(point == path or point.startswith(path.rstrip("/") + "/") for path in real):
                try:
                    _remount_readonly(point)
                except OSError:
                    if os.path.exists(point):
                        raise  # a mount hidden under another one (its path leads elsewhere) is out of reach anyway
    finally:
        for fd in trees + in_proc:
            os.close(fd)


def _reenter(cwd: str, binds: list[tuple[str, int]]) -> None:
    """Enter `cwd` again through the deepest new bind (path, its mount's descriptor) holding it: the cwd (set before) is
    still on the mount below, where the step's relative writes would meet a read-only mount. Part by part from the
    bind, no link followed: a step that may write there could have swapped one in by now."""
    holding = [(path, tree) for path, tree in binds if cwd == path or cwd.startswith(path.rstrip("/") + "/")]
    if not holding:
        return  # on no bind: it is on the mount it was, made read-only with the rest
    path, tree = max(holding, key=lambda bind: len(bind[0]))
    fd = _open_unlinked(cwd[len(path):], at=tree)
    if fd is None:
        raise FileNotFoundError(errno.ENOENT, f"the working directory {cwd} is gone")
    try:
        os.fchdir(fd)
    finally:
        os.close(fd)


def private_mounts(paths: list[str], tmp: str | None = None, proc: bool = False,
                   writable: list[str] | None = None, best_effort: bool = False,
                   rules: dict | None = None) -> list[tuple[int, int, str]]:
    """In a private mount namespace: with `writable`, everything else read-only (`readonly_view`); each of
    `paths` (directory or file) read-only; `tmp`, if given, seen at /tmp; `proc`: a fresh procfs on /proc
    (this process's PID namespace, so only the step's processes). `best_effort`: a read-only view that
    cannot be made only warns, and the rest still comes. Returns `rules`' filesystem rules but /proc's
    (landlock.open_rules; None: the writable paths), opened in the new namespace before any mount: the writable
    binds are made on those descriptors, and a private /tmp would hide whatever they grant under the real one."""
    # An IPC namespace with it, in the one call: SysV shared memory, message queues and semaphores and POSIX
    # message queues are named by numbers Landlock does not see, and die with the step's last process.
    if _ipc_ahead:
        unshare(CLONE_NEWNS, "CLONE_NEWNS")
    else:
        unshare(CLONE_NEWNS | CLONE_NEWIPC, "CLONE_NEWNS|CLONE_NEWIPC")
    opened = landlock.open_rules({"fs": [[path, 0] for path in writable or []]} if rules is None else rules,
                                 proc=False)
    try:
        _confined_mounts(opened, paths, tmp, proc, writable, best_effort)
    except BaseException:
        landlock.close_rules(opened)
        raise
    return opened


def _confined_mounts(opened: list[tuple[int, int, str]], paths: list[str], tmp: str | None, proc: bool,
                     writable: list[str] | None, best_effort: bool) -> None:
    # Private first: our mounts must not propagate back to the host's mount tree.
    _mount(None, "/", MS_REC | MS_PRIVATE)
    if writable is not None:
        try:
            readonly_view(writable, opened)
        except OSError as exc:
            if not best_effort or exc.errno == errno.ELOOP:  # a link swapped in is no missing feature
                raise
            _warn(f"no read-only view (modes, owners, times and xattrs outside the writable paths changeable): {exc}")
    for path in paths:
        _bind_readonly(path)
    if tmp:
        # For programs that ignore TMPDIR (ed's tmpfile()): the session's own temp dir stands in for /tmp.
        # Last, so the read-only binds above (a .git under /tmp) still cover what the cwd reaches.
        _mount(tmp, "/tmp", MS_BIND)
    if proc:
        # A procfs belongs to the PID namespace of whoever mounts it: ours lists the step's processes only.
        landlock.check(_libc.mount(b"proc", PROC.encode(), b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None),
                       "mount(/proc)")


def _capabilities() -> tuple[int, int]:
    """(effective, permitted) capability masks of this process."""
    header, data = _CapHeader(CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    landlock.check(_libc.capget(ctypes.byref(header), data), "capget")
    return (data[0].effective | data[1].effective << 32, data[0].permitted | data[1].permitted << 32)


def lock_capabilities() -> None:
    """Lock the securebits and empty the bounding set: nothing gains a capability at exec (root included).

    The capabilities this process holds stay usable until `drop_capabilities`, so a spare's prepared
    process does this ahead, before its step's mounts (spare.py); raises OSError.
    """
    global _locked
    if _locked or not _capabilities()[1]:
        return  # a process without capabilities has nothing to lock
    # Needs CAP_SETPCAP, so before capset.
    landlock.check(_libc.prctl(PR_SET_SECUREBITS, SECUREBITS, 0, 0, 0), "prctl(PR_SET_SECUREBITS)")
    for cap in range(_LAST_CAP + 1):
        landlock.check(_libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"prctl(PR_CAPBSET_DROP, {cap})")
    _locked = True


def drop_capabilities() -> None:
    """Empty every capability set (bounding, ambient, effective, permitted, inheritable); root regains none at exec."""
    lock_capabilities()
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)  # EINVAL before 4.3: nothing to clear then
    header, data = _CapHeader(CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    landlock.check(_libc.capset(ctypes.byref(header), data), "capset")


def load_seccomp(bpf: bytes) -> None:
    """Install a BPF seccomp filter (as exported by libseccomp); needs no_new_privs already set."""
    count = len(bpf) // 8  # struct sock_filter is 8 bytes
    program = ctypes.create_string_buffer(bpf, len(bpf))
    fprog = _SockFprog(count, ctypes.cast(program, ctypes.c_void_p))
    landlock.check(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0),
                   "prctl(PR_SET_SECCOMP)")


def own_pid_namespace() -> bool:
    """Whether this process is PID 1 of the step's own PID namespace (supervise.py made it, as the ruleset asked)."""
    return os.getpid() == 1


def _warn(text: str) -> None:
    # The daemon expected this to work, so no warning went to the model: say it here.
    sys.stderr.write(f"ollie sandbox: {text} (best_effort)\n")
    sys.stderr.flush()


def _without_pid_namespace(ruleset: dict, reason: str) -> None:
    """The step asked for a PID namespace and has none: refuse, or (best_effort) grant /proc/self instead of /proc."""
    if not ruleset.get("best_effort"):
        raise OSError(0, f"no PID namespace: {reason}")
    ruleset["fs"] = landlock.per_process_proc(ruleset["fs"])
    ruleset["pid_namespace"] = False
    _warn(f"no PID namespace ({reason}): /proc/self readable by the step's first process only")


def apply(ruleset: dict) -> None:
    """Confine this process to `ruleset` (from rules.ruleset_for); raises OSError. Single-threaded, just before exec.

    Keys besides Landlock's: `writable` (the only paths left on writable mounts; absent: no
    read-only view), `readonly_binds` (paths made read-only), `tmp_at_tmp` (a dir
    mounted over /tmp, for programs that ignore TMPDIR), `netns` (a network namespace of its
    own whose only way out is the egress proxy: netns.py; never best-effort, since the
    alternative is the host's network), `pid_namespace` (this process is
    PID 1 of the step's own PID namespace: a fresh procfs on /proc), `best_effort` (a
    mount or namespace that cannot be made only warns, on stderr) and `seccomp` (base64
    BPF, or None when the daemon found no seccomp).
    """
    binds = ruleset.get("readonly_binds") or []
    writable = ruleset.get("writable")  # None: no read-only view (no mount namespace, best_effort)
    tmp = ruleset.get("tmp_at_tmp")
    proc = bool(ruleset.get("pid_namespace"))
    if proc and not own_pid_namespace():
        _without_pid_namespace(ruleset, "the supervisor could not make one")
        proc = False
    opened = None  # the rules but /proc's (opened on the fresh procfs, after its mount): before the mounts
    if ruleset.get("netns"):
        netns.enter(ruleset["netns"], unshare)  # needs CAP_SYS_ADMIN (in its user namespace): before caps go
    if binds or tmp or proc or writable is not None:
        try:
            opened = private_mounts(binds, tmp, proc, writable, bool(ruleset.get("best_effort")), ruleset)
        except OSError as exc:
            if not ruleset.get("best_effort") or exc.errno == errno.ELOOP:  # a link swapped in is no missing feature
                raise
            left = [", ".join(binds) + " left writable"] if binds else []
            left += [f"{tmp} not at /tmp"] if tmp else []
            _warn(f"{'; '.join(left) or 'no private /proc'}: {exc}")
            if proc:  # the procfs mount comes last: it was not made
                _without_pid_namespace(ruleset, str(exc))
    if opened is None:
        opened = landlock.open_rules(ruleset, proc=False)
    opened += landlock.open_rules(ruleset, proc=True)
    landlock.apply_ruleset(ruleset, opened)
    drop_capabilities()
    if ruleset.get("seccomp"):
        load_seccomp(base64.b64decode(ruleset["seccomp"]))
