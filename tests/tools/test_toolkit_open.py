"""The tool scripts' one way to open a workspace file (tools/_toolkit.py `open_regular`): a regular file, or a clear
error at once; never a wait on a FIFO, never a device read. The in-place write (a directory the user may not write)
opens through it too, and truncates only once the open file is known to be a regular one."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from _toolkit import ToolError, open_regular  # noqa: E402


@pytest.mark.parametrize("flags", [os.O_RDONLY, os.O_WRONLY], ids=["read", "write"])
def test_a_fifo_is_refused_at_once_whoever_opens_it(tmp_path: Path, flags: int) -> None:
    # A FIFO swapped in for the file: `open(path, "w")` waited for a reader for good.
    os.mkfifo(tmp_path / "pipe.py")
    with pytest.raises(ToolError, match=r"pipe.py: not a regular file \(a FIFO"):
        open_regular(tmp_path / "pipe.py", flags, "pipe.py")


def test_a_device_and_a_directory_are_refused_and_a_regular_file_is_opened_untouched(tmp_path: Path) -> None:
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    (tmp_path / "d").mkdir()
    with pytest.raises(ToolError, match="zero.py: not a regular file .*; not written"):
        open_regular(tmp_path / "zero.py", os.O_WRONLY, "zero.py")
    with pytest.raises(ToolError, match="d: is a directory"):
        open_regular(tmp_path / "d", os.O_WRONLY, "d")
    (tmp_path / "a.py").write_text("x = 1\n")
    os.close(open_regular(tmp_path / "a.py", os.O_WRONLY, "a.py"))
    assert (tmp_path / "a.py").read_text() == "x = 1\n", "opening is not truncating: the caller truncates once it knows"
