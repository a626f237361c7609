"""A stdio JSON-RPC server's guard (the daemon and the ACP agent): private copies of fds 0/1 for the protocol, the
errors malformed input earns, and its quick end."""

from __future__ import annotations

import atexit
import os
import sys
from contextlib import suppress
from typing import BinaryIO, NoReturn

# JSON-RPC's answers to input that is no JSON (or a broken frame), and to JSON that is no request object.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def protect_stdio() -> tuple[BinaryIO, BinaryIO]:
    """Keep private copies of stdin/stdout for JSON-RPC; fd 0 becomes /dev/null, fd 1 stderr (a stray print is safe)."""
    sys.stdout.flush()
    rpc_out = os.dup(1)
    rpc_in = os.dup(0)
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout = sys.stderr
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    return os.fdopen(rpc_in, "rb"), os.fdopen(rpc_out, "wb")


def end_process(code: int) -> NoReturn:
    """End the process with `code` once the sessions are closed: exit handlers run, not the interpreter's teardown
    (a second of freeing types, after everything is saved)."""
    atexit._run_exitfuncs()  # the public way to run them is the teardown this skips
    for stream in (sys.stdout, sys.stderr):
        with suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
