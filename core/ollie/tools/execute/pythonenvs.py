"""The Python environments a tool's PATH runs: an activated venv or conda env, and the install it is based on."""

from __future__ import annotations

import os
from pathlib import Path

from ollie import beneath

_CFG_CAP = 64 * 1024


def _venv_base(cfg: Path) -> Path | None:
    """The install prefix a venv's pyvenv.cfg names (`home` is its bin dir), or None."""
    try:
        # A project's .venv is the workspace's: never a FIFO, device, link or giant file read in its place.
        lines = beneath.read_text_sync(cfg.parent, cfg.name, _CFG_CAP, errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        key, sep, value = line.partition("=")
        if sep and key.strip() == "home" and value.strip():
            prefix = Path(value.strip()).parent
            # The file may come from a hostile workspace (an activated .venv of the project):
            # grant only what is really a Python install, never a dir it merely names.
            return prefix if any(prefix.glob("lib/python3*/os.py")) else None
    return None


def _grantable(path: Path, home: Path) -> bool:
    # Never a root that would open $HOME (its keys and dotfiles) or the whole disk.
    return path != Path("/") and path.is_dir() and not home.is_relative_to(path)


def python_envs(path_value: str, home: Path) -> list[Path]:
    """The env roots behind PATH's `<env>/bin` entries (venv: pyvenv.cfg, conda: conda-meta), and venvs' base installs.

    A user who starts the editor from an activated venv expects `python3` and `pytest` to work in
    tool steps: Python reads `<venv>/pyvenv.cfg` and the base install's stdlib at start, so both
    need read+execute. They hold code, not secrets; anything that would contain $HOME is skipped.
    """
    found: list[Path] = []
    for entry in path_value.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        root = Path(entry).parent
        cfg = root / "pyvenv.cfg"
        roots = []
        if cfg.is_file():
            roots = [root, _venv_base(cfg)]
        elif (root / "conda-meta").is_dir():
            roots = [root]
        for candidate in roots:
            if candidate is None:
                continue
            resolved = candidate.resolve()
            if _grantable(resolved, home.resolve()) and resolved not in found:
                found.append(resolved)
    return found
