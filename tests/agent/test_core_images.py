"""Images in a prompt reach the model in each vendor's real wire format, stay in the session, and a model
without vision gets a clear refusal (before sending when the server says so, after its error when not)."""

from __future__ import annotations

import base64
import json

import pytest
from agentkit import drain, roles

from ollie.backend import images
from ollie.backend.types import Image, Message
from ollie.testing import Reply
from tests.pictures import png

PICTURE = png(3, 2, (0, 128, 255))


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "ollama"])
async def test_an_image_goes_to_the_model_in_the_vendors_format_and_is_saved(scripted_llm, make_core, tmp_path, fmt):
    srv = scripted_llm(fmt)
    srv.script(Reply.text("a blue square"), Reply.text("still blue"))
    core = await make_core(srv)
    result = await core.submit("what is this?", images=[images.from_bytes(PICTURE)])
    assert (result.stop, result.reply) == ("end", "a blue square")
    mime = "" if fmt == "ollama" else "image/png"  # Ollama's `images` are bare base64
    assert srv.images(srv.chat_requests[0]) == [(mime, PICTURE)]
    # The next turn's request carries the history, the image included: the model still sees it.
    await core.submit("and now?")
    assert srv.images(srv.chat_requests[1]) == [(mime, PICTURE)]
    # Saved once, in the message that carries it, and back after a reload.
    saved = (tmp_path / "sessions" / f"{core.session_id}.jsonl").read_text()
    assert saved.count(base64.b64encode(PICTURE).decode()) == 1
    first = next(json.loads(line)["m"] for line in saved.splitlines() if json.loads(line).get("t") == "m")
    assert first["images"] == [{"mime": "image/png", "data": base64.b64encode(PICTURE).decode()}]
    await core.close()
    from ollie.sessions import persist

    resumed = persist.load(tmp_path / "sessions", core.session_id).messages
    assert resumed[0].images == [images.from_bytes(PICTURE)] and not any(m.images for m in resumed[1:])


async def test_a_model_that_says_it_has_no_vision_is_not_sent_the_image(scripted_llm, make_core):
    srv = scripted_llm("ollama", vision=False)
    core = await make_core(srv)
    result = await core.submit("what is this?", images=[images.from_bytes(PICTURE)])
    assert result.stop == "error" and "does not take images" in (result.error or "")
    assert srv.chat_requests == [] and core.session.messages == []


@pytest.mark.parametrize("fmt", ["openai", "ollama"])
async def test_a_vendors_refusal_of_images_is_clear_and_the_session_goes_on(scripted_llm, make_core, fmt):
    srv = scripted_llm(fmt, vision=False, says_vision=False)  # the listing does not say: the vendor's answer decides
    srv.script(Reply.text("fine without"))
    core = await make_core(srv)
    result = await core.submit("what is this?", images=[images.from_bytes(PICTURE)])
    assert result.stop == "error" and "does not take images" in (result.error or "")
    assert len(srv.chat_requests) == 1  # refused at once: a 400 (OpenAI) or 500 (Ollama) is not retried
    # The image left the history (with a note in its place), so the next prompt is not refused too.
    assert core.session.messages[0].images == [] and "left out" in core.session.messages[0].content
    result = await core.submit("go on without it")
    assert result.reply == "fine without" and srv.images(srv.chat_requests[-1]) == []


async def test_a_text_model_listed_beside_one_with_vision_is_refused_by_the_vendor(scripted_llm, make_core):
    srv = scripted_llm("openai", text_models=["text-model"])  # the listing says "image" of its model, nothing of this
    srv.script(Reply.text("a blue square"))
    core = await make_core(srv)
    core.switch_model("text-model")
    result = await core.submit("what is this?", images=[images.from_bytes(PICTURE)])
    assert result.stop == "error" and "does not take images" in (result.error or "")
    assert len(srv.chat_requests) == 1 and "left out" in core.session.messages[0].content
    core.switch_model(srv.model)
    result = await core.submit("and this?", images=[images.from_bytes(PICTURE)])
    assert result.reply == "a blue square" and srv.images(srv.chat_requests[-1]) == [("image/png", PICTURE)]


def test_image_bytes_are_checked_by_content_and_size(monkeypatch):
    with pytest.raises(images.ImageError, match="not a PNG, JPEG, GIF or WebP"):
        images.from_bytes(b"#!/bin/sh\necho not a picture\n", name="evil.png")
    monkeypatch.setenv(images.CAP_ENV, "100")
    with pytest.raises(images.ImageError, match="limited to 100"):
        images.from_bytes(PICTURE + b"\0" * 200)
    with pytest.raises(images.ImageError, match="larger than 100"):  # refused before decoding
        images.from_base64(base64.b64encode(b"\0" * 10_000).decode())
    monkeypatch.delenv(images.CAP_ENV)
    url = "data:image/jpeg;base64," + base64.b64encode(PICTURE).decode()
    with pytest.raises(images.ImageError, match="says it is image/jpeg but its bytes are image/png"):
        images.from_base64(url)
    with pytest.raises(images.ImageError, match="limit is 8"):
        images.checked([images.from_bytes(PICTURE)] * 9)


async def test_reading_an_image_goes_through_the_chokepoint(tmp_path):
    import os

    (tmp_path / "ok.png").write_bytes(PICTURE)
    assert (await images.read(tmp_path, "ok.png")).data == base64.b64encode(PICTURE).decode()
    (tmp_path / "secret").write_bytes(PICTURE)
    (tmp_path / "link.png").symlink_to(tmp_path / "secret")
    os.mkfifo(tmp_path / "pipe.png")
    with pytest.raises(images.ImageError, match="symlink"):
        await images.read(tmp_path, "link.png")
    with pytest.raises(images.ImageError, match="not a regular file"):
        await images.read(tmp_path, "pipe.png")  # a FIFO would block a plain read for good
    with pytest.raises(images.ImageError, match="not beneath"):
        await images.read(tmp_path / "sub", "../ok.png")
    with pytest.raises(images.ImageError, match="no such file"):
        await images.read(tmp_path, "gone.png")


async def test_after_a_switch_to_a_model_without_vision_the_earlier_images_leave_and_the_prompt_goes(
        scripted_llm, make_core):
    srv = scripted_llm("openai", says_vision=False)
    srv.script(Reply.text("a blue square"), Reply.text("text only now"))
    core = await make_core(srv)
    await core.submit("what is this?", images=[images.from_bytes(PICTURE)])
    srv.vision = False  # as if the user picked a model without vision (/model)
    sub = core.bus.subscribe()
    result = await core.submit("and the weather?")
    assert (result.stop, result.reply) == ("end", "text only now")
    assert srv.images(srv.chat_requests[1]) != [] and srv.images(srv.chat_requests[2]) == []  # refused, then sent
    assert not any(m.images for m in core.session.messages)
    assert any("earlier ones left the conversation" in e.content for e in roles(drain(sub), "info"))


def test_an_image_counts_as_its_tokens_not_its_base64():
    from ollie.agent.tiers import IMAGE_CHARS, message_chars

    big = Image("image/png", "A" * 4_000_000)  # ~3 MB of picture: still one image's worth of tokens
    assert message_chars(Message("user", "look", images=[big])) == len("look") + IMAGE_CHARS


async def test_a_session_file_with_a_hostile_image_entry_is_refused_as_corrupt(scripted_llm, make_core, tmp_path):
    # A session's records can come from elsewhere (a teammate's, in a shared store): an image that is not one of
    # the four types, or whose fields are not strings, is a corrupt record, not an Image the daemon trips on later.
    from ollie.sessions import persist

    srv = scripted_llm("openai")
    srv.script(Reply.text("a blue square"))
    core = await make_core(srv)
    await core.submit("what is this?", images=[images.from_bytes(PICTURE)])
    await core.close()
    file = tmp_path / "sessions" / f"{core.session_id}.jsonl"
    good = file.read_text()
    data = base64.b64encode(PICTURE).decode()
    entry = json.dumps({"mime": "image/png", "data": data}, separators=(",", ":"))
    for bad in ({"mime": "text/html", "data": data}, {"mime": "image/png", "data": 7},
                {"mime": ["image/png"], "data": data}, "image/png"):
        file.write_text(good.replace(entry, json.dumps(bad)))
        assert file.read_text() != good
        with pytest.raises(persist.SessionFileCorruptError):
            persist.load(tmp_path / "sessions", core.session_id)


async def test_file_read_never_shows_an_image_through_a_cwd_swapped_for_a_link_after_its_step(
        scripted_llm, make_core, tmp_path, monkeypatch):
    # The daemon read the image the sandboxed file_read found by opening the cwd by name: another session's step
    # swapping the cwd for a link once file_read's step ended had a private picture outside shown to the model. The
    # session holds its cwd (beneath.hold): the picture read is the workspace's own, wherever the step moved it.
    cwd = tmp_path / "ws" / "sub"
    cwd.mkdir(parents=True)
    (cwd / "shot.png").write_bytes(PICTURE)
    pictures = tmp_path / "Pictures"
    pictures.mkdir()
    (pictures / "shot.png").write_bytes(png(4, 4, (255, 0, 0)))
    read = images.read

    async def swapped_then_read(root, path):  # the other session's step, in the window it raced for
        cwd.rename(cwd.with_name("sub.real"))
        cwd.symlink_to(pictures)
        return await read(root, path)

    monkeypatch.setattr(images, "read", swapped_then_read)
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_read", "args": ["shot.png"]}]})),
               Reply.text("nothing to see"))
    core = await make_core(srv, cwd=cwd)
    assert (await core.submit("what is in shot.png?")).stop == "end"
    assert srv.images(srv.chat_requests[-1]) == [("image/png", PICTURE)]
