"""The Python installs a tool's PATH runs: activated venvs and conda envs, the interpreters `python3` resolves to
(pyenv, asdf, conda, nix, uv, a copied venv), and the installs they are based on."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ollie import beneath

_CFG_CAP = 64 * 1024
# What a step runs as "Python": each is resolved on every PATH entry (symlinks followed) to the install behind it.
INTERPRETERS = ("python3", "python")
# Version managers whose `<root>/shims` scripts exec an install kept under `<root>/<kind>`.
_MANAGED = ("versions", "installs")
# Nix's Python loads its libraries from other store paths: the store is immutable code, granted whole.
NIX_STORE = Path("/nix/store")


def _is_install(prefix: Path) -> bool:
    """Whether `prefix` really is a Python install (its stdlib is there), not a dir a file merely names."""
    return any(prefix.glob("lib/python3*/os.py"))


def venv_base(cfg: Path) -> Path | None:
    """The install prefix a venv's pyvenv.cfg names (`home` is its bin dir), or None."""
    try:
        # A project's .venv is the workspace's: never a FIFO, device, link or giant file read in its place.
        lines = beneath.read_text_sync(cfg.parent, cfg.name, _CFG_CAP, errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        key, sep, value = line.partition("=")
        if sep and key.strip() == "home" and value.strip():
            # The file may come from a hostile workspace (an activated .venv of the project): grant only what is
            # really a Python install, never a dir it merely names. Checked where it leads now, and that path is
            # what is granted: a link on the way that a step swaps after the check must not take the grant along.
            prefix = Path(os.path.realpath(Path(value.strip()).parent))
            return prefix if _is_install(prefix) else None
    return None


def _interpreter_roots(entry: Path) -> list[Path | None]:
    """The installs `python3`/`python` on `entry` resolve to (a venv's base too), and a version manager's root."""
    roots: list[Path | None] = []
    for name in INTERPRETERS:
        program = entry / name
        if not os.path.lexists(program):
            continue
        real = Path(os.path.realpath(program))
        prefix = real.parent.parent  # <prefix>/bin/python3.X
        if real.is_relative_to(NIX_STORE):
            roots.append(NIX_STORE)
            continue
        if real.parent.name != "bin":
            continue
        if (prefix / "pyvenv.cfg").is_file():  # a venv made with --copies, or a symlink into one
            roots += [prefix, venv_base(prefix / "pyvenv.cfg")]
        elif _is_install(prefix):
            roots.append(prefix)
    if entry.name == "shims" and any((entry.parent / kind).is_dir() for kind in _MANAGED):
        roots.append(entry.parent)  # pyenv, asdf, mise: the shim runs the manager, which runs an install
    return roots


def _roots_of(entry: Path) -> list[Path | None]:
    root = entry.parent
    cfg = root / "pyvenv.cfg"
    roots: list[Path | None] = []
    if cfg.is_file():
        roots = [root, venv_base(cfg)]
    elif (root / "conda-meta").is_dir():
        roots = [root]
    return roots + _interpreter_roots(entry)


def _grantable(path: Path, home: Path, writable: Sequence[Path]) -> bool:
    # Never a root that would open $HOME (its keys and dotfiles) or the whole disk, and never one tool code can
    # write: read+execute there would let a step run (outside its rules' intent) what it wrote itself.
    if path == Path("/") or not path.is_dir() or home.is_relative_to(path):
        return False
    return not any(path.is_relative_to(root) or root.is_relative_to(path) for root in writable)


def python_envs(path_value: str, home: Path, writable: Sequence[Path] = ()) -> list[Path]:
    """The Python installs behind PATH (venvs: pyvenv.cfg; conda: conda-meta; `python3` followed to its install).

    Python reads its install's stdlib at start, so an activated venv, pyenv, conda, asdf or nix Python needs
    read+execute in tool steps. Anything holding $HOME, writable by tool code, or unreadable is skipped.
    """
    found: list[Path] = []
    real_home = home.resolve()
    real_writable = [Path(os.path.realpath(root)) for root in writable]
    for entry in path_value.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        try:
            roots = _roots_of(Path(entry))
        except OSError:
            continue  # EACCES on a dir of someone else's: nothing of it could run anyway
        for candidate in roots:
            if candidate is None:
                continue
            resolved = Path(os.path.realpath(candidate))
            if resolved not in found and _grantable(resolved, real_home, real_writable):
                found.append(resolved)
    return found
