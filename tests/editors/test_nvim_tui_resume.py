"""A session resumed in a new Neovim (nvim in tmux, README's `setup({})`, :OllieSessions): it goes on with the model
picked for it."""

from __future__ import annotations

from pathlib import Path

from ollie.testing import Reply

from .test_nvim_tui import assert_clean, quit_nvim, send_in_chat, start_nvim
from .test_nvim_tui_images import resume


def test_a_model_picked_with_ollie_model_goes_on_in_the_resumed_session(tmp_path: Path, scripted_llm):
    # Bug: the model was the daemon's alone, never saved with the session: resumed, it was back to the default (in
    # VS Code too, which switches it by the same `/model`).
    srv = scripted_llm("openai")
    srv.script(Reply.text("Answered by the picked one."), Reply.text("Still the picked one."))
    files = {"notes.txt": "notes\n"}
    tmux = start_nvim(tmp_path, srv.env(), files)
    try:
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":OllieModel picked-model", "Enter")
        tmux.keep("1-picked", tmux.wait(lambda s: "model: picked-model" in s, "the switch said"))
        send_in_chat(tmux, "first question")
        tmux.wait(lambda s: "Answered by the picked one." in s, "the answer")
        quit_nvim(tmux, tmp_path)
    finally:
        tmux.close()
    tmux = start_nvim(tmp_path, srv.env(), files)
    try:
        resume(tmux, "first question", "Answered by the picked one.")
        send_in_chat(tmux, "second question")
        tmux.keep("4-answered", tmux.wait(lambda s: "Still the picked one." in s, "the answer after the resume"))
        assert [r.body["model"] for r in srv.chat_requests] == ["picked-model"] * 2
        assert_clean(tmux.screens)
    finally:
        tmux.close()
