"""The Inbox on its own: queued prompts, injects and hook notes of one core."""

from __future__ import annotations

from ollie.agent.inbox import Inbox


def _inbox() -> tuple[Inbox, list[int]]:
    queued: list[int] = []
    inbox = Inbox(on_queued=lambda: queued.append(1))
    return inbox, queued


def test_an_inject_waits_for_the_running_turn_and_an_idle_one_is_queued():
    inbox, queued = _inbox()
    inbox.inject("look at b.py too", running=True)
    inbox.inject("and c.py", running=True)
    assert inbox.queued() == [] and queued == []
    assert inbox.pop_inject() == "look at b.py too\nand c.py"
    assert inbox.pop_inject() == ""
    inbox.inject("next prompt", running=False)
    assert inbox.queued() == ["next prompt"] and len(queued) == 1


def test_injects_left_at_the_end_of_a_turn_become_the_next_prompt():
    inbox, _ = _inbox()
    inbox.queue("first")
    inbox.inject("too late", running=True)
    inbox.requeue_injects()
    assert inbox.pop_inject() == ""
    assert inbox.queued() == ["first", "too late"]
    # Taken back newest first, as the user sent them (the one just sent is the one to edit), images and all.
    assert [inbox.pop_queue(), inbox.pop_queue(), inbox.pop_queue()] == [("too late", (), ()), ("first", (), ()), None]
    inbox.requeue_injects()  # nothing pending: nothing queued
    assert inbox.queued() == []


def test_injects_left_at_the_end_of_a_turn_run_before_the_prompts_queued_after_them():
    # Bug: "also keep it short", injected while the answer streamed, ran after "then explain", queued after it.
    inbox, _ = _inbox()
    inbox.queue("first")
    inbox.inject("also keep it short", running=True)
    inbox.queue("then explain")
    inbox.inject("and tested", running=True)
    inbox.requeue_injects()
    assert inbox.queued() == ["first", "also keep it short\nand tested", "then explain"]
    inbox.inject("late", running=True)
    assert inbox.next_prompt() == "first"
    inbox.requeue_injects()
    assert inbox.queued() == ["also keep it short\nand tested", "then explain", "late"]
    inbox.clear_queue()
    inbox.queue("x")
    inbox.inject("y", running=True)
    assert inbox.next_prompt() == "x"  # what was queued before it ran already
    inbox.queue("z")
    inbox.requeue_injects()
    assert inbox.queued() == ["y", "z"]


def test_replace_injects_keeps_only_the_new_text():
    inbox, _ = _inbox()
    inbox.inject("old", running=True)
    inbox.replace_injects("new", running=True)
    assert inbox.pop_inject() == "new"
    inbox.replace_injects("idle", running=False)
    assert inbox.pop_inject() == "" and inbox.queued() == ["idle"]


def test_queue_depth_clear_and_notes_are_handed_over_once():
    inbox, _ = _inbox()
    assert [inbox.queue("a"), inbox.queue("b")] == [1, 2]
    assert inbox.clear_queue() == 2 and inbox.queued() == []
    inbox.add_note("")
    inbox.add_note("[postTurn hook]\nok")
    assert inbox.take_notes() == ["[postTurn hook]\nok"]
    assert inbox.take_notes() == []


def test_irw_while_idle_replaces_the_queued_inject_instead_of_queueing_both():
    inbox, _ = _inbox()
    inbox.queue("a user prompt")
    inbox.inject("look at b.py", running=False)
    inbox.inject("and c.py", running=False)
    assert inbox.queued() == ["a user prompt", "look at b.py\nand c.py"]
    inbox.replace_injects("only d.py", running=False)
    assert inbox.queued() == ["a user prompt", "only d.py"]
    assert inbox.pop_queue() == ("only d.py", (), ()) and inbox.pop_queue() == ("a user prompt", (), ())
    inbox.replace_injects("fresh", running=False)  # the old entry ran: a new one is queued
    assert inbox.queued() == ["fresh"]


def test_irw_never_replaces_a_prompt_with_the_same_text():
    inbox, _ = _inbox()
    inbox.queue("same")
    inbox.replace_injects("other", running=False)
    assert inbox.queued() == ["same", "other"]
