"""The pre-imported Python worker: a bundled Python tool script run in the confined tool process, without exec.

Stdlib only: the fork server loads this file by path (`-I -S`) and imports what the bundled scripts import
(`preload`) once; a step whose request carries `python` is confined as any other, then runs the script
here (`run_script`) instead of exec'ing `python3 -I script args`, saving ~40 ms of a ~45 ms call.
`run_script` sets up again what the interpreter would (argv, environ, fresh std streams, `__main__`,
signals, no fds above 2, exit status). Safe because the fork server never reads a request (its memory
holds nothing of other steps) and only ollie's own stdlib-only scripts take this path.
"""

from __future__ import annotations

import gc
import importlib
import io
import locale
import os
import sys
import types
from contextlib import suppress
from importlib.machinery import ModuleSpec
from typing import NoReturn

# The signal module's C half (no typeshed stub): its calls without `signal`'s enum wrappers (see `_reset_signals`).
_signal = importlib.import_module("_signal")
# What the bundled tool scripts and tools/_toolkit.py import (see tools/): imported once, shared by every fork.
PRELOAD = ("argparse", "fnmatch", "json", "pathlib", "re", "shutil", "subprocess", "tempfile")


# The bundled tools dir's files, compiled once by `preload`: path -> (stat key, code).
_compiled: dict[str, tuple[tuple[int, int, int], types.CodeType]] = {}
_tools_dir = ""


def _key(st: os.stat_result) -> tuple[int, int, int]:
    return st.st_ino, st.st_size, st.st_mtime_ns


def _compile_file(path: str) -> None:
    # Compiled again in the tool process, which reports the error as the interpreter would
    with suppress(OSError, SyntaxError, ValueError):
        with open(path, "rb") as handle:
            key, source = _key(os.fstat(handle.fileno())), handle.read()
        _compiled[path] = (key, compile(source, path, "exec", dont_inherit=True))


def preload(tools_dir: str = "") -> None:
    """Import the tool scripts' modules into this (fork server) process and compile the bundled tools dir.

    Nothing of the scripts runs here, outside the sandbox. Then all is frozen out of the cyclic GC, so the
    pages stay shared after a fork.
    """
    global _tools_dir
    for name in PRELOAD:
        importlib.import_module(name)
    argparse = sys.modules["argparse"]
    warm = argparse.ArgumentParser(prog="warm", description="warm")  # fills re's cache with argparse's patterns
    warm.add_argument("path")
    warm.add_argument("--limit", type=int, default=1)
    warm.parse_args(["x", "--limit=2"])
    warm.format_help()
    if tools_dir and os.path.isdir(tools_dir):
        _tools_dir = os.path.realpath(tools_dir)
        for entry in os.scandir(_tools_dir):
            if entry.is_file() and not entry.name.startswith(".") and (entry.name.endswith(".py") or "." not in entry.name):
                _compile_file(entry.path)
    gc.freeze()


def _cached(path: str, st: os.stat_result) -> types.CodeType | None:
    hit = _compiled.get(path)
    return hit[1] if hit is not None and hit[0] == _key(st) else None


def compile_script(path: str) -> types.CodeType | None:
    """The script's code, read and compiled before the step counts as started (an OSError fails it as exec would).

    From the cache while the file is unchanged (opened all the same: the sandbox must let it be read).
    None when it does not compile: the real interpreter then runs it, to report that as it always does.
    """
    with open(path, "rb") as handle:
        code = _cached(path, os.fstat(handle.fileno()))
        if code is not None:
            return code
        source = handle.read()
    try:
        return compile(source, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None


class _Helpers:
    """Serves the tools dir's helper modules (`_toolkit`) from the compiled cache while their files are unchanged."""

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        """A spec for `name` when it is a cached, unchanged helper of the tools dir; None otherwise."""
        file = os.path.join(_tools_dir, f"{name}.py")
        if "." in name or file not in _compiled:
            return None
        try:
            code = _cached(file, os.stat(file))
        except OSError:
            return None
        return None if code is None else ModuleSpec(name, _Loader(file, code), origin=file)  # type: ignore[arg-type]


class _Loader:
    """Executes a cached helper's code as its module (in the confined tool process)."""

    def __init__(self, file: str, code: types.CodeType) -> None:
        self.file, self.code = file, code

    def create_module(self, spec: ModuleSpec) -> None:
        """The default module."""

    def exec_module(self, module: types.ModuleType) -> None:
        """Run the helper's code in `module`."""
        module.__file__ = self.file
        exec(self.code, module.__dict__)  # noqa: S102 - the import system's job


def stdio_errors(env: dict[str, str]) -> str | None:
    """The error handler `python3 -I` gives stdin and stdout under `env`'s locale; None when only exec can tell.

    None also where the interpreter would coerce the locale (it then adds LC_CTYPE to the environment).
    Sets this process's environment and LC_CTYPE locale as the interpreter's start would.
    """
    os.environ.clear()
    os.environ.update(env)
    try:
        current = locale.setlocale(locale.LC_CTYPE, "")
    except locale.Error:
        return None  # not installed: coerced to C.UTF-8
    if current in ("C", "POSIX"):
        return "surrogateescape" if env.get("LC_ALL") else None  # UTF-8 mode; without LC_ALL, coerced
    if current in ("C.UTF-8", "C.utf8", "UTF-8"):
        return "surrogateescape"
    return "strict" if locale.nl_langinfo(locale.CODESET).lower().replace("-", "") == "utf8" else None


def _reset_signals() -> None:
    """The dispositions a freshly started interpreter has: handlers gone, SIGINT raises, SIGPIPE/SIGXFSZ ignored.

    Through `_signal`, the C module: `signal`'s wrappers turn each of the ~64 signals and handlers into enum
    members, ~0.35 ms of the step here for the same calls.
    """
    _signal.pthread_sigmask(_signal.SIG_SETMASK, ())
    for sig in _signal.valid_signals():
        try:
            if callable(_signal.getsignal(sig)):
                _signal.signal(sig, _signal.SIG_DFL)
        except (OSError, ValueError):
            continue
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    for sig in (_signal.SIGPIPE, _signal.SIGXFSZ):
        _signal.signal(sig, _signal.SIG_IGN)


def _stdio(errors: str) -> None:
    """Fresh text streams on fds 0-2, as `python3 -I` makes them in a UTF-8 locale (see `stdio_errors`)."""
    def stream(fd: int, mode: str, errors: str) -> io.TextIOWrapper:
        buffered = open(fd, mode + "b", closefd=False)  # noqa: SIM115 - fds 0-2 stay open for the whole process
        return io.TextIOWrapper(buffered, encoding="utf-8", errors=errors, newline="\n",
                                line_buffering=os.isatty(fd), write_through=False)

    sys.stdin = sys.__stdin__ = stream(0, "r", errors)
    sys.stdout = sys.__stdout__ = stream(1, "w", errors)
    sys.stderr = sys.__stderr__ = stream(2, "w", "backslashreplace")


def _exit_code(exc: SystemExit) -> int:
    """What the interpreter exits with for `exc` (a non-int code is printed to stderr: status 1)."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _flush() -> int:
    """Flush stdout and stderr at exit; 120 when stdout could not be flushed (as the interpreter does)."""
    status = 0
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            status = 120 if stream is sys.stdout else status
    return status


def run_script(code: types.CodeType, path: str, args: list[str], errors: str, kept: int | None = None) -> NoReturn:
    """Run compiled script `code` as `python3 -I path args` would, in this confined process; exit with its status.

    The environment and locale are set already (`stdio_errors`, whose answer `errors` is). `kept`: the one fd
    above 2 exec would have kept (the policy paths' memfd).
    """
    # Exec would have closed the rest (close-on-exec): the step's socket, the error pipe.
    if kept is None:
        os.closerange(3, 1 << 20)
    else:
        os.closerange(3, kept)
        os.closerange(kept + 1, 1 << 20)
    _reset_signals()
    sys.argv = [path, *args]
    sys.orig_argv = [sys.executable, "-I", path, *args]
    _stdio(errors)
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__builtins__ = __builtins__  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    if _tools_dir and os.path.dirname(os.path.realpath(path)) == _tools_dir:
        sys.meta_path.insert(0, _Helpers)  # the script puts its own dir first on sys.path: these are its helpers
    status = 0
    try:
        exec(code, main.__dict__)  # noqa: S102 - this is the interpreter's job here
    except SystemExit as exc:
        status = _exit_code(exc)
    except BaseException:  # noqa: BLE001 - reported like the interpreter reports it
        sys.excepthook(*sys.exc_info())  # type: ignore[arg-type]  # inside `except`: never None
        status = 1
    try:
        import atexit
        import threading

        threading._shutdown()  # type: ignore[attr-defined]  # non-daemon threads finish, as at interpreter exit
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001
        status = status or 1
    status = _flush() or status
    os._exit(status)
