"""The approval gate takes only an answer its question offered."""

from __future__ import annotations

from pathlib import Path

from ollie.agent.approval import ApprovalGate
from ollie.agent.questions import Answer


async def test_an_answer_the_question_did_not_offer_is_a_rejection_everywhere_it_is_told(tmp_path: Path) -> None:
    # "Allow for this session" to a command (a network question's answer alone, as a plain client's button title may
    # say): the step was refused, but the session's info line told the user "allowed: Run `touch made`".
    told: list[tuple[str, str]] = []
    gate = ApprovalGate(mode=lambda: "ask", always=list, remember=lambda rule: None, cwd=lambda: tmp_path)
    gate.approver = lambda question: Answer("allow_session")
    gate.on_ask = lambda question, answer: told.append((question.title, answer.outcome))
    refusal = await gate.check("c1", "execute_code", {"steps": [{"code": "touch made"}]})
    assert refusal is not None and refusal.startswith("rejected: the user did not allow"), refusal
    assert told == [("Run `touch made`", "reject")], told


async def test_always_is_offered_only_where_its_rule_would_let_that_step_go_unasked(tmp_path: Path) -> None:
    # `curl -w '%{http_code}\n' URL` has shell syntax no "command:curl" rule covers: "Allow always (`curl` commands)"
    # was offered, answered, saved, and the same step was asked about again at once.
    rules: list[str] = []
    gate = ApprovalGate(mode=lambda: "ask", always=lambda: list(rules), remember=rules.append, cwd=lambda: tmp_path)
    asked: list[tuple[str, ...]] = []

    def approver(question):
        asked.append(question.outcomes())
        return Answer("allow_always" if "allow_always" in question.outcomes() else "allow_once")

    gate.approver = approver
    fetch = {"steps": [{"code": "curl -sS -w ' status %{http_code}\\n' http://example.test/"}]}
    for _ in range(2):
        assert await gate.check("c1", "execute_code", fetch) is None
    assert asked == [("allow_once", "reject", "reject_with_feedback")] * 2 and rules == [], (asked, rules)
    # A plain one is offered "always", and its rule then lets the next go unasked.
    plain = {"steps": [{"code": "curl -sS http://example.test/"}]}
    assert await gate.check("c2", "execute_code", plain) is None
    assert await gate.check("c3", "execute_code", plain) is None
    assert asked[2:] == [("allow_once", "allow_always", "reject", "reject_with_feedback")] and rules == ["command:curl"]


async def test_always_for_an_mcp_tool_covers_its_calls_whatever_their_arguments_hold(tmp_path: Path) -> None:
    # A tool's arguments reach no shell, yet they were judged as a shell line: after "Allow always (`notes: add_note`
    # calls)", a note with "(" or "$" in it was asked about again each time.
    rules: list[str] = []
    gate = ApprovalGate(mode=lambda: "ask", always=lambda: list(rules), remember=rules.append, cwd=lambda: tmp_path,
                        kind_of=lambda tool: "other")
    asked: list[str] = []

    def approver(question):
        asked.append(question.title)
        return Answer("allow_always")

    gate.approver = approver
    for text in ("buy (milk) for $3; & eggs", "call {mum} > later", "plain"):
        assert await gate.check("c1", "mcp__notes__add_note", {"text": text}) is None
    assert asked == ['notes: add_note "buy (milk) for $3; & eggs"'] and rules == ["command:mcp__notes__add_note"], asked
