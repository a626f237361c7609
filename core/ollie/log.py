"""Structured logging to a file, never to stdout (stdout is the daemon's JSON-RPC channel)."""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
import sys
import time
from io import TextIOWrapper
from pathlib import Path

from ollie import paths

_FIELDS_SKIPPED = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg, and any `extra=` fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _FIELDS_SKIPPED:
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def default_log_file() -> Path:
    """The default log file under the state dir."""
    return paths.state_dir() / "ollie.log"


def setup_logging(file: Path | str | None = None) -> Path:
    """Send the `ollie` loggers to a JSON-lines file at `$OLLIE_LOG_LEVEL` (default INFO); drop any handler that
    writes to stdout."""
    level = os.environ.get("OLLIE_LOG_LEVEL", "INFO").upper()
    path = Path(file) if file else default_log_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "stream", None) is sys.stdout:
            root.removeHandler(handler)
    handler = logging.FileHandler(path, encoding="utf-8", delay=True)
    handler.stream = _opened(path)  # this open, not one by name later: a FIFO swapped in would hold every log line
    handler.setFormatter(JsonFormatter())
    root.addHandler(handler)
    root.setLevel(level if level in logging.getLevelNamesMapping() else "INFO")
    return path


def _opened(path: Path) -> TextIOWrapper:
    """The log file open to append, its own user's only (it names her files and says what failed); OSError for a FIFO
    or a socket, whose open (or first write) would hold the start for ever."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
        if stat.S_ISREG(mode := os.fstat(fd).st_mode) or stat.S_ISCHR(mode):  # `--log-file /dev/null` too
            os.set_blocking(fd, True)  # a terminal's writes wait rather than fail
            return os.fdopen(fd, "a", encoding="utf-8")
        os.close(fd)
    except OSError as exc:
        if exc.errno != errno.ENXIO:  # a FIFO nobody reads, a socket
            raise
    raise OSError(f"{path} is a FIFO or a socket, not a file")


def start_logging(file: Path | str | None, prog: str) -> Path:
    """`setup_logging`, or exit 2 saying what to set where the log cannot be written (a HOME not there)."""
    try:
        return setup_logging(file)
    except OSError as exc:  # a service account's or a container's HOME: a traceback would say nothing to do
        print(log_problem(file, prog, exc), file=sys.stderr)
        raise SystemExit(2) from None


def log_problem(file: Path | str | None, prog: str, exc: OSError) -> str:
    """Why the log cannot be written, and what to set: `<prog>: cannot write its log under DIR: ERROR; FIX`."""
    where, fix = ((f"to {file}", "give --log-file a path you can write") if file else
                  (f"under {paths.state_dir()}", "set HOME, or OLLIE_STATE_DIR and OLLIE_DATA_DIR, to directories "
                   "you can write"))
    return f"{prog}: cannot write its log {where}: {exc}; {fix}"
