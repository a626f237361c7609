"""The TUI tests' look at the screen (Tmux.screen): a frame Neovim is still writing is never taken."""

from __future__ import annotations

import os
import re
from pathlib import Path

from .test_nvim import _nvim
from .test_nvim_tui import NO_PYTHON_PROVIDER, Tmux

# A screen of 38 lines, each the same count, rewritten and redrawn every 5 ms: a whole frame shows one count.
REDRAWS = """local n = 0
vim.uv.new_timer():start(0, 5, vim.schedule_wrap(function()
  n = n + 1
  local line = string.rep(("%06d "):format(n), 22)
  vim.api.nvim_buf_set_lines(0, 0, -1, false, vim.fn["repeat"]({ line }, 38))
  vim.cmd("redraw")
end))
"""


def test_a_look_never_takes_a_frame_half_drawn(tmp_path: Path):
    """Bug: a look landed while the terminal had read part of Neovim's frame (a question's answers drawn, its diff
    above them not yet), and a test's assertion on the rest of that screen failed on a loaded machine."""
    init = tmp_path / "init.lua"
    init.write_text(REDRAWS)
    env = {**os.environ, "TERM": "xterm-256color"}
    with Tmux(f"ollie-frames-{os.getpid()}", tmp_path, env, [_nvim(), *NO_PYTHON_PROVIDER, "--clean", "-u", str(init)],
              size=(160, 40)) as tmux:
        tmux.wait(lambda s: re.search(r"\b\d{6}\b", s) is not None, "the redraws")
        half = [screen for screen in (tmux.screen() for _ in range(300)) if len(set(re.findall(r"\b\d{6}\b", screen))) != 1]
        assert not half, f"{len(half)} of 300 looks were half drawn, as:\n{half[0]}"
