"""Images in the Neovim chat (nvim in tmux, README's `setup({})`), live and resumed in a new Neovim: each a batch's
steps read under its own step; a prompt's the vendor refused named."""

from __future__ import annotations

import base64
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path

from ollie.testing import Reply, ScriptedLLMServer
from tests.pictures import png

from .test_nvim_tui import Tmux, assert_clean, quit_nvim, resume, send_in_chat, start_nvim


def chat_lines(screen: str) -> list[str]:
    """The chat's column of the screen (right of the code's window), line by line."""
    return [line.split("│")[-1].rstrip() for line in screen.splitlines()]


def assert_each_under_its_step(screen: str, small: str, big: str) -> None:
    """a.png's image line follows a.png's step (before b.png's), b.png's follows b.png's; none under the call."""
    lines = chat_lines(screen)
    a = next(i for i, line in enumerate(lines) if line.endswith("Read a.png"))
    b = next(i for i, line in enumerate(lines) if line.endswith("Read pics/b.png"))
    assert lines[a + 1:b] == ["      → a.png", f"      {small}"], screen
    assert lines[b + 1:b + 3] == ["      → pics/b.png", f"      {big}"], screen
    assert sum(small in line or big in line for line in lines) == 2, screen


def sent_and_refused(tmux: Tmux, prompt: str, note: str) -> tuple[str, str]:
    """Send `prompt` in the chat, which the daemon refuses (-32010): (the screen once it is back in the input with
    `note`, captured as 1-refused.png; the chat's lines joined)."""
    from .test_nvim_tui import back_in_input

    send_in_chat(tmux, prompt)
    back = back_in_input(tmux, "1-refused", note, prompt, (1200, 560))
    return back, " ".join(line.strip() for line in chat_lines(back))


def test_each_image_a_batch_read_shows_under_its_step_live_and_resumed(tmp_path: Path, scripted_llm):
    # Bug: both showed under the call, after its last step, ignoring the `step` each names (the VS Code chat too).
    srv = scripted_llm("anthropic")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_read", "args": ["a.png"]},
                                                         {"tool": "file_read", "args": ["pics/b.png"]}]})),
               Reply.text("Both are red."))
    files = {"notes.txt": "notes\n"}
    with start_nvim(tmp_path, srv.env(), files) as tmux:
        ws = tmp_path / "ws"
        (ws / "a.png").write_bytes(png(2, 2))
        (ws / "pics").mkdir()
        (ws / "pics" / "b.png").write_bytes(png(2, 2) + bytes(6000))  # its own size: which line is whose shows
        small, big = "[image: image/png, 1 KB]", "[image: image/png, 6 KB]"
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":Ollie look at both pictures", "Enter")
        live = tmux.keep("1-live", tmux.wait(lambda s: "Both are red." in s, "the answer"))
        assert_each_under_its_step(live, small, big)
        quit_nvim(tmux, tmp_path)
    with start_nvim(tmp_path, srv.env(), files) as tmux:
        resumed = resume(tmux, "look at both pictures", "Both are red.")
        assert_each_under_its_step(resumed, small, big)
        assert_clean(tmux.screens)
        quit_nvim(tmux, tmp_path)
    # A session saved before images named their step: both under the call, as they were.
    for log in (Path(os.environ["XDG_DATA_HOME"]) / "ollie" / "sessions").glob("*.jsonl"):
        log.write_text(re.sub(r'"(image/png \d+) \d+"', r'"\1"', log.read_text()))  # its marks: `image/png 73`
    with start_nvim(tmp_path, srv.env(), files) as tmux:
        lines = chat_lines(resume(tmux, "look at both pictures", "Both are red."))
        b = next(i for i, line in enumerate(lines) if line.endswith("Read pics/b.png"))
        assert lines[b + 1:b + 5] == ["      → pics/b.png", "", f"    {small}", f"    {big}"], lines


def story_streaming(tmp_path: Path, scripted_llm: Callable[..., ScriptedLLMServer]
                    ) -> tuple[ScriptedLLMServer, threading.Event, Tmux, bytes]:
    """Neovim on a workspace holding shot.png, a story streaming in its chat until `story` is set (then the next
    prompt is answered "It is blue."): the server, that event, the editor, the picture's bytes."""
    srv = scripted_llm("openai")
    story = threading.Event()  # the story ends once a prompt is queued behind it, however slow the machine
    srv.script(Reply(text="Once upon a time " + "there was a tale " * 20, delay=0.05, chunk_size=12, hold=story),
               Reply.text("It is blue."))
    tmux = start_nvim(tmp_path, srv.env(), {"notes.txt": "notes\n"}, size=(120, 30))
    (tmp_path / "ws" / "shot.png").write_bytes(picture := png(3, 3, (0, 0, 255)))
    try:
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":Ollie tell me a story", "Enter")
        tmux.wait(lambda s: "Once upon a time" in s, "the answer to stream")
    except BaseException:
        tmux.close()
        raise
    return srv, story, tmux, picture


def the_queued_turn_ran(srv: ScriptedLLMServer, story: threading.Event, tmux: Tmux, picture: bytes, name: str,
                        prompt: str, label: str) -> None:
    """The story let end (`story_streaming`): the queued `prompt`'s turn answers, the chat shows its image's `label`
    under it, and its request sends the picture."""
    story.set()
    lines = chat_lines(tmux.keep(name, tmux.wait(lambda s: "It is blue." in s, "the queued turn's answer")))
    assert lines[lines.index(prompt) + 1] == label, lines
    assert srv.images(srv.chat_requests[-1]) == [("image/png", picture)]


def queued_elsewhere(tmux: Tmux, lua: str, what: str) -> None:
    """Run `lua`, which queues prompts as another client of the session does (the chat neither sent them nor shows
    them queued), until it prints `queued what` (or `refused what`): printed by its callback, never typed (the typed
    command is on the screen until Neovim takes its Enter, a while under load: a wait for words it holds went on
    before any answer, and a prompt sent next went first)."""
    tmux.keys(f":lua {lua}", "Enter")
    tmux.wait(lambda s: f"queued {what}" in s or f"refused {what}" in s, "the daemon to take the prompts")


def test_a_prompt_s_image_the_vendor_refused_is_named_live_and_resumed(tmp_path: Path, scripted_llm):
    """Live, the refused prompt shows its image and the error says why; resumed (the session keeps no such image), the
    prompt names the image left out and why: the note the model reads, shown with the prompt, and a label as a kept
    image's (it had none)."""
    srv = scripted_llm("openai", vision=False, says_vision=False)  # the vendor's answer decides
    srv.script(Reply.text("read without it"))
    files = {"notes.txt": "notes\n"}
    with start_nvim(tmp_path, srv.env(), files) as tmux:
        (tmp_path / "ws" / "shot.png").write_bytes(picture := png(2, 2))
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":OllieChat", "Enter")
        tmux.keys("what is it #file:shot.png", literal=True)
        tmux.keys("Escape", "Enter")
        live = tmux.keep("1-refused", tmux.wait(lambda s: "(error)" in s, "the refusal"))
        lines = chat_lines(live)
        prompt = lines.index("what is it shot.png")
        assert lines[prompt + 1] == "📎 shot.png (image)" and "does not take images" in lines[prompt + 3], live
        tmux.keys("i")
        tmux.keys("read it yourself", literal=True)
        tmux.keys("Escape", "Enter")
        tmux.keep("2-answered", tmux.wait(lambda s: "read without it" in s, "the answer"))
        quit_nvim(tmux, tmp_path)
    with start_nvim(tmp_path, srv.env(), files) as tmux:
        lines = chat_lines(resume(tmux, "what is it", "read without it"))
        prompt = lines.index("what is it shot.png")
        note = f"[1 image left out: the model does not take images (image/png, {len(picture)} bytes)]"
        assert lines[prompt + 1:prompt + 4] == ["", note, "📎 image (png, 1 KB)"], lines
        assert_clean(tmux.screens)


def test_a_screenshot_outside_the_workspace_goes_with_the_prompt(tmp_path: Path, scripted_llm):
    """A new user's screenshot in ~/Pictures, attached with `:OllieImage <path>` as README says: the chat said
    "error: Invalid params: images[0].path: ... is not beneath the workspace (or goes through a symlink): not read"
    and nothing went. The user named it, as a text file named outside is: Neovim reads it and sends its bytes."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("The button is red."))
    pictures = tmp_path / "Pictures"
    pictures.mkdir()
    (pictures / "shot.png").write_bytes(picture := png(3, 3, (0, 0, 255)))
    with start_nvim(tmp_path, srv.env(), {"notes.txt": "notes\n"}, size=(100, 30)) as tmux:
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(f":OllieImage {pictures}/shot.png", "Enter")
        tmux.wait(lambda s: "-- INSERT --" in s and "#file:" in s, "the image in the input")
        tmux.keys("why is the button this colour?", literal=True)
        tmux.keys("Escape", "Enter")
        done = tmux.keep("1-answered", tmux.wait(lambda s: "The button is red." in s or "(error)" in s, "the answer"),
                         (1000, 560))
        # The path in the prompt and in its 📎 line, however the chat's width breaks it (the temporary dir's length).
        assert "The button is red." in done and "".join(chat_lines(done)).count(f"{pictures}/shot.png") == 2, done
        assert "(image)" in done and "error" not in done, done
        assert_clean(tmux.screens)
    assert srv.images(srv.chat_requests[-1]) == [("image/png", picture)]


def test_a_prompt_with_an_image_typed_during_a_turn_is_queued_with_it(tmp_path: Path, scripted_llm):
    """Bug: refused ("a prompt with images is sent when no turn runs: send it after this one"), though `ollie/queue`
    takes images as `ollie/submit` does: queued with its image, shown so, and its turn sends the image."""
    srv, story, tmux, picture = story_streaming(tmp_path, scripted_llm)
    with tmux:
        send_in_chat(tmux, "what is it #file:shot.png")
        queued = tmux.keep("1-queued", tmux.wait(lambda s: "⏳ queued: what is it shot.png  📎 shot.png (image)" in s
                                                 or "error" in s, "the queued prompt"), (1200, 560))
        assert "error" not in queued, queued
        # Its prompt as a sent one's, its image named (as this chat queued it).
        the_queued_turn_ran(srv, story, tmux, picture, "2-answered", "what is it shot.png", "📎 shot.png (image)")
        assert_clean(tmux.screens)


def test_a_prompt_with_an_image_queued_elsewhere_is_shown_with_it_when_it_runs(tmp_path: Path, scripted_llm):
    """Bug: a prompt queued with an image by another client of the session (a second window) showed, once its turn
    ran, as text alone: the daemon's `user` event named no images. It names them now, and so does the chat."""
    srv, story, tmux, picture = story_streaming(tmp_path, scripted_llm)
    with tmux:
        queued_elsewhere(tmux, "require('ollie.client').request('ollie/queue', {session = require('ollie.chat').get()"
                         ".session, text = 'what is this', images = {{path = 'shot.png'}}},"
                         " function(e) print(('%s it'):format(e and 'refused' or 'queued')) end)", "it")
        the_queued_turn_ran(srv, story, tmux, picture, "1-ran", "what is this", "📎 image (png, 1 KB)")
        assert_clean(tmux.screens)


def test_a_prompt_with_an_image_queued_when_nvim_quit_comes_back_with_it(tmp_path: Path, scripted_llm):
    """Bug: a queued prompt Neovim saved when it quit mid-turn was queued again, after the restart, as text alone:
    its image was lost. It keeps it (shown, and sent with its turn), as VS Code keeps its queued images. The bytes of
    one named outside the working directory (read here) wait in a file of their own, not in queued.json (rewritten
    whole at each change), and that file goes once the prompt ran."""
    srv = scripted_llm("openai")
    srv.script(Reply(text="Once upon a time " + "there was a tale " * 200, delay=0.1, chunk_size=8),
               Reply.text("It is blue."), Reply.text("Next done."))
    files = {"notes.txt": "notes\n"}
    with start_nvim(tmp_path, srv.env(), files, size=(120, 30)) as tmux:
        (tmp_path / "ws" / "shot.png").write_bytes(picture := png(3, 3, (0, 0, 255)))
        (tmp_path / "red.png").write_bytes(outside := png(3, 3, (255, 0, 0)))
        saved = Path(os.environ["XDG_STATE_HOME"]) / "nvim" / "ollie"
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":Ollie tell me a long story", "Enter")
        tmux.wait(lambda s: "Once upon a time" in s, "the answer to stream")
        tmux.keys(f":OllieImage {tmp_path}/red.png", "Enter")  # as README says, a screenshot outside the project
        tmux.wait(lambda s: "-- INSERT --" in s and "#file:" in s, "the image in the input")
        tmux.keys(" what is it #file:shot.png", literal=True)
        tmux.keys("Escape", "Enter")
        tmux.keep("1-queued", tmux.wait(lambda s: "⏳ queued:" in s,
                                        "the queued prompt"))
        quit_nvim(tmux, tmp_path)  # mid-turn: the daemon, and the queue it held, end with the editor
    red = base64.b64encode(outside).decode()
    assert red not in (saved / "queued.json").read_text()
    assert [p.read_text() for p in (saved / "queued-images").iterdir()] == [red]
    with start_nvim(tmp_path, srv.env(), files, size=(120, 30)) as tmux:
        resume(tmux, "tell me a long story", "⏸ held:")  # with its images
        send_in_chat(tmux, "next")
        tmux.keep("3-ran", tmux.wait(lambda s: "Next done." in s, "the next prompt's answer"))
        assert_clean(tmux.screens)
    # The held prompt's turn sent the images (its request and the next, whose history holds them).
    assert srv.images(srv.chat_requests[1]) == [("image/png", outside), ("image/png", picture)]
    assert list((saved / "queued-images").iterdir()) == []


def test_a_prompt_past_the_queues_bound_is_refused_and_back_in_the_input(tmp_path: Path, scripted_llm):
    """Bug: the queue had no bound (each prompt up to 40 MiB of images, all held by the daemon). Past 32 prompts the
    daemon refuses the next: the chat says why and what to do, the prompt is back in the input, what waits stays;
    once the user dropped that, Enter sends it with its image."""
    srv, story, tmux, picture = story_streaming(tmp_path, scripted_llm)
    with tmux:
        # 32 queued (typed here one by one they only take longer)
        queued_elsewhere(tmux, "for n = 1, 32 do require('ollie.client').request('ollie/queue', {session ="
                         " require('ollie.chat').get().session, text = 'waiting ' .. n}, function(e) if n == 32 then"
                         " print(('%s them'):format(e and 'refused' or 'queued')) end end) end", "them")
        back, said = sent_and_refused(tmux, "one too many #file:shot.png", "(not queued: it is back in the input")
        assert "error: queue full: 32 prompts wait in this session, the most it queues: let them run first, or drop" \
               " them (/queued clear)" in said, back
        assert "⏳ queued: one too many" not in back, back
        tmux.keys("Escape", ":OllieStop", "Enter")
        # The story held until the Stop was taken: let end before (under load), it ended the turn as "(end)".
        tmux.wait(lambda s: "(interrupted)" in s, "the Stop")
        story.set()
        tmux.keys(":lua require('ollie.client').request('ollie/queue/clear', {session ="
                  " require('ollie.chat').get().session}, function(e, r) print(e and ('%s: %s'):format('failed',"
                  " e.message) or ('dropped %d'):format(r.cleared)) end)", "Enter")
        tmux.wait(lambda s: "dropped 32" in s or "failed: " in s, "the queue dropped")
        tmux.keys(":OllieChat", "Enter", "Escape", "Enter")
        tmux.keep("2-sent", tmux.wait(lambda s: "It is blue." in s, "the prompt's answer"))
    assert srv.images(srv.chat_requests[-1]) == [("image/png", picture)]


def test_up_on_an_empty_input_takes_back_the_latest_queued_prompt_with_its_image(tmp_path: Path, scripted_llm):
    """Bug: `/queued pop` took the oldest queued prompt and said its text only: gone from the queue and from the
    input, its image with it. As in Claude Code, <Up> on an empty input (and `/queued pop`) takes back the latest one
    into the input as it was typed, its `#file:` tags and all (they came back flattened to names: sent again, the
    file went without its contents), its image with it; the other still waits and runs, and the one taken back is
    sent again with the file and the image."""
    srv = scripted_llm("openai")
    story = threading.Event()
    srv.script(Reply(text="Once upon a time " + "there was a tale " * 20, delay=0.05, chunk_size=12, hold=story),
               Reply.text("Tabs, then."), Reply.text("It is blue."))
    with start_nvim(tmp_path, srv.env(), {"notes.txt": "notes\n"}, size=(120, 30)) as tmux:
        (tmp_path / "ws" / "shot.png").write_bytes(picture := png(3, 3, (0, 0, 255)))
        typed = "what is it #file:shot.png, see #file:notes.txt"
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":Ollie tell me a story", "Enter")
        tmux.wait(lambda s: "Once upon a time" in s, "the answer to stream")
        send_in_chat(tmux, "tabs or spaces?")
        tmux.wait(lambda s: "⏳ queued: tabs or spaces?" in s, "the first queued prompt")
        send_in_chat(tmux, typed)
        queued = "⏳ queued: what is it shot.png, see notes.txt  📎 shot.png ("
        tmux.wait(lambda s: queued in s, "the second queued prompt")
        tmux.keys("Up")
        taken = tmux.keep("1-taken-back", tmux.wait(
            lambda s: typed in s and "queued: what is it" not in s, "the prompt taken back"), (1200, 560))
        # In the input as typed (its tags bring the image and the file again); the other still queued.
        assert any(line.strip() == typed for line in chat_lines(taken)), taken
        assert "⏳ queued: tabs or spaces?" in taken, taken
        tmux.keys("Enter")  # queued again, with its image and file; then `/queued pop` takes it back as <Up> did
        tmux.wait(lambda s: queued in s, "the prompt queued again")
        send_in_chat(tmux, "/queued pop")
        tmux.wait(lambda s: typed in s and "queued: what is it" not in s, "it taken back again")
        story.set()
        tmux.wait(lambda s: "Tabs, then." in s, "the other queued prompt's answer")
        tmux.keys("Escape", "Enter")  # the prompt taken back, sent again
        done = tmux.keep("2-sent-again", tmux.wait(lambda s: "It is blue." in s, "its answer"))
        assert "error" not in done, done
        assert_clean(tmux.screens)
    assert [srv.images(r) for r in srv.chat_requests] == [[], [], [("image/png", picture)]]
    assert "notes.txt" in str(srv.chat_requests[-1].body["messages"][-1]), srv.chat_requests[-1].body


def test_a_prompt_past_what_the_daemon_holds_of_images_is_refused_and_back_in_the_input(tmp_path: Path, scripted_llm):
    """Two other sessions of the daemon queued four prompts of images at the cap (another client): the daemon holds no
    more of prompts not run yet. Sent now, a prompt with an image is refused before its image is read (-32010); it
    was gone from the input, only the error said: it is back there, its `#file:` tag with it."""
    srv = scripted_llm("openai")
    with start_nvim(tmp_path, {**srv.env(), "OLLIE_MAX_IMAGE_BYTES": "1000"}, {"notes.txt": "notes\n"}, size=(120, 30)) as tmux:
        (tmp_path / "ws" / "shot.png").write_bytes(png(3, 3, (0, 0, 255)))
        (tmp_path / "ws" / "big.png").write_bytes(png(5, 3) + b"\0" * 900)
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":lua local c, n, f = require('ollie.client'), 0, nil; for _ = 1, 2 do c.request('ollie/session/new',"
                  " {cwd = vim.fn.getcwd()}, function(_, r) for _ = 1, 2 do c.request('ollie/queue', {session ="
                  " r.session, text = 'waiting', images = vim.tbl_map(function() return {path = 'big.png'} end,"
                  " {1, 2, 3, 4, 5, 6, 7, 8})}, function(e) n, f = n + 1, f or e and e.message;"
                  " if n == 4 then print(f and ('%s: %s'):format('refused', f) or ('queued %d of them'):format(n))"
                  " end end) end end) end", "Enter")  # (what it prints formatted there, as above)
        screen = tmux.wait(lambda s: "queued 4 of them" in s or "refused: " in s, "the other sessions' queued prompts")
        assert "refused: " not in screen, screen
        back, said = sent_and_refused(tmux, "what is it #file:shot.png", "(not sent: it is back in the input")
        assert "of prompts waiting in this daemon's sessions are over the 31.2 KiB it holds" in said, back
    assert srv.chat_requests == []
