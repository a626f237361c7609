"""The terminal's `@picture.png`: the file goes with the prompt; a bad one is said and nothing is sent."""

from __future__ import annotations

import os

from ollie.cli.terminal import IMAGE_HINT
from ollie.testing import Reply
from tests.pictures import png

from .test_cli import run_ollie

PICTURE = png(2, 5, (0, 0, 0))


def test_at_a_picture_sends_it_with_the_prompt(scripted_llm, tmp_path):
    llm = scripted_llm("anthropic")
    (tmp_path / "my shot.png").write_bytes(PICTURE)
    (tmp_path / "b.jpg").write_bytes(PICTURE)  # named .jpg, a PNG by content: sent as what it is
    llm.script(Reply.text("two black bars"))
    proc = run_ollie(["-p", 'compare @"my shot.png" and @b.jpg, mail me@example.com', "--cwd", str(tmp_path)],
                     env=llm.env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "two black bars"
    assert llm.images(llm.chat_requests[0]) == [("image/png", PICTURE)] * 2


def test_a_bad_picture_is_said_and_nothing_is_sent(llm, tmp_path):
    (tmp_path / "fake.png").write_text("not an image\n")
    os.mkfifo(tmp_path / "pipe.png")
    (tmp_path / "link.png").symlink_to("/etc/passwd")
    (tmp_path / "big.png").write_bytes(PICTURE + bytes(200))
    # Interactive: each bad line is said with what to do, as `-p` says it, and skipped; the session reads on.
    llm.script(Reply.text("plain answer"))
    bad = ("fake.png", "pipe.png", "link.png", "gone.png", "big.png", "../out.png")
    proc = run_ollie(["--cwd", str(tmp_path)], env={**llm.env(), "OLLIE_MAX_IMAGE_BYTES": "150"},
                     input="".join(f"see @{name}\n" for name in bad) + "hello\n")
    assert proc.returncode == 0, proc.stderr
    assert "fake.png is not a PNG, JPEG, GIF or WebP image" in proc.stderr
    assert "pipe.png is not a regular file" in proc.stderr and "link.png" in proc.stderr
    assert "gone.png: no such file" in proc.stderr
    assert "big.png is larger than 150 bytes" in proc.stderr and "not beneath" in proc.stderr
    assert proc.stderr.count(f"ollie: {IMAGE_HINT}\n") == len(bad), proc.stderr
    assert "plain answer" in proc.stdout and len(llm.chat_requests) == 1
    # `-p`: a usage error (exit 2) with the reason, no request.
    proc = run_ollie(["-p", "see @fake.png", "--cwd", str(tmp_path)], env=llm.env())
    assert proc.returncode == 2 and "fake.png is not a PNG" in proc.stderr
    assert proc.stderr.count(f"ollie: {IMAGE_HINT}\n") == 1, proc.stderr
    assert len(llm.chat_requests) == 1


def test_a_picture_the_user_names_outside_the_workspace_goes_and_a_bad_one_is_a_usage_error(llm, tmp_path):
    home, workspace = tmp_path / "home", tmp_path / "ws"
    (home / "Pictures").mkdir(parents=True)
    workspace.mkdir()
    (home / "Pictures" / "shot.png").write_bytes(PICTURE)
    os.mkfifo(home / "pipe.png")
    (home / "link.png").symlink_to(home / "Pictures" / "shot.png")
    env = {**llm.env(), "HOME": str(home)}
    # A screenshot named by `~` and by its absolute path, on the user's own command line: read as the user.
    llm.script(Reply.text("a black bar"))
    proc = run_ollie(["-p", f"@~/Pictures/shot.png describe it, and @{home}/Pictures/shot.png", "--cwd",
                      str(workspace)], env=env)
    assert proc.returncode == 0, proc.stderr
    assert llm.images(llm.chat_requests[0]) == [("image/png", PICTURE)] * 2
    # The same rules as in the workspace: no FIFO, no symlink; refused as a usage error, saying what to do.
    for name, why in (("~/pipe.png", "is not a regular file"), ("~/link.png", "is a symlink"),
                      ("~/gone.png", "no such file")):
        proc = run_ollie(["-p", f"see @{name}", "--cwd", str(workspace)], env=env)
        assert proc.returncode == 2 and f"{name}" in proc.stderr and why in proc.stderr, proc.stderr
        assert "beneath the workspace, or by its absolute or ~ path" in proc.stderr
    assert len(llm.chat_requests) == 1


def test_a_resumed_prompt_names_its_pictures_and_a_prompt_the_terminal_did_not_send_is_shown(llm, tmp_path):
    # A prompt's pictures were not said when its session was resumed (a prompt from an editor names none in its text),
    # and a queued prompt's turn (`/i` when idle, a postTurn hook's) ran with no word of the prompt at all.
    (tmp_path / "shot.png").write_bytes(PICTURE)
    llm.script(Reply.text("two black bars"), Reply.text("noted"), Reply.text("also noted"))
    once = run_ollie(["-p", "what is @shot.png", "--cwd", str(tmp_path)], env=llm.env())
    assert once.returncode == 0, once.stderr
    session = once.stderr.split()[2]
    proc = run_ollie(["--session", session, "--cwd", str(tmp_path)], env=llm.env(),
                     input="/i and the tests too\nfix the parser\n")
    assert proc.returncode == 0, proc.stderr
    assert "default> what is @shot.png\n[image: image/png, 1 KB]\n" in proc.stderr, proc.stderr
    assert "> and the tests too\n" in proc.stderr, proc.stderr  # (piped: the prompt signs stand on one line)
    assert [m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "user"][-2:] == [
        "fix the parser", "and the tests too"]


def test_a_prompts_pictures_are_named_under_it(tmp_path):
    from ollie.backend.types import Image
    from ollie.cli.render import Renderer

    with (tmp_path / "out.txt").open("w+") as out:
        Renderer(out, out, color=False).render("user", "and these?", images=[Image("image/png", "A" * 4000)] * 2)
        out.seek(0)
        assert out.read() == "> and these?\n[image: image/png, 3 KB]\n[image: image/png, 3 KB]\n"
