"""Git run against a shadow repository whose work tree is the (hostile) workspace.

Nothing of the workspace's `.git` or the user's git settings runs (config, hooks, fsmonitor, filters,
textconv): the environment is built from scratch and the shadow's `info/attributes` unsets every attribute
that makes git transform content or call out.
"""

from __future__ import annotations

import asyncio
import signal
import stat
import time
from contextlib import suppress
from pathlib import Path

from ollie import beneath, programs
from ollie.workspace import gitwatch
from ollie.workspace.errors import CheckpointUnavailable, GitError

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
# Passing states worth another try: another process holds the shadow's lock, or a file shrank while git read it
# (an editor or a step rewriting it mid-snapshot): a short read, changed bytes, or SIGBUS on the file git had mapped.
_TRANSIENT = (b".lock': File exists", b"short read while indexing", b"confused by unstable object source data")
STALE_LOCK_S = 30.0
# Unset, at the highest precedence, every attribute that transforms content or names a driver.
ATTRIBUTES = "* -text -eol -filter -diff -merge -ident -working-tree-encoding -export-subst -delta\n"
# The inode of the work tree's own `.git` dir as the shadow was made, before any step ran there (empty: none was).
PROJECT_GIT = "project-git"


def _project_git(work_tree: Path) -> str:
    """The inode of `work_tree`'s `.git` when it is a directory (never through a link), else ""."""
    try:
        info = beneath.lstat_sync(work_tree, ".git")
    except OSError:
        return ""
    return str(info.st_ino) if info is not None and stat.S_ISDIR(info.st_mode) else ""


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
            started = time.time()
            # The work tree as the daemon holds it (beneath.hold), by that fd (passed on: in git it is git's own fd N),
            # never by its name: a dir on its way swapped for a link gets no snapshot from where it leads.
            with beneath.dir_sync(self.work_tree, ".") as fd:
                tree = Path(f"/proc/self/fd/{fd}")
                proc = await asyncio.create_subprocess_exec(
                    git, "--no-pager", *_OPTIONS, *args, cwd=tree, env=git_env(self.git_dir, tree, index_file),
                    stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, pass_fds=(fd,),
                    start_new_session=True)  # no controlling terminal: a link to /dev/tty opens nothing
            out, err = await gitwatch.watched(proc, stdin, args[0])
            code = proc.returncode or 0  # set: watched() returns once git exited
            if code in ok_codes:
                return out
            shrank = code == -signal.SIGBUS
            if shrank:  # git dies without removing its index lock: nobody else could have taken it since
                self._clear_lock(index_file, made_since=started)
            if not (shrank or any(sign in err for sign in _TRANSIENT)) or attempt == _LOCK_RETRIES:
                detail = err.decode(errors="replace").strip()
                if code < 0:
                    detail = f"killed by signal {-code}. {detail}".strip()
                raise GitError(f"git {args[0]} failed ({code}): {detail}")
            attempt += 1
            self._clear_lock(index_file, made_since=None)
            await asyncio.sleep(_LOCK_WAIT_S)

    def _clear_lock(self, index_file: Path | None, made_since: float | None) -> None:
        """Remove an index lock left by a git that died mid-command: one made since `made_since` (a run of ours
        that died holding it), or else one older than STALE_LOCK_S (ours hold it for milliseconds)."""
        lock = Path(f"{index_file or self.git_dir / 'index'}.lock")
        with suppress(FileNotFoundError):
            made = lock.lstat().st_mtime
            # The file system's clock is coarse (a tick behind time.time()): a tick's slack.
            if (made >= made_since - 0.02) if made_since is not None else (time.time() - made > STALE_LOCK_S):
                lock.unlink()

    async def init(self) -> None:
        """Create the shadow repository once (idempotent), with its attribute lockdown in place."""
        # Private: the shadows hold a copy of every workspace file (a 0600 secret too) as a 0444 object, and the state
        # dir above may be anyone's to reach. An older ollie made it 0755.
        self.git_dir.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        mode = self.git_dir.parent.lstat().st_mode
        if stat.S_ISDIR(mode) and mode & 0o077:  # never a link's target
            self.git_dir.parent.chmod(0o700)
        if not (self.git_dir / "HEAD").exists():
            project = _project_git(self.work_tree)
            # GIT_DIR and GIT_WORK_TREE are set, so this makes the shadow there, not a .git in the workspace.
            await self.run("init", "--quiet")
            (self.git_dir / PROJECT_GIT).write_text(project)
        info = self.git_dir / "info"
        info.mkdir(exist_ok=True)
        attributes = info / "attributes"
        if not attributes.exists() or attributes.read_text() != ATTRIBUTES:
            attributes.write_text(ATTRIBUTES)

    def project_git_kept(self) -> bool:
        """Whether the work tree's `.git` is the dir that was there as the shadow was made: the sandbox binds a `.git`
        read-only for every step, but only one there when the step starts; one a step made (a folder with none, a
        repository's subdirectory) is tool code's, its `info/exclude` too. Blocks: in a thread."""
        try:
            made = (self.git_dir / PROJECT_GIT).read_text()
        except OSError:
            return False  # a shadow made before it was noted: which `.git` was there is unknown
        return made != "" and made == _project_git(self.work_tree)

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
