"""Neovim's built-in LSP client with no ollie plugin (`vim.lsp.start{cmd={"ollie-lsp"}}`) runs `Ollie: Fix`."""

from __future__ import annotations

from ollie.testing import Reply

from .test_nvim import file_edit, run_scenario, workspace  # noqa: F401 - the fixture


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
