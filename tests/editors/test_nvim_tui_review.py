"""Neovim's review of an earlier turn in the real TUI (nvim in tmux, README's `setup({})`): its own change, undone."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ollie import paths
from ollie.sessions.persist import SessionFile
from ollie.testing import Reply

from .test_nvim import _nvim
from .test_nvim_tui import Tmux, quit_nvim, resume, send_in_chat, start_nvim

NOTES = "".join(f"line {i}\n" for i in range(1, 13))


def edit(old: str, new: str) -> Reply:
    """A reply that edits notes.txt once."""
    return Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": ["notes.txt", old, new]}]}))


def two_turns(tmp_path: Path, scripted_llm, second: Reply):
    """Neovim on notes.txt after turn 1 (line 3 edited) and turn 2 (`second`), on turn 1's diff."""
    srv = scripted_llm("openai")
    srv.script(edit("line 3\n", "line three\n"), Reply.text("Edited three."), second, Reply.text("Edited again."))
    tmux = start_nvim(tmp_path, srv.env(), {"notes.txt": NOTES})
    tmux.wait(lambda s: "line 1" in s, "nvim to start")
    tmux.keys(":Ollie edit line 3", "Enter")
    tmux.wait(lambda s: "Edited three." in s and "(end)" in s, "turn 1")
    send_in_chat(tmux, "and again")
    tmux.wait(lambda s: "Edited again." in s, "turn 2")
    tmux.keys("Escape", ":OllieChanges 1", "Enter")
    tmux.wait(lambda s: "turn 1 changed 1 file" in s, "turn 1's changes")
    tmux.keys("Enter")
    return tmux


def test_an_earlier_turns_diff_is_its_own_change_and_its_hunk_undone_keeps_the_later_edit(tmp_path, scripted_llm):
    # Bug: turn 1's diff was against the file now, so turn 2's edit of line 9 showed as turn 1's ("1 hunk" listed,
    # two differences drawn), and `du` there was always refused ("the editor's text changed since this change").
    with two_turns(tmp_path, scripted_llm, edit("line 9\n", "line nine\n")) as tmux:
        diff = tmux.keep("1-diff", tmux.wait(lambda s: "after turn 1: notes.txt" in s and "line three" in s,
                                             "turn 1's diff"), (1000, 560))
        assert "line three" in diff and "line nine" not in diff, diff  # turn 2's line is not turn 1's change
        tmux.keys("d", "u")
        tmux.keep("2-undone", tmux.wait(lambda s: "undone: hunk 1 of notes.txt" in s, "the undo"), (1000, 560))
        assert (tmp_path / "ws" / "notes.txt").read_text() == NOTES.replace("line 9\n", "line nine\n")


def test_an_undo_of_a_hunk_a_later_turn_edited_again_says_so(tmp_path, scripted_llm):
    # She had typed nothing: the refusal says a later turn's edit counts too (she took it for a bug).
    with two_turns(tmp_path, scripted_llm, edit("line three\n", "line THREE\n")) as tmux:
        tmux.wait(lambda s: "after turn 1: notes.txt" in s, "turn 1's diff")
        tmux.keys("d", "u")
        said = tmux.keep("1-refused", tmux.wait(lambda s: "by you, or by a later turn" in " ".join(s.split()),
                                                "the refusal"))
        assert "by you, or by a later turn" in " ".join(said.split()), said
        assert "line THREE" in (tmp_path / "ws" / "notes.txt").read_text()


# The user's format on save (conform.nvim, `vim.lsp.buf.format` in a BufWritePre): here, trailing spaces stripped.
FORMAT_ON_SAVE = 'vim.api.nvim_create_autocmd("BufWritePre", { command = [[keeppatterns %s/\\s\\+$//e]] })\n'
UNFORMATTED = NOTES.replace("line 7\n", "line 7   \n")


def formatted_turn(tmp_path: Path, scripted_llm, typed: str = "") -> Tmux:
    """Neovim formatting on save, on notes.txt (`typed` typed in its buffer, unsaved) after a turn that wrote line 3
    with trailing spaces, which ollie's save stripped (and line 7's), on the turn's diff."""
    srv = scripted_llm("openai")
    srv.script(edit("line 3\n", "line three  \n"), Reply.text("Edited three."))
    tmux = start_nvim(tmp_path, srv.env(), {"notes.txt": UNFORMATTED}, init_lua=FORMAT_ON_SAVE)
    try:
        tmux.wait(lambda s: "line 1" in s, "nvim to start")
        if typed:
            tmux.keys("11G", "A")
            tmux.keys(typed, literal=True)
            tmux.keys("Escape")
            tmux.wait(lambda s: f"line 11{typed.rstrip()}" in s, "the typing")
        tmux.keys(":Ollie edit line 3", "Enter")
        tmux.wait(lambda s: "Edited three." in s and "(end)" in s, "the turn")
        tmux.keys("Escape", ":OllieChanges 1", "Enter")
        tmux.wait(lambda s: "turn 1 changed 1 file" in s, "turn 1's changes")
        tmux.keys("Enter")
    except BaseException:
        tmux.close()  # (the test's own `finally` is not reached)
        raise
    return tmux


def test_the_hunk_of_an_edit_a_format_on_save_changed_is_undone_keeping_the_formatting(tmp_path, scripted_llm):
    # Bug: ollie's save ran the user's formatter, which changed the agent's lines: the hunk's undo was refused as
    # "the file was edited since this change (by you, ...)": she had typed nothing.
    with formatted_turn(tmp_path, scripted_llm) as tmux:
        tmux.keep("1-diff", tmux.wait(lambda s: "now: notes.txt" in s, "turn 1's diff"))
        tmux.keys("d", "u")
        tmux.keep("2-undone", tmux.wait(lambda s: "undone: hunk 1 of notes.txt" in s, "the undo"), (1400, 740))
        # The agent's line is back; the formatting of line 7 stays (it is on disk, and no edit of hers is lost).
        assert (tmp_path / "ws" / "notes.txt").read_text() == NOTES


def test_an_unsaved_buffer_saved_formatted_with_the_agent_s_edit_keeps_her_typing_through_the_undo(tmp_path,
                                                                                                     scripted_llm):
    with formatted_turn(tmp_path, scripted_llm, typed=" mine  ") as tmux:
        tmux.wait(lambda s: "now: notes.txt" in s, "turn 1's diff")
        tmux.keys("d", "u")
        tmux.keep("1-undone", tmux.wait(lambda s: "undone: hunk 1 of notes.txt" in s, "the undo"))
        assert (tmp_path / "ws" / "notes.txt").read_text() == NOTES.replace("line 11\n", "line 11 mine\n")


def test_a_file_undone_whole_after_a_format_on_save_is_no_longer_listed_though_the_undo_s_save_formatted_it(
        tmp_path, scripted_llm):
    # The undo's own save ran the formatter too: the disk held neither the undo's text nor the turn's, so the undo
    # was not recorded and the list showed the file changed by turn 1 again.
    with formatted_turn(tmp_path, scripted_llm) as tmux:
        tmux.wait(lambda s: "now: notes.txt" in s, "turn 1's diff")
        tmux.keys("d", "U")
        tmux.wait(lambda s: "changes (all in notes.txt)?" in s, "the question")
        tmux.keys("1", "Enter")
        tmux.keep("1-undone", tmux.wait(lambda s: "undone: all changes to notes.txt" in s, "the undo"))
        assert (tmp_path / "ws" / "notes.txt").read_text() == NOTES  # before the turn, as her formatter saves it
        tmux.keys(":tabfirst", "Enter", ":OllieChanges 1", "Enter")
        # (The daemon's answer: the list keeps the file, marked undone, from the undo.)
        tmux.keep("2-list", tmux.wait(lambda s: "ollie: turn 1 has no changes" in s, "the list"))


@pytest.mark.parametrize("data", [b"\xef\xbb\xbf" + NOTES.encode(), NOTES.replace("line 9", "caf\xe9 9").encode("latin-1")],
                         ids=["utf-8 with a BOM", "latin-1"])
def test_a_file_neovim_saves_in_its_own_encoding_is_no_format_on_save(tmp_path, scripted_llm, data):
    # What ollie's save wrote is read back from the disk as the edit's result: a BOM or latin-1 there is the buffer's
    # encoding, not a formatter's change (taken as one, the hunk's undo put U+FFFD or a second BOM in the buffer).
    srv = scripted_llm("openai")
    srv.script(edit("line 3\n", "line three\n"), Reply.text("Edited three."))
    with start_nvim(tmp_path, srv.env(), {"notes.txt": data}) as tmux:
        tmux.wait(lambda s: "line 1" in s, "nvim to start")
        tmux.keys(":Ollie edit line 3", "Enter")
        tmux.wait(lambda s: "Edited three." in s and "(end)" in s, "the turn")
        assert (tmp_path / "ws" / "notes.txt").read_bytes() == data.replace(b"line 3", b"line three")
        tmux.keys("Escape", ":OllieChanges 1", "Enter")
        tmux.wait(lambda s: "turn 1 changed 1 file" in s and "(+1 -1, 1 hunk)" in s, "turn 1's changes: line 3 alone")
        tmux.keys("Enter")
        tmux.wait(lambda s: "now: notes.txt" in s, "turn 1's diff")
        tmux.keys("d", "u")
        tmux.keep("1-undone", tmux.wait(lambda s: "undone: hunk 1 of notes.txt" in s, "the undo"))
        assert (tmp_path / "ws" / "notes.txt").read_bytes() == data


def drawn(tmux: Tmux, cond: Callable[[str], bool], what: str) -> str:
    """The screen once `cond` holds on two looks in a row that agree: Neovim draws a diff a window at a time, and a
    look between the two caught the second window's title (in the tab line) over the chat it had not yet replaced."""
    last = [""]

    def whole(screen: str) -> bool:
        agreed, last[0] = cond(screen) and screen == last[0], screen
        return agreed
    return tmux.wait(whole, what)


def step_diffs(tmux: Tmux, when: str) -> list[list[list[str]]]:
    """<CR> on each `Edit notes.txt` step of the chat in turn: the rows of the diff it opens, each a list of its two
    sides (the tabline and the messages left out; none when it said it has none); each screen kept, as a PNG too."""
    tmux.keys("Escape", ":lua vim.fn.win_gotoid(vim.fn.win_findbuf(vim.fn.bufnr('ollie://chat/'))[1])", "Enter", "gg")
    shown = []
    for n in (1, 2):
        # The n-th from the top, wherever the cursor is now (the chat redraws a running step: the CI's second look
        # found the first step again and showed its diff as the second's).
        tmux.keys(f":call cursor(1, 1) | for _ in range({n}) | call search('Edit notes.txt', 'W') | endfor", "Enter",
                  "Enter")
        screen = tmux.keep(f"{when}-{n}", drawn(tmux, lambda s: "no change" in s or any(
            "before Edit notes.txt" in row and "after Edit notes.txt" in row for row in s.splitlines()),
            f"step {n}'s diff"), (1000, 560))
        shown.append([[side.rstrip() for side in row.split("│")] for row in screen.splitlines()
                      if "│" in row and "after Edit notes.txt" in screen])
        # Back in the chat, the message gone (the next step's is waited for).
        tmux.keys(*(["q"] if "after Edit notes.txt" in screen else [":echo", "Enter"]))
        tmux.wait(lambda s: "## ollie" in s and "no change" not in s and "after Edit notes.txt" not in s, "the chat again")
    return shown


@pytest.mark.parametrize("log", ["new", "older"])
def test_each_step_opens_its_own_diff_live_and_resumed(tmp_path, scripted_llm, log):
    # Bug: Neovim showed no step's diff, and a resumed one had none (the history keeps no diffs): <CR> on a step's
    # title did nothing. Two steps of one file show each its own change (ollie/changes' `steps`), not the turn's; a
    # log saved before steps' checkpoints were kept has the turn's change under the last step of the file.
    srv = scripted_llm("openai")
    # A third step waits for the test: while it runs, the turn's changes are not counted yet.
    wait = Reply.tool_calls(("execute_code", {"steps": [{"code": "until [ -e go ]; do sleep 0.1; done",
                                                         "language": "bash"}]}))
    srv.script(edit("line 3\n", "line three\n"), edit("line three\n", "line THREE\n"), wait,
               Reply.text("Edited twice."))
    with start_nvim(tmp_path, srv.env(), {"notes.txt": NOTES}) as tmux:
        tmux.wait(lambda s: "line 1" in s, "nvim to start")
        tmux.keys(":Ollie edit line 3 twice", "Enter")
        tmux.wait(lambda s: s.count("✓ Edit notes.txt") == 2 and len(srv.chat_requests) == 3, "the third step")
        running = step_diffs(tmux, "running")
        (tmp_path / "ws" / "go").touch()
        tmux.wait(lambda s: "Edited twice." in s and "(end)" in s, "the turn")
        live = step_diffs(tmux, "live")
        quit_nvim(tmux, tmp_path)
    if log == "older":
        [saved] = (SessionFile(paths.sessions_dir(), p.stem, sync=False) for p in paths.sessions_dir().glob("*.jsonl"))
        session = saved.load()
        session.step_trees.clear()
        saved.save(session)
    with start_nvim(tmp_path, srv.env(), {"notes.txt": NOTES.replace("line 3", "line THREE")}) as tmux:
        resume(tmux, "edit line 3 twice", "Edited twice.")
        resumed = step_diffs(tmux, "resumed")
    if log == "older":
        assert resumed[0] == [] and "no change" in tmux.screens["resumed-1"], tmux.screens["resumed-1"]
        assert ["  line 3", "  line THREE"] in resumed[1], resumed[1]
        return
    first, second = resumed
    assert ["  line 3", "  line three"] in first and not any("THREE" in side for row in first for side in row), first
    assert ["  line three", "  line THREE"] in second and not any("  line 3" in row for row in second), second
    assert running == live == resumed


def test_a_diff_of_a_file_named_with_a_newline_saved_in_a_session_file_runs_nothing_when_it_is_loaded(
        tmp_path, scripted_llm):
    # Round 46: a diff buffer was named with the path as it came. `:mksession` (a session plugin's save on quit) writes
    # a name's newline as `\` and a line break, so the session file, sourced, ran the rest of the name as a command:
    # a workspace file `evil<NL>lua=os.execute(...)` the model edits ran the model's program as the user, unsandboxed.
    # The step's diff, the turn's and the location line (its file) in turn, in one Neovim, a session saved after each.
    pwned = tmp_path / "ws" / "pwned"  # (the session file goes back to the workspace first)
    evil = "evil\nlua=os.execute(string.char(" + ",".join(str(b) for b in b"touch pwned") + "))"
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": [evil, "old", "new"]}]})),
               Reply.text("Edited it."))

    def diffed(screen: str) -> bool:  # (its two sides on one row: the chat's own text could hold both words)
        return any(row.replace(" ", "") == "old│new" for row in screen.splitlines())

    sessions = {}
    with start_nvim(tmp_path, srv.env(), {"notes.txt": NOTES, evil: "old\n"}) as tmux:
        tmux.wait(lambda s: "line 1" in s, "nvim to start")
        tmux.keys(":Ollie edit it", "Enter")
        tmux.wait(lambda s: "Edited it." in s and "(end)" in s, "the turn")
        for opened in ("step", "turn", "location"):
            if opened == "turn":
                tmux.keys("Escape", ":OllieChanges", "Enter")
                tmux.wait(lambda s: "changed 1 file" in s, "the turn's changes")
                tmux.keys("Enter")
            else:  # <CR> on the step's title (its own diff) or on its location line (the file)
                tmux.keys("Escape", ":lua vim.fn.win_gotoid(vim.fn.win_findbuf(vim.fn.bufnr('ollie://chat/'))[1])",
                          "Enter", f":call search('{'Edit' if opened == 'step' else '→'} evil')", "Enter", "Enter")
            # The diff, or the message that it is not opened (the old code opened the file).
            said = (lambda s: "not opened" in s) if opened == "location" else diffed
            shown = tmux.keep(opened, tmux.wait(said, "what opens"), (1000, 560))
            assert ("line break in its name: not opened" in shown) == (opened == "location"), shown
            sessions[opened] = session = tmp_path / f"{opened}.vim"
            tmux.keys(f":mksession {session}", "Enter")
            # Whole (its last line written): the file is there as soon as :mksession opens it.
            tmux.wait(lambda s, session=session: session.exists()
                      and session.read_text().endswith('" vim: set ft=vim :\n'), "the session")
            if opened == "step":  # its diff closed: the turn's is the next one drawn
                tmux.keys("q")
                tmux.wait(lambda s: not diffed(s), "the step's diff closed")
    # The user's next Neovim loads the session (`nvim -S`, a session plugin): it runs no line of the file's name.
    for opened, session in sessions.items():
        subprocess.run([_nvim(), "--headless", "--clean", "-c", f"silent! source {session}", "-c", "qa!"],
                       cwd=tmp_path / "ws", timeout=60, check=False, capture_output=True)
        assert not pwned.exists(), f"{opened}: {session.read_text()}"


TALL = (1300, 740)  # a screen's PNG, in pixels
CALC = "def add(a, b):\n    return a - b\n"
UTIL = "def double(x):\n    return x * 3\n"
MINE = "# my unsaved note\n"
ASKED = "what did you change?"


def test_a_days_review_in_neovim(tmp_path: Path, scripted_llm):
    """A turn edits calc.py and util.py, both loaded, util.py with her unsaved line; the changes list undoes util.py's
    edit, her line kept. After a turn undone whole and one that only talks, :OllieChanges shows turn 1's, saying turns
    2 to 3 have none (it said "turn 3 changed no files", turn 2 unsaid). The talk rewound and asked again; Neovim
    started again resumes the session (:OllieSessions), :OllieFork 1 goes on from turn 1, its changes reviewed."""
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": ["calc.py", "a - b", "a + b"]},
                                                         {"tool": "file_edit", "args": ["util.py", "x * 3", "x * 2"]}]})),
               Reply.text("Fixed add and double."),
               Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": ["notes.md", "# notes\n",
                                                                                        "# notes\n- add fixed\n"]}]})),
               Reply.text("Noted."), Reply.text("I fixed add and double."),
               Reply.text("I fixed add; double is as you left it."), Reply.text("Going on in the fork."))
    ws = tmp_path / "ws"
    files = {"calc.py": CALC, "util.py": UTIL, "notes.md": "# notes\n"}

    def changes(tmux: Tmux, heading: str, name: str) -> str:
        tmux.keys("Escape", ":OllieChanges", "Enter")
        return tmux.keep(name, tmux.wait(lambda s: heading in s, heading), TALL)

    with start_nvim(tmp_path, srv.env(approval="auto"), files) as tmux:
        tmux.wait(lambda s: "def add" in s, "nvim to start")
        tmux.keys(":e util.py", "Enter", "G", "o")
        tmux.keys(MINE.strip(), literal=True)
        tmux.keys("Escape", ":b calc.py", "Enter", ":Ollie fix add and double", "Enter")
        tmux.keep("1-edited", tmux.wait(lambda s: "Fixed add and double." in s and "(end)" in s, "turn 1"), TALL)
        assert (ws / "util.py").read_text() == UTIL.replace("x * 3", "x * 2") + MINE
        changes(tmux, "turn 1 changed 2 files", "2-changes")
        tmux.keys("j", "d", "U")  # util.py's line: undo the file
        tmux.wait(lambda s: (ws / "util.py").read_text() == UTIL + MINE, "util.py undone, her line kept")
        # util.py stays in the list, marked undone (as VS Code's list has it; it went, as if never changed).
        tmux.keep("3-undone", tmux.wait(lambda s: "turn 1 changed 1 file" in s and "M  util.py  (undone)" in s,
                                        "the list of calc.py, util.py undone"), TALL)
        tmux.keys("q", ":b util.py", "Enter")
        tmux.keep("3-util-buffer", tmux.wait(lambda s: "return x * 3" in s and MINE.strip() in s,
                                             "util.py's buffer undone"), TALL)
        tmux.keys(":b calc.py", "Enter")
        send_in_chat(tmux, "note it in notes.md")
        tmux.wait(lambda s: "Noted." in s, "turn 2")
        changes(tmux, "turn 2 changed 1 file", "4-noted")
        tmux.keys("d", "U")
        tmux.wait(lambda s: "Undo all of turn 2's changes (all in notes.md)?" in s, "the question")
        tmux.keys("1", "Enter")
        # The list drawn again once the daemon answered (the model told of the undo then: the next prompt has it).
        tmux.wait(lambda s: "turn 2's changes are all undone" in s, "notes.md undone")
        assert (ws / "notes.md").read_text() == "# notes\n"
        tmux.keys("q")
        send_in_chat(tmux, ASKED)
        tmux.wait(lambda s: "I fixed add and double." in s, "turn 3")
        shown = changes(tmux, "turn 1 changed 1 file", "5-last-changes")
        assert "turns 2 to 3 have no changes; showing turn 1's changes" in tmux.wait(
            lambda s: "have no changes" in s, "what it skipped"), shown
        tmux.keys("q", ":OllieRewind 3", "Enter")
        tmux.wait(lambda s: "Type number" in s and "Rewind to before turn 3?" in s, "the confirmation")
        tmux.keys("1", "Enter")
        tmux.wait(lambda s: "rewound to before turn 3" in s and "I fixed add and double." not in s, "the rewind")
        send_in_chat(tmux, ASKED)
        tmux.keep("6-redone", tmux.wait(lambda s: "double is as you left it" in s, "the turn asked again"), TALL)
        quit_nvim(tmux, tmp_path)
    with start_nvim(tmp_path, srv.env(approval="auto"), {n: (ws / n).read_text() for n in files}) as tmux:
        resumed = resume(tmux, "fix add and double", "double is as you left it", "def add")
        tmux.keep("7-resumed", resumed, TALL)
        # Turn 2 undone, as the live chat said (the note of it was in the rewound prompt alone: no line said it).
        assert "✎ all undone since" in resumed, resumed
        changes(tmux, "turn 1 changed 1 file", "8-resumed-changes")
        tmux.keys("q", ":OllieFork 1", "Enter")
        tmux.wait(lambda s: "(fork)" in s and "double is as you left it" not in s, "the fork of turn 1")
        send_in_chat(tmux, "go on")
        tmux.wait(lambda s: "Going on in the fork." in s, "the fork's turn")
        changes(tmux, "turn 1 changed 1 file", "9-fork-changes")
        assert "turn 2 has no changes; showing turn 1's changes" in tmux.wait(lambda s: "has no changes" in s, "the skip")
        # The fork's review tab has a name of its own: its source's, of the same turn and file, had the same one.
        tmux.keys("Enter")
        tmux.keep("10-fork-diff", tmux.wait(lambda s: "before turn 1: calc.py — fix add and double (fork)" in s,
                                            "the fork's diff, named with its title"), TALL)


def test_the_rewind_picker_never_says_a_turn_whose_changes_are_unknown_changed_no_files(tmp_path, scripted_llm):
    """A turn whose end's diff failed (more files than the checkpoints take) counted none: :OllieRewind listed it
    "no file changes", though it changed b.txt, and a user rewound it thinking nothing went. Its diff is asked now:
    "changes unknown" while the tree is too large still (turn 3 only talked), its files once it fits again; one that
    changed only the plan says so (a rewind puts it back)."""
    flood = "echo evil > b.txt && mkdir junk && cd junk && seq 1001 | xargs touch"
    srv = scripted_llm("openai")
    srv.script(*(step for code, said in (("echo mine > a.txt", "Wrote a."), (flood, "Wrote b.")) for step in (
        Reply.tool_calls(("execute_code", {"steps": [{"code": code, "language": "bash"}], "timeout": 600})),
        Reply.text(said))), Reply.text("Talked."),
        Reply.tool_calls(("call_tool", {"calls": [{"tool": "task_add", "args": ["check it"]}]})), Reply.text("Planned."))
    env = {**srv.env(approval="auto"), "OLLIE_CHECKPOINT_MAX_FILES": "1000"}

    def picked(tmux: Tmux, name: str) -> str:
        """The labels of :OllieRewind's pick, how each ends (photographed), the pick closed."""
        tmux.keys("Escape", ":OllieRewind", "Enter")
        screen = tmux.keep(name, tmux.wait(lambda s: "Type number" in s and "turn 1 ·" in s, "the turns to pick"),
                           TALL)
        tmux.keys("Enter")  # none picked
        tmux.wait(lambda s: "Type number" not in s, "the pick closed")
        return [line.split(" — ")[-1].strip() for line in screen.splitlines() if " · " in line and " — " in line]

    with start_nvim(tmp_path, env, {"a.txt": "alpha\n", "b.txt": "beta\n"}) as tmux:
        tmux.wait(lambda s: "alpha" in s, "nvim to start")
        tmux.keys(":Ollie write a", "Enter")
        tmux.wait(lambda s: "Wrote a." in s and "(end)" in s, "turn 1")
        send_in_chat(tmux, "write b")
        tmux.wait(lambda s: "Wrote b." in s, "turn 2")
        send_in_chat(tmux, "talk")
        tmux.wait(lambda s: "Talked." in s, "turn 3")
        assert picked(tmux, "1-unknown") == ["no file changes", "changes unknown", "1 file: a.txt"]
        subprocess.run(["rm", "-rf", str(tmp_path / "ws" / "junk")], check=True)  # the tree fits the checkpoints again
        assert picked(tmux, "2-diffed") == ["no file changes", "1 file: b.txt", "1 file: a.txt"]
        # A turn that changed only the plan said "no file changes" too, as if rewinding it put nothing back.
        send_in_chat(tmux, "plan it")
        tmux.wait(lambda s: "Planned." in s, "turn 4")
        assert picked(tmux, "3-plan")[0] == "the plan, no files"


def test_after_a_rewind_the_model_edits_the_open_file_again_as_the_first_time(tmp_path, scripted_llm):
    """Bug: once :OllieRewind had put calc.py's open buffer back, the model's next edit of it was refused ("the file
    changed in the editor since you read it": what the model saw of it in the turn cut still counted), and under it
    the chat said "calc.py had your unsaved changes in the editor": the rewind's own revert, taken for her typing."""
    srv = scripted_llm("openai")
    fix = Reply(text="Fixing add.", tool_calls=[("call_tool", {"calls": [
        {"tool": "file_edit", "args": ["calc.py", "return a - b", "return a + b"]}]})])
    srv.script(fix, Reply.text("Fixed."), fix, Reply.text("Fixed again."))
    code = "def add(a, b):\n    return a - b\n"
    with start_nvim(tmp_path, srv.env(), {"calc.py": code}, size=(100, 30)) as tmux:
        tmux.wait(lambda s: "return a - b" in s, "nvim to start")
        tmux.keys(":Ollie fix add", "Enter")
        tmux.wait(lambda s: "Fixed." in s and "(end)" in s and "return a + b" in s, "turn 1's edit in the buffer")
        tmux.keys(":OllieRewind 1", "Enter")
        tmux.wait(lambda s: "Type number" in s and "Rewind to before turn 1?" in s, "the confirmation")
        tmux.keys("1", "Enter")
        tmux.keep("1-rewound", tmux.wait(lambda s: "rewound to before turn 1" in s and "return a - b" in s,
                                         "the buffer put back"))
        send_in_chat(tmux, "fix add")
        done = tmux.keep("2-again", tmux.wait(lambda s: "Fixed again." in s and "(end)" in s, "turn 1 again"),
                         (1000, 560))
        assert "read it again" not in done and "unsaved changes" not in done, done
        assert "✓ Edit calc.py" in done and "return a + b" in done, done
        assert (tmp_path / "ws" / "calc.py").read_text() == code.replace("a - b", "a + b")


def test_the_rewind_picker_pages_back_to_the_first_turn_of_a_long_session(tmp_path, scripted_llm):
    """Bug: :OllieRewind listed the last 10 turns only: after 12, the turn 1 that broke calc.py was out of reach of
    the pick. Now its last item opens the older turns' page."""
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": ["calc.py", "a - b", "a + b"]}]})),
               Reply.text("Answer 1."), *(Reply.text(f"Answer {n}.") for n in range(2, 13)))
    with start_nvim(tmp_path, srv.env(), {"calc.py": "def add(a, b):\n    return a - b\n"}, size=(100, 30)) as tmux:
        tmux.wait(lambda s: "return a - b" in s, "nvim to start")
        tmux.keys(":Ollie fix add", "Enter")
        tmux.wait(lambda s: "Answer 1." in s and "(end)" in s, "turn 1")
        for n in range(2, 13):
            send_in_chat(tmux, f"question {n}")
            tmux.wait(lambda s, n=n: f"Answer {n}." in s, f"turn {n}")
        tmux.keys("Escape", ":OllieRewind", "Enter")
        first = tmux.keep("1-newest", tmux.wait(lambda s: "Type number" in s and "turn 3 ·" in s, "the newest turns"))
        assert "turn 2 ·" not in first and "11: older turns (2–1)…" in first, first
        tmux.keys("1", "1", "Enter")
        older = tmux.keep("2-older", tmux.wait(lambda s: "Type number" in s and "turn 1 · fix add" in s, "the older"),
                          (1000, 560))
        assert "2: turn 1 · fix add" in older and "1 file: calc.py" in older and "older turns" not in older, older
        tmux.keys("2", "Enter")
        tmux.wait(lambda s: "Rewind to before turn 1?" in s, "the confirmation")
        tmux.keys("1", "Enter")
        tmux.keep("3-rewound", tmux.wait(lambda s: "rewound to before turn 1" in s and "return a - b" in s, "the rewind"))
        assert (tmp_path / "ws" / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
