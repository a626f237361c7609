"""A stdio JSON-RPC server's guard (the daemon and the ACP agent): private copies of fds 0/1 for the protocol, and
its quick end."""

from __future__ import annotations

import atexit
import os
import sys
from contextlib import suppress
from typing import BinaryIO, NoReturn


def protect_stdio() -> tuple[BinaryIO, BinaryIO]:
    """Keep private copies of stdin/stdout for JSON-RPC; fd 0 becomes /dev/null, fd 1 stderr.

    Whatever else writes to stdout (a stray print, a child process that inherits
    fd 1) then lands on stderr instead of corrupting the stream, and nothing else
    can read the client's messages. The copies are not inherited by children.
    """
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
    """End the process with `code` once the server has closed its sessions: the exit handlers run (the fork server
    stops, the logs flush), the interpreter's teardown does not: a second or more of freeing the protocol's types
    on a loaded machine, after everything is saved, that an editor quitting (and each test) waited for."""
    atexit._run_exitfuncs()  # the public way to run them is the teardown this skips
    for stream in (sys.stdout, sys.stderr):
        with suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
