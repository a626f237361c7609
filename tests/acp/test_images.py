"""`image` blocks in session/prompt through the official SDK client: announced, sent to the model in its wire
format, replayed by session/load, refused clearly when bad (-32602) or when the model has no vision."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import acp
import pytest

from ollie.testing import Reply
from tests.pictures import png

PICTURE = png(4, 4, (10, 200, 30))
DATA = base64.b64encode(PICTURE).decode()


async def test_an_image_block_reaches_the_model_and_comes_back_on_load(shared_agent, start_agent_beside,
                                                                       scripted_llm) -> None:
    llm = scripted_llm("anthropic")
    llm.script(Reply.text("a green square"))
    agent = await start_agent_beside(env=llm.env())
    assert agent.init.agent_capabilities.prompt_capabilities.image is True
    sid = await agent.new()
    response = await agent.prompt(sid, "what is this?", acp.image_block(DATA, "image/png"))
    assert response.stop_reason == "end_turn" and agent.client.text(sid) == "a green square"
    assert llm.images(llm.chat_requests[-1]) == [("image/png", PICTURE)]
    agent.proc.stdin.close()
    await asyncio.wait_for(agent.proc.wait(), 30)  # stdin closed: the agent saves and exits

    second = await shared_agent()  # an agent running on (on another model): the load replays, asks none
    await asyncio.wait_for(second.conn.load_session(cwd=str(agent.workspace), session_id=sid, mcp_servers=[]), 30)
    replayed = [u.content for u in second.client.of(sid, "user_message_chunk")]
    assert [(c.type, getattr(c, "data", None)) for c in replayed] == [("text", None), ("image", DATA)]


async def test_a_prompts_images_replay_on_load_capped_as_a_steps_are(shared_agent, start_agent_beside,
                                                                     scripted_llm) -> None:
    # session/load sent a prompt's images whole, up to 8 x 5 MiB of base64 in one replay: past about 1 MiB each is
    # named with its size, as a step's images are.
    llm = scripted_llm("anthropic")
    llm.script(Reply.text("three"))
    agent = await start_agent_beside(env=llm.env())
    sid = await agent.new()
    big = base64.b64encode(PICTURE + b"\0" * 800_000).decode()
    blocks = [acp.image_block(data, "image/png") for data in (DATA, big, big)]
    assert (await agent.prompt(sid, "these", *blocks)).stop_reason == "end_turn"
    assert [len(data) for _, data in llm.images(llm.chat_requests[-1])] == [len(PICTURE), *[len(PICTURE) + 800_000] * 2]
    agent.proc.stdin.close()
    await asyncio.wait_for(agent.proc.wait(), 30)

    second = await shared_agent()  # an agent running on (on another model): the load replays, asks none
    await asyncio.wait_for(second.conn.load_session(cwd=str(agent.workspace), session_id=sid, mcp_servers=[]), 30)
    replayed = [u.content for u in second.client.of(sid, "user_message_chunk")]
    kb = round((len(PICTURE) + 800_000) / 1024)
    assert [getattr(c, "data", None) or c.text for c in replayed] == [
        "these", DATA, big, f"[image: image/png, {kb} KB, not sent]"]


async def test_an_embedded_image_file_goes_as_an_image(shared_agent, llm) -> None:
    from acp.schema import BlobResourceContents, EmbeddedResourceContentBlock

    llm.script(Reply.text("seen"))
    agent = await shared_agent()
    sid = await agent.new()
    embedded = EmbeddedResourceContentBlock(type="resource", resource=BlobResourceContents(
        uri=(agent.workspace / "shot.png").as_uri(), blob=DATA, mime_type="image/png"))
    await agent.prompt(sid, "and this file?", embedded)
    assert llm.images(llm.chat_requests[-1]) == [("image/png", PICTURE)]
    sent = llm.chat_requests[-1].body["messages"][-1]["content"][0]["text"]
    assert "File: shot.png (an image: sent with the prompt)" in sent and "binary" not in sent


async def test_a_bad_image_block_is_invalid_params_naming_it(shared_agent, llm) -> None:
    llm.script(Reply.text("still here"))
    agent = await shared_agent()
    sid = await agent.new()
    for data, mime, why in [
        (base64.b64encode(b"#!/bin/sh\nrm -rf ~\n").decode(), "image/png", "not a PNG, JPEG, GIF or WebP"),
        (DATA, "image/jpeg", "says it is image/jpeg but its bytes are image/png"),
        ("not base64 at all!", "image/png", "not valid base64"),
    ]:
        with pytest.raises(acp.RequestError) as caught:
            await agent.prompt(sid, "look", acp.image_block(data, mime))
        assert caught.value.code == -32602 and "prompt[1]" in str(caught.value.data) and why in str(caught.value.data)
    assert llm.chat_requests == []  # nothing went to the model
    assert (await agent.prompt(sid, "hi")).stop_reason == "end_turn"


async def test_a_huge_image_is_refused_before_it_is_decoded(start_agent, llm) -> None:
    agent = await start_agent(env={**llm.env(), "OLLIE_MAX_IMAGE_BYTES": "1000"})
    sid = await agent.new()
    with pytest.raises(acp.RequestError) as caught:
        await agent.prompt(sid, acp.image_block(base64.b64encode(b"\0" * 100_000).decode(), "image/png"))
    assert caught.value.code == -32602 and "limit on images" in str(caught.value.data)


async def test_a_model_without_vision_says_so(start_agent, scripted_llm) -> None:
    llm = scripted_llm("ollama", vision=False)
    agent = await start_agent(env=llm.env())
    sid = await agent.new()
    response = await agent.prompt(sid, "what is this?", acp.image_block(DATA, "image/png"))
    assert response.stop_reason == "end_turn"
    assert "does not take images" in agent.client.text(sid)
    assert llm.chat_requests == []


async def test_too_many_images_are_refused_before_any_is_decoded(shared_agent, llm) -> None:
    agent = await shared_agent()
    sid = await agent.new()
    with pytest.raises(acp.RequestError) as caught:
        await agent.prompt(sid, "look", *[acp.image_block("not base64 at all!", "image/png")] * 9)
    assert caught.value.code == -32602 and "9 images in one prompt" in str(caught.value.data), caught.value.data


async def test_an_image_with_a_command_is_refused_not_dropped(shared_agent, llm) -> None:
    # As the daemon's ollie/submit: a command or !shell line takes no images; the picture was silently lost.
    agent = await shared_agent()
    sid = await agent.new()
    with pytest.raises(acp.RequestError) as caught:
        await agent.prompt(sid, "/usage", acp.image_block(DATA, "image/png"))
    assert caught.value.code == -32602 and "takes no images" in str(caught.value.data), caught.value.data
    assert (await agent.prompt(sid, "/usage")).stop_reason == "end_turn"


async def test_a_steps_images_reach_the_client_live_and_on_load(shared_agent, start_agent_beside,
                                                                scripted_llm) -> None:
    """A file_read of images: its step's update carries each as ACP image content while they come to about 1 MiB, one
    past it named with its size, not sent (the client saw no picture); on session/load a result the session keeps (a
    warm batch) replays its image, one that collapsed once the model read it names each (it replayed nothing)."""
    llm = scripted_llm("openai")
    reads = [{"tool": "file_read", "args": [name]} for name in ("shot.png", "big.png", "more.png")]
    llm.script(Reply.tool_calls(("call_tool", {"calls": [reads[0], {"tool": "file_glob", "args": ["*.png"]}]})),
               Reply.tool_calls(("call_tool", {"calls": reads})),  # last: the megabytes read cause no compaction
               Reply.text("red rectangles"))
    agent = await start_agent_beside(env=llm.env())
    big = PICTURE + b"\0" * 800_000
    for name, data in (("shot.png", PICTURE), ("big.png", big), ("more.png", big)):
        (agent.workspace / name).write_bytes(data)
    sid = await agent.new()
    assert (await agent.prompt(sid, "look")).stop_reason == "end_turn"

    def images(client: Any) -> list[list[tuple[str, str, str]]]:
        """Each step's image content, in order of the steps: (type, mime, data), or ("text", the line, "")."""
        blocks = [[c.content for c in u.content or [] if c.type == "content"]
                  for u in client.of(sid, "tool_call_update") if u.status == "completed"]
        return [[("image", b.mime_type, b.data) if b.type == "image" else ("text", b.text, "") for b in step
                 if b.type == "image" or b.text.startswith("[image:")] for step in blocks]

    shot = ("image", "image/png", DATA)
    kb = round(len(big) / 1024)
    # Each image on the step that read it (all went on the batch's last step: here, file_glob's).
    assert images(agent.client) == [[shot], [], [shot], [("image", "image/png", base64.b64encode(big).decode())],
                                    [("text", f"[image: image/png, {kb} KB, not sent]", "")]]
    agent.proc.stdin.close()
    await asyncio.wait_for(agent.proc.wait(), 30)  # stdin closed: the agent saves and exits

    second = await shared_agent()  # an agent running on (on another model): the load replays, asks none
    await asyncio.wait_for(second.conn.load_session(cwd=str(agent.workspace), session_id=sid, mcp_servers=[]), 30)
    named = [[("text", f"[image: image/png, {size} KB, not sent]", "")] for size in (1, kb, kb)]
    assert images(second.client) == [[shot], [], *named]


async def test_a_saved_result_many_calls_claim_replays_its_images_once(start_agent, llm) -> None:
    """Round 32: a session log not of this ollie's making (a teammate's row in a shared store, a copied file) gives
    one call id to 60 calls and one result with an image: session/load replayed that result, its image and its text,
    under every call (the replay as large as the calls times the result, whatever the log's size)."""
    from ollie import paths
    from ollie.backend.types import Image, Message, ToolCall
    from ollie.sessions.persist import SessionFile
    from ollie.sessions.session import Session

    big = base64.b64encode(PICTURE + b"\0" * 60_000).decode()
    session = Session(agent="default")
    session.messages.append(Message("user", "look"))
    for n in range(60):  # each call answered; the last answer is the one every call finds under its id
        session.messages += [Message("assistant", "", tool_calls=[ToolCall("c1", "execute_code", '{"steps": []}')]),
                             Message("tool", "shown " * 600 if n == 59 else "x", tool_call_id="c1", name="execute_code",
                                     images=[Image("image/png", big)] if n == 59 else [])]
    session.messages.append(Message("assistant", "done"))
    SessionFile(paths.sessions_dir(), session.id).save(session)
    agent = await start_agent(env=llm.env())
    await asyncio.wait_for(agent.conn.load_session(cwd=str(agent.workspace), session_id=session.id, mcp_servers=[]), 60)
    shown = [c.content for u in agent.client.of(session.id, "tool_call_update") for c in u.content or []
             if c.type == "content"]
    assert len(agent.client.of(session.id, "tool_call")) == 60
    assert [b.data for b in shown if b.type == "image"] == [big]
    assert sum(b.text.count("shown") for b in shown if b.type == "text") <= 600


async def test_a_prompt_the_client_did_not_send_comes_with_its_images() -> None:
    # A queued prompt's `user` event (a postTurn hook's, another window's) carries its images: ACP sent its text alone.
    from pathlib import Path
    from types import SimpleNamespace

    from ollie.agent.events import Bus, Event
    from ollie.backend.types import Image
    from ollie_acp.updates import Update, UpdateForwarder

    bus, sent = Bus(), []

    async def send(update: Update) -> None:
        sent.append(update)

    big = base64.b64encode(PICTURE + b"\0" * 1_200_000).decode()  # past what one update sends: named, not sent
    forwarder = UpdateForwarder(SimpleNamespace(bus=bus, cwd=Path("/")), send)  # type: ignore[arg-type]
    forwarder.start()
    bus.publish(Event("user", content="and these?", images=(Image("image/png", DATA), Image("image/png", big))))
    await asyncio.wait_for(forwarder.drained(), 5)
    await forwarder.stop()
    kb = round((len(PICTURE) + 1_200_000) / 1024)
    assert [(u.session_update, getattr(u.content, "data", None) or u.content.text) for u in sent] == [
        ("user_message_chunk", "and these?"), ("user_message_chunk", DATA),
        ("user_message_chunk", f"[image: image/png, {kb} KB, not sent]")]


async def test_image_prompts_waiting_in_every_session_are_bounded_together_and_freed_as_they_end(
        start_agent, llm, sleeper) -> None:
    # Each prompt waiting for its session's turn held its images (the daemon bounds them: SessionTable.take_images), so a
    # client sending big image prompts to many busy sessions made `ollie acp` hold without end.
    guess = len(DATA) * 3 // 4  # each image counted at its base64's size decoded, before any is decoded
    agent = await start_agent(env={**llm.env(), "OLLIE_MAX_IMAGE_BYTES": str(guess)})  # 4 prompts of 8 at the cap
    first, a = await sleeper.start(agent, llm, "61.31")
    second, b = await sleeper.start(agent, llm, "61.32")
    eight = [acp.image_block(DATA, "image/png")] * 8
    sent = [asyncio.ensure_future(agent.prompt(sid, "look", *eight)) for sid in (first, first, second, second, second)]
    done, waiting = await asyncio.wait(sent, timeout=30, return_when=asyncio.FIRST_COMPLETED)
    (refused,) = done
    error = refused.exception()
    assert isinstance(error, acp.RequestError) and error.code == -32010, error
    assert "of prompts waiting in this agent's sessions are over the" in str(error), error
    assert error.data == {"sessionId": first if sent.index(refused) < 2 else second}
    assert len(waiting) == 4 and not any(task.done() for task in waiting)
    for sid in (first, second):
        await agent.conn.cancel(session_id=sid)
    assert {(await task).stop_reason for task in [a, b, *waiting]} == {"cancelled"}
    llm.script(Reply.text("a green square"))  # none holds its images now: a prompt of eight is taken again
    assert (await agent.prompt(second, "look", *eight)).stop_reason == "end_turn"
