"""Tool steps started from an activated venv: its python runs sandboxed; a hostile pyvenv.cfg grants nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ollie.tools.execute.pythonenvs import python_envs, venv_base
from ollie.tools.execute.server import ExecuteServer

SESSION = "1700000000000000000-venv01"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv outside any workspace, as `python -m venv ~/envs/x` makes one."""
    root = tmp_path_factory.mktemp("envs") / "x"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=60)
    return root


async def test_an_activated_venv_runs_tool_steps_and_python_tools(venv, tmp_path, monkeypatch):
    work, scratch = tmp_path / "work", tmp_path / "scratch"
    work.mkdir()
    scratch.mkdir()
    (work / "notes.txt").write_text("first line\n")
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setenv("PATH", f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    server = ExecuteServer(cwd=work, session_id=SESSION, lock_dir=scratch / "locks")
    ran = await server.call("execute_code", {"steps": [{"code": "python3 -c 'import sys; print(sys.prefix)'"}]})
    assert str(venv) in ran.text and "PermissionError" not in ran.text, ran.text
    # A bundled Python tool, run by the venv's python3 (its `env -S python3` shebang), works too.
    read = await server.call("call_tool", {"calls": [{"tool": "file_read", "args": ["notes.txt"]}]})
    assert "first line" in read.text, read.text
    # Read and execute only: the venv is not writable by tool code.
    wrote = await server.call("execute_code", {"steps": [{"code": f"touch {venv}/planted"}]})
    assert not (venv / "planted").exists(), wrote.text


def test_a_hostile_pyvenv_cfg_grants_only_real_python_installs(tmp_path):
    home, secret = tmp_path / "home", tmp_path / "secret"
    (home / ".ssh").mkdir(parents=True)
    (secret / "bin").mkdir(parents=True)
    (secret / "key").write_text("k\n")
    project = tmp_path / "project" / ".venv"
    (project / "bin").mkdir(parents=True)
    # A repository's committed .venv naming a secret dir (and $HOME) as its base install.
    (project / "pyvenv.cfg").write_text(f"home = {secret / 'bin'}\n")
    assert python_envs(str(project / "bin"), home) == [project.resolve()]
    (project / "pyvenv.cfg").write_text(f"home = {home / 'bin'}\n")
    assert python_envs(str(project / "bin"), home) == [project.resolve()]
    # A venv whose root would be $HOME itself (PATH=~/bin, ~/pyvenv.cfg) is never granted.
    (home / "bin").mkdir()
    (home / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert home.resolve() not in python_envs(str(home / "bin"), home)
    # A real base install is granted with the venv.
    base = Path(sys.base_prefix).resolve()
    (project / "pyvenv.cfg").write_text(f"home = {base / 'bin'}\n")
    assert python_envs(str(project / "bin"), home) == [project.resolve(), base]


async def test_a_python_kept_anywhere_runs_and_one_the_sandbox_blocks_is_named(tmp_path, monkeypatch):
    """`python3` on PATH resolving to an install outside every grant (a copied venv under a non-default HOME)."""
    home, work, scratch = tmp_path / "home", tmp_path / "work", tmp_path / "scratch"
    for directory in (home / "bin", home / "odd", work, scratch):
        directory.mkdir(parents=True)
    elsewhere = home / ".local" / "pythons" / "main"  # neither {HOME}/.pyenv nor on PATH itself
    subprocess.run([sys.executable, "-m", "venv", "--copies", "--without-pip", str(elsewhere)], check=True, timeout=60)
    (home / "bin" / "python3").symlink_to(elsewhere / "bin" / "python3")
    # A lone interpreter copy that is no install at all: nothing grants it, and the result must say so.
    shutil.copy2(elsewhere / "bin" / "python3", home / "odd" / "python3")
    (home / "bin" / "oddpython").symlink_to(home / "odd" / "python3")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setenv("PATH", f"{home / 'bin'}{os.pathsep}/usr/bin:/bin")
    server = ExecuteServer(cwd=work, session_id=SESSION, lock_dir=scratch / "locks")
    ran = await server.call("execute_code", {"steps": [{"code": "print(6 * 7)", "language": "python"}]})
    assert "exit 0" in ran.text and "42" in ran.text, ran.text
    shell = await server.call("execute_code", {"steps": [{"code": "python3 -c 'print(7 * 6)'"}]})
    assert "exit 0" in shell.text and "42" in shell.text, shell.text
    # Read and execute only.
    await server.call("execute_code", {"steps": [{"code": f"touch {elsewhere}/planted"}]})
    assert not (elsewhere / "planted").exists()
    blocked = await server.call("execute_code", {"steps": [{"code": "oddpython -c 'print(1)'"}]})
    assert "exit 126" in blocked.text, blocked.text
    assert f"blocked by ollie's sandbox: {home / 'bin' / 'oddpython'}" in blocked.text, blocked.text
    assert str(home / "odd" / "python3") in blocked.text and "filesystem.rox" in blocked.text, blocked.text
    # The same interpreter as a python step's own program: the start fails, and says why.
    (home / "odd-bin").mkdir()
    (home / "odd-bin" / "python3").symlink_to(home / "odd" / "python3")
    monkeypatch.setenv("PATH", f"{home / 'odd-bin'}{os.pathsep}/usr/bin:/bin")
    odd = ExecuteServer(cwd=work, session_id=SESSION, lock_dir=scratch / "locks2")
    started = await odd.call("execute_code", {"steps": [{"code": "print(1)", "language": "python"}]})
    assert f"could not start {home / 'odd-bin' / 'python3'}: blocked by ollie's sandbox" in started.text, started.text


def test_an_install_the_step_may_write_is_never_granted(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    venv = work / "tools" / "py"
    subprocess.run([sys.executable, "-m", "venv", "--copies", "--without-pip", str(venv)], check=True, timeout=60)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python3").symlink_to(venv / "bin" / "python3")
    granted = python_envs(str(tmp_path / "bin"), home, writable=[work])
    assert venv.resolve() not in granted and Path(sys.base_prefix).resolve() in granted, granted


def test_a_fifo_for_pyvenv_cfg_never_blocks(tmp_path):
    # A project's committed .venv, activated: its pyvenv.cfg swapped for a FIFO nobody writes.
    venv = tmp_path / "project" / ".venv"
    (venv / "bin").mkdir(parents=True)
    os.mkfifo(venv / "pyvenv.cfg")
    assert venv_base(venv / "pyvenv.cfg") is None  # answers at once


async def test_a_link_in_pyvenv_cfgs_home_swapped_after_its_check_never_takes_the_grant_along(tmp_path, monkeypatch):
    """An activated project `.venv` whose pyvenv.cfg names `<ws>/py/bin` as its base, `py` a link to a real install:
    its base was checked (a Python install) through the link, then granted where the link led when the policy was
    built; another session's step swapping `py` for a link to a private dir in between had that dir granted to
    every step. The swap lands right after the check, through an override of it."""
    from ollie.tools.execute import pythonenvs

    home, work, scratch, private = (tmp_path / d for d in ("home", "work", "scratch", "private"))
    for directory in (home, work / ".venv" / "bin", scratch, private):
        directory.mkdir(parents=True)
    (private / "notes.txt").write_text("hunter2\n")
    base = Path(sys.base_prefix).resolve()
    (work / "py").symlink_to(base)
    (work / ".venv" / "pyvenv.cfg").write_text(f"home = {work / 'py' / 'bin'}\n")
    checked = pythonenvs._is_install
    swapped = []

    def check_then_swap(prefix: Path) -> bool:
        answer = checked(prefix)
        if not swapped:
            (work / "py2").symlink_to(private)
            (work / "py2").replace(work / "py")
            swapped.append(prefix)
        return answer

    monkeypatch.setattr(pythonenvs, "_is_install", check_then_swap)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setenv("PATH", f"{work / '.venv' / 'bin'}{os.pathsep}/usr/bin:/bin")
    server = ExecuteServer(cwd=work, session_id=SESSION, lock_dir=scratch / "locks")
    read = await server.call("execute_code", {"steps": [{"code": f"cat {private / 'notes.txt'}"}]})
    assert swapped, "the swap never landed"
    assert "hunter2" not in read.text and "blocked by ollie's sandbox" in read.text, read.text
    # The install checked is what is granted: it still runs.
    ran = await server.call("execute_code", {"steps": [{"code": f"{base / 'bin' / 'python3'} -c 'print(6 * 7)'"}]})
    assert "42" in ran.text, ran.text
