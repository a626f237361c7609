"""The dirs of one sandbox or execute-server test: a project, a private TMPDIR and a dir no policy grants."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class Dirs:
    """`work` is the session's cwd ({CWD}), `scratch` its TMPDIR ({TMPDIR}), `outside` granted by nothing."""

    root: Path
    work: Path
    scratch: Path
    outside: Path


def make_dirs(root: Path, *names: str, secret_file: str) -> dict[str, Path]:
    """`root`'s work, scratch and outside dirs (and `names`), made; `outside/<secret_file>` holds the text `secret`."""
    dirs = {name: root / name for name in ("work", "scratch", "outside", *names)}
    for directory in dirs.values():
        directory.mkdir()
    (dirs["outside"] / secret_file).write_text("secret\n")
    return dirs
