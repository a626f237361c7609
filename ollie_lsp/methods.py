"""The ollie/* methods: each one parses its params, calls the session's Core, shapes the result."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pygls.exceptions import JsonRpcException

from ollie import beneath
from ollie.agent import inbox
from ollie.agent.editorcontext import context_labels
from ollie.agent.review import ReviewError
from ollie.agent.stepchanges import step_changes, text_bytes
from ollie.agent.steps import Diff
from ollie.agent.undo import undo
from ollie.backend import images
from ollie.backend.types import Image
from ollie.errors import ConfigError, OllieError
from ollie.jsonpieces import INLINE_MESSAGES, encoded
from ollie.paths import sessions_dir
from ollie.sessions.types import ListOptions
from ollie.tools.documents import plain_path_beneath, while_no_step_writes
from ollie.workspace.bounds import LISTED, Bound
from ollie.workspace.errors import StaleChange, WorkspaceError
from ollie_lsp.documents import read_through_link
from ollie_lsp.editor import context_documents, is_command, with_context
from ollie_lsp.errors import InternalError, InvalidParams, QueueFull, Stale, invalid_params, refused
from ollie_lsp.idlecollect import collect_and_freeze
from ollie_lsp.params import (
    ChangesParams,
    CommandParams,
    ContextParams,
    ImageItem,
    InterruptParams,
    NoParams,
    QueueParams,
    ReviewUndoParams,
    RewindParams,
    SessionForkParams,
    SessionIdParams,
    SessionListParams,
    SessionNewParams,
    SessionParams,
    SessionRenameParams,
    SetApprovalParams,
    SetCwdParams,
    SetEnvParams,
    SetGenerationParamsParams,
    SubmitParams,
    TextParams,
    parse,
)
from ollie_lsp.records import check_kind, info_to_wire, rpc_errors
from ollie_lsp.server import OllieServer
from ollie_lsp.sessions import LiveSession, SubmitHandle, editor_resume, failed_field

if TYPE_CHECKING:
    from ollie.workspace.types import FileChange

logger = logging.getLogger("ollie.lsp.methods")
P = TypeVar("P")
Handler = Callable[[OllieServer, Any], Awaitable[dict[str, Any]]]
METHODS: dict[str, Handler] = {}
# The most messages one ollie/context answers (PROTOCOL.md): a client pages through a longer history with `next`.
CONTEXT_PAGE_MAX = 1000


def method(name: str, shape: type[P]) -> Callable[[Callable[[OllieServer, P], Awaitable[dict[str, Any]]]], Handler]:
    """Register a handler as the ollie/* method `name`; it gets the params checked into `shape` (-32602).

    A method aimed at one session is answered after the events that session published so far went out (PROTOCOL.md):
    those it caused (a command's output, a state change) come before its answer, whichever handler it was.
    """

    def register(handler: Callable[[OllieServer, P], Awaitable[dict[str, Any]]]) -> Handler:
        async def run(ls: OllieServer, raw: Any) -> dict[str, Any]:
            p = parse(shape, raw)
            if not isinstance(p, (SessionParams, SessionIdParams)):
                return await handler(ls, p)
            try:
                result = await handler(ls, p)
            except Exception:  # an error answer too (not a cancelled request: it goes at once)
                await _events_sent(ls, p.session)
                raise
            await _events_sent(ls, p.session)
            return result

        METHODS[name] = run
        return run

    return register


async def _events_sent(ls: OllieServer, session: str | None) -> None:
    # Not initialized: the handler failed for that, and there is no table to build.
    if ls.initialized:
        await ls.table.events_sent(session)


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


def _file_to_wire(change: FileChange, *, in_editor: bool = False) -> dict[str, Any]:
    from ollie.workspace.diff import line_counts  # difflib, loaded by the first review, not at start-up

    added, removed = line_counts(change)
    return {**Diff.of(change).to_wire(), "status": change.status, "binary": change.binary, "added": added,
            "removed": removed, "hunks": [h.to_dict() for h in change.hunks], "inEditor": in_editor}


@contextmanager
def _review_errors() -> Iterator[None]:
    """The engine's refusals as protocol errors: a stale file -32003, anything else -32602 naming the field."""
    try:
        yield
    except StaleChange as exc:
        raise Stale(exc.path, exc.reason) from None
    except ReviewError as exc:
        raise InvalidParams(f"{exc.field}: {exc}") from None
    except WorkspaceError as exc:
        raise InvalidParams(f"session: {exc}") from None


@method("ollie/changes", ChangesParams)
async def changes(ls: OllieServer, p: ChangesParams) -> dict[str, Any]:
    """The files a turn (default: the last) changed, each with its hunks: the first of them (LISTED), or one `path`."""
    live = await ls.table.get(p.session)
    # The last turn read once, now: a turn that starts while this diffs is not the one it looked back from.
    if (last := p.turn or len(live.core.session.turn_starts)) == 0:
        return {"turn": None, "files": []}
    with _review_errors():
        turn = await live.core.review.changes(last, ignored=p.ignored, path=p.path, changed=p.changed,
                                              bound=LISTED if p.path is None else None)
        # The steps' own diffs share the answer's bound with the listing: one message of a few MiB, not twice that.
        steps = await step_changes(live.core.session, live.core.review.checkpoints(), turn.turn, bound=Bound(
            LISTED.files, LISTED.text_bytes - text_bytes(turn.changes))) if p.path is None else {}
    files = [_file_to_wire(c, in_editor=c.path in turn.in_editor) for c in turn.changes]
    return {"turn": turn.turn, "files": files, **({"more": turn.more} if turn.more else {}),
            **({"last": last} if p.changed else {}),
            **({"steps": {i: [Diff.of(c).to_wire() for c in s] for i, s in steps.items()}} if steps else {})}


@method("ollie/review/undo", ReviewUndoParams)
async def review_undo(ls: OllieServer, p: ReviewUndoParams) -> dict[str, Any]:
    """Revert one hunk (or the whole file) of a turn's change: in the editor's buffer when open there, else on disk."""
    live = await ls.table.writable(p.session)
    core = live.core
    core.owners_only("undo its changes")  # the undo's note to the model is saved in the owner's history
    # Only a file beneath the session's root, with no symlink on the way, is looked up in the editor.
    target = await plain_path_beneath(core.cwd, p.path) if ls.documents.can_apply() else None
    # Found by the name the editor knows it by, the cwd's (`target` is where its folder is now): with the cwd swapped
    # for a link since the turn, the buffer is still found, and the review refuses the undo saying so (`beneath.moved`).
    doc = ls.documents.find(core.cwd / beneath.relative(core.cwd, p.path)) if target is not None else None
    if doc is not None and await read_through_link(doc):
        doc = None  # its text came through a link (a key a step linked in): undone on disk, never saved from it

    async def apply(change: FileChange, text: str) -> str | None:
        open_doc = doc
        assert open_doc is not None and target is not None
        # As an agent's edit: the editor's save follows a link, so no step may put one there until it has saved.
        result = await while_no_step_writes(core.cwd, target, lambda _: ls.documents.apply_edit(
            open_doc, text, open_doc.version or 0, label="ollie: undo"))
        return (result.formatted or text) if result.status == "applied" else None

    with _review_errors():
        undone = await undo(core.review, p.path, p.hunk, turn=p.turn, editor_text=doc.source if doc else None,
                            apply=apply if doc else None)
    return {"path": undone.path, "hunk": undone.hunk, "text": undone.text, "inEditor": undone.in_editor}


@method("ollie/rewind", RewindParams)
async def rewind(ls: OllieServer, p: RewindParams) -> dict[str, Any]:
    """Files and conversation back to before a turn (default: the last); `undo` undoes the last rewind."""
    live = await ls.table.writable(p.session)
    with _review_errors(), invalid_params("session", RuntimeError):
        done = await (live.core.rewind_undo() if p.undo else live.core.rewind(p.turn))
    buffers = [{"path": b.path, "status": b.status, **({"reason": b.reason} if b.reason else {})} for b in done.buffers]
    return {"turn": done.turn, "files": done.files, "buildOutput": list(done.build_output), "messages": done.messages,
            "turns": done.turns, "buffers": buffers}


@method("ollie/session/new", SessionNewParams)
async def session_new(ls: OllieServer, p: SessionNewParams) -> dict[str, Any]:
    """Start another session (its own Core)."""
    from ollie.agent.setup import session_dir  # (the session's set-up, loaded with the first session, not at start)

    kind = check_kind(p.kind or "chat")
    await ls.sessions_dir()  # the folders walked (a link among them is no guard); all refused: -32603, no param's fault
    with invalid_params("cwd"):  # the client's choice (a relative one from the daemon's directory), but no link a step
        # may have planted in the workspace folder: an editor names its folders (a workspace file's), each may be one
        cwd = await session_dir(p.cwd, guarded=[ls.root_cwd, ls.default_cwd]) if p.cwd else None
    with invalid_params("agent", ConfigError):
        live = await ls.table.create(agent=p.agent, kind=kind, title=p.title or "", cwd=cwd)
    # Its objects frozen now, while new (~1 ms): else 50 new sessions were one full pass of 30 ms in their first turns.
    collect_and_freeze(ls.live_sessions(), closed_too=False)
    return {"session": live.id}


@method("ollie/session/list", SessionListParams)
async def session_list(ls: OllieServer, p: SessionListParams) -> dict[str, Any]:
    """The user's saved sessions, most recent first, a page at a time (`cursor`: where the last page ended)."""
    from ollie.sessions.cursor import from_cursor, to_cursor  # not a first token's
    from ollie.sessions.logindex import rewind_undoable, saved_turns, worth_listing
    records = ls.table.records
    with invalid_params("cursor"):
        after = from_cursor(p.cursor)
    kinds = [check_kind(k, f"kinds[{i}]") for i, k in enumerate(p.kinds or [])]
    options = ListOptions(kinds=kinds, include_archived=p.include_archived, exclude_unused=True, limit=p.limit or 0,
                          after=after)
    infos, last = await records.run(records.page, options)
    elsewhere = await records.run(records.live_elsewhere, [i.id for i in infos])
    # What tells two sessions of one title apart, as the terminal's /sessions: each log's end read, off the loop.
    turns = await asyncio.to_thread(lambda: {i.id: saved_turns(sessions_dir(), i.id) for i in infos})
    # The one rule of every session list (an emptied one listed while its rewind can be undone, as such).
    shown, undo = await asyncio.to_thread(lambda: (
        [i for i in infos if worth_listing(sessions_dir(), i.id, titled=bool(i.title), turns=turns[i.id])],
        {i.id for i in infos if rewind_undoable(sessions_dir(), i.id)}))
    return {"sessions": [info_to_wire(i, live=ls.table.find(i.id) is not None, live_on=elsewhere.get(i.id),
                                      turns=turns[i.id], rewind_undo=i.id in undo) for i in shown],
            "nextCursor": to_cursor(last) if last is not None else None}


async def _opened(ls: OllieServer, live: LiveSession) -> dict[str, Any]:
    """A load's or fork's answer: the session live here and its info."""
    from ollie.sessions.logindex import rewind_undoable

    info = await ls.table.records.run(ls.table.records.get, live.id)
    undo = await asyncio.to_thread(rewind_undoable, sessions_dir(), live.id)
    return {"session": live.id, "info": info_to_wire(info, live=True, turns=len(live.core.session.turn_starts),
                                                     rewind_undo=undo)}


@method("ollie/session/load", SessionIdParams)
async def session_load(ls: OllieServer, p: SessionIdParams) -> dict[str, Any]:
    """Resume a saved session in this daemon."""
    return await _opened(ls, await ls.table.load(p.session))


@method("ollie/session/fork", SessionForkParams)
async def session_fork(ls: OllieServer, p: SessionForkParams) -> dict[str, Any]:
    """A new session going on from a copy of another's conversation up to turn `turn` (default: all of it)."""
    return await _opened(ls, await ls.table.fork(p.session, turn=p.turn))


@method("ollie/session/rename", SessionRenameParams)
async def session_rename(ls: OllieServer, p: SessionRenameParams) -> dict[str, Any]:
    """Give a session a title."""
    await ls.table.rename(p.session, p.title)
    return {}


@method("ollie/session/archive", SessionIdParams)
async def session_archive(ls: OllieServer, p: SessionIdParams) -> dict[str, Any]:
    """Archive a session: kept, but read-only and out of the default list."""
    await ls.table.set_archived(p.session, True)
    return {}


@method("ollie/session/unarchive", SessionIdParams)
async def session_unarchive(ls: OllieServer, p: SessionIdParams) -> dict[str, Any]:
    """Bring an archived session back: listed by default and writable again."""
    await ls.table.set_archived(p.session, False)
    return {}


@method("ollie/session/close", SessionIdParams)
async def session_close(ls: OllieServer, p: SessionIdParams) -> dict[str, Any]:
    """Stop a live session; what is saved stays."""
    await ls.table.close(p.session)
    return {}


async def call(name: str, ls: OllieServer, raw: Any) -> dict[str, Any]:
    """Run the handler of method `name` (the server's lazy stubs land here), its failures as PROTOCOL.md's errors.

    A store failure gets its code (-32007 live elsewhere, -32009 store unavailable, ...); anything else
    unexpected is -32603 with its text, never the exception's class name or a traceback.
    """
    session = raw.get("session") if isinstance(raw, dict) else None
    try:
        with rpc_errors(session if isinstance(session, str) else ""):
            return await METHODS[name](ls, raw)
    except JsonRpcException:
        raise
    except Exception as exc:
        logger.exception("%s failed", name)
        raise InternalError(exc) from None
