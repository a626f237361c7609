"""An elevated step asks the editor as its step's question (`ollie/permission`, else window/showMessageRequest); only
"Allow once" lets it out of the sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from ollie.testing import Reply
from tests.lsp.cards import answer_cards


def away_from(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """The daemon's TMPDIR away from the pytest tmp root, and a directory `outside` every sandbox grant."""
    scratch, outside = tmp_path / "scratch", tmp_path / "outside"
    scratch.mkdir()
    outside.mkdir()
    return {"TMPDIR": str(scratch)}, outside


@pytest.fixture
def shared_away(shared_home: Path, tmp_path: Path) -> tuple[dict[str, str], Path]:
    """away_from for the module's shared daemons: their one TMPDIR (beside their home), this test's `outside`."""
    scratch, outside = shared_home.parent / "scratch", tmp_path / "outside"
    scratch.mkdir(exist_ok=True)
    outside.mkdir()
    return {"TMPDIR": str(scratch)}, outside


def elevated_write(target):
    return Reply.tool_calls(("execute_code", {"steps": [{"code": f"echo x > {target}", "elevated": True}]}))


async def test_the_editor_is_asked_and_its_answer_holds(shared_daemon, llm, shared_away):
    # Under `auto` the elevation alone is asked as the step's question, as under `ask` (it was a question of its own:
    # "asks to run this outside the sandbox", Allow once or Deny, and an "asking to run" line in the chat).
    away, outside = shared_away
    allowed, declined = outside / "allowed.txt", outside / "declined.txt"
    llm.script(elevated_write(allowed), Reply.text("written"), elevated_write(declined), Reply.text("not written"))
    daemon = await shared_daemon(env={**llm.env(), **away})
    asked: list[str] = []
    answers = iter(["Allow once", None])

    @daemon.client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def on_request(params: types.ShowMessageRequestParams):
        asked.append(params.message)
        assert [a.title for a in params.actions] == ["Reject", "Allow once"]
        title = next(answers)
        return types.MessageActionItem(title=title) if title else None

    assert (await daemon.request("ollie/submit", {"text": "write it"}))["reply"] == "written"
    assert allowed.read_text() == "x\n"
    assert (await daemon.request("ollie/submit", {"text": "again"}))["reply"] == "not written"
    assert not declined.exists()
    title = [e["tool"]["title"] for e in daemon.events if e["role"] == "call"][-1]  # the step's, cut
    assert title.startswith("Run `echo x > ") and title.endswith("` outside the sandbox"), title
    assert len(asked) == 2 and asked[1].endswith(f" asks to: {title}\n\necho x > {declined}")
    assert f"rejected: the user did not allow {title!r}" in llm.chat_requests[-1].body["messages"][-1]["content"]
    # A notification goes: the chat keeps the answer.
    infos = [e["content"] for e in daemon.events if e["role"] == "info"]
    assert f"rejected: {title}" in infos and not [i for i in infos if "asking to run" in i], infos


@pytest.mark.parametrize("card", [False, True])
async def test_an_elevation_nobody_answers_is_denied_after_the_timeout(start_daemon, llm, tmp_path, card):
    import asyncio

    away, outside = away_from(tmp_path)
    llm.script(elevated_write(outside / "x.txt"), Reply.text("not written"))
    daemon = await start_daemon(env={**llm.env(), **away, "OLLIE_QUESTION_TIMEOUT_S": "1"},
                                init_options={"permissionRequest": card})
    asked = asyncio.Event()

    @daemon.client.feature("ollie/permission" if card else types.WINDOW_SHOW_MESSAGE_REQUEST)
    async def on_request(params: Any):
        asked.set()
        await asyncio.Event().wait()  # the user is away

    assert (await daemon.request("ollie/submit", {"text": "write it"}))["reply"] == "not written"
    assert asked.is_set() and not (outside / "x.txt").exists()
    assert "rejected: nobody answered whether" in llm.chat_requests[-1].body["messages"][-1]["content"]


async def test_agent_yolo_asks_the_editor_every_time_and_a_denial_keeps_the_agent(shared_daemon, llm):
    daemon = await shared_daemon(env=llm.env())
    asked: list[str] = []
    answers = iter([None, "Allow once"])

    @daemon.client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def on_request(params: types.ShowMessageRequestParams):
        asked.append(params.message)
        title = next(answers)
        return types.MessageActionItem(title=title) if title else None

    async def submit(text: str) -> str:
        return (await daemon.request("ollie/submit", {"text": text}))["reply"]

    assert "not switched: yolo runs without a sandbox" in await submit("/agent yolo")
    assert len(asked) == 1 and "asks to: switch to agent yolo: it runs WITHOUT a sandbox\n\neverything" in asked[0]
    assert (await submit("/agent")) == "agent: default"
    assert (await submit("/agent coding")).startswith("agent: coding")  # sandboxed: no question
    assert (await submit("/agent yolo")).startswith("agent: yolo")
    assert len(asked) == 2


async def test_under_ask_an_elevated_step_is_one_question_with_its_code_and_no_always(shared_daemon, llm, shared_away):
    # The step's approval and its elevation were two questions: "Allow once" to the first, then the second.
    away, outside = shared_away
    allowed, rejected = outside / "allowed.txt", outside / "rejected.txt"
    llm.script(elevated_write(allowed), Reply.text("written"), elevated_write(rejected), Reply.text("not written"))
    daemon = await shared_daemon(env={**llm.env(approval="ask"), **away})
    asked: list[types.ShowMessageRequestParams] = []
    answers = iter(["Allow once", "Reject"])

    @daemon.client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def on_request(params: types.ShowMessageRequestParams):
        asked.append(params)
        return types.MessageActionItem(title=next(answers))

    assert (await daemon.request("ollie/submit", {"text": "write it"}))["reply"] == "written"
    assert allowed.read_text() == "x\n" and len(asked) == 1
    assert (await daemon.request("ollie/submit", {"text": "again"}))["reply"] == "not written"
    assert not rejected.exists() and len(asked) == 2
    first = asked[0]
    assert "outside the sandbox" in first.message and first.message.endswith(f"\n\necho x > {allowed}")
    # Leaving the sandbox is asked each time: no "Allow always" to cover later ones.
    assert [a.title for a in first.actions] == ["Reject", "Allow once"]
    assert "rejected: the user did not allow" in llm.chat_requests[-1].body["messages"][-1]["content"]


async def test_an_elevated_tool_call_is_one_ollie_permission_question_naming_it(shared_daemon, llm, shared_away):
    away, outside = shared_away
    target = outside / "made.txt"
    llm.script(Reply.tool_calls(("call_tool", {"calls": [
        {"tool": "file_write", "args": [str(target), "hello"], "elevated": True}]})), Reply.text("done"))
    daemon = await shared_daemon(env={**llm.env(approval="ask"), **away},
                                init_options={"permissionRequest": True})
    questions = answer_cards(daemon, "allow_once")

    @daemon.client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def on_request(params: types.ShowMessageRequestParams):
        questions.append(params.message)  # the old second question: there must be none
        return types.MessageActionItem(title="Allow once")

    assert (await daemon.request("ollie/submit", {"text": "write it"}))["reply"] == "done"
    assert target.read_text() == "hello"
    (question,) = questions
    assert question["step"]["outside"] == [f"file_write {target} hello"]
    assert [o["id"] for o in question["options"]] == ["allow_once", "reject", "reject_with_feedback"]
    assert question["always"] == ""


async def test_under_auto_the_elevation_alone_is_an_ollie_permission_card_of_its_step(shared_daemon, llm, shared_away):
    # It was a window/showMessageRequest: VS Code ran the program's lines together in one notification line.
    away, outside = shared_away
    allowed, rejected, unoffered = outside / "allowed.txt", outside / "rejected.txt", outside / "unoffered.txt"

    def program(target):  # two lines: the card shows them as two
        return Reply.tool_calls(("execute_code", {"steps": [
            {"code": f"echo x > {target}\necho y >> {target}", "elevated": True}]}))

    llm.script(program(allowed), Reply.text("written"), program(rejected), Reply.text("not written"),
               program(unoffered), Reply.text("still not"))
    daemon = await shared_daemon(env={**llm.env(approval="auto"), **away},
                                init_options={"permissionRequest": True})
    questions = answer_cards(daemon, "allow_once", "reject", "allow_always", "reject")  # "always" is not offered: a no
    plain: list[str] = []

    @daemon.client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def on_request(params: types.ShowMessageRequestParams):
        plain.append(params.message)  # the old notification: none (an agent switch's was one)
        return None

    assert (await daemon.request("ollie/submit", {"text": "write it"}))["reply"] == "written"
    assert allowed.read_text() == "x\ny\n"
    assert (await daemon.request("ollie/submit", {"text": "again"}))["reply"] == "not written"
    assert (await daemon.request("ollie/submit", {"text": "and again"}))["reply"] == "still not"
    assert not rejected.exists() and not unoffered.exists() and len(questions) == 3 and not plain
    assert "not switched" in (await daemon.request("ollie/submit", {"text": "/agent yolo"}))["reply"]
    assert not plain and questions[3]["step"]["id"].startswith("agent/yolo/"), plain
    assert [o["id"] for o in questions[3]["options"]] == ["allow_once", "reject"]
    first = questions[0]
    step = next(e for e in daemon.events if e["role"] == "call")["tool"]
    assert (first["step"]["id"], first["step"]["title"]) == (step["id"], step["title"])
    assert step["title"].endswith("outside the sandbox")
    assert first["step"]["outside"] == [f"echo x > {allowed}\necho y >> {allowed}"]
    assert [o["id"] for o in first["options"]] == ["allow_once", "reject", "reject_with_feedback"]
    assert first["always"] == ""
    assert "the user did not allow" in llm.chat_requests[-1].body["messages"][-1]["content"]
    # The card shows the code: no line above it saying it again (VS Code showed it twice); the answer's line stays.
    infos = [e["content"] for e in daemon.events if e["role"] == "info"]
    assert not [i for i in infos if "asking to run" in i] and f"rejected: {step['title']}" in infos


async def test_a_batch_s_elevation_card_names_its_step_that_leaves_the_sandbox(shared_daemon, llm, shared_away):
    away, outside = shared_away
    target = outside / "made.txt"
    llm.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_glob", "args": ["*"]},
        {"tool": "file_write", "args": [str(target), "hello"], "elevated": True}]})), Reply.text("done"))
    daemon = await shared_daemon(env={**llm.env(approval="auto"), **away},
                                init_options={"permissionRequest": True})
    questions = answer_cards(daemon, "allow_once")

    assert (await daemon.request("ollie/submit", {"text": "write it"}))["reply"] == "done"
    assert target.read_text() == "hello"
    steps = next(e for e in daemon.events if e["role"] == "call")["steps"]
    (question,) = questions
    assert (question["step"]["id"], question["step"]["title"]) == (steps[1]["id"], steps[1]["title"])
    assert question["step"]["outside"] == [f"file_write {target} hello"]


@pytest.mark.parametrize("approval", ["auto", "ask"])
@pytest.mark.parametrize("answers", [("allow_once", "reject"), ("reject", "allow_once")])
async def test_each_elevated_call_of_a_reply_is_asked_with_its_own_step_and_code(shared_daemon, llm, shared_away,
                                                                                  approval, answers):
    # Every card named the reply's first elevated step: the user approved the second reading the first one's code.
    away, outside = shared_away
    targets = [outside / "a.txt", outside / "b.txt"]
    codes = [f"echo {n} > {t}" for n, t in enumerate(targets)]
    llm.script(Reply.tool_calls(*(("execute_code", {"steps": [{"code": c, "elevated": True}]}) for c in codes)),
               Reply.text("done"))
    daemon = await shared_daemon(env={**llm.env(approval=approval), **away}, init_options={"permissionRequest": True})
    questions = answer_cards(daemon, *answers)

    assert (await daemon.request("ollie/submit", {"text": "write both"}))["reply"] == "done"
    steps = [e["tool"] for e in daemon.events if e["role"] == "call"]
    assert [(q["step"]["id"], q["step"]["title"], q["step"]["outside"]) for q in questions] == [
        (s["id"], s["title"], [c]) for s, c in zip(steps, codes, strict=True)]
    assert [t.exists() for t in targets] == [a == "allow_once" for a in answers]


@pytest.mark.parametrize(("approval", "written"), [("auto", [True, False]), ("ask", [False, False])])
async def test_each_elevated_call_of_a_batch_is_asked_with_its_own_step(shared_daemon, llm, shared_away, approval,
                                                                         written):
    # Under `auto` the second card named the first call (its title, its id) over the second's code. Under `ask` both
    # are asked before the batch runs, and a rejection refuses it whole.
    away, outside = shared_away
    targets = [outside / "a.txt", outside / "b.txt"]
    llm.script(Reply.tool_calls(("call_tool", {"calls": [
        {"tool": "file_write", "args": [str(t), "hello"], "elevated": True} for t in targets]})), Reply.text("done"))
    daemon = await shared_daemon(env={**llm.env(approval=approval), **away}, init_options={"permissionRequest": True})
    questions = answer_cards(daemon, "allow_once", "reject")

    assert (await daemon.request("ollie/submit", {"text": "write both"}))["reply"] == "done"
    steps = next(e for e in daemon.events if e["role"] == "call")["steps"]
    assert [(q["step"]["id"], q["step"]["title"], q["step"]["outside"]) for q in questions] == [
        (s["id"], s["title"], [f"file_write {t} hello"]) for s, t in zip(steps, targets, strict=True)]
    assert [t.exists() for t in targets] == written
