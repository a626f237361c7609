"""Saying plainly when a step failed because of ollie's sandbox, not its own code: a program or file outside
the policy (a bare "Permission denied" reads like a bug to fix), a size or memory limit, a disk nearly full."""

from __future__ import annotations

import ipaddress
import os
import re
import signal
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ollie.sizes import size_text

if TYPE_CHECKING:
    from ollie.sandbox.policy import Policy

# How shells, Python and most programs report EACCES (or EROFS: a write outside the writable paths) on a path:
# `bash: /x/python3: Permission denied`, `line 1: out.txt: Read-only file system`, `[Errno 13] Permission
# denied: '/x'`, `cannot open '/x': Read-only ...`. A relative path is the step's cwd's.
_DENIED = (rb"""(?:(?:^|: |['"`])(/?[^\s:'"`]+)['"`]?: (Permission denied|Read-only file system)"""
           rb"""|(Permission denied|Read-only file system): ['"]([^'"]+)['"])""")
# How ollie's own tools (tools/_toolkit.py `checked_path`) refuse a path before touching it: `file_edit: ../x.txt:
# outside the sandbox's writable paths (...)`, or `read-only in the sandbox: outside ...` for a readable one.
_TOOL_REFUSED = rb"^[\w.-]+: (.+?): (?:read-only in the sandbox: )?outside the sandbox's (writable|readable) paths \("
EXEC_DENIED = 126  # a shell's status when it found the program but could not run it
_MOST = 3  # notes per step: the first paths a failing build names are the ones that matter
# A disk is "nearly full" below both of these: enough for a build's next steps to fail on it.
LOW_DISK_BYTES = 1 << 30
LOW_DISK_SHARE = 0.05


def _inside(path: Path, roots: tuple[Path, ...]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def outside_note(policy: Policy, path: str, *, execute: bool = False, write: bool = False,
                 runs: bool = False, resolved: bool = False) -> str | None:
    """The note for `path` when the policy does not let a step read, run or write it; None when it does.

    `runs`: the step meant to run it (the advice names filesystem.rox) though only reading is checked. `resolved`:
    `path` is a real path resolved once for a lookup to take too, checked as it is, never resolved again.
    """
    real = Path(path) if resolved else Path(os.path.realpath(path))
    granted = policy.writable() if write else policy.rox + policy.rwx if execute else policy.readable()
    shown = path if str(real) == path else f"{path} (resolves to {real})"
    if _inside(real, tuple(Path(os.path.realpath(root)) for root in granted)):
        if write and ".git" in real.parts:
            return f"blocked by ollie's sandbox: {shown} is in a .git directory, which steps see read-only"
        return None  # allowed: the denial is the file's own mode, not the sandbox
    # A hostile step reads a key to have this note ask the user for it: ollie's advice never names a secret.
    if _kept(real):
        return (f"blocked by ollie's sandbox: {shown} is kept from tool code whatever the policy says (keys, "
                "credentials, ollie's own config and sessions)")
    # `protect` narrows a grant of $HOME or above (read-only; its entries, not its listing): no advice to add one.
    home, place = Path(os.path.realpath(Path.home())), real.parent if write else real
    if home.is_relative_to(place):
        what = "your home directory" if place == home else f"{place}, which holds your home directory"
        return (f"blocked by ollie's sandbox: {shown} is {'in ' if write else ''}{what}, which tool code never "
                f"{'writes' if write else 'lists'} whatever the policy says: work in a project folder instead")
    kind = "filesystem.rw" if write else "filesystem.rox" if execute or runs else "filesystem.ro"
    allowed = "writable" if write else "allowed"
    hidden = _hidden_in_home(real)
    advice = (f"{hidden} is a hidden entry of your home directory, where keys, tokens and histories live: only if the "
              f"step needs it and you know what it holds, the user can add its directory" if hidden else
              "if the step needs it, the user can add its directory")
    return (f"blocked by ollie's sandbox: {shown} is outside the {allowed} paths of sandbox policy "
            f"{policy.name!r}; {advice} to {kind} in {_editable(policy)}")


def _kept(real: Path) -> bool:
    """Whether `real` is one of the secrets `protect` keeps out of every policy (a grant of it is dropped)."""
    from ollie.tools.execute.protect import secret_paths

    return _inside(real, tuple(secret_paths(Path.home())))


def _hidden_in_home(real: Path) -> Path | None:
    """The hidden entry of $HOME that `real` is or lies in, unless the sandbox shows it anyway (HOME_VISIBLE)."""
    from ollie.tools.execute.protect import HOME_VISIBLE

    home = Path(os.path.realpath(Path.home()))
    if real == home or not real.is_relative_to(home):
        return None
    entry = real.relative_to(home).parts[0]
    visible = any(v == entry or v.startswith(f"{entry}/") for v in HOME_VISIBLE)
    return home / entry if entry.startswith(".") and not visible else None


def _editable(policy: Policy) -> str:
    """The file the user edits for `policy`: a bundled one belongs to the installation (maybe not theirs to write,
    replaced by an upgrade), so their own copy, which takes its place."""
    from ollie import paths

    source = Path(policy.source)
    if source.is_relative_to(paths.config_dir()) or not source.is_relative_to(paths.bundled("sandbox.yaml").parent):
        return str(source)
    mine = paths.config_dir() / ("sandbox.yaml" if policy.name == "default" else f"sandbox/{policy.name}.yaml")
    return f"{mine} (copy {source} there first: it replaces that file whole)"


# Well-known local services that give whoever reaches them the machine (or a cluster): never advised as a port to allow.
_LOCAL_SERVICES = {2375: "Docker's API (root on the machine)", 2376: "Docker's API over TLS (root on the machine)",
                   2379: "etcd (a Kubernetes cluster's secrets)", 6443: "a Kubernetes API server",
                   10250: "a kubelet's API (commands in its containers)", 6000: "an X server (every keystroke)"}


def network_notes(policy: Policy, connections: Iterable[dict]) -> list[str]:
    """A note per host:port a step was refused because it is this machine or its network (a local package index, a
    dev server): no question is asked about it, so the note says what the user can list, and where."""
    notes: list[str] = []
    for c in connections:
        if c.get("verdict") != "denied" or not str(c.get("how", "")).startswith("non-public address"):
            continue
        host, port = str(c.get("host", "")), c.get("port")
        if _link_local(host):  # never "the user can add" it: what a model would quote to have it allowed
            note = (f"blocked by ollie's sandbox: {host}:{port} is a link-local address, where a cloud machine's "
                    "metadata service hands out its credentials: not one for network.allow")
        elif (service := _LOCAL_SERVICES.get(port if isinstance(port, int) else -1)) is not None:  # the model chose it
            note = (f"blocked by ollie's sandbox: {host}:{port} is this machine or its network, and port {port} is "
                    f"{service}: not one for network.allow, which would hand it to every step")
        else:
            # A name is never resolved to such an address, however listed: only the literal reaches it.
            literal = "127.0.0.1" if host == "localhost" or host.endswith(".localhost") else host
            pattern = f"[{literal}]:{port}" if ":" in literal else f"{literal}:{port}"
            note = (f"blocked by ollie's sandbox: {host}:{port} is this machine or its network, which a step reaches "
                    f"only when network.allow lists it (it is never asked about); the user can add \"{pattern}\" to "
                    f"network.allow in {_editable(policy)}, letting every step reach whatever listens on that port: "
                    "only if it is the package index or server the user started for this"
                    + (f"; the step then names it {literal}" if literal != host else ""))
        if note not in notes:
            notes.append(note)
            if len(notes) == _MOST:
                break
    return notes


def _link_local(host: str) -> bool:
    """Whether `host` is a link-local IP literal (169.254.169.254, fe80::1), or an IPv6 one carrying an IPv4 one."""
    from ollie.sandbox.egress import carried

    try:
        return carried(ipaddress.ip_address(host)).is_link_local
    except ValueError:
        return False


def mentions_denial(stderr: bytes) -> bool:
    """Whether a step's stderr reports EACCES or EROFS at all (the cheap test before `denied_notes`)."""
    return b"Permission denied" in stderr or b"Read-only file system" in stderr or b"outside the sandbox's" in stderr


def denied_notes(policy: Policy, stderr: bytes, status: int | None, cwd: Path) -> list[str]:
    """A note per path a step's stderr says it was denied (EACCES, EROFS) that lies outside the policy."""
    if not mentions_denial(stderr):
        return []
    notes: list[str] = []
    # compiled at the first failed step, not at import (~1 ms of every cold start); `re` caches it after
    found = [((m.group(1) or m.group(4)), (m.group(2) or m.group(3)) == b"Read-only file system")
             for m in re.finditer(_DENIED, stderr, re.MULTILINE)]
    found += [(m.group(1), m.group(2) == b"writable") for m in re.finditer(_TOOL_REFUSED, stderr, re.MULTILINE)]
    for raw, write in found:
        path = os.path.join(cwd, os.path.expanduser(raw.decode("utf-8", "replace")))
        # Only what the step may not even read is the sandbox's for sure: EACCES on a readable file is its mode.
        note = outside_note(policy, path, write=write, runs=status == EXEC_DENIED)
        if note is not None and note not in notes:
            notes.append(note)
            if len(notes) == _MOST:
                break
    return notes


def _limit(policy: Policy, key: str, size: int) -> str:
    return f"limits.{key}: {size_text(size)} in {policy.source}"


def limit_notes(policy: Policy, *, status: int | None, stderr: bytes, oom: bool) -> list[str]:
    """Notes for a step its memory or file size limit ended (or that says it ran out of either)."""
    notes = []
    if oom or (policy.max_memory and (b"Cannot allocate memory" in stderr or b"MemoryError" in stderr)):
        how = "the kernel killed it" if oom else "an allocation failed"
        notes.append(f"the step reached its memory limit ({_limit(policy, 'memory', policy.max_memory)}): {how}; "
                     "use less memory at once, or ask the user to raise the limit")
    too_large = b"File too large" in stderr or b"File size limit exceeded" in stderr  # EFBIG; a shell's SIGXFSZ
    if policy.max_file_size and (status == -signal.SIGXFSZ or too_large):
        notes.append(f"the step wrote a file past its size limit ({_limit(policy, 'file_size', policy.max_file_size)}); "
                     "write less, or ask the user to raise the limit")
    return notes


def disk_notes(paths: Iterable[Path], stderr: bytes) -> list[str]:
    """A note per filesystem under `paths` (the step's cwd and TMPDIR) that is full or nearly so."""
    notes: list[str] = []
    seen: set[int] = set()
    for path in paths:
        try:
            stats = os.statvfs(path)
            device = os.stat(path).st_dev
        except OSError:
            continue
        free, size = stats.f_bavail * stats.f_frsize, stats.f_blocks * stats.f_frsize
        if device in seen or not size:
            continue
        seen.add(device)
        if free < LOW_DISK_BYTES and free < size * LOW_DISK_SHARE:
            notes.append(f"the disk holding {path} is nearly full: {size_text(free)} free of {size_text(size)}")
    if b"No space left on device" in stderr and not notes:
        notes.append("the step ran out of disk space (No space left on device)")
    return notes
