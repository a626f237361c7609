"""`:help ollie` in a real Neovim with the plugin installed as its README says: every command and the chat's keys have
an entry, and the shipped tags file is the one `:helptags` makes of the help now."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from .test_nvim import _nvim

PLUGIN = Path(__file__).resolve().parents[2] / "editors" / "nvim"

# Each command the plugin defines, then each topic: the help file and line `:help` lands on.
LOOKUP = """
vim.cmd.runtime("plugin/ollie.lua")
local topics = { "ollie", "ollie-quickstart", "ollie-keys", "ollie-options", "ollie-troubleshooting" }
for name in pairs(vim.api.nvim_get_commands({})) do
  if name:match("^Ollie") then table.insert(topics, ":" .. name) end
end
local found = {}
for _, topic in ipairs(topics) do
  local ok, err = pcall(vim.cmd.help, topic)
  found[topic] = ok and (vim.fs.basename(vim.api.nvim_buf_get_name(0)) .. ":" .. vim.api.nvim_get_current_line())
    or tostring(err)
  if ok then vim.cmd.helpclose() end
end
io.stdout:write(vim.json.encode(found))
"""


def _nvim_lua(code: str, rtp: Path, cwd: Path) -> str:
    script = cwd / "script.lua"
    script.write_text(code)
    return subprocess.run([_nvim(), "--headless", "-u", "NONE", "-i", "NONE", "--cmd", f"set rtp^={rtp}", "-l",
                           str(script)], cwd=cwd, capture_output=True, text=True, check=True, timeout=60).stdout


def test_help_has_an_entry_for_every_command_and_the_keys(tmp_path: Path):
    """A new user typed `:help ollie` and got E149 (no help at all); codecompanion and avante ship theirs."""
    found = json.loads(_nvim_lua(LOOKUP, PLUGIN, tmp_path))
    assert len(found) > 15, found  # the topics and the plugin's commands
    for topic, where in found.items():
        assert where.startswith("ollie.txt:"), f":help {topic} -> {where}"
        assert f"*{topic}*" in where, f":help {topic} landed on {where!r}"


def test_the_shipped_tags_are_those_helptags_makes_now(tmp_path: Path):
    """doc/tags lets `:help` work for a runtimepath install (no plugin manager runs `:helptags`); a stale one would
    send a topic to the wrong line or to none."""
    copy = tmp_path / "nvim"
    shutil.copytree(PLUGIN / "doc", copy / "doc")
    (copy / "doc" / "tags").unlink()
    _nvim_lua(f'vim.cmd.helptags({json.dumps(str(copy / "doc"))})', copy, tmp_path)
    assert (PLUGIN / "doc" / "tags").read_text() == (copy / "doc" / "tags").read_text(), "run :helptags doc"


def test_every_line_of_the_help_fits_an_80_column_terminal(tmp_path: Path):
    """Bug: at 80x24 `:help ollie` opened on its title wrapped (`ollie.n` / `vim`), and eight more lines wrapped mid-
    phrase: a help window wraps at the line's width with its `*` and `|` (hidden) counted. Help's own width is 78."""
    widths = _nvim_lua(f"""for n, line in ipairs(vim.fn.readfile({json.dumps(str(PLUGIN / "doc" / "ollie.txt"))})) do
  if vim.fn.strdisplaywidth(line) > 78 then io.stdout:write(n, ": ", line, "\\n") end
end""", PLUGIN, tmp_path)
    assert widths == "", widths
