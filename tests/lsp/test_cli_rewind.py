"""The terminal's /rewind of every turn and its undo, as a user reads them: in turns, and in /sessions."""

from __future__ import annotations

from ollie.testing import Reply

from .test_cli import run_ollie


def test_a_rewind_of_every_turn_lists_the_session_untitled_and_its_undo_says_the_turns_it_puts_back(llm, tmp_path):
    # /sessions went on showing the first prompt's title of a session the rewind emptied (the daemon and the editors
    # listed it untitled); the undo said "rewind undone: turn 1 back: ...; 4 messages", which counts nothing she typed.
    llm.script(Reply.text("waves"), Reply.text("gulls"))
    typed = ["Write a haiku about the sea", "another one", "/rewind 1", "/sessions", "/rewind undo", "/sessions"]
    proc = run_ollie(["--cwd", str(tmp_path)], env=llm.env(), input="\n".join(typed) + "\n")
    assert proc.returncode == 0, proc.stderr
    said = proc.stdout.splitlines()
    rewound = said.index("rewound to before turn 1: files restored (none); no turns kept. /rewind undo to undo")
    assert said[rewound + 1:rewound + 3] == ["sessions (1):", "* (untitled)"], said
    undone = said.index("rewind undone: turns 1–2 back: files restored (none)")
    assert said[undone + 1:undone + 3] == ["sessions (1):", "* Write a haiku about the sea"], said
