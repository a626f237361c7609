"""Turns through the real daemon: events, seq, tool calls, progress, stateChanged, editor context."""

from __future__ import annotations

import pytest_asyncio
from lsprotocol import types
from pytest_lsp import LanguageClient

from ollie.testing import Reply


@pytest_asyncio.fixture(loop_scope="module")
async def daemon(shared_daemon, llm):
    """A session of its own, in a folder of its own, on the module's shared daemon."""
    return await shared_daemon(env=llm.env())


READ_SAMPLE = ("call_tool", {"calls": [{"tool": "file_read", "args": ["sample.txt"]}]})


def user_text(request) -> str:
    """The last user message of a recorded chat request."""
    body = request.body
    users = [m for m in body["messages"] if m["role"] == "user"]
    content = users[-1]["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


async def test_submit_streams_events_in_order_with_gap_free_seq(daemon, llm):
    llm.script(Reply(tool_calls=[READ_SAMPLE]), Reply.text("The sample says hello to everyone here."))
    (daemon.workspace / "sample.txt").write_text("hello from the sample\n")
    result = await daemon.request("ollie/submit", {"text": "read the sample"})
    assert result["stop"] == "end", result
    assert result["reply"] == "The sample says hello to everyone here."
    session = result["session"]
    events = daemon.session_events(session)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    roles = [e["role"] for e in events]
    assert roles[0] == "turn" and events[0]["content"] == "start"
    assert roles[-1] == "turn" and events[-1]["content"] == "end"
    call = next(e for e in events if e["role"] == "call")
    assert call["name"] == "call_tool" and "file_read" in call["content"]
    tool = next(e for e in events if e["role"] == "tool")
    assert "hello from the sample" in tool["content"]
    assert roles.index("call") < roles.index("tool")
    text = "".join(e["content"] for e in events if e["role"] == "assistant")
    assert text.endswith("The sample says hello to everyone here.")
    assert "state" not in roles
    # The engine's usage payload is typed; the wire keeps the string PROTOCOL.md's clients parse.
    usage = next(e for e in events if e["role"] == "usage")["content"].split()
    assert len(usage) == 5 and all(part.isdigit() for part in usage[:4]) and float(usage[4]) >= 0
    assert int(usage[0]) > 0


async def test_a_reply_cut_at_the_token_limit_ends_with_stop_max_tokens(daemon, llm):
    llm.script(Reply.cut("The first half of a long"))
    result = await daemon.request("ollie/submit", {"text": "write a long answer"})
    assert (result["stop"], result["reply"]) == ("max_tokens", "The first half of a long"), result
    assert daemon.session_events(result["session"])[-1] == {**daemon.session_events(result["session"])[-1],
                                                            "role": "turn", "content": "max_tokens"}


async def test_progress_and_state_changed(daemon, llm):
    llm.script(Reply(tool_calls=[READ_SAMPLE]), Reply.text("done"))
    (daemon.workspace / "sample.txt").write_text("x\n")
    result = await daemon.request("ollie/submit", {"text": "please read the sample file now"})
    assert result["stop"] == "end"
    reports = daemon.client.progress_reports
    assert len(reports) == 1, reports
    (steps,) = reports.values()
    assert steps[0].kind == "begin" and steps[0].message.startswith("please read the sample")
    assert steps[-1].kind == "end" and steps[-1].message == "end"
    middle = [s.message for s in steps if s.kind == "report"]
    assert "thinking" in middle and any(m.startswith("calling: ") for m in middle)
    states = [s for s in daemon.states if s["session"] == result["session"]]
    assert any(s["running"] and s["state"] == "thinking" for s in states)
    assert any(s["state"].startswith("calling: ") for s in states)
    assert states[-1]["state"] == "idle" and states[-1]["running"] is False
    assert set(states[-1]) == {"session", "state", "running", "contextSize", "usage", "cost", "title"}
    assert states[-1]["title"] == "please read the sample file now"
    assert states[-1]["usage"]["requests"] == 2


async def test_the_calling_state_names_a_models_tool_on_one_escaped_line(daemon, llm):
    # The state goes to any LSP client's own progress UI ($/progress: Helix's and Emacs' status lines, fidget.nvim),
    # not only to ollie's editors (which escape it): a tool name the model made up, with a line break and a U+202E,
    # printed a line of ollie's own under it there, the rest reversed; a megabyte of name went with each state.
    name = "x\u202etxt.exe\nollie: all edits approved" + "y" * 5000
    llm.script(Reply(tool_calls=[(name, {})]), Reply.text("done"))
    result = await daemon.request("ollie/submit", {"text": "go"})
    assert result["stop"] == "end", result
    (steps,) = daemon.client.progress_reports.values()
    calling = [s.message for s in steps if s.kind == "report" and s.message.startswith("calling: ")]
    calling += [s["state"] for s in daemon.states if s["state"].startswith("calling: ")]
    assert calling and all(m == "calling: x\\u202etxt.exe\\nollie: all edits approved" + "y" * 65 + "..."
                           for m in calling), calling[:1]


async def test_state_changed_keeps_step_with_the_turns_events(daemon, llm):
    # Bug: stateChanged was made when sent, from the engine's state then, which runs ahead of the events still
    # waiting to be sent: `running: false` came before the turn's last delta and its `turn` end, so a client
    # thought the turn over (Neovim drew the answer under a stale "…").
    llm.script(Reply.text("first answer"), Reply.text("queued answer"))
    await daemon.request("ollie/queue", {"text": "and then this"})
    result = await daemon.request("ollie/submit", {"text": "hello"})
    await daemon.wait_events(lambda evs: [e["content"] for e in evs if e["role"] == "turn"] == ["start", "end"] * 2)
    await daemon.request("ollie/state", {"session": result["session"]})  # after every stateChanged of the turns
    seen, in_turn = [], False
    for kind, params in daemon.client.ollie_wire:  # type: ignore[attr-defined]
        if kind == "answer" or params["session"] != result["session"]:
            continue
        if kind == "event" and params["role"] == "turn":
            in_turn = params["content"] == "start"
        elif kind == "state":
            seen.append((params["running"], params["state"] != "idle"))
            assert params["running"] is in_turn and (params["state"] != "idle") is in_turn, (params, seen)
    assert (True, True) in seen and seen[-1] == (False, False)


async def test_no_progress_without_client_support(start_daemon, llm):
    llm.script(Reply.text("hi"))
    daemon = await start_daemon(env=llm.env(), progress=False)
    assert (await daemon.request("ollie/submit", {"text": "hello"}))["stop"] == "end"
    assert daemon.client.progress_reports == {}


def open_and_change(client: LanguageClient, uri: str, language_id: str, text: str,
                    change: types.TextDocumentContentChangeEvent) -> None:
    """didOpen `uri` with `text` (version 1), then didChange it with `change` (version 2)."""
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id=language_id, version=1, text=text)))
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2), content_changes=[change]))


async def test_editor_context_from_an_unsaved_document_reaches_the_model(daemon, llm):
    llm.script(Reply.text("ok"))
    file = daemon.workspace / "pkg" / "mod.py"
    file.parent.mkdir()
    file.write_text("saved_line = 1\n")
    uri = file.as_uri()
    # An incremental edit: line 1 becomes `b = 20` (unsaved).
    open_and_change(daemon.client, uri, "python", "a = 1\nb = 2\nc = 3\n", types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(line=1, character=4), end=types.Position(line=1, character=5)),
        text="20"))
    context = {"uri": uri, "range": {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 5}}}
    result = await daemon.request("ollie/submit", {"text": "explain this", "context": context})
    assert result["stop"] == "end"
    sent = user_text(llm.chat_requests[-1])
    assert "<editor-context>" in sent and "File: pkg/mod.py (python)" in sent
    assert "b = 20\nc = 3" in sent and "a = 1" not in sent and "saved_line" not in sent
    assert sent.rstrip().endswith("explain this")


async def test_full_sync_change_and_close_fall_back_to_disk(daemon, llm):
    llm.script(Reply.text("one"), Reply.text("two"))
    file = daemon.workspace / "f.txt"
    file.write_text("disk text\n")
    uri = file.as_uri()
    client = daemon.client
    open_and_change(client, uri, "plaintext", "v1\n", types.TextDocumentContentChangeWholeDocument(text="whole new text\n"))
    rng = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 3}}
    await daemon.request("ollie/submit", {"text": "q1", "context": {"uri": uri, "range": rng}})
    assert "whole new text" in user_text(llm.chat_requests[-1])
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    await daemon.request("ollie/submit", {"text": "q2", "context": {"uri": uri, "range": rng}})
    assert "disk text" in user_text(llm.chat_requests[-1])


async def test_commands_get_no_editor_context(daemon, llm):
    uri = (daemon.workspace / "x.py").as_uri()
    result = await daemon.request("ollie/submit", {"text": "!echo plain", "context": {"uri": uri, "selection": "SEL"}})
    assert result["stop"] == "command"
    assert "plain" in result["reply"] and "SEL" not in result["reply"]
    assert llm.chat_requests == []


async def test_reasoning_deltas_are_forwarded_before_the_answer(daemon, llm):
    llm.script(Reply(reasoning="let me think about it", text="the answer"))
    result = await daemon.request("ollie/submit", {"text": "think"})
    assert result["reply"] == "the answer"
    events = daemon.session_events(result["session"])
    reasoning = "".join(e["content"] for e in events if e["role"] == "reasoning")
    assert "let me think about it" in reasoning
    roles = [e["role"] for e in events]
    assert roles.index("reasoning") < roles.index("assistant")


async def test_a_missing_key_is_not_a_crash_the_turn_says_what_to_set(start_daemon):
    daemon = await start_daemon(env={"OLLIE_BACKEND": "openai"})
    result = await daemon.request("ollie/submit", {"text": "hello"})
    assert result["stop"] == "error" and "OLLIE_OPENAI_KEY" in result["error"]
    errors = [e for e in daemon.events if e["role"] == "error"]
    assert errors and "OLLIE_OPENAI_KEY" in errors[-1]["content"]
    assert (await daemon.request("ollie/state", {}))["state"] == "idle"
