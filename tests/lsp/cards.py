"""A card client's side of `ollie/permission` in the daemon's tests: questions answered in turn, and kept."""

from __future__ import annotations

from typing import Any


def answer_cards(daemon: Any, *outcomes: str) -> list[Any]:
    """Answer the daemon's `ollie/permission` questions with `outcomes` in turn (the last one again once they run
    out); the questions, as they come."""
    questions: list[Any] = []

    @daemon.client.feature("ollie/permission")
    def on_permission(params: Any):
        questions.append(params)
        return {"outcome": outcomes[min(len(questions), len(outcomes)) - 1]}

    return questions
