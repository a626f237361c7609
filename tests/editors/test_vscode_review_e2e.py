"""Review, rewind, history, API keys and editor tools in real VS Code (code-server), real daemon, scripted model."""

from __future__ import annotations

import pytest

from .test_vscode_e2e import scenarios_said

pytestmark = pytest.mark.slow


@pytest.mark.timeout(510)
def test_review_undo_rewind_history_keys_and_diagnostics_in_real_vscode(run_e2e):
    """A key from SecretStorage reaches the daemon; a hunk is undone from the diff editor, a stale undo refused; the
    model receives VS Code's TypeScript diagnostic (and open files, a definition, symbols), and after that turn, which
    changed nothing, Review Changes shows the turn before, saying so (it stopped at "turn 2 changed no files"); an
    open document's edit goes to its buffer and is saved (auto-save off), listed and undone in its buffer, its open
    review tab then showing the undo (it went on showing the change, offering to undo it again); history renames and
    resumes; rewind restores the file and cuts the chat, Undo Rewind brings both back; a batch step links each file
    location once. Then, in a new session (scenario turnchanges, once a window of its own): two turns change files,
    each one's Changed files come from its end event, the daemon diffing the turn once (before: again for the list's
    `ollie/changes`); after Developer: Reload Window the chat shows that session again with the prompt being typed
    (the window's one reload: the first session's was one more workbench load), read from the history, lists both
    turns' Changed files, each under its turn (before, only the last turn's came back), and the two allowed edit steps
    of one file each show their own diff again, inline and in Open diff (before: none under the first, the turn's
    change under the second; read from the checkpoints logged around each step), and so does the `sed -i` step (it
    showed none: the history named no files of a shell step). A hostile turn of 152 files, two named with terminal
    escapes, a newline and a bidi override, lists its first 100 as text and counts the rest; those two names are shown
    escaped there, in Review Changes' list and in the review tab's title and document (an override reversed the tab's
    title); its step shows its first 100 diffs and says how many more files it changed (before: nothing said there
    were more), and its link to the newline-named file opens the real file (the click was dropped: no message from the
    chat held a control); a turn that leaves 1,001 files (past the window's checkpoint cap of 1,000) ends saying its
    changed files are not known and why, the next turns of that reason not again, and says it once after a reload too,
    with why (it said nothing, as a talk did), under the first turn of the page shown (the one that said it on the page
    before: it said nothing).
    Then a day's review in a session of its own (scenario
    dayswork, once a window of its own): a turn edits two open files (one dirty): reviewed, one undone, her line kept;
    after a turn undone whole and a talk, Review Changes shows turn 1's in one request that diffs turn 1 alone (it
    asked turn by turn back, diffing the undone turn too) and says turns 2 to 3 have none; a rewound talk asked again,
    the Rewind pick diffing no turn (it diffed each, and sent its files' texts, to count them) and saying turn 2 changed
    the plan (it said "changed no files"); the session resumed in
    a new window, turn 2 listed all undone and turn 1 some, and forked from its first prompt. Then more windows: a
    second one on the folder runs its own session (not the first's, the fork, still live), a multi-root workspace's
    session works in the folder of the file asked about, a window with no folder works in home and asks about an
    untitled buffer."""
    # 300 s were tight on a busy machine once the hostile name's review tab was read too.
    output = run_e2e("review.mjs", total_ms=480000)
    for step in ("daemon restarted with it", "the batch step links each location once", "one hunk undone on disk",
                 "a stale undo is refused plainly", "received VS Code's TypeScript diagnostic",
                 "definition and workspace symbols came from VS Code",
                 "Review Changes after a turn that changed nothing showed the turn before, which did",
                 "Keep leaves the change", "goes to its buffer and is saved",
                 "the agent's edit of open bad.ts was told TypeScript's new error", "is undone in its buffer, its review tab too",
                 "renames and resumes",
                 "rewind restored the files and the chat dropped the turns; their review tabs closed",
                 "Undo Rewind put the files and the conversation back",
                 "a window reload shows the session it showed before, and the prompt being typed",
                 "a second window on the folder runs its own daemon and session, and works on once the first closed",
                 "multi-root: the session works in the folder of the file asked about, its links open there",
                 "with no folder open the chat says it works in home, runs there, and asks about an untitled selection"):
        assert step in output, f"{step!r} not said\n{output[-3000:]}"
    scenarios_said(
        output,
        ("turnchanges", "after a window reload each turn's Changed files are listed under it, the earlier turn's too"),
        ("turnchanges", "after a window reload the allowed edit steps each show their own diff again"),
        ("turnchanges", "after a window reload the sed -i step shows its diffs again"),
        ("turnchanges", "a turn of 152 files lists its first 100 as text, and says how many more"),
        ("turnchanges", "the step of 152 files shows its first 100 diffs and says 52 more files changed"),
        ("turnchanges", "a link to a file named with a newline and an override opens the real file"),
        ("turnchanges", "a turn whose changes cannot be known says so and why, once"),
        ("turnchanges", "after a window reload the turn still says its changes are not known, and why, once"),
        *(("dayswork", step) for step in (
            "a turn edited both open files", "Review Changes listed both files", "Undo took back util.py's edit alone",
            "the daemon diffing turn 1 alone", "the prompt asked again answered anew", "its pick said turn 2 changed the plan",
            "a new window resumed the session",
            "Fork from here went on from turn 1")),
    )
