"""Nothing in the daemon opens, stats, lists or writes a path except through `ollie.beneath` (the chokepoint).

An AST scan of all the daemon's code (the front ends and every module of `core/ollie` but the chokepoint
itself and the test helpers): every file-system call outside `ollie/beneath.py` must be on the allow-list below,
each for a path that is not a workspace or a dir tool code can write. A new feature that reads the
workspace directly fails here; so does an allow-list entry that is no longer needed.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("ollie_lsp", "ollie_acp", "core/ollie")
NOT_SCANNED = ("core/ollie/beneath.py", "core/ollie/testing/")
_OS = {"open", "stat", "lstat", "scandir", "listdir", "walk", "fwalk", "replace", "rename", "unlink", "remove",
       "rmdir", "mkdir", "makedirs", "readlink", "chmod", "symlink", "link", "truncate", "mkfifo", "utime", "chown"}
_OS_PATH = {"exists", "isfile", "isdir", "getsize", "islink", "lexists", "getmtime"}
_METHODS = {"read_text", "read_bytes", "write_text", "write_bytes", "stat", "lstat", "exists", "is_file", "is_dir",
            "is_symlink", "iterdir", "glob", "rglob", "unlink", "mkdir", "rmdir", "touch", "symlink_to",
            "hardlink_to", "chmod", "samefile",
            # pygls' document of a file that is not open: its `.source` is `Path.read_text` of the file.
            "get_text_document"}
_MODULES = {"shutil", "tempfile", "io"}

# Whole modules whose file access is all to ollie's own private files (0700 dirs no policy grants).
MODULES_ALLOWED = {
    "ollie_lsp/tcp.py": "the --tcp token file (0600, O_NOFOLLOW)",
    "ollie_lsp/editorwatch.py": "/proc: the client's process, the daemon's parents and its --tcp connection's socket",
    "core/ollie/cli/demo.py": "the demo's own temp workspace",
    "core/ollie/tools/execute/sessiondirs.py": "the session's private dirs (O_NOFOLLOW, lock-checked)",
    "core/ollie/tools/execute/flock.py": "the parallel-step lock file in the session's lock dir",
    "core/ollie/workspace/shadowgit.py": "the shadow repository in ollie's state dir",
    "core/ollie/workspace/modes.py": "the checkpointed files' modes, beside the shadow repository in ollie's state dir",
    "core/ollie/workspace/gitwatch.py": "/proc of the daemon's own git child (and a stat of the path it is opening)",
    "core/ollie/tools/execute/tool.py": "tool-script dirs listed (scripts are read through regularfile)",
    "core/ollie/tools/execute/parsed.py": "tool-script dirs' stamps",
    "core/ollie/tools/execute/pythonenvs.py": "PATH's Python installs, stat and symlinks only (pyvenv.cfg via beneath)",
    "core/ollie/cli/doctor.py": "the user's config and install",
    "core/ollie/cli/__init__.py": "the terminal's start-up",
    "core/ollie/config.py": "agent configs in the user's and the bundled agent dirs",
    "core/ollie/paths.py": "ollie's own dirs and bundled files, and a session's root itself (session_dir)",
    "core/ollie/log.py": "ollie's log dir",
    "core/ollie/stdio.py": "/dev/null in place of the daemon's stdio",
    "core/ollie/regularfile.py": "the user's config files by name (a regular file only, O_NONBLOCK, capped)",
    "core/ollie/programs.py": "PATH entries and the helpers found there (stat and realpath; a FIFO is never read)",
    "core/ollie/sessions/livelock.py": "the session's lock file in ollie's data dir",
    "core/ollie/sessions/logindex.py": "session logs in ollie's data dir",
    "core/ollie/sessions/persist.py": "session logs in ollie's data dir",
    "core/ollie/sessions/store.py": "the session store in ollie's data dir",
    "core/ollie/sessions/transfer.py": "session logs in ollie's data dirs (import)",
    "core/ollie/sandbox/cgroup.py": "/proc/self and the cgroup tree",
    "core/ollie/sandbox/limits.py": "/proc",
    "core/ollie/sandbox/process.py": "/proc",
    "core/ollie/sandbox/prefault.py": "the spare's own /proc/self/maps and /proc/self/pagemap",
    "core/ollie/sandbox/supervise.py": "/proc",
    "core/ollie/sandbox/forkserver.py": "/dev/null",
    "core/ollie/sandbox/spawn.py": "/dev/null for a step's stdin",
    "core/ollie/sandbox/egress.py": "the proxy's socket dir in ollie's runtime dir",
    "core/ollie/sandbox/runtimedir.py": "ollie's per-user runtime root (lstat-checked: ours, a directory, 0700)",
    "core/ollie/sandbox/netsaved.py": "the user's always-allowed hosts, in ollie's config dir",
    "core/ollie/sandbox/writers.py": ("lock files in ollie's state dir (O_NOFOLLOW); realpath and stat (the lock's "
                                      "device and inode) of a policy's paths and of a path already checked beneath "
                                      "its root"),
    "core/ollie/sandbox/ldd.py": "ldd, on the trusted PATH",
    "core/ollie/sandbox/policy.py": "policy files (user config, bundled); whether the paths a policy grants exist",
    "core/ollie/sandbox/landlock.py": "the paths a policy grants, opened O_PATH only (Landlock's rules are on inodes)",
    "core/ollie/sandbox/rules.py": ("the workspace's .git (lexists, realpath; a `gitdir:` file read O_NONBLOCK, "
                                    "regular only, 64 KiB): only to choose what is mounted read-only"),
    "core/ollie/sandbox/confine.py": "runs in the step's own process, confining it (/proc, its mounts)",
    "core/ollie/sandbox/stepinit.py": "runs in the step's namespace init, confined",
    "core/ollie/sandbox/pyrun.py": "ollie's own tool scripts, compiled in the fork server and run confined",
}
# Single functions, each for a path that is not the workspace's content.
ALLOWED = {
    ("core/ollie/workspace/ignored.py", "_global_excludes"): "the user's global git excludes (not the workspace)",
    ("core/ollie/workspace/ignored.py", "ignored.prepare"): "the listing's excludes file and empty work tree, in the "
                                                           "shadow repository (ollie's state dir)",
    ("core/ollie/workspace/objects.py", "read"): "the shadow repository's loose objects, in ollie's state dir",
    ("core/ollie/workspace/refs.py", "write"): "the shadow repository's turn refs, in ollie's state dir",
    ("core/ollie/workspace/refs.py", "_clear_stale"): "a turn ref's stale lock, in ollie's state dir",
    ("ollie_lsp/codeactions.py", "_answer_file"): "a code action's answer, written under ollie's state dir",
    ("core/ollie/agent/opening.py", "_work_dir"): "the root itself",
    ("core/ollie/agent/recorder.py", "Recorder._stamp"): "ollie's data dir",
    ("core/ollie/agent/leftovers.py", "sweep_write_temporaries"): "the session log's mtime, in the sessions dir",
    ("core/ollie/agent/commandbox.py", "CommandBox.tmp_dir"): "its own mkdtemp",
    ("core/ollie/agent/prompt.py", "_config_file"): "the agent config's dir (the workspace goes through beneath)",
    ("core/ollie/agent/skills.py", "find_skills"): "the user's and bundled skills",
    ("core/ollie/agent/rewind.py", "_write_backup"): "the sessions dir, in ollie's data dir (or the store's)",
    ("core/ollie/cli/terminal.py", "_saved"): "the sessions dir, in ollie's data dir (or the store's)",
    ("core/ollie/cli/editing.py", "remember"): "the prompt history's dir, in ollie's state dir (no step writes there)",
    ("core/ollie/workspace/checkpoints.py", "Checkpoints._ensure"): "the root itself",
    ("core/ollie/workspace/checkpoints.py", "Checkpoints._index_key"): "the shadow repository's index",
    ("core/ollie/workspace/checkpoints.py", "Checkpoints.tree_with"): "a temp index in the shadow repository",
    ("core/ollie/workspace/treewatch.py", "_max_dirs"): "the kernel's inotify watch limit in /proc/sys",
    ("core/ollie/sandbox/fdio.py", "parent_pid"): "/proc: a process's parent (the supervisor's, the daemon's)",
    ("core/ollie/tools/execute/context.py", "write_pinned"): "an approved program in a 0700 dir no policy grants",
    ("core/ollie/tools/execute/context.py", "CallContext.code_invocation.build"): "the scratch dir (read-only to tools)",
    ("core/ollie/tools/execute/languages.py", "resolve_interpreter"): "a sandboxed step's interpreter (it runs sandboxed)",
    ("core/ollie/tools/execute/protect.py", "_readable_split"): "policy roots listed to carve secrets out",
    ("core/ollie/tools/execute/protect.py", "hidden_home_entries.walk"): "$HOME's entries, names only, to hide dotfiles",
    ("core/ollie/tools/execute/sandboxnotes.py", "disk_notes"): "free space of the step's cwd and TMPDIR (stat only)",
    ("core/ollie/tools/execute/childenv.py", "memory_dir"): "the root itself, stat only (the notes dir's cache key)",
    ("core/ollie/tools/execute/runner.py", "Runner._with_session_dirs"): "the session's own dirs",
    ("core/ollie/mcp/attach.py", "attach_configured"): "the user's mcp.json in ollie's config dir",
    ("core/ollie/mcp/workspace.py", "remember"): "the allowed workspace servers, in ollie's state dir",
    ("core/ollie/mcp/stdio.py", "_installation"): "the server's program on PATH, stat only (it runs sandboxed)",
    ("core/ollie/mcp/stdio.py", "missing"): "the server's program on its PATH and the user's, stat and access only (named "
                                            "in its error)",
    ("core/ollie/mcp/stdio.py", "server_policy"): "paths the user's server config names, existence only (granted read)",
    ("core/ollie/mcp/stdio.py", "spawn_server.prepare"): "the server's own dir in ollie's state dir",
    ("core/ollie/tools/execute/runner.py", "Runner.prepare_dirs"): "the memory and plan dirs",
    ("core/ollie/tools/execute/runner.py", "make_notes_dir"): "this project's notes dir, in ollie's data dir",
}


def _dotted(node: ast.expr) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _what(call: ast.Call) -> str | None:
    fn = call.func
    name = _dotted(fn)
    head, _, last = name.rpartition(".")
    if isinstance(fn, ast.Name) and fn.id == "open":
        return "open"
    if head == "os.path" and last in _OS_PATH or head == "os" and last in _OS:
        return name
    if name.split(".")[0] in _MODULES and "." in name:
        return name
    if isinstance(fn, ast.Attribute) and fn.attr in _METHODS and not name.startswith(("os.", "beneath.")):
        return "." + fn.attr
    return None


@functools.cache
def _file_calls() -> list[tuple[str, str, str, int]]:
    """(file, function, call, line) of every file-system call in the scanned code."""
    found: list[tuple[str, str, str, int]] = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            if rel.startswith(NOT_SCANNED):
                continue
            scope: list[str] = []

            def visit(node: ast.AST, rel: str = rel, scope: list[str] = scope) -> None:
                named = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                if named:
                    scope.append(node.name)  # type: ignore[union-attr]
                if isinstance(node, ast.Call) and (what := _what(node)):
                    found.append((rel, ".".join(scope) or "<module>", what, node.lineno))
                for child in ast.iter_child_nodes(node):
                    visit(child)
                if named:
                    scope.pop()

            visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def test_the_daemon_touches_files_only_through_the_chokepoint() -> None:
    stray = [f"{rel}:{line} {func}: {what}" for rel, func, what, line in _file_calls()
             if rel not in MODULES_ALLOWED and (rel, func) not in ALLOWED]
    assert not stray, ("file-system calls outside ollie.beneath (use it, or allow-list a non-workspace path "
                       "with its reason):\n" + "\n".join(stray))


def test_the_allow_list_holds_nothing_stale() -> None:
    calls = _file_calls()
    used = {(rel, func) for rel, func, _, _ in calls}
    files = {rel for rel, _, _, _ in calls}
    assert not [key for key in ALLOWED if key not in used]
    assert not [rel for rel in MODULES_ALLOWED if rel not in files]


def test_the_scan_sees_a_direct_read() -> None:
    tree = ast.parse("def f(p):\n    return p.read_text()\n")
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call))
    assert _what(call) == ".read_text"
