"""The approval gate takes only an answer its question offered."""

from __future__ import annotations

from pathlib import Path

from ollie.agent.approval import Answer, ApprovalGate


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
