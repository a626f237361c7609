"""Reading back a file tool's copy of an editor buffer: tool code can write its dir, so only a regular file counts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ollie.tools.execute.editordocs import _read_copy


def test_a_regular_copy_is_read(tmp_path: Path):
    copy = tmp_path / ".editor-x-a.py"
    copy.write_text("new text\n")
    assert _read_copy(copy) == "new text\n"


def test_a_copy_swapped_for_a_symlink_is_not_followed(tmp_path: Path):
    secret = tmp_path / "outside"
    secret.write_text("secret\n")
    copy = tmp_path / ".editor-x-a.py"
    copy.symlink_to(secret)
    with pytest.raises(OSError):
        _read_copy(copy)


def test_a_copy_swapped_for_a_fifo_neither_hangs_nor_reads(tmp_path: Path):
    copy = tmp_path / ".editor-x-a.py"
    os.mkfifo(copy)
    with pytest.raises(OSError, match="not a regular file"):
        _read_copy(copy)
