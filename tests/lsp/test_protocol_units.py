"""Unit tests of the protocol layer: params validation, init options, editor context, seq and coalescing."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import threading
from asyncio.trsock import TransportSocket
from pathlib import Path

import pytest

from ollie.agent.editorcontext import context_labels
from ollie.agent.events import Bus, Event
from ollie.agent.setup import session_dir
from ollie.sessions.types import first_words, prompt_title
from ollie_lsp.editor import OpenDocument, display_path, is_command, with_context
from ollie_lsp.editorwatch import watch_client
from ollie_lsp.errors import InvalidParams
from ollie_lsp.events import EventForwarder
from ollie_lsp.options import parse_init_options
from ollie_lsp.params import EditorContext, SessionListParams, SubmitParams, parse
from tests.stalls import StalledWalk


def test_parse_names_nested_fields():
    with pytest.raises(InvalidParams) as caught:
        bad = {"start": {"line": -1, "character": 0}, "end": {"line": 1, "character": 0}}
        parse(SubmitParams, {"text": "hi", "context": {"uri": "file:///x", "range": bad}})
    assert caught.value.code == -32602
    assert "context.range.start.line" in caught.value.message


def test_parse_is_strict_and_tolerates_unknown_keys():
    with pytest.raises(InvalidParams, match="text"):
        parse(SubmitParams, {"text": 3})
    params = parse(SubmitParams, {"text": "hi", "futureField": 1})
    assert params.text == "hi" and params.session is None
    listing = parse(SessionListParams, {"includeArchived": True, "kinds": ["chat"]})
    assert listing.include_archived is True and listing.kinds == ["chat"]


def test_params_arguments_and_answers_reach_the_daemon_as_plain_json():
    """What `params.parse` and `ask_client` take as it comes (pygls' default converter made namedtuples of it)."""
    from ollie_lsp.daemon import build_server

    structure = build_server().protocol.structure_message
    nested = {"text": "hi", "context": {"uri": "file:///a", "selection": "x = 1"}}
    assert structure({"jsonrpc": "2.0", "id": 1, "method": "ollie/submit", "params": nested}).params == nested
    command = {"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand",
               "params": {"command": "ollie.submit", "arguments": [nested]}}
    assert structure(command).params.arguments == (nested,)
    assert structure({"jsonrpc": "2.0", "id": "a", "result": nested}).result == nested
    assert parse(SubmitParams, nested).text == "hi"


def test_init_options_bad_values_fall_back_and_unknown_keys_are_ignored():
    options, problems = parse_init_options(
        {"agent": 5, "backend": "openai", "model": "", "session": "1-aa", "env": {"A": "1", "B": 2, "bad key": "x"}, "zzz": 1}
    )
    assert options.agent is None and options.backend == "openai" and options.model is None
    assert options.session == "1-aa"
    assert options.env == {"A": "1", "B": "2"}
    assert any("agent" in p for p in problems)
    assert any("model" in p for p in problems)
    assert any("bad key" in p for p in problems)
    assert not any("zzz" in p for p in problems)
    options, problems = parse_init_options(["not", "an", "object"])
    assert options.agent is None and problems


def test_editor_context_uses_the_unsaved_text_of_the_range(tmp_path: Path):
    file = tmp_path / "src" / "app.py"
    file.parent.mkdir()
    file.write_text("on disk\n")
    docs = {file.as_uri(): OpenDocument(text="line1\nline2\nline3\nline4\n", language_id="python")}
    ctx = parse(
        EditorContext, {"uri": file.as_uri(), "range": {"start": {"line": 1, "character": 0}, "end": {"line": 3, "character": 0}}}
    )
    prompt = with_context("explain", [ctx], cwd=tmp_path, lookup=docs.get)
    assert prompt.endswith("\n\nexplain")
    assert "<editor-context>" in prompt and "</editor-context>" in prompt
    assert "File: src/app.py (python)" in prompt
    assert "line2\nline3" in prompt and "line4" not in prompt and "line1" not in prompt
    assert "on disk" not in prompt


def test_editor_context_selection_wins_and_commands_get_none(tmp_path: Path):
    ctx = parse(EditorContext, {"uri": (tmp_path / "a.rs").as_uri(), "selection": "fn main() {}", "languageId": "rust"})
    prompt = with_context("what is this", [ctx], cwd=tmp_path, lookup=lambda uri: None)
    assert "Selected text:" in prompt and "fn main() {}" in prompt and "(rust)" in prompt
    assert with_context("/model x", [ctx], cwd=tmp_path, lookup=lambda uri: None) == "/model x"
    assert with_context("  !ls", [ctx], cwd=tmp_path, lookup=lambda uri: None) == "  !ls"
    assert is_command("/help") and not is_command("hello /x")


def test_each_context_item_is_a_block_and_labels_read_them_back(tmp_path: Path):
    items = [parse(EditorContext, c) for c in (
        {"uri": (tmp_path / "a.py").as_uri(), "selection": "x = 1\nShowing line 99:", "languageId": "python",
         "range": {"start": {"line": 2, "character": 4}, "end": {"line": 4, "character": 0}}},
        {"uri": (tmp_path / "b.txt").as_uri()},
        {"uri": (tmp_path / "c.py").as_uri(), "selection": "y"},
    )]
    prompt = with_context("why", items, cwd=tmp_path, lookup=lambda uri: None)
    assert prompt.count("<editor-context>") == 3 and prompt.endswith("</editor-context>\n\nwhy")
    # A selection's block says where it is (the range, the end at column 0 left out).
    assert "File: a.py (python)\nLocation: lines 3-4\nSelected text:" in prompt
    assert context_labels(prompt) == ["a.py:3-4", "b.txt", "c.py (selection)"]  # the selected code's words ignored
    assert context_labels("why") == [] and with_context("why", [], cwd=tmp_path, lookup=lambda uri: None) == "why"


def test_display_path_outside_cwd_is_absolute(tmp_path: Path):
    inside = tmp_path / "a" / "b.txt"
    assert display_path(inside.as_uri(), tmp_path) == "a/b.txt"
    assert display_path(Path("/etc/hosts").as_uri(), tmp_path) == "/etc/hosts"
    assert display_path("untitled:Untitled-1", tmp_path) == "untitled:Untitled-1"


def test_a_first_prompt_with_a_nul_titles_the_session_without_it():
    # (PostgreSQL keeps no NUL in text: the store refused the title, and the session stayed untitled.)
    assert prompt_title("fix\x00the\x00 bug") == "fix the bug"


def test_first_words():
    assert first_words("fix the bug") == "fix the bug"
    assert first_words("one two three four five six seven eight nine ten") == "one two three four five six seven eight …"


async def test_forwarder_numbers_without_gaps_and_keeps_order():
    bus = Bus()
    sent: list[dict] = []
    states: list[int] = []
    turns: list[str] = []
    fwd = EventForwarder("s1", bus.subscribe(), send=sent.append, on_state=lambda: states.append(1),
                         on_turn=lambda event: turns.append(event.content), coalesce_s=0)
    fwd.start()
    bus.emit("turn", "start")
    for i in range(50):
        bus.emit("assistant", f"d{i} ")
    bus.emit("state")
    bus.emit("call", '{"a":1}', name="file_read")
    bus.emit("tool", "result", name="file_read")
    bus.emit("turn", "end")
    await fwd.drained()
    await fwd.stop()
    assert [e["seq"] for e in sent] == list(range(1, len(sent) + 1))
    text = "".join(e["content"] for e in sent if e["role"] == "assistant")
    assert text == "".join(f"d{i} " for i in range(50))
    roles = [e["role"] for e in sent]
    assert roles[0] == "turn" and roles[-1] == "turn" and "state" not in roles
    assert roles.index("call") < roles.index("tool")
    assert next(e for e in sent if e["role"] == "call")["name"] == "file_read"
    assert "name" not in sent[0]
    assert states == [1] and turns == ["start", "end"]


async def test_forwarder_reads_after_the_events_published_were_sent_and_before_any_later_one():
    # `ollie/context` reads the history then: its `seq` parts the events it holds from those it does not.
    bus = Bus()
    sent: list[dict] = []
    fwd = EventForwarder("s1", bus.subscribe(), send=sent.append, coalesce_s=0.2)
    fwd.start()
    reads: list[tuple[int, int]] = []
    fwd.after_sent(lambda seq: reads.append((seq, len(sent))))
    assert reads == [(0, 0)]  # nothing published: at once
    bus.emit("turn", "start")
    bus.emit("assistant", "a")
    bus.emit("assistant", "b")  # waiting with "a" when it is taken: joined, one notification

    def read_then_publish(seq: int) -> None:
        reads.append((seq, len(sent)))
        bus.emit("assistant", "later")

    fwd.after_sent(read_then_publish)
    assert reads == [(0, 0)]  # not sent yet
    await fwd.drained()
    await fwd.drained()  # and the one published by the read
    await fwd.stop()
    assert reads[1] == (2, 2) and [e["content"] for e in sent] == ["start", "ab", "later"], (reads, sent)


async def test_forwarder_coalesces_a_hot_delta_stream():
    # A token stream must not reach a slow client as one message a token. Each delta comes a few loop passes after
    # the last, time enough to go out alone, not wall-clock gaps: a loaded machine stretched eight 1 ms sleeps
    # towards the window. The window is far wider than the microseconds the passes take, however loaded.
    bus = Bus()
    sent: list[dict] = []
    fwd = EventForwarder("s1", bus.subscribe(), send=sent.append, coalesce_s=0.2)
    fwd.start()
    for role, delta in [("assistant", ch) for ch in "abcdefgh"] + [("reasoning", "r"), ("assistant", "z")]:
        bus.emit(role, delta)
        for _ in range(5):
            await asyncio.sleep(0)
    await fwd.stop()
    # The first goes out at once; the rest, hot, wait out the window and go together, each role's run apart.
    assert [(e["role"], e["content"]) for e in sent] == [
        ("assistant", "a"), ("assistant", "bcdefgh"), ("reasoning", "r"), ("assistant", "z")], sent
    assert [e["seq"] for e in sent] == [1, 2, 3, 4]


async def test_forwarder_drained_waits_for_joined_and_paused_events_not_for_later_ones():
    bus = Bus()
    sent: list[dict] = []
    paused = True
    writable = asyncio.Event()
    fwd = EventForwarder("s1", bus.subscribe(), send=sent.append, coalesce_s=0.02, paused=lambda: paused,
                         writable=writable.wait)
    fwd.start()
    bus.emit("info", "first")
    for ch in "abc":
        bus.emit("assistant", ch)  # joined while the output is paused
    bus.emit("info", "last")
    waiter = asyncio.ensure_future(fwd.drained())
    sent_when_woken: list[list[str]] = []
    waiter.add_done_callback(lambda _: sent_when_woken.append([e["content"] for e in sent]))
    await asyncio.sleep(0)  # the wait has begun: what comes now is not waited for
    for ch in "xyz":
        bus.emit("reasoning", ch)
    assert not waiter.done()
    paused = False
    writable.set()
    await asyncio.wait_for(waiter, 5)  # a hang fails here
    assert sent_when_woken[0][:3] == ["first", "abc", "last"]  # nothing of it left when woken
    await fwd.stop()
    assert [e["content"] for e in sent] == ["first", "abc", "last", "xyz"]


async def test_forwarder_drained_ends_when_the_forwarder_is_stopped_with_events_unsent():
    # A killed session: /kill's answer waits for its events, and its forwarder is stopped meanwhile.
    bus = Bus()
    fwd = EventForwarder("s1", bus.subscribe(), send=lambda params: None, paused=lambda: True,
                         writable=asyncio.Event().wait)  # the client never reads again
    fwd.start()
    bus.emit("info", "never sent")
    waiter = asyncio.ensure_future(fwd.drained())
    await fwd.stop(timeout=0.01)
    await asyncio.wait_for(waiter, 5)


async def test_forwarder_survives_a_failing_send():
    bus = Bus()
    sent: list[dict] = []

    def send(params: dict) -> None:
        if params["content"] == "boom":
            raise RuntimeError("write failed")
        sent.append(params)

    fwd = EventForwarder("s1", bus.subscribe(), send=send, coalesce_s=0)
    fwd.start()
    bus.emit("info", "boom")
    bus.emit("info", "after")
    await fwd.drained()
    await fwd.stop()
    assert [e["content"] for e in sent] == ["after"]
    assert Event("info", "", "x").role == "info"


async def test_a_queued_prompt_is_weighed_against_the_turns_end_once_that_end_was_sent():
    """`ollie/queue`'s `seen` is compared with the turns' `turn` end once every event published so far was sent: an
    end still unsent (the client reads nothing for now) is one the client has not seen, whatever it had before."""
    from ollie_lsp.sessions import LiveSession

    class Core:  # the engine's side is tested with a real Core (tests/agent): here, what the daemon tells it
        def __init__(self) -> None:
            self.queued: list[tuple[str, bool]] = []

        def queue(self, text: str, images: object = (), *, saw_end: bool = True, context: object = ()) -> int:
            assert not images  # none given here (the images a prompt was queued with go on to the engine)
            self.queued.append((text, saw_end))
            return len(self.queued)

    bus = Bus()
    paused = False
    writable = asyncio.Event()
    fwd = EventForwarder("s", bus.subscribe(), send=lambda params: None, paused=lambda: paused,
                         writable=writable.wait, coalesce_s=0)
    fwd.start()
    core = Core()
    live = LiveSession(id="s", core=core, forwarder=fwd, progress=None)
    bus.emit("turn", "start")
    bus.emit("assistant", "done")
    await fwd.drained()
    seen = fwd.sent  # the client has the turn's start and its reply
    paused = True
    bus.emit("turn", "end")  # the turns ended; their end waits for the client to read
    late = asyncio.ensure_future(live.queue("late", seen=seen))
    await asyncio.sleep(0)  # the request's first pass
    assert core.queued == [] and not late.done()
    paused = False
    writable.set()
    assert await asyncio.wait_for(late, 5) == 1 and core.queued == [("late", False)]
    assert fwd.turn_ended == seen + 1
    assert await live.queue("after the end", seen=fwd.turn_ended) == 2
    assert await live.queue("from an older client", seen=None) == 3
    assert core.queued[1:] == [("after the end", True), ("from an older client", True)]
    await fwd.stop()


async def test_a_submit_cancelled_while_it_waits_for_the_turn_lock_never_takes_it():
    from ollie_lsp.sessions import LiveSession, SubmitHandle

    live = LiveSession(id="s", core=None, forwarder=None, progress=None)
    await live.turn_lock.acquire()  # a turn is running
    waiting = asyncio.create_task(live.submit("hi", handle=SubmitHandle(), is_command=False))
    await asyncio.sleep(0.01)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    live.turn_lock.release()  # the running turn ends
    await asyncio.sleep(0.01)
    assert not live.turn_lock.locked(), "the cancelled submit must not hold the lock"


async def test_session_new_walks_its_cwd_off_the_loop(tmp_path, monkeypatch):
    # session/new's cwd was resolved on the daemon's loop: a hung NFS or FUSE workspace froze every session.
    work = tmp_path / "nfs"
    work.mkdir()
    stall = StalledWalk(monkeypatch, work)
    assert await stall.walked_off_the_loop(session_dir(str(work))) == work
    with pytest.raises(ValueError, match=".* is not an existing directory"):
        await session_dir(str(tmp_path / "gone"))


async def test_the_tcp_clients_socket_is_looked_up_off_the_loop(monkeypatch):
    """initialize over --tcp read /proc/net/tcp (a row per socket on the machine: 0.5 s with 20,000 connections) and
    the client's fd table on the loop every session shares; a stalled read of them now holds only the check."""
    listening = socket.create_server(("127.0.0.1", 0))
    client = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import socket, sys; s = socket.create_connection(('127.0.0.1', int(sys.argv[1])));"
        "print(flush=True); sys.stdin.read()", str(listening.getsockname()[1]),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    assert client.stdout is not None and client.stdin is not None
    await client.stdout.readline()  # connected
    ours, _ = listening.accept()
    listing, release, held = threading.Event(), threading.Event(), []
    listdir = os.listdir

    def stalled(path: str) -> list[str]:
        if path == f"/proc/{client.pid}/fd":
            listing.set()
            held.append(release.wait(5))
        return listdir(path)

    monkeypatch.setattr(os, "listdir", stalled)
    gone = asyncio.Event()
    with listening, ours:
        watching = asyncio.ensure_future(watch_client(client.pid, TransportSocket(ours), gone.set))
        await asyncio.to_thread(listing.wait, 30)
        release.set()
        assert await watching and held == [True], "the loop served nothing while the client's fds were listed"
        client.stdin.close()  # the client ends: the daemon is told
        await asyncio.wait_for(gone.wait(), 30)
        await client.wait()


async def test_an_unproven_tcp_clients_first_message_is_read_only_up_to_its_cap():
    """A connection yet to prove the token sends a first message larger than MAX_FIRST_BYTES: refused once that much
    came, not held in memory (up to the 64 MiB any frame may be) until the whole of it has."""
    from ollie_lsp.framing import FrameParser
    from ollie_lsp.tcp import MAX_FIRST_BYTES, FramingError, first_frames

    stream = asyncio.StreamReader()
    stream.feed_data(b"Content-Length: %d\r\n\r\n" % (4 * MAX_FIRST_BYTES) + b" " * (MAX_FIRST_BYTES + 4096))
    stream.feed_eof()  # a reader with no cap reads on to this end (its error then says so), where a capped one stopped
    with pytest.raises(FramingError, match="too large"):
        await first_frames(stream, FrameParser())
