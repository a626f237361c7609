"""ollie/submit's `images`: a file beneath the workspace (through the chokepoint) or pasted bytes reach the model;
hostile items (not an image, too large, a symlink, a FIFO, outside the workspace) are -32602 naming the item."""

from __future__ import annotations

import asyncio
import base64
import os
import threading

from ollie.testing import Reply
from tests.pictures import png

from .test_methods import rpc_error

PICTURE = png(5, 3, (200, 10, 10))


async def test_a_file_and_pasted_bytes_reach_the_model_and_the_history_says_what_they_are(shared_daemon, llm):
    llm.script(Reply.text("two red rectangles"))
    daemon = await shared_daemon(env=llm.env())
    (daemon.workspace / "shot.png").write_bytes(PICTURE)
    pasted = "data:image/png;base64," + base64.b64encode(PICTURE).decode()
    result = await daemon.request("ollie/submit", {"text": "compare", "images": [
        {"path": "shot.png"}, {"data": pasted}]})
    assert (result["stop"], result["reply"]) == ("end", "two red rectangles")
    assert llm.images(llm.chat_requests[-1]) == [("image/png", PICTURE)] * 2
    user = (await daemon.request("ollie/context", {}))["messages"][0]
    assert user["images"] == [{"mime": "image/png", "bytes": len(PICTURE)}] * 2  # no base64 in the listing


HOSTILE = [  # (what the workspace holds, the item, what the error says)
    (lambda ws: (ws / "evil.png").write_text("#!/bin/sh\n"), {"path": "evil.png"}, "images[0].path: evil.png is not a PNG"),
    (lambda ws: (ws / "big.png").write_bytes(PICTURE + b"\0" * 2000), {"path": "big.png"}, "limit on images"),
    (lambda ws: (ws / "link.png").symlink_to("/etc/passwd"), {"path": "link.png"}, "symlink"),
    (lambda ws: os.mkfifo(ws / "pipe.png"), {"path": "pipe.png"}, "not a regular file"),
    (lambda ws: None, {"path": "/etc/passwd"}, "not beneath the workspace"),
    (lambda ws: None, {"data": base64.b64encode(b"GIF8 nope").decode()}, "images[0].data: the image is not a PNG"),
    (lambda ws: None, {"path": "a.png", "data": "xx"}, "images[0]: give either path or data"),
]


async def test_a_hostile_image_item_is_invalid_params_and_nothing_runs(shared_daemon, llm):
    daemon = await shared_daemon(env={**llm.env(), "OLLIE_MAX_IMAGE_BYTES": "1000"})
    for make, item, why in HOSTILE:  # one daemon for all: each refusal leaves it serving the next
        make(daemon.workspace)
        for method in ("ollie/submit", "ollie/queue"):  # a queued prompt's images are read as a submit's are
            error = await rpc_error(daemon, method, {"text": "look", "images": [item]})
            assert error.code == -32602 and why in str(error), (method, str(error))
    # Too many: refused before one is read or decoded (the count is checked first, not after megabytes each).
    error = await rpc_error(daemon, "ollie/submit", {"text": "look", "images": [{"data": "not base64!"}] * 9})
    assert error.code == -32602 and "9 images in one prompt" in str(error), str(error)
    assert llm.chat_requests == []
    assert (await daemon.request("ollie/state", {}))["queuedPrompts"] == []


async def test_a_model_without_vision_is_a_clear_error(start_daemon, scripted_llm):
    llm = scripted_llm("ollama", vision=False)
    daemon = await start_daemon(env=llm.env())
    (daemon.workspace / "shot.png").write_bytes(PICTURE)
    result = await daemon.request("ollie/submit", {"text": "what is it", "images": [{"path": "shot.png"}]})
    assert result["stop"] == "error" and "does not take images" in result["error"]
    assert llm.chat_requests == []


async def test_images_a_vendor_refused_are_named_on_resume_as_live(start_daemon, scripted_llm):
    """A vendor's refusal took the images out of the history with a bare count: resumed, a prompt's showed no sign of
    what was sent, and a step's image (drawn under it live) was gone. Each is named now: the prompt's in the note the
    model reads and in its `images` (as a kept one is: the editors label it), the step's under its step (`images`, as
    a collapsed result's are)."""
    from .test_history_render import resumed

    llm = scripted_llm("openai", vision=False, says_vision=False)  # the vendor's answer decides
    llm.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_glob", "args": ["*.png"]},
                                                         {"tool": "file_read", "args": ["shot.png"]}]})),
               Reply.text("read without it"))
    daemon = await start_daemon(env=llm.env())
    (daemon.workspace / "shot.png").write_bytes(PICTURE)
    result = await daemon.request("ollie/submit", {"text": "what is it", "images": [{"path": "shot.png"}]})
    assert result["stop"] == "error" and "does not take images" in result["error"]
    result = await daemon.request("ollie/submit", {"text": "read it yourself"})
    assert result["reply"] == "read without it", result
    (live,) = [e for e in daemon.events if e["role"] == "tool"]
    assert [{k: v for k, v in i.items() if k != "data"} for i in live["images"]] == [
        {"mime": "image/png", "bytes": len(PICTURE), "step": 1}]
    second = await resumed(start_daemon, llm, daemon, result["session"])
    messages = (await second.request("ollie/context", {"session": result["session"]}))["messages"]
    named = f"left out: the model does not take images (image/png, {len(PICTURE)} bytes)]"
    assert messages[0]["role"] == "user" and messages[0]["content"].endswith(named), messages[0]
    assert messages[0]["images"] == [{"mime": "image/png", "bytes": len(PICTURE)}], messages[0]
    (tool,) = [m for m in messages if m["role"] == "tool"]
    assert tool["images"] == [{"mime": "image/png", "bytes": len(PICTURE), "step": 1}] and named in tool["content"]


async def test_inject_refuses_images_rather_than_drop_them_and_an_empty_submit_or_queue_is_refused(shared_daemon, llm):
    daemon = await shared_daemon(env=llm.env())
    # A submit (or a queued prompt) of nothing (no text, images or context) is refused: it sent the model an empty
    # message.
    for method, text in (("ollie/submit", ""), ("ollie/submit", " \n"), ("ollie/queue", " ")):
        error = await rpc_error(daemon, method, {"text": text, "images": []})
        assert error.code == -32602 and "text: empty" in str(error), str(error)
    error = await rpc_error(daemon, "ollie/inject", {"text": "later", "images": [{"path": "a.png"}]})
    assert error.code == -32602 and "ollie/inject takes no images" in str(error)
    # A queued prompt's images are checked as it is queued, as a submit's are.
    error = await rpc_error(daemon, "ollie/queue", {"text": "later", "images": [{"path": "/etc/passwd"}]})
    assert error.code == -32602 and "images[0].path" in str(error), str(error)
    assert llm.chat_requests == []
    assert (await daemon.request("ollie/state", {}))["queuedPrompts"] == []


async def test_a_prompt_queued_with_images_during_a_turn_runs_after_it_with_them(shared_daemon, llm):
    """Queued while a turn runs (as Claude Code and Cursor queue one), a prompt with images waits its turn in order,
    and its images reach the model with it; a Stop holds it, as any queued prompt, and `queue/run` sends it so."""
    hold = threading.Event()
    llm.script(Reply.text("slow", hold=hold), Reply.text("first queued"), Reply.text("saw it"), Reply.text("last"))
    daemon = await shared_daemon(env=llm.env())
    (daemon.workspace / "shot.png").write_bytes(PICTURE)
    pasted = "data:image/png;base64," + base64.b64encode(PICTURE).decode()
    first = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "first"}))
    await daemon.wait_events(lambda evs: any(e["role"] == "assistant" for e in evs))
    await daemon.request("ollie/queue", {"text": "text only"})
    await daemon.request("ollie/queue", {"text": "", "images": [{"path": "shot.png"}, {"data": pasted}]})
    await daemon.request("ollie/queue", {"text": "after the picture"})
    assert (await daemon.request("ollie/interrupt", {}))["interrupted"] is True
    hold.set()
    await first
    assert (await daemon.request("ollie/state", {}))["queuedPrompts"] == ["text only", "", "after the picture"]
    await daemon.request("ollie/queue/run", {})
    # Each request's images (the history's): none before the queued picture's turn, both from it on.
    assert [llm.images(r) for r in llm.chat_requests[1:]] == [[], [("image/png", PICTURE)] * 2, [("image/png", PICTURE)] * 2]
    messages = (await daemon.request("ollie/context", {}))["messages"]
    users = [m for m in messages if m["role"] == "user"]
    assert [u.get("images") for u in users] == [None, None, [{"mime": "image/png", "bytes": len(PICTURE)}] * 2, None]
    # Each queued prompt's `user` event says what runs, its images too (named, no data): a second window on the
    # session shows them live as the history does after a reload.
    announced = [e for e in daemon.events if e["role"] == "user"]
    assert [(e["content"], e.get("images")) for e in announced] == [
        ("text only", None), ("", [{"mime": "image/png", "bytes": len(PICTURE)}] * 2), ("after the picture", None)]


async def test_file_read_of_an_image_shows_it_to_the_model(shared_daemon, llm):
    """The sandboxed tool finds an image by its bytes; the daemon reads it through the chokepoint (capped, no
    symlink) and the model sees it after the result (OpenAI's tool messages take text only)."""
    llm.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_read", "args": ["shot.png"]},
                                                         {"tool": "file_read", "args": ["big.png"]}]})),
               Reply.text("a red rectangle"))
    daemon = await shared_daemon(env={**llm.env(), "OLLIE_MAX_IMAGE_BYTES": "1000"})
    (daemon.workspace / "shot.png").write_bytes(PICTURE)
    (daemon.workspace / "big.png").write_bytes(PICTURE + b"\0" * 2000)
    result = await daemon.request("ollie/submit", {"text": "what is in shot.png?"})
    assert (result["stop"], result["reply"]) == ("end", "a red rectangle")
    assert llm.failures == [] and llm.images(llm.chat_requests[-1]) == [("image/png", PICTURE)]
    (tool,) = [m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "tool"]
    assert f"[image: PNG, {len(PICTURE)} bytes]" in tool, tool
    assert "[note] the image is not shown to the model: big.png is larger than 1,000 bytes" in tool, tool


async def test_a_tool_event_carries_the_images_the_model_was_shown(shared_daemon, llm):
    """The `tool` event of a file_read that found images carries them for the client to draw: base64 when at most
    about 1 MiB in all, past that what each is and its size."""
    llm.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_read", "args": [name]}
                                                         for name in ("shot.png", "big.png", "more.png")]})),
               Reply.text("three red rectangles"))
    daemon = await shared_daemon(env=llm.env())
    big = PICTURE + b"\0" * 800_000
    for name, data in (("shot.png", PICTURE), ("big.png", big), ("more.png", big)):
        (daemon.workspace / name).write_bytes(data)
    result = await daemon.request("ollie/submit", {"text": "what is in them?"})
    assert result["stop"] == "end"
    (event,) = [e for e in daemon.events if e["role"] == "tool"]
    # Each names the batch's step that read it (`step`: a client shows it there).
    assert event["images"] == [
        {"mime": "image/png", "bytes": len(PICTURE), "data": base64.b64encode(PICTURE).decode(), "step": 0},
        {"mime": "image/png", "bytes": len(big), "data": base64.b64encode(big).decode(), "step": 1},
        {"mime": "image/png", "bytes": len(big), "step": 2}]  # past the 1 MiB: named only


async def test_file_read_never_shows_an_image_through_a_link_or_a_fifo(shared_daemon, llm, tmp_path):
    """A step planted a link to an image outside the workspace and a FIFO named .png: nothing is read through the
    link, nothing hangs, and the model sees no image."""
    outside = tmp_path / "outside.png"
    outside.write_bytes(PICTURE)
    llm.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_read", "args": ["link.png"]},
                                                         {"tool": "file_read", "args": ["pipe.png"]}]})),
               Reply.text("nothing to see"))
    daemon = await shared_daemon(env=llm.env())
    (daemon.workspace / "link.png").symlink_to(outside)
    os.mkfifo(daemon.workspace / "pipe.png")
    result = await daemon.request("ollie/submit", {"text": "look"}, timeout=60)
    assert (result["stop"], result["reply"]) == ("end", "nothing to see")
    assert llm.images(llm.chat_requests[-1]) == []
    (tool,) = [m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "tool"]
    assert "not a regular file" in tool, tool
    assert "symlink" in tool or "not beneath" in tool or "outside" in tool, tool


async def test_file_read_shows_the_model_at_most_eight_images_a_call_and_the_one_it_read(shared_daemon, llm):
    """A hostile model asking for one image twenty times in one call (each up to 5 MiB: a gigabyte of base64 in the
    daemon, the session file and every request) gets the first eight, the rest left out unread with a note; an
    image read with options (`--limit 5 shot.png`) is the one the tool read, not a file named `--limit`."""
    calls = [{"tool": "file_read", "args": ["--limit", "5", "shot.png"]}] * 20
    llm.script(Reply.tool_calls(("call_tool", {"calls": calls})), Reply.text("red"))
    daemon = await shared_daemon(env=llm.env())
    (daemon.workspace / "shot.png").write_bytes(PICTURE)
    result = await daemon.request("ollie/submit", {"text": "look"})
    assert (result["stop"], result["reply"]) == ("end", "red")
    assert llm.images(llm.chat_requests[-1]) == [("image/png", PICTURE)] * 8
    (tool,) = [m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "tool"]
    assert tool.count("the image is not shown to the model: more than 8 images in one result") == 12, tool


async def test_a_round_of_calls_shows_the_model_at_most_eight_images(shared_daemon, llm):
    """Three calls in one reply, four images each: eight reach the model, the other four are a note in the result
    (each call alone keeps under the cap; a reply of many such calls must not add up to hundreds)."""
    llm.script(Reply.tool_calls(*[("call_tool", {"calls": [{"tool": "file_read", "args": [path]}] * 4})
                                  for path in ("shot.png", "./shot.png", "sub/../shot.png")]), Reply.text("red"))
    daemon = await shared_daemon(env=llm.env())
    (daemon.workspace / "shot.png").write_bytes(PICTURE)
    result = await daemon.request("ollie/submit", {"text": "look"})
    assert (result["stop"], result["reply"]) == ("end", "red")
    assert llm.images(llm.chat_requests[-1]) == [("image/png", PICTURE)] * 8
    tools = "".join(m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "tool")
    assert "[4 images left out: more than 8 in one round]" in tools, tools


async def test_a_resumed_history_draws_a_kept_results_images_and_names_a_collapsed_ones(start_daemon, scripted_llm):
    """ollie/context, after a restart: a result the session keeps (a warm batch: file_glob beside the read) has its
    images with their data, as its `tool` event had them; one that collapsed once the model read it (a cold
    file_read) names each, type and size (it had none: the resumed step showed no sign of the picture)."""
    from .test_history_render import resumed

    llm = scripted_llm("openai")
    llm.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_read", "args": ["shot.png"]}]})),
               Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_read", "args": ["shot.png"]},
                                                         {"tool": "file_glob", "args": ["*.png"]}]})),
               Reply.text("two looks at a red rectangle"))
    daemon = await start_daemon(env=llm.env())
    (daemon.workspace / "shot.png").write_bytes(PICTURE)
    session = (await daemon.request("ollie/state", {}))["session"]
    assert (await daemon.request("ollie/submit", {"text": "look twice"}))["stop"] == "end"
    second = await resumed(start_daemon, llm, daemon, session)
    results = [m for m in (await second.request("ollie/context", {"session": session}))["messages"]
               if m["role"] == "tool"]
    assert [r["content"].startswith("[cold result of call_tool collapsed:") for r in results] == [True, False]
    named = {"mime": "image/png", "bytes": len(PICTURE), "step": 0}  # the step of its batch that read it
    assert [r.get("images") for r in results] == [[named], [{**named, "data": base64.b64encode(PICTURE).decode()}]]


async def test_a_prompts_image_is_never_read_through_a_cwd_another_step_swapped_for_a_link(
        shared_daemon, llm, tmp_path):
    """The session's cwd `sub`, swapped by another session's step for a link to the user's pictures: the user's
    `shot.png`, meant beneath the workspace, was read where the link leads and sent to the model. Now the session
    holds its cwd: the workspace's own `shot.png` is read, wherever the step moved it."""
    llm.script(Reply.text("a red rectangle"))
    daemon = await shared_daemon(env=llm.env())
    sub = daemon.workspace / "sub"
    sub.mkdir()
    (sub / "shot.png").write_bytes(PICTURE)
    assert await daemon.request("ollie/setCwd", {"cwd": "sub"}) == {}
    pictures = tmp_path / "Pictures"
    pictures.mkdir()
    (pictures / "shot.png").write_bytes(PICTURE + b"the user's own")
    sub.rename(daemon.workspace / "sub.real")
    sub.symlink_to(pictures)
    result = await daemon.request("ollie/submit", {"text": "look", "images": [{"path": "shot.png"}]})
    assert result["reply"] == "a red rectangle" and llm.images(llm.chat_requests[-1]) == [("image/png", PICTURE)]
