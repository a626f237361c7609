"""Several editor-context items per prompt (submit, queue), their labels in the history, and bad items named."""

from __future__ import annotations

import asyncio
import os

from lsprotocol import types

from ollie.testing import Reply

from .conftest import Daemon
from .test_methods import rpc_error


def user_prompt(llm, request: int = -1) -> str:
    """The last user message of a chat request the model got."""
    return [m for m in llm.chat_requests[request].body["messages"] if m["role"] == "user"][-1]["content"]


def open_doc(daemon: Daemon, name: str, text: str) -> str:
    uri = (daemon.workspace / name).as_uri()
    daemon.client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    return uri


def lines(first: int, last: int) -> dict:
    return {"start": {"line": first, "character": 0}, "end": {"line": last + 1, "character": 0}}


async def test_a_prompt_carries_every_context_item_and_the_history_labels_each(shared_daemon, llm):
    llm.script(Reply.text("seen both"), Reply.text("seen the old way"))
    daemon = await shared_daemon(env=llm.env())
    calc = open_doc(daemon, "calc.py", "a = 1\nb = 2  # unsaved\nc = 3\nd = 4\n")
    (daemon.workspace / "notes.txt").write_text("remember the milk\n")
    notes = (daemon.workspace / "notes.txt").as_uri()
    result = await daemon.request("ollie/submit", {"text": "compare them", "context": [
        {"uri": calc, "range": lines(1, 2)},
        {"uri": notes, "range": lines(0, 0), "languageId": "text"},
        {"uri": calc, "selection": "d = 4", "languageId": "python"},
    ]})
    assert result["stop"] == "end" and result["reply"] == "seen both"
    prompt = user_prompt(llm)
    # Each item is a block of its own, in the order sent, before the user's text.
    assert prompt.count("<editor-context>") == 3 and prompt.endswith("</editor-context>\n\ncompare them")
    first, second, third = (prompt.index(s) for s in ("b = 2  # unsaved\nc = 3", "remember the milk", "d = 4"))
    assert first < second < third
    assert "File: calc.py (python)\nShowing lines 2-3:" in prompt and "File: notes.txt (text)\nShowing line 1:" in prompt

    # The old shape, one object, still works and is one block.
    await daemon.request("ollie/submit", {"text": "and this?", "context": {"uri": calc, "range": lines(0, 0)}})
    assert user_prompt(llm).count("<editor-context>") == 1

    messages = (await daemon.request("ollie/context", {}))["messages"]
    users = [m for m in messages if m["role"] == "user"]
    assert users[0]["contextLabels"] == ["calc.py:2-3", "notes.txt:1", "calc.py (selection)"]
    assert users[1]["contextLabels"] == ["calc.py:1"]
    assert users[0]["content"].endswith("compare them")  # old clients still read the blocks in the content


async def test_bad_context_items_are_named_and_nothing_runs(shared_daemon, llm):
    daemon = await shared_daemon(env=llm.env())
    good = (daemon.workspace / "a.py").as_uri()
    for context, field in (
        ([{"uri": good}, {"uri": 3}], "context[1].uri"),
        ([{"uri": good, "range": {"start": {"line": -1, "character": 0}, "end": {"line": 0, "character": 0}}}],
         "context[0].range.start.line"),
        ({"uri": ""}, "context.uri"),
        (5, "context"),
    ):
        for method in ("ollie/submit", "ollie/queue", "ollie/inject"):
            err = await rpc_error(daemon, method, {"text": "x", "context": context})
            assert err.code == -32602 and f"{field}:" in err.message, (method, context, err.message)
    assert llm.chat_requests == []
    assert (await daemon.request("ollie/state", {}))["queued"] == 0


async def test_a_queued_prompt_keeps_its_context(start_daemon, llm):
    llm.script(Reply.text("first"), Reply.text("queued one"))
    daemon = await start_daemon(env=llm.env())
    calc = open_doc(daemon, "calc.py", "x = 41\ny = 42\n")
    sid = (await daemon.request("ollie/session/new", {}))["session"]
    # Queued while idle: it waits for the next turn's end, then runs with its context.
    assert await daemon.request("ollie/queue", {"session": sid, "text": "what is y?",
                                                "context": [{"uri": calc, "range": lines(1, 1)}]}) == {"depth": 1}
    assert (await daemon.request("ollie/submit", {"session": sid, "text": "hello"}))["reply"] == "first"
    assert len(llm.chat_requests) == 2
    prompt = user_prompt(llm)
    assert prompt.startswith("<editor-context>\nFile: calc.py (python)\nShowing line 2:") and "y = 42" in prompt
    assert prompt.endswith("\n\nwhat is y?")
    messages = (await daemon.request("ollie/context", {"session": sid}))["messages"]
    users = [m for m in messages if m["role"] == "user"]
    assert "contextLabels" not in users[0] and users[1]["contextLabels"] == ["calc.py:2"]
    # The session's title is the user's words, not the block.
    listed = {s["id"]: s for s in (await daemon.request("ollie/session/list", {}))["sessions"]}
    assert listed[sid]["title"] == "hello"


async def test_injects_the_daemon_joined_are_labelled_for_every_file_in_the_history(start_daemon, llm):
    llm.script(Reply.text("first"), Reply.text("joined one"))
    daemon = await start_daemon(env=llm.env())
    calc = open_doc(daemon, "calc.py", "x = 41\ny = 42\n")
    (daemon.workspace / "notes.txt").write_text("remember the milk\n")
    sid = (await daemon.request("ollie/session/new", {}))["session"]
    # Injected with no turn running: queued as one prompt, each one's block before its own line.
    await daemon.request("ollie/inject", {"session": sid, "text": "use x", "context": [{"uri": calc, "range": lines(0, 0)}]})
    await daemon.request("ollie/inject", {"session": sid, "text": "and the note",
                                          "context": [{"uri": (daemon.workspace / "notes.txt").as_uri()}]})
    assert (await daemon.request("ollie/submit", {"session": sid, "text": "hello"}))["reply"] == "first"
    assert len(llm.chat_requests) == 2
    prompt = user_prompt(llm)
    assert prompt.startswith("<editor-context>\nFile: calc.py") and "use x\n<editor-context>\nFile: notes.txt" in prompt
    users = [m for m in (await daemon.request("ollie/context", {"session": sid}))["messages"] if m["role"] == "user"]
    assert users[1]["contextLabels"] == ["calc.py:1", "notes.txt"]


async def test_a_context_naming_a_file_no_editor_has_open_is_read_through_the_chokepoint(shared_daemon, llm, tmp_path):
    """A context item naming a file that is not open was read with pygls' `Path.read_text`, on the event loop: a
    FIFO there (a step's `mkfifo`) froze the daemon for good, a link (a cloned repository's) was read through to its
    target, `/dev/zero` until memory ran out. Now: the lines of a regular file only, off the loop, as any read."""
    llm.script(Reply.text("answered"))
    daemon = await shared_daemon(env=llm.env())
    ws = daemon.workspace
    os.mkfifo(ws / "pipe.py")
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN=hunter2\n")
    (ws / "link.py").symlink_to(secret)
    (ws / "plain.py").write_text("x = 1\n")
    context = [{"uri": (ws / name).as_uri(), "range": lines(0, 0)} for name in ("pipe.py", "link.py", "plain.py")]
    result = await asyncio.wait_for(daemon.request("ollie/submit", {"text": "look", "context": context}), 30)
    assert result["reply"] == "answered"
    prompt = user_prompt(llm)
    assert "hunter2" not in prompt and "File: pipe.py\n" in prompt and "File: link.py\n" in prompt, prompt
    assert "File: plain.py\nShowing line 1:" in prompt and "x = 1" in prompt, prompt


async def test_a_context_file_under_a_linked_directory_of_the_workspace_is_not_read_through_it(
        shared_daemon, llm, tmp_path):
    """The chokepoint guarded the file's own name only: a step that made `k8s` a link to `~/.kube` had the daemon read
    `k8s/config`, the cluster's credentials, into the prompt. Beneath the session's directory no link is followed; a
    file outside it, named by the user's editor, is still read."""
    llm.script(Reply.text("answered"))
    daemon = await shared_daemon(env=llm.env())
    ws = daemon.workspace
    kube = tmp_path / "kube"
    kube.mkdir()
    (kube / "config").write_text("token: CLUSTER-SECRET\n")
    (ws / "k8s").symlink_to(kube)
    (ws / "deploy").mkdir()
    (ws / "deploy" / "app.yaml").write_text("replicas: 2\n")
    elsewhere = tmp_path / "notes.md"
    elsewhere.write_text("my own notes\n")
    context = [{"uri": path.as_uri(), "range": lines(0, 0)}
               for path in (ws / "k8s" / "config", ws / "deploy" / "app.yaml", elsewhere)]
    result = await asyncio.wait_for(daemon.request("ollie/submit", {"text": "look", "context": context}), 30)
    assert result["reply"] == "answered"
    prompt = user_prompt(llm)
    assert "CLUSTER-SECRET" not in prompt and "File: k8s/config\n" in prompt, prompt
    assert "replicas: 2" in prompt and "my own notes" in prompt, prompt


async def test_a_buffer_cut_to_fit_is_labelled_with_the_lines_the_model_got(shared_daemon, llm):
    # Neovim's `#buffer` of a 200,000-line file: its text was cut to 20,000 characters, yet labelled `Showing lines
    # 1-200000`, as though the model had seen it all.
    llm.script(Reply.text("seen the start"), Reply.text("seen the scratch"), Reply.text("seen an old Mac's"))
    daemon = await shared_daemon(env=llm.env())
    count = 200_000
    text = "".join(f"row {n:06d} of the big table\n" for n in range(1, count + 1))  # 28 characters a line, 29 with "\r\n"
    big = open_doc(daemon, "big.txt", text.replace("\n", "\r\n"))
    await daemon.request("ollie/submit", {"text": "what is this?", "context": {"uri": big, "range": lines(0, count - 1)}})
    kept = 20_000 // 28  # whole lines within the 20,000 characters the model gets (their "\r\n" made "\n")
    prompt = user_prompt(llm)
    assert (f"File: big.txt (python)\nCut at 20,000 characters: lines {kept + 1}-{count} are not shown.\n"
            f"Showing lines 1-{kept}:\n```python\nrow 000001 of the big table\n") in prompt
    assert prompt.count("row ") == kept and f"row {kept:06d} of the big table\n```" in prompt and "\r" not in prompt

    # A scratch buffer's lines go along as the selection: cut the same way, at a line's end.
    scratch = "".join(f"note {n}\n" for n in range(1, 10_001))
    await daemon.request("ollie/submit", {"text": "and this?", "context": {
        "uri": "untitled:7", "range": lines(4, 10_003), "selection": scratch}})
    shown = scratch[:20_000].rsplit("\n", 1)[0]
    last = 4 + shown.count("\n") + 1
    assert (f"Location: lines 5-{last}\nCut at 20,000 characters: lines {last + 1}-10004 are not shown.\n"
            f"Selected text:\n```\n{shown}\n```") in user_prompt(llm)

    # Lines end where LSP says, a lone "\r" too.
    mac = open_doc(daemon, "mac.txt", "first\rsecond\rthird\r")
    await daemon.request("ollie/submit", {"text": "and here?", "context": {"uri": mac, "range": lines(1, 1)}})
    assert "Showing line 2:\n```python\nsecond\n```" in user_prompt(llm)

    messages = (await daemon.request("ollie/context", {}))["messages"]
    assert [m["contextLabels"] for m in messages if m["role"] == "user"] == [[f"big.txt:1-{kept}"],
                                                                             [f"untitled:7:5-{last}"], ["mac.txt:2"]]


async def test_a_prompt_that_starts_with_a_path_is_a_prompt_with_its_context(shared_daemon, llm):
    # `/usr/bin/env ...` is no slash command (the engine runs it as a turn): it keeps its editor context.
    llm.script(Reply.text("seen it"))
    daemon = await shared_daemon(env=llm.env())
    calc = open_doc(daemon, "calc.py", "a = 1\n")
    text = "/usr/bin/env python3 calc.py prints nothing: why?"
    result = await daemon.request("ollie/submit", {"text": text, "context": {"uri": calc, "range": lines(0, 0)}})
    assert result["reply"] == "seen it"
    assert user_prompt(llm).count("<editor-context>") == 1 and user_prompt(llm).endswith(text)
    # Nor is it a command to ollie/command (which ran it as a turn of the model).
    err = await rpc_error(daemon, "ollie/command", {"line": text})
    assert err.code == -32602 and "line:" in err.message and len(llm.chat_requests) == 1
