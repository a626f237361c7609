"""The ollie/* methods of a prompt and its session's settings: each parses its params, calls the Core, shapes the result.

Importing it registers every method (review and session ones in their own modules); `call` runs one."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from ollie.agent import inbox
from ollie.agent.editorcontext import context_labels
from ollie.backend import images
from ollie.backend.types import Image
from ollie.errors import OllieError
from ollie.jsonpieces import INLINE_MESSAGES, encoded
from ollie_lsp import reviewmethods, sessionmethods  # noqa: F401 - they register their methods
from ollie_lsp.dispatch import METHODS, call, method  # noqa: F401 - the table and its runner, for the daemon
from ollie_lsp.documents import read_through_link
from ollie_lsp.editor import context_documents, is_command, with_context
from ollie_lsp.errors import InvalidParams, QueueFull, invalid_params, refused
from ollie_lsp.params import (
    CommandParams,
    ContextParams,
    ImageItem,
    InterruptParams,
    NoParams,
    QueueParams,
    SessionParams,
    SetApprovalParams,
    SetCwdParams,
    SetEnvParams,
    SetGenerationParamsParams,
    SubmitParams,
    TextParams,
)
from ollie_lsp.server import OllieServer
from ollie_lsp.sessions import LiveSession, SubmitHandle, editor_resume, failed_field

# The most messages one ollie/context answers (PROTOCOL.md): a client pages through a longer history with `next`.
CONTEXT_PAGE_MAX = 1000


async def _with_context(ls: OllieServer, live: LiveSession, p: SubmitParams | TextParams) -> str:
    """The prompt with its context items; an MCP resource among them is read through its server."""
    resources: list[str | None] = []
    contexts = p.contexts if not is_command(p.text) else []
    for n, context in enumerate(contexts):
        if context.mcp_server is None:
            resources.append(None)
            continue
        with invalid_params(f"context[{n}].mcpServer"):
            resources.append(await live.core.mcp_read_resource(context.mcp_server, context.uri))
    lookup = await context_documents(ls.workspace.text_documents, contexts, live.core.cwd, read_through_link)
    return with_context(p.text, p.contexts, cwd=live.core.cwd, lookup=lookup, resources=resources)


@method("ollie/submit", SubmitParams)
async def submit(ls: OllieServer, p: SubmitParams) -> dict[str, Any]:
    """Run a prompt (or a command) to its end."""
    command = is_command(p.text)
    live = await ls.table.get(p.session, prompt=not command)
    handle = SubmitHandle()
    # Waiting from its arrival: a Stop (or a cancel) while its checks below await (the archive's store read) drops
    # it as one waiting for its turn; else a submit sent before the Stop ran after it.
    live.waiting.add(handle)
    try:
        with ls.on_cancel(lambda: live.cancel(handle)):
            await ls.table.writable(p.session)
            pictures = await _prompt_images(ls, live, p, handle)
            text = await _with_context(ls, live, p)
            live.waiting.discard(handle)  # `submit` holds it from here (a turn's waits there again)
            return await live.submit(text, pictures, handle=handle, is_command=command)
    finally:
        live.waiting.discard(handle)


async def _prompt_images(ls: OllieServer, live: LiveSession, p: SubmitParams | QueueParams, holder: inbox.Held) -> list[Image]:
    """A submitted or queued prompt's images (`_images`, counted to `holder`: -32010 past what the daemon holds);
    -32602 for images with a command, or a prompt of nothing."""
    pictures = await _images(p.images or [], cwd=live.core.cwd, take=partial(ls.table.take_images, holder, live.id))
    if pictures and is_command(p.text):
        raise InvalidParams("images: a command or !shell line takes no images")
    if not p.text.strip() and not pictures and not p.contexts:  # as ACP: no empty message to the model
        raise InvalidParams("text: empty: give a prompt, images or context")
    return pictures


async def _images(items: list[ImageItem], *, cwd: Path, take: Callable[[int], None]) -> list[Image]:
    """The submit's images: files read beneath the session's directory through the chokepoint (no symlinks,
    FIFOs or devices; capped), pasted bytes checked alike; -32602 naming the item that is not an image. `take`
    counts their bytes as held before any is read (a refusal raises), then what each came to."""
    pictures: list[Image] = []
    with invalid_params("images", images.ImageError):
        images.checked(items)  # before reading or decoding any
    for index, item in enumerate(items):
        where = f"images[{index}]"
        if (item.path is None) == (item.data is None):
            raise InvalidParams(f"{where}: give either path or data")
    # All taken before any is read (one prompt's in part starved another's: both were refused), a file's at the cap.
    guesses = [images.max_image_bytes() if item.data is None else len(item.data) * 3 // 4 for item in items]
    take(sum(guesses))
    for index, (item, guess) in enumerate(zip(items, guesses, strict=True)):
        where = f"images[{index}]"
        try:
            if item.path is not None:
                pictures.append(await images.read(cwd, item.path))  # the session's real cwd, held open
            else:
                # Decoding megabytes of base64 is not for the event loop.
                pictures.append(await asyncio.to_thread(images.from_base64, item.data or "", mime=item.mime_type or "",
                                                        name=item.name or "the image"))
        except images.ImageError as exc:
            raise InvalidParams(f"{where}.{'path' if item.path is not None else 'data'}: {exc}") from None
        take(pictures[-1].size - guess)
    with invalid_params("images", images.ImageError):
        return images.checked(pictures)


@method("ollie/interrupt", InterruptParams)
async def interrupt(ls: OllieServer, p: InterruptParams) -> dict[str, Any]:
    """Stop the session (PROTOCOL.md): once what ran has returned, whether anything did."""
    live = await ls.table.get(p.session)
    return {"interrupted": await live.stop(p.reason)}


async def _arrived(ls: OllieServer, p: TextParams) -> tuple[LiveSession, str, int]:
    """A queued or injected prompt's session and text once its checks pass, and the session's Stops when it arrived:
    one that came while its checks awaited (the archive's store read, a queued prompt's images) ended the turns it was
    sent for, so it is held as what they queued is."""
    live = await ls.table.get(p.session)
    stops = live.stops
    await ls.table.writable(p.session)
    return live, await _with_context(ls, live, p), stops


@method("ollie/inject", TextParams)
async def inject(ls: OllieServer, p: TextParams) -> dict[str, Any]:
    """Add text to the next tool result of the running turn."""
    if p.images:  # refused, not dropped
        raise InvalidParams("images: ollie/inject takes no images (injected text joins a tool result; queue the prompt)")
    live, text, stops = await _arrived(ls, p)
    with refused(QueueFull, inbox.QueueFull, {"session": live.id}):
        if live.stops != stops:
            live.core.queue(text, held=True)
        else:
            live.core.inject(text)
    return {}


@method("ollie/queue", QueueParams)
async def queue(ls: OllieServer, p: QueueParams) -> dict[str, Any]:
    """Defer a prompt until the running turn ends (PROTOCOL.md: one queued for turns that ended meanwhile runs)."""
    arrived = await ls.table.get(p.session)
    stops = arrived.stops  # a Stop while it waits for the queueing lock holds it too
    async with arrived.queueing:  # one at a time (see LiveSession.queueing)
        live, text, _ = await _arrived(ls, p)
        with refused(QueueFull, inbox.QueueFull, {"session": live.id}):
            live.core.queue_room(text)  # a full queue refuses before the images are read
            holder = inbox.Held()  # counted until queued (then its session's queue counts them)
            ls.table.reading.add(holder)
            try:
                pictures = await _prompt_images(ls, live, p, holder)
                try:
                    return {"depth": await live.queue(text, pictures, seen=p.seen, held=live.stops != stops,
                                                      context=[c.wire() for c in p.contexts])}
                finally:
                    del pictures  # a refusal's traceback holds this frame: its images go now, not at a collection
            finally:
                ls.table.reading.discard(holder)


@method("ollie/popQueue", SessionParams)
async def pop_queue(ls: OllieServer, p: SessionParams) -> dict[str, Any]:
    """Take back the latest queued prompt, with its images and context items, for the client's input."""
    live = await ls.table.writable(p.session)
    text, pictures, context = live.core.pop_queue() or (None, (), ())
    return {"text": text, "images": [{"data": i.data, "mimeType": i.mime} for i in pictures], "context": list(context)}


@method("ollie/queue/run", SessionParams)
async def queue_run(ls: OllieServer, p: SessionParams) -> dict[str, Any]:
    """Run the queued prompts now, each a turn of its own (after an interrupt they wait for this)."""
    live = await ls.table.writable(p.session)
    async with live.turn_lock:
        await live.recorded_before_a_turn()
        await live.core.run_queue()
    return {"queued": live.core.queued()}


@method("ollie/queue/clear", SessionParams)
async def queue_clear(ls: OllieServer, p: SessionParams) -> dict[str, Any]:
    """Drop every queued prompt."""
    live = await ls.table.writable(p.session)
    return {"cleared": live.core.clear_queue()}


@method("ollie/state", SessionParams)
async def state(ls: OllieServer, p: SessionParams) -> dict[str, Any]:
    """The session's state, model, usage and cost, and whether its backend is usable."""
    live = await ls.table.get(p.session)
    health = await live.core.backend_health()  # first: the state is as late as the answer (a turn may start meanwhile)
    return {**live.state_result(), "backendStatus": health}


@method("ollie/context", ContextParams)
async def context(ls: OllieServer, p: ContextParams) -> dict[str, Any]:
    """The system prompt and a page of the messages the next request would send, with their total."""
    from ollie.agent.history import page_records, prompt_turns, turn_marks, wire_messages  # not a first token's
    live = await ls.table.get(p.session)
    core = live.core
    # The prompt commands wait for the first need (session/new does not run them): this is one.
    system_prompt = await core.ready_prompt()
    # The history, the turn's state and the `seq` of the last event sent, read together on the loop once every
    # event published has been sent: a turn may begin or end at any await, and a client draws from them as one
    # (the events after `seq` are what the history does not hold yet). The copy is of references.
    read: asyncio.Future[tuple[list[Any], bool, bool, int, Any, dict[int, int], tuple[str, str], int]] = \
        asyncio.get_running_loop().create_future()

    def read_history(seq: int) -> None:
        if not read.done():  # else this request was cancelled meanwhile
            # A turn whose prompt is not saved yet: the history holds nothing of it, from its `turn` start on.
            held = live.forwarder.turn_started - 1 if core.is_prompting else seq
            history, session = core.context(), core.session
            # The running turn's files are counted as it ends, but shown from its `turn` end event on (after `seq`).
            ended = len(session.turn_starts) - (core.is_running and not core.is_prompting)
            saved = len(session.messages)  # the session's own, last: a memory message may come first
            first = len(history) - saved
            # The turns' counts, marked in the thread: which of them were undone since is read from all the notes.
            counts = (list(session.turn_starts), session.turn_changed[:ended], saved, first, list(session.review_notes),
                      dict(session.turn_unknown), list(session.plans_before))
            turns = prompt_turns(session.turn_starts, saved, first=first)
            read.set_result((history, core.is_running, core.is_answering, held, counts, turns, core.streaming, first))

    live.forwarder.after_sent(read_history)
    messages, running, answering, seq, counts, turns, (so_far, reasoning), memory = await read
    # Bounded, asked or not: a whole long history was tens of MB to build and send (the client follows `next`).
    end = min(len(messages), p.offset + min(CONTEXT_PAGE_MAX, len(messages) if p.limit is None else p.limit))
    # The page's step records too, here: a running turn adds to the session's maps (and a /clear empties them)
    # while the thread reads. O(page), not O(history).
    outcomes, network, pictures, files = page_records(messages[p.offset:end], core.session.step_outcomes,
                                                      core.session.step_network, core.session.step_images,
                                                      core.session.step_files)
    cwd = core.cwd

    def answer() -> dict[str, Any]:
        # A page's pairing of calls with results across the whole history is O(history): in a thread (it only
        # reads), not on the shared loop.
        page = wire_messages(messages, p.offset, end, cwd=cwd, kind_of=core.step_kinds, outcomes=outcomes,
                             network=network, images=pictures, files=files)
        starts, changed, saved, first, pending, reasons, plans = counts
        notes = [(at - first, m.notes) for at, m in enumerate(messages) if m.notes] + [(saved, n) for n in pending]
        marks = turn_marks(starts, changed, saved, first=first, notes=notes, reasons=reasons, plans=plans)
        for index, message in enumerate(page, p.offset):
            if message.get("role") == "user" and isinstance(content := message.get("content"), str):
                if labels := context_labels(content):
                    message["contextLabels"] = labels
            if index in marks:
                message["turnChanges"] = marks[index]
            if index in turns:
                message["turn"] = turns[index]
            if index < memory:  # the agent's notes of what compaction replaced: no prompt of the user's
                message["memory"] = True
        result: dict[str, Any] = {"systemPrompt": system_prompt, "messages": page, "total": len(messages),
                                  "running": running, "answering": answering, "seq": seq}
        if end < len(messages):
            result["next"] = end
        if answering and (so_far or reasoning):
            result["reply"] = {"content": so_far, "reasoning": reasoning}
        # A page of many (long) messages, or a step's images (up to ~1 MiB of base64), can be MBs of JSON: encoded
        # here, in pieces, not by one dumps on the loop.
        inline = len(page) <= INLINE_MESSAGES and not any(m["role"] == "tool" and "images" in m for m in page)
        return result if inline else encoded(lambda: result)

    return await asyncio.to_thread(answer)


@method("ollie/command", CommandParams)
async def command(ls: OllieServer, p: CommandParams) -> dict[str, Any]:
    """Run one slash command or `!shell` line."""
    if not is_command(p.line):
        raise InvalidParams("line: a command is /name ... (slash command) or !... (shell); /usr/bin/x ... is a prompt")
    live = await ls.table.writable(p.session)
    result = await live.core.submit(p.line.strip())
    return {"output": result.reply, **({"error": result.error} if result.error else {}), **failed_field(result)}


@method("ollie/listModels", SessionParams)
async def list_models(ls: OllieServer, p: SessionParams) -> dict[str, Any]:
    """The session's backend's models and the one in use."""
    live = await ls.table.get(p.session)
    core = live.core
    out: dict[str, Any] = {"backend": core.backend_name, "server": core.backend_said, "current": core.model_name,
                           "models": [], "error": ""}
    try:
        out["models"] = await core.list_models()
    except OllieError as exc:
        # An unreachable backend still leaves the picker usable: the user can type a name.
        out["error"] = str(exc)
    return out


@method("ollie/listAgents", SessionParams)
async def list_agents(ls: OllieServer, p: SessionParams) -> dict[str, Any]:
    """The agent configs the session can switch to, with their descriptions."""
    from ollie.agent.commands_info import agent_infos  # what /agent lists too: loaded by the first who asks

    live = await ls.table.get(p.session)
    infos = await asyncio.to_thread(agent_infos, live.core.agents_dirs)  # reads every agent config file
    agents = [{"name": a.name, "description": a.description, "error": a.error} for a in infos]
    return {"current": live.core.agent_name, "agents": agents}


@method("ollie/mcp/list", SessionParams)
async def mcp_list(ls: OllieServer, p: SessionParams) -> dict[str, Any]:
    """The session's MCP servers: name, transport, state (starting, ready, failed with why), tools, prompts."""
    live = await ls.table.get(p.session)
    return {"servers": await live.core.mcp_check()}


@method("ollie/listCommands", NoParams)
async def list_commands(ls: OllieServer, _: NoParams) -> dict[str, Any]:
    """The slash commands: name, usage, description, and whether they lose what the session holds."""
    from ollie.agent.commands import COMMANDS, summary_of  # the commands load with the first command or this list

    commands = [
        {"name": f"/{name}", "args": c.usage.partition(" ")[2], "description": summary_of(c, editor_resume(ls.client_name)),
         "destructive": c.destructive}
        for name, c in COMMANDS.items()
    ]
    return {"commands": commands}


@method("ollie/setCwd", SetCwdParams)
async def set_cwd(ls: OllieServer, p: SetCwdParams) -> dict[str, Any]:
    """Move the session to another directory."""
    live = await ls.table.writable(p.session)
    with invalid_params("cwd"):
        await live.core.set_cwd(p.cwd)
    return {}


@method("ollie/setEnv", SetEnvParams)
async def set_env(ls: OllieServer, p: SetEnvParams) -> dict[str, Any]:
    """Set a variable for the session's tools, hooks and prompt commands."""
    live = await ls.table.writable(p.session)
    live.core.set_env(p.key, p.value)
    return {}


@method("ollie/setGenerationParams", SetGenerationParamsParams)
async def set_generation_params(ls: OllieServer, p: SetGenerationParamsParams) -> dict[str, Any]:
    """Override sampling parameters for later requests."""
    live = await ls.table.writable(p.session)
    live.core.set_generation_params(p.params)
    return {}


@method("ollie/setApproval", SetApprovalParams)
async def set_approval(ls: OllieServer, p: SetApprovalParams) -> dict[str, Any]:
    """Switch the session's approval mode (saved with the session)."""
    live = await ls.table.writable(p.session)
    with invalid_params("approval"):
        live.core.set_approval(p.approval)
    return {}
