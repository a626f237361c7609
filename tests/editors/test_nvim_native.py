"""Neovim's built-in LSP client with no ollie plugin (`vim.lsp.start{cmd={"ollie-lsp"}}`): `Ollie: Fix`, and README's snippet
as a user's init.lua."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ollie.testing import Reply

from .test_nvim import _nvim, file_edit, run_scenario, workspace  # noqa: F401 - the fixture


def test_plain_neovim_runs_the_fix_and_gets_the_edit(workspace, scripted_llm):  # noqa: F811
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(file_edit("code.py", "return a + b", "return a * b")), Reply.text("mul multiplies now."))
    result = run_scenario("native_fix", workspace, srv)
    assert result["code_action_provider"]
    assert result["waited"], result
    assert result["buffer"][1] == "    return a * b"
    # The model was told the other server's diagnostic and shown the line.
    asked = srv.chat_requests[0].body["messages"][-1]["content"]
    assert '- line 2: "mul adds instead of multiplying" (from "reviewer")' in asked and "return a + b" in asked
    assert "LSP[ollie][Info] ollie: mul multiplies now." in result["messages"]


def test_a_long_answer_opens_without_its_modelines(workspace, scripted_llm):  # noqa: F811
    """Red team round 23: `Ollie: Explain`'s long answer opens as answer-N.txt, the model's text, and with 'modeline' on
    (a user's default) its `vim: set ...:` line set options, global ones too ('autowriteall': every buffer saved
    unasked at each :make, :!cmd, buffer switch), the answer's filetype and a keymap of what the user types."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("It adds.\n\nvim: set autowriteall ft=sh keymap=russian-jcukenwin :"))
    result = run_scenario("answer_modeline", workspace, srv)
    assert result["opened"] and result["name"].endswith(".txt") and result["lines"][-1].startswith("vim: set"), result
    assert not result["autowriteall"] and result["filetype"] != "sh" and result["keymap"] == "", result


def readme_snippet() -> str:
    """README's plain-Neovim snippet, as a user copies it into their init.lua."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("### Any editor's own LSP client", 1)[1]
    return section.split("```lua\n", 1)[1].split("```", 1)[0]


def test_readmes_snippet_in_init_lua_gives_the_file_opened_ollies_code_actions(tmp_path: Path, scripted_llm):
    """`nvim code.py` with README's snippet in init.lua, as a new user sets it up: `vim.lsp.start` ran there, before
    code.py was read, and attached ollie to no buffer: the code action menu had none of ollie's actions."""
    from .test_nvim_tui import NO_PYTHON_PROVIDER, Tmux

    srv = scripted_llm("openai")
    srv.script(Reply.text("It adds its arguments."))
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "code.py").write_text("def mul(a, b):\n    return a + b\n")
    init = tmp_path / "init.lua"
    init.write_text(readme_snippet() + 'vim.api.nvim_create_autocmd("LspAttach", { callback = function(ev)\n'
                    '  if vim.api.nvim_buf_get_name(ev.buf):match("code%.py$") then print("ollie attached to code.py") end\n'
                    "end })\n")
    bin_dir = tmp_path / "bin"  # ollie-lsp on PATH, as pipx puts it
    bin_dir.mkdir()
    (bin_dir / "ollie-lsp").symlink_to(Path(sys.executable).parent / "ollie-lsp")
    env = {**os.environ, **srv.env(), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "TERM": "xterm-256color"}
    with Tmux(f"ollie-native-{os.getpid()}-{tmp_path.name}", ws, env,
              [_nvim(), *NO_PYTHON_PROVIDER, "-u", str(init), "-i", "NONE", "-n", "code.py"], size=(100, 30)) as tmux:
        tmux.wait(lambda s: "return a + b" in s, "nvim to start")
        # Said by the test's own autocmd once ollie is attached to code.py and initialized (its start takes seconds).
        tmux.wait(lambda s: "ollie attached to code.py" in s, "ollie on code.py", timeout=120)
        # The user selects the function and asks for code actions (Neovim 0.11's `gra`).
        tmux.keys("g", "g", "V", "G", "g", "r", "a")
        menu = tmux.wait(lambda s: "Ollie: Explain" in s or "No code actions" in s, "the code action menu")
        assert "Ollie: Explain" in menu, menu
        number = next(line.split(":")[0].strip() for line in menu.splitlines() if "Ollie: Explain" in line)
        tmux.keys(number, "Enter")
        tmux.wait(lambda s: "It adds its arguments." in s, "the answer")
