"""Git run against a shadow repository whose work tree is the (hostile) workspace.

The workspace's own `.git` is never used and no configuration, hook, fsmonitor,
filter, textconv or attribute driver from it or from the user's git settings can
run: the environment is built from scratch, system and global config are off,
and the shadow's `info/attributes` (highest precedence) unsets every attribute
that makes git transform content or call out.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import stat
import time
from pathlib import Path

from ollie import programs
from ollie.workspace.types import CheckpointUnavailable, GitError, WorkspaceError

# Options on every call: no hooks, no fsmonitor, no untracked cache, no user excludes/attributes files,
# no auto gc (checkpoint trees are only reachable from refs for turns), byte-exact content. A split
# index (our own shadow's, so no workspace setting is involved): a snapshot that re-hashes one file
# writes a small delta, not the whole ~1 MB index of a 10,000-file tree (bench/bench_checkpoints.py).
_OPTIONS = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "core.untrackedCache=false",
    "-c", "core.excludesFile=/dev/null",
    "-c", "core.attributesFile=/dev/null",
    "-c", "core.autocrlf=false",
    "-c", "core.safecrlf=false",
    "-c", "core.quotePath=false",
    "-c", "core.symlinks=true",
    "-c", "core.preloadIndex=true",
    "-c", "core.splitIndex=true",
    "-c", "gc.auto=0",
    "-c", "maintenance.auto=false",
    "-c", "advice.addEmbeddedRepo=false",
    "-c", "submodule.recurse=false",
)
_LOCK_RETRIES = 40
_LOCK_WAIT_S = 0.05
_STALE_LOCK_S = 30.0
# A git run longer than this is killed (GitError): the last bound, where /proc cannot show what git waits on.
RUN_TIMEOUT_S = 300.0
# git reads each `.gitignore` whole into memory (no cap in git 2.39): a run holding more than this is stopped.
MEMORY_CAP = 2 << 30
# How often a running git is looked at (first, and at most): /proc says whether it is stuck opening a FIFO.
_WATCH_FIRST_S, _WATCH_MAX_S = 0.02, 0.25
# The kernel functions open(2) of a FIFO waits for a writer in (older kernels: pipe_wait): where git's memory cannot
# be read for the path it opens, these say it is a FIFO.
_FIFO_WAITS = frozenset({"wait_for_partner", "fifo_open", "pipe_wait"})
# The devices git opens itself: /dev/null (its hooks and excludes settings here), /dev/random and /dev/urandom (temp
# file names). Read through a planted link, the last two grow git's memory to MEMORY_CAP.
_GITS_DEVICES = frozenset({os.makedev(1, 3), os.makedev(1, 8), os.makedev(1, 9)})
# Syscall number -> index of its path argument, for the open calls (x86-64, arm64).
_OPENS = {"x86_64": {2: 0, 257: 1, 437: 1}, "aarch64": {56: 1, 437: 1}}.get(platform.machine(), {})
# Unset, at the highest precedence, every attribute that transforms content or names a driver.
ATTRIBUTES = "* -text -eol -filter -diff -merge -ident -working-tree-encoding -export-subst -delta\n"


def git_env(git_dir: Path, work_tree: Path, index_file: Path | None = None) -> dict[str, str]:
    """A from-scratch environment, so no GIT_* variable of the caller leaks in; PATH only its trusted entries."""
    env = {
        "PATH": programs.trusted_path(),
        "HOME": str(git_dir),
        "LC_ALL": "C",
        "GIT_DIR": str(git_dir),
        "GIT_WORK_TREE": str(work_tree),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_AUTHOR_NAME": "ollie", "GIT_AUTHOR_EMAIL": "ollie@localhost",
        "GIT_COMMITTER_NAME": "ollie", "GIT_COMMITTER_EMAIL": "ollie@localhost",
    }
    if index_file is not None:
        env["GIT_INDEX_FILE"] = str(index_file)
    return env


def _fifo_opening(pid: int) -> str | None:
    """The path process `pid` is stuck opening as a FIFO (its open(2) waits for a writer that never comes), ""
    when /proc shows the wait but not the path; None when it is not stuck so. May block on the disk (stat):
    call it in a thread."""
    try:
        with open(f"/proc/{pid}/syscall") as syscall:
            fields = syscall.read().split()
        arg = _OPENS[int(fields[0])]
        address = int(fields[1 + arg], 16)
    except (OSError, KeyError, ValueError, IndexError):
        return None  # running, or in another call (a pipe read of its stdin, from us, is no FIFO open)
    try:
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
            mem.seek(address)
            name = os.fsdecode(mem.read(4096).split(b"\0", 1)[0])
        path = os.path.join(os.readlink(f"/proc/{pid}/cwd"), name)
    except (OSError, ValueError, OverflowError):
        path = None  # git's memory is not readable here (ptrace restricted)
    if path is not None:
        with contextlib.suppress(OSError):
            if stat.S_ISFIFO(os.stat(path).st_mode):
                return path
    try:  # the path is not readable, or relative to another dir than git's cwd: the kernel's wait says it
        with open(f"/proc/{pid}/wchan") as wchan:
            return "" if wchan.read().strip() in _FIFO_WAITS else None
    except OSError:
        return None


def _device_opened(pid: int) -> str | None:
    """What process `pid` (git) holds open past its stdio that is no file: a device other than its own, a pipe or a
    socket. git opens none of those itself; one reached through a symlink in a nested repository's metadata (its
    `commondir` naming /dev/ptmx, /dev/zero, another terminal) is read until it ends, which it never does."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    for fd in fds:
        if fd in ("0", "1", "2"):
            continue
        with contextlib.suppress(OSError):
            info = os.stat(f"/proc/{pid}/fd/{fd}")
            special = stat.S_ISFIFO(info.st_mode) or stat.S_ISSOCK(info.st_mode) or stat.S_ISBLK(info.st_mode)
            if special or stat.S_ISCHR(info.st_mode) and info.st_rdev not in _GITS_DEVICES:
                return os.readlink(f"/proc/{pid}/fd/{fd}")
    return None


def _resident(pid: int) -> int:
    """Process `pid`'s resident memory in bytes (0 when /proc does not say)."""
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


async def _watched(proc: asyncio.subprocess.Process, stdin: bytes | None, command: str) -> tuple[bytes, bytes]:
    """(stdout, stderr) of git `proc` once it exits. It runs unsandboxed over a hostile work tree, so it is watched:
    stuck opening a FIFO (a planted `.gitignore`, `.gitattributes` or nested repository's `HEAD`: open(2) blocks
    until a writer comes, which never does between steps) is CheckpointUnavailable naming it, and so is more than
    MEMORY_CAP resident (a huge `.gitignore` git reads whole); past RUN_TIMEOUT_S is GitError. git is killed then."""
    talk = asyncio.ensure_future(proc.communicate(stdin))
    with contextlib.suppress(OSError):  # as for every step: the OOM killer takes git, never the daemon
        with open(f"/proc/{proc.pid}/oom_score_adj", "w") as adj:
            adj.write("1000")
    deadline = time.monotonic() + RUN_TIMEOUT_S
    wait = _WATCH_FIRST_S
    problem: WorkspaceError | None = None
    try:
        while problem is None:
            done, _ = await asyncio.wait([talk], timeout=wait)
            if done:
                return talk.result()
            wait = min(wait * 2, _WATCH_MAX_S)
            fifo = await asyncio.to_thread(_fifo_opening, proc.pid)
            device = await asyncio.to_thread(_device_opened, proc.pid) if fifo is None else None
            if fifo is not None:
                problem = CheckpointUnavailable(
                    f"the workspace holds a FIFO where git reads a file{f' ({fifo})' if fifo else ''}: git would "
                    "wait on it for ever; remove it for checkpoints and per-step diffs")
            elif device is not None:
                problem = CheckpointUnavailable(
                    f"git was led to read {device} (a symlink in the workspace, in a nested repository's .git?); "
                    "remove it for checkpoints and per-step diffs")
            elif _resident(proc.pid) > MEMORY_CAP:
                problem = CheckpointUnavailable(f"git {command} used more than {MEMORY_CAP >> 20} MiB over this "
                                                "workspace (a huge .gitignore?) and was stopped")
            elif time.monotonic() > deadline:
                problem = GitError(f"git {command} did not finish in {RUN_TIMEOUT_S:g}s and was stopped")
        raise problem
    finally:
        if not talk.done():
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(Exception):
                await talk
            await proc.wait()


class ShadowGit:
    """Runs git for one shadow repository (`git_dir`) over one work tree."""

    def __init__(self, git_dir: Path, work_tree: Path) -> None:
        self.git_dir = git_dir
        self.work_tree = work_tree

    async def run(self, *args: str, stdin: bytes | None = None, index_file: Path | None = None,
                  ok_codes: tuple[int, ...] = (0,)) -> bytes:
        """Run `git ARGS` in the work tree; its stdout, or GitError with its stderr."""
        try:
            # Never a `git` the workspace or tool code planted on PATH (.venv/bin, node_modules/.bin, /tmp).
            git = programs.program("git", self.work_tree)
        except programs.ProgramNotFound as exc:
            raise CheckpointUnavailable(str(exc)) from exc
        attempt = 0
        while True:
            proc = await asyncio.create_subprocess_exec(
                git, "--no-pager", *_OPTIONS, *args, cwd=self.work_tree,
                env=git_env(self.git_dir, self.work_tree, index_file),
                stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                start_new_session=True)  # no controlling terminal: a link to /dev/tty opens nothing
            out, err = await _watched(proc, stdin, args[0])
            if proc.returncode in ok_codes:
                return out
            # Another process (a second ollie on the same CWD) holds the shadow's lock: wait for it.
            if b".lock': File exists" not in err or attempt == _LOCK_RETRIES:
                detail = err.decode(errors="replace").strip()
                raise GitError(f"git {args[0]} failed ({proc.returncode}): {detail}")
            attempt += 1
            self._clear_stale_lock()
            await asyncio.sleep(_LOCK_WAIT_S)

    def _clear_stale_lock(self) -> None:
        """Remove an index lock left by a process that died mid-command (ours hold it for milliseconds)."""
        lock = self.git_dir / "index.lock"
        try:
            if time.time() - lock.stat().st_mtime > _STALE_LOCK_S:
                lock.unlink()
        except FileNotFoundError:
            pass

    async def init(self) -> None:
        """Create the shadow repository once (idempotent), with its attribute lockdown in place."""
        if not (self.git_dir / "HEAD").exists():
            self.git_dir.parent.mkdir(parents=True, exist_ok=True)
            # GIT_DIR and GIT_WORK_TREE are set, so this makes the shadow there, not a .git in the workspace.
            await self.run("init", "--quiet")
        info = self.git_dir / "info"
        info.mkdir(exist_ok=True)
        attributes = info / "attributes"
        if not attributes.exists() or attributes.read_text() != ATTRIBUTES:
            attributes.write_text(ATTRIBUTES)

    async def cat_blobs(self, ids: list[str]) -> dict[str, bytes]:
        """The contents of the blobs `ids`, in one `cat-file --batch` call."""
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        out = await self.run("cat-file", "--batch", stdin="".join(i + "\n" for i in wanted).encode())
        blobs: dict[str, bytes] = {}
        pos = 0
        for _ in wanted:
            eol = out.index(b"\n", pos)
            header = out[pos:eol].split()
            if len(header) < 3:
                raise GitError(f"cat-file: missing object {header[0].decode()}")
            size = int(header[2])
            blobs[header[0].decode()] = out[eol + 1:eol + 1 + size]
            pos = eol + 1 + size + 1
        return blobs
