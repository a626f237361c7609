"""Running test code as another OS user (made on first use), with this checkout's ollie: a second user of the
machine, or a normal user where root's powers (reading any file) would hide the behaviour under test."""

from __future__ import annotations

import functools
import os
import pwd
import shlex
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Mapping
from pathlib import Path

import pytest

# This checkout's site-packages (its editable ollie and every dependency), added to the other user's interpreter.
SITE = sysconfig.get_paths()["purelib"]
PRELUDE = f"import site; site.addsitedir({SITE!r})\n"
DAEMON = PRELUDE + "import runpy; runpy.run_module('ollie_lsp', run_name='__main__')\n"
# Isolated, and without the system's site-packages (-S): the packages a Debian python3-* install puts there (pipx's
# dependencies, as README has it installed, bring an older attrs) would come before this checkout's.
FLAGS = ("-I", "-S")


def _can_run(python: str, user: pwd.struct_passwd) -> bool:
    # It must also be able to start itself again (the fork server is `sys.executable`).
    check = "import ollie, pyseccomp, subprocess, sys; subprocess.run([sys.executable, '-c', ''], check=True)"
    probe = [*_as(user), python, *FLAGS, "-c", PRELUDE + check]
    return subprocess.run(probe, capture_output=True, cwd="/", timeout=60).returncode == 0


def _as(user: pwd.struct_passwd) -> list[str]:
    return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]


@functools.cache
def os_user(name: str) -> pwd.struct_passwd:
    """The test user `name` (created without a home when missing); skips the test where that is impossible."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to act as another OS user")
    try:
        return pwd.getpwnam(name)
    except KeyError:
        pass
    made = subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                          capture_output=True, text=True, timeout=60)
    if made.returncode != 0:
        pytest.skip(f"cannot create the test user {name}: {made.stderr.strip()}")
    return pwd.getpwnam(name)


@functools.cache
def python_for(name: str) -> str:
    """An interpreter `name` may run that loads this checkout (ours may live in root's private home)."""
    user = os_user(name)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for python in dict.fromkeys([f"/usr/bin/{version}", sys.executable]):
        if python and _can_run(python, user):
            return python
    pytest.skip(f"no {version} that {name} may run with this checkout's packages")


def run_as(name: str, code: str, *, env: Mapping[str, str], cwd: Path, timeout: float = 120) -> str:
    """Run Python `code` as user `name` with exactly `env` in `cwd`; its stdout (an assertion error names stderr)."""
    user = os_user(name)
    done = subprocess.run([*_as(user), python_for(name), *FLAGS, "-c", PRELUDE + code], capture_output=True,
                          text=True, env=dict(env), cwd=cwd, timeout=timeout)
    assert done.returncode == 0, f"as {name}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def ollie_lsp_for(name: str, home: Path) -> Path:
    """`home`/bin/ollie-lsp: this checkout's daemon, as user `name` may run it (made on first use, hers)."""
    user = os_user(name)
    launcher = home / "bin" / "ollie-lsp"
    if not launcher.exists():
        launcher.parent.mkdir(exist_ok=True)
        launcher.write_text(f"#!/bin/sh\nexec {python_for(name)} {' '.join(FLAGS)} -c {shlex.quote(DAEMON)} \"$@\"\n")
        launcher.chmod(0o755)
        for path in (launcher.parent, launcher):
            os.chown(path, user.pw_uid, user.pw_gid)
    return launcher
