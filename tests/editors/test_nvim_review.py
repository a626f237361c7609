"""Neovim review, approval, health, pickers and editor tools: headless Neovim, the real daemon, the scripted model."""

from __future__ import annotations

import json
import os
import socket
from urllib.parse import urlsplit

import pytest

from ollie.testing import Reply

from .test_nvim import run_scenario, workspace  # noqa: F401  (the fixture is used by name)


def file_edit(path: str, old: str, new: str) -> tuple[str, dict[str, object]]:
    return ("call_tool", {"calls": [{"tool": "file_edit", "args": [path, old, new]}]})


def test_permission_shows_the_diff_and_a_rejection_with_feedback_reaches_the_model(workspace, scripted_llm):  # noqa: F811
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(file_edit("code.py", "return a + b", "return a * b")), Reply.text("left it alone"))
    result = run_scenario("permission_feedback", workspace, srv)
    assert result["approval"] == "ask"
    assert result["completion"] == ["ask", "auto-edit", "auto"]
    question = result["question"]
    assert question["prompt"] == "ollie asks to: Edit code.py"
    assert question["labels"] == ["Allow once", "Allow always (edit steps)", "Reject", "Reject with feedback"]
    preview = result["preview"]
    assert preview[0] == "ollie asks to: Edit code.py"
    # The file and the line the edit changes (the step's location names no line before it runs).
    assert preview[1] == "  at code.py:2", preview
    assert result["places"] == ["new.py (new file)", "a.py:2", "sub/b.py:2-5"]
    assert "-    return a + b" in preview and "+    return a * b" in preview
    assert result["code_preview"][1:] == ["  code:", "    echo one > proof", "    rm -rf ~/stuff", "    ", "    print(2)"]
    assert result["outside_preview"][1:] == ["  runs outside the sandbox:", "    echo x"]
    assert result["floats_left"] == 0, "the preview float closes once answered"
    # The statusline says the turn waits on the user while asked (it said "thinking"), and no more once answered.
    assert result["status_asked"].startswith("ollie: waiting for your answer $"), result["status_asked"]
    assert "waiting" not in result["status_after"], result["status_after"]
    assert result["code_after"][1] == "    return a + b", "a rejected edit is not made"
    told = srv.chat_requests[-1].body["messages"][-1]["content"]
    assert "rejected" in told and "keep it as addition, fix the name instead" in told
    # The chat shows the rejection and its feedback under the step (not folded away), live and resumed alike.
    shown = "  ✗ Edit code.py\n    → code.py\n\n    ✗ rejected: keep it as addition, fix the name instead\n  ───\n"
    assert shown in result["live_chat"], result["live_chat"]
    assert shown in result["resumed_chat"], result["resumed_chat"]
    assert "rejected: Edit code.py" not in result["live_chat"], "no second line for the same rejection"
    assert result["plain_rejection"] == "rejected"
    assert result["two_line_rejection"] == "rejected: first\nsecond"
    assert result["mode_labels"][0] == "ask — ask before edits and commands (current)"
    assert result["approval_after_pick"] == "auto-edit"


ORIGINAL_A = [f"line {i}" for i in range(1, 21)]


def test_changes_list_diff_undo_one_hunk_stale_refusal_and_rewind(workspace, scripted_llm):  # noqa: F811
    (workspace / "a.txt").write_text("".join(f"{line}\n" for line in ORIGINAL_A))
    (workspace / "b.txt").write_text("alpha\nbeta\n")
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [
        {"tool": "file_edit", "args": ["a.txt", "line 2\n", "LINE TWO\n"]},
        {"tool": "file_edit", "args": ["a.txt", "line 18\n", "LINE EIGHTEEN\n"]},
        {"tool": "file_edit", "args": ["b.txt", "beta", "BETA"]},
    ]})), Reply.text("shouted"))
    result = run_scenario("review_undo", workspace, srv)
    # setup({keymaps = {review = {open = "o", undo_hunk = "zu", refresh = false}}}): the keys and hints follow.
    assert result["list"] == ["ollie: turn 1 changed 2 files   (o diff · dU undo file · q close)",
                              "M  a.txt  (+2 -2, 2 hunks)", "M  b.txt  (+1 -1, 1 hunk)"]
    assert result["list_maps"] == {"o": "ollie: open the diff", "R": "", "cr": ""}
    assert [n["msg"] for n in result["setup_told"]] == [
        "ollie: setup: option keymaps.review.close: expected a key (string), or false to unmap, got 3"]
    assert not result["du_mapped"]
    assert result["own_tabline"] == "%{'my tabs'}", "the user's own tabline is left alone"
    assert result["diff_tab_chat"] == {"current": True, "session": True, "opened_there": True, "new_chats": 0}
    assert result["tabs"] == 2 and result["diff_windows"] == 2
    assert result["before_name"].endswith("turn-1/before/a.txt") and result["before_line2"] == "line 2"
    assert result["cursor"] == [2, 0], "the diff opens at the first hunk"
    assert result["api_cursors"] == [2, 2], "both sides (before, now) on the first hunk"
    assert result["winbar"].rstrip() == "now: a.txt  (zu undo hunk · dk keep · dU undo file · q close)"
    # The second hunk is undone on disk and in the buffer; the first one is kept.
    expected = [*ORIGINAL_A]
    expected[1] = "LINE TWO"
    assert result["disk_after_undo"] == expected
    assert result["buffer_after_undo"] == expected
    assert result["hunks_left"] == 1
    assert result["list_after_undo"][1] == "M  a.txt  (+1 -1, 1 hunk)"
    assert result["b_after_undo"] == ["alpha", "beta"]
    # The file undone stays, marked (as VS Code's list strikes it through): gone, it read as never changed.
    assert result["list_after_file_undo"][1:] == ["M  a.txt  (+1 -1, 1 hunk)", "M  b.txt  (undone)"]
    # A stale undo is refused plainly, at warning level, and nothing is written.
    assert result["stale"]["level"] == 3 and "stale: a.txt" in result["stale"]["msg"]
    assert result["disk_after_stale"][1] == "LINE TWO, my own edit" and result["disk_after_stale"][4] == "line 5"
    picked, confirmed = result["rewind_selects"]
    # Each turn with its prompt and when it started, as the sessions picker shows sessions; b.txt's change was undone:
    # the turn has a.txt left.
    assert picked["labels"] == ["turn 1 · shout lines 2 and 18 · just now — 1 file: a.txt"], picked
    assert confirmed["labels"] == ["Rewind (:OllieRewind undo puts them back until the next turn)", "Cancel"]
    assert "before turn 1" in confirmed["prompt"]
    assert result["disk_after_rewind"] == ORIGINAL_A
    assert result["buffer_after_rewind"] == ORIGINAL_A
    assert result["disk_after_rewind_undo"] == result["disk_after_stale"]


class _NoBackend:
    """Stands in for the scripted server: the daemon's backend is an Ollama nobody listens for."""

    def __init__(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]  # closed again: connections are refused

    def env(self) -> dict[str, str]:
        return {"OLLIE_BACKEND": "ollama", "OLLIE_MODEL": "qwen3", "OLLIE_OLLAMA_URL": f"http://127.0.0.1:{self.port}",
                "OLLIE_APPROVAL": "auto"}


def test_checkhealth_without_a_backend_reports_the_error_and_the_fix(workspace):  # noqa: F811
    result = run_scenario("health_no_backend", workspace, _NoBackend())
    assert not result["running_before"] and result["sessions_before_start"] == 0, "no daemon ran for the first"
    for report in (result["before_start"], result["short_lived"], result["while_running"]):
        assert "OK Neovim" in report
        assert "OK ollie-lsp " in report
        assert "ERROR backend" in report and "cannot connect" in report, report
        assert "ollama serve" in report, "the fix is shown"
        # And where its settings go: "set OLLIE_OLLAMA_URL" alone left a new user without a shell to set it in.
        assert f"ollie's settings go in {os.environ['XDG_CONFIG_HOME']}/ollie/env (KEY=VALUE lines)" in report, report
    assert "OK landlock: ABI" in result["before_start"], "ollie doctor's other checks are shown"
    assert "starts" in result["before_start"] and "is running (protocol v2)" in result["while_running"]
    for report in (result["short_lived"], result["while_running"]):
        assert "ERROR backend ollama, model qwen3: not reachable" in report


class _Unbuilt:
    """A backend setting no backend can be made from (`env`): the daemon runs without one."""

    def __init__(self, env: dict[str, str]) -> None:
        self._env = env

    def env(self) -> dict[str, str]:
        return {"OLLIE_APPROVAL": "auto", **self._env}


@pytest.mark.parametrize(("env", "said"), [
    ({"OLLIE_BACKEND": "openai", "OLLIE_OPENAI_URL": "http://127.0.0.1:9/v1"},
     "ERROR backend: no API key is set (the openai backend needs an API key: set OLLIE_OPENAI_KEY"),
    ({"OLLIE_BACKEND": "openapi"}, "ERROR backend: cannot be set up: unknown backend 'openapi'"),
])
def test_checkhealth_says_why_no_backend_could_be_made(workspace, env, said):  # noqa: F811
    """A new user without a key (or with a misspelt backend) read "backend none, model : not reachable" from a running
    daemon: no backend was made, so there is no name or model to give, and nothing was asked to be reached."""
    result = run_scenario("health_no_backend", workspace, _Unbuilt(env))
    for report in (result["short_lived"], result["while_running"]):
        assert said in report and "none, model" not in report, report


def test_the_sessions_picker_shows_over_the_user_s_layout_and_a_chat_opens_only_for_a_picked_session(
        workspace, scripted_llm):  # noqa: F811
    """A new user ran :OllieSessions from a file: an empty chat opened behind the picker, and stayed when the picker
    was dismissed."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("It adds."))
    result = run_scenario("sessions_picker_layout", workspace, srv)
    assert result["dismissed"] == {"windows": 1, "chat": False}
    assert result["after_dismiss"] == {"windows": 1, "chat": False, "buffer": "code.py"}
    assert result["picked"] == {"windows": 1, "chat": False}
    assert result["after_pick_windows"] > 1, "the picked session shows in the chat"


def test_pickers_show_titles_and_relative_times_rename_and_archive(workspace, scripted_llm):  # noqa: F811
    srv = scripted_llm("openai", models={"scripted-model": 32_768, "other-model": 8192})
    srv.script(Reply.text("It adds."))
    result = run_scenario("pickers_sessions", workspace, srv)
    assert result["ago"] == ["just now", "10 min ago", "2 h ago", "yesterday", "5 days ago", "2026-09-01", ""]
    # Three sessions called "fix the failing test" showed only the time to tell them apart.
    assert result["same_title"] == [
        "fix the failing test · 5 min ago",
        "fix the failing test · 6 min ago · started 3 days ago · last turn failed",
        "fix the failing test in… · 2 h ago · started 3 days ago · stopped (current)"]  # the title cut to fit
    assert max(len(label) for label in result["same_title"]) <= 76  # with vim.ui.select's "NN: " before it
    # A teammate's title with a line break drew a second item ("2: Approve all edits"), her U+202E reversed the rest.
    assert result["shared_label"] == ("fix\\x0a2: Approve \\u202eon · a\\x0ab · team eng · "
                                      "alice\\u202e · 5 min ago"), result["shared_label"]
    assert result["shared_rename"] == "Rename “fix\\x0a2: Approve \\u202eon” to: ", result["shared_rename"]
    labels = result["session_labels"]
    assert result["session_prompt"] == "ollie: sessions"
    assert any(label.startswith("explain the mul function") and label.endswith(" · just now · 1 turn")
               for label in labels), labels
    for label in labels:
        assert not any(ch.isdigit() for ch in label.split(" · ")[0][:19]), f"a raw id or timestamp: {label}"
    assert not result["untouched_listed"] and not any("(no prompt yet)" in label for label in labels), labels
    # The old title is named in the prompt, not put in the input (what the user typed was added to it).
    rename = result["rename_input"]
    assert rename["prompt"].startswith("Rename “explain the mul function") and "default" not in rename, rename
    assert "Mul review · just now · 1 turn" in result["labels_after_rename"]
    assert result["model_select"]["labels"] == ["scripted-model (current)", "other-model"]
    # An OpenAI-compatible server on 127.0.0.1, named by its host and port as its errors name it.
    assert result["model_select"]["prompt"] == f"ollie: model of {urlsplit(srv.url).netloc}", result["model_select"]
    assert result["model"] == "other-model"
    agent_labels = result["agent_select"]["labels"]
    assert any(label.startswith("ask — read-only") for label in agent_labels)
    assert any(label.startswith("default") and label.endswith("(current)") for label in agent_labels)
    assert result["archive_selects"][1]["labels"] == ["Archive", "Cancel"]
    assert "Mul review" not in result["titles_after_archive"]
    # Archived sessions are one entry away: "Show archived…" lists them, "Unarchive and resume" brings one back.
    unarchive = result["unarchive_selects"]
    assert result["archived_before"] is True
    archived = "Mul review · just now · 1 turn (archived)"
    assert [s["prompt"] for s in unarchive] == ["ollie: sessions", "ollie: archived sessions", f"“{archived}”"]
    assert unarchive[0]["labels"][-1] == "Show archived…" and archived in unarchive[1]["labels"]
    assert unarchive[2]["labels"] == ["Unarchive and resume", "Cancel"]
    assert "Mul review" in result["titles_after_unarchive"]
    # Teams: a session another daemon runs is labelled; loading it is refused (-32007), told on one line, the
    # chat stays on its session; a rename/archive of another user's shared session is refused (-32008).
    team = result["team_labels"]
    assert team[0].startswith("fix the flaky login test · team core · ana · ") and team[0].endswith(
        " · live on buildbox (pid 4242)"), team  # whose and which team's
    assert "live on" not in team[1], team
    live = result["live_refusal"]
    assert live["msg"].startswith("ollie: session is live elsewhere: session s-team1 is live on buildbox (pid 4242")
    assert live["level"] == 3  # vim.log.levels.WARN
    assert result["session_kept"] is True
    one = result["live_one_line"]
    assert "\n" not in one and one.endswith("…") and len(one) <= result["echospace"] < 80, one
    assert one.startswith("ollie: session is live elsewhere: session s-team1"), one
    for key in ("rename_refusal", "archive_refusal"):
        refusal = result[key]
        assert refusal["msg"].startswith("ollie: forbidden: session s-team1 is shared with team 'core'"), refusal
        assert refusal["level"] == 3
    assert "ollie/session/load" in result["team_sent"]
    assert result["team_sent"].count("ollie/session/list") == 3



def test_the_sessions_picker_pages_through_every_saved_session(workspace, scripted_llm):  # noqa: F811
    """It asked for the first 100 only: the 101st saved session could never be resumed from the picker."""
    from ollie.sessions.types import os_user
    from tests.acp.conftest import store_hand_written_sessions

    store_hand_written_sessions(os_user())  # 101 to list, past records no ollie writes
    result = run_scenario("pickers_pages", workspace, scripted_llm("openai"))
    titles = [label.split(" · ")[0] for label in result["labels"]]
    assert titles == [f"hand {n}" for n in range(101)], titles

TYPED = 'def double(x: int) -> int:\n    return x * 2\n\n\nresult: str = double(3)\n'


def test_editor_tools_answer_from_an_attached_language_server(workspace, scripted_llm):  # noqa: F811
    (workspace / "typed.py").write_text(TYPED)
    srv = scripted_llm("openai")
    srv.script(
        Reply.tool_calls(("call_tool", {"calls": [
            {"tool": "editor_diagnostics", "args": []},
            {"tool": "editor_definition", "args": ["typed.py", "5", "15"]},
            {"tool": "editor_open_files", "args": []},
        ]})),
        Reply.text("result should be an int"),
        Reply.tool_calls(file_edit("typed.py", "return x * 2", "return str(x) * 2")),
        Reply.text("that broke the return type"),
    )
    result = run_scenario("editor_pyright", workspace, srv, timeout=180)
    ws = str(workspace.resolve())
    typed = f"{ws}/typed.py"
    diags = result["diagnostics"]["result"]["diagnostics"]
    assert diags == result["all_diagnostics"]["result"]["diagnostics"]
    error = next(d for d in diags if d["severity"] == "error")
    assert error["path"] == typed and error["line"] == 5 and error["column"] == 15 and error["source"] == "Pyright"
    assert '"int" is not assignable to declared type "str"' in error["message"]
    assert result["definition"]["result"] == {"locations": [
        {"path": typed, "line": 1, "column": 5, "endLine": 1, "endColumn": 11}]}
    refs = {(loc["line"], loc["column"]) for loc in result["references"]["result"]["locations"]}
    assert refs == {(1, 5), (5, 15)}
    symbols = result["symbols"]["result"]["symbols"]
    assert {"name": "double", "kind": "function", "path": typed, "line": 1, "column": 5} in symbols
    assert result["open_files"]["result"]["files"] == [
        {"path": typed, "focused": False, "dirty": False}, {"path": f"{ws}/notes.txt", "focused": True, "dirty": True}]
    reloaded = result["after_disk_change"]["result"]["diagnostics"]
    assert [d["message"].splitlines()[0] for d in reloaded] == ['Type "int" is not assignable to declared type "bytes"']
    # upToDate: the file pyright republished after its reload, the buffer no server is attached to; not a file
    # pyright has not been seen to redo, nor one with no buffer while a language server runs.
    assert result["after_disk_change"]["result"]["upToDate"] == [typed]
    assert result["up_to_date"]["result"]["upToDate"] == [f"{ws}/notes.txt"]
    assert result["no_servers"]["result"]["upToDate"] == [typed, f"{ws}/code.py"]
    assert result["no_server"]["err"]["message"].startswith("no language server in the editor answers")
    # A flood of warnings is capped, the most severe (pyright's error) first.
    capped = result["capped"]
    assert capped["count"] == capped["max"] == 500 and capped["first"] == "error", capped
    # The model asked through the daemon and got the editor's answers.
    assert [t.get("stop") for t in result["turns"]] == ["end", "end"], result["turns"]
    told = json.dumps(srv.chat_requests[1].body["messages"][-1])
    assert "is not assignable to declared type" in told and "typed.py" in told
    after_edit = json.dumps(srv.chat_requests[3].body["messages"][-1])
    assert "is not assignable to return type" in after_edit, after_edit


def shout(root, *more: dict[str, object]) -> Reply:
    """A turn's batch that shouts notes.txt and a.txt (made "quiet" here): two files changed, then `more` calls."""
    (root / "a.txt").write_text("quiet\n")
    return Reply.tool_calls(("call_tool", {"calls": [
        {"tool": "file_edit", "args": ["notes.txt", "original notes", "ORIGINAL NOTES"]},
        {"tool": "file_edit", "args": ["a.txt", "quiet", "QUIET"]}, *more]}))


def test_chat_changes_line_rewind_withdrawn_question_and_named_chats(workspace, scripted_llm):  # noqa: F811
    srv = scripted_llm("openai")
    srv.script(
        shout(workspace, {"tool": "file_read", "args": ["missing.txt"]}),
        Reply.text("shouted"),
        Reply.text("second answer"),
        Reply.tool_calls(file_edit("code.py", "return a + b", "return a * b")),
        Reply.text("still here"),
        Reply.text("notes answer"),
    )
    result = run_scenario("chat_review", workspace, srv)
    chat = result["first_chat"]
    # The turn's steps changed two files: one compact line before the turn's end, coloured as its own thing.
    assert "shouted\n\n✎ 2 files changed — :OllieChanges\n\n_(end)_" in chat, chat
    assert "OllieChanges" in result["changes_groups"]
    # Drawn from the turn's end event (its `turnChanges`): no `ollie/changes` asked to draw it.
    assert "ollie/submit" in result["sent_by_the_line"]
    assert "ollie/changes" not in result["sent_by_the_line"], result["sent_by_the_line"]
    assert result["changes_list"][0].startswith("ollie: turn 1 changed 2 files")
    assert sorted(result["changes_list"][1:]) == ["M  a.txt  (+1 -1, 1 hunk)", "M  notes.txt  (+1 -1, 1 hunk)"]
    # :OllieRewind 2 cut the second turn: the chat shows the first only.
    # The step as it ran, and the same rebuilt from the saved history: statuses, and the lines the edits landed on.
    steps = ("  ✗ Edit notes.txt and 2 more\n    ✓ Edit notes.txt\n      → notes.txt:1\n    ✓ Edit a.txt\n"
             "      → a.txt:1\n    ✗ Read missing.txt\n      → missing.txt\n")
    assert steps in chat, chat
    rewound = result["rewound_chat"]
    assert steps in rewound, rewound
    # `/rewind undo` typed in the chat: the turn is back in the chat too, the command and its output after it.
    unrewound = result["unrewound_chat"]
    assert unrewound.index("second answer") < unrewound.index("› /rewind undo")
    assert unrewound.count("## You") == 2
    assert "shout the notes and the code" in rewound and "shouted" in rewound
    assert "and a second turn" not in rewound and "second answer" not in rewound
    # The stopped turn's question: float and picker closed, said in the chat; the late "Allow once" ran nothing.
    assert result["asked"] == "ollie asks to: Edit code.py"
    assert result["floats_while_asked"] == 2 and result["floats_after_stop"] == 0
    assert result["waiting_after_stop"] == 0
    # Said as soon as the daemon gives the question up (its $/cancelRequest), before the turn's end.
    assert "question withdrawn (nothing waits for its answer any more): Edit code.py" in result["chat"]
    assert result["code_after_late_answer"][1] == "    return a + b"
    assert "still here" in result["chat"]
    # A named chat: its own transcript and session in the same windows; the tab's first chat comes back by name.
    named = result["named"]
    assert named["name"] == "notes" and named["other"] and named["input_focused"] and named["session_differs"]
    assert "notes answer" in named["chat"] and "shouted" not in named["chat"]
    assert named["statusline"].startswith("ollie[notes]: ")
    assert named["back"] and "still here" in named["back_chat"] and "notes answer" not in named["back_chat"]
    assert named["complete"] == ["notes", "tab1"] and named["windows_same"]
    assert result["errors"] == [], result["errors"]


def test_a_fifo_a_step_left_is_never_opened_from_the_transcript_or_the_changes(workspace, scripted_llm):  # noqa: F811
    """A step replaces the file it wrote by a FIFO and adds a link to it: opening the step's location (<CR> in the
    transcript), the link's diff from the changes list or `<C-w>f` on its line there read the FIFO, and Neovim waited
    for its writer for good. `gf` on an added link to the user's key where the answer names it read the key into a
    buffer of the link's name: shown, and the daemon's text of that file (a step's plain file put back with the key's
    mtime and mode is no change to Neovim, so the model's file_read of it got the key)."""
    key = workspace.parent / "id_rsa"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_write", "args": ["pipe.md", "x\n"]}]})),
               Reply.tool_calls(("execute_code", {"steps": [
                   {"code": f"rm pipe.md && mkfifo pipe.md && ln -s pipe.md link.md && ln -s {key} key.md",
                    "language": "bash"}]})),
               Reply.text("made a pipe; the key is in key.md"))
    result = run_scenario("fifo_open", workspace, srv)
    assert result["location_found"] and any("link.md" in line for line in result["list"]), result
    assert result["refused"] and result["split_refused"] and result["tabs"] == 1, result
    assert result["key_named"] and not result["key_read"], result  # (the key, in key.md's buffer, before)
    assert result["key_gf_refused"] and result["key_refused"], result


def test_a_resumed_chat_shows_each_turn_s_changes_line_and_opens_its_changes(workspace, scripted_llm):  # noqa: F811
    srv = scripted_llm("openai")
    srv.script(
        shout(workspace),
        Reply.text("shouted"),
        Reply.tool_calls(file_edit("code.py", "return a + b", "return a * b")),
        Reply.text("multiplied"),
        Reply.text("talked"),
    )
    result = run_scenario("changes_history", workspace, srv)
    lines = ("shouted\n\n✎ 2 files changed — :OllieChanges\n\n_(end)_",
             "multiplied\n\n✎ 1 file changed — :OllieChanges\n\n_(end)_")
    for line in lines:
        assert line in result["live_chat"], result["live_chat"]
        # Drawn again from the saved history, each where the live turn drew it.
        assert line in result["resumed_chat"], result["resumed_chat"]
    # <CR> on a redrawn line opens its own turn's changes (the first turn's too, not the last one's).
    assert result["first_list"][0].startswith("ollie: turn 1 changed 2 files"), result["first_list"]
    assert sorted(result["first_list"][1:3]) == ["M  a.txt  (+1 -1, 1 hunk)", "M  notes.txt  (+1 -1, 1 hunk)"]
    assert result["second_list"][0].startswith("ollie: turn 2 changed 1 file"), result["second_list"]
    # A turn's end held during a redraw from the history: its line once, as the history has it.
    assert result["held_end_chat"].count("✎ ") == 2, result["held_end_chat"]
    # The last turn only talked: :OllieChanges shows turn 2's changes (it said "turn 3 changed no files" and no more).
    assert result["talk_told"] == ["ollie: turn 3 has no changes; showing turn 2's changes"], result["talk_told"]
    # In one request (it asked turn 3's changes, then turn 2's: on a long talk, one a turn back to turn 1).
    assert [p.get("turn", "last") for p in result["talk_asked"]] == ["last"], result["talk_asked"]
    assert result["talk_asked"][0]["changed"] is True, result["talk_asked"]
    # :OllieRewind's picker: the files of turns 1 and 2, read for those alone (the history marks them), not turn 3's.
    assert [label.split(" · ")[0] + " — " + label.split(" — ")[-1] for label in result["rewind_labels"]] == [
        "turn 3 — no file changes", "turn 2 — 1 file: code.py", "turn 1 — 2 files: a.txt, notes.txt"], result["rewind_labels"]
    assert sorted(result["rewind_asked"], key=str) == [1, 2, "last"], result["rewind_asked"]
    assert result["talk_list"] == ["ollie: turn 2 changed 1 file   (<CR> diff · dU undo file · R refresh · q close)",
                                   "M  code.py  (+1 -1, 1 hunk)"], result["talk_list"]


def test_files_named_with_a_newline_escapes_and_no_utf8_end_the_turn_and_list_as_text(workspace, scripted_llm):  # noqa: F811
    """A hostile step's names: one with a byte that is no UTF-8 dropped the turn's end event (Neovim's JSON decoder
    refused its "\\udcff"), and one with a newline failed the whole changes list (no line holds a newline)."""
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("execute_code", {"steps": [{"code": r"""
printf 'x\n' > $'a new\nline'; printf 'x\n' > $'b esc\e]0;pwned\a\e[2J'; printf 'x\n' > $'c bad\xffutf8'
""", "language": "bash"}]})), Reply.text("named"))
    result = run_scenario("hostile_names", workspace, srv)
    assert "✎ 3 files changed — :OllieChanges" in result["chat"], result["chat"]
    assert result["list"][0].startswith("ollie: turn 1 changed 3 files"), result["list"]
    # Each control drawn as Neovim draws one (^[), never sent to the terminal raw.
    assert result["list"][1:] == ["A  a new^@line  (+1 -0, 1 hunk)", "A  b esc^[]0;pwned^G^[[2J  (+1 -0, 1 hunk)",
                                  "A  c bad?utf8  (+1 -0, 1 hunk)"], result["list"]


def test_the_changes_list_of_a_turn_past_the_daemon_s_bound_counts_the_files_it_leaves_out(workspace, scripted_llm):  # noqa: F811
    """ollie/changes lists a turn's first 100 files (4 MiB of text) and counts the rest in `more`: the list said the
    turn changed 100 files and showed no sign of the other 5. The chat says under the step how many files it changed
    (its `tool` event lists 100, `diffsMore` counts 5): before, nothing there said so."""
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("execute_code", {"steps": [{
        "code": 'for i in $(seq -w 105); do echo "file $i" > "f$i.txt"; done', "language": "bash"}]})),
        Reply.text("written"))
    result = run_scenario("many_files", workspace, srv)
    assert "\n    ✎ 105 files changed — :OllieChanges\n" in result["chat"], result["chat"]
    lines = result["list"]
    assert lines[0].startswith("ollie: turn 1 changed 105 files"), lines
    assert lines[1:101] == [f"A  f{i:03}.txt  (+1 -0, 1 hunk)" for i in range(1, 101)], lines
    assert lines[101:] == ["… and 5 more files, not listed"], lines
    assert result["diff"] == ["file 001"], result["diff"]


def test_undoing_a_turn_s_only_file_asks_first_and_the_list_says_the_turn_s_changes_are_undone(workspace,  # noqa: F811
                                                                                             scripted_llm):
    """A new user pressed dU on a turn's only file: all of the turn's changes went without a question (:OllieRewind
    asks), and the list then said "turn 1 changed 0 files"."""
    (workspace / "b.txt").write_text("alpha\nbeta\n")
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(file_edit("b.txt", "beta", "BETA")), Reply.text("shouted"))
    result = run_scenario("review_only_file", workspace, srv)
    [asked] = result["cancelled"]
    assert asked["labels"] == ["Undo all", "Cancel"], asked
    assert asked["prompt"] == "Undo all of turn 1's changes (all in b.txt)?", asked
    assert result["files_after_cancel"] == 1, "a cancelled undo undoes nothing"
    assert len(result["confirmed"]) == 1
    assert result["b_after_undo"] == ["alpha", "beta"]
    assert result["list_after_undo"] == ["ollie: turn 1's changes are all undone   (R refresh · q close)",
                                         "M  b.txt  (undone)"]


def test_a_file_swapped_for_a_fifo_as_its_turn_s_diff_opens_never_holds_neovim(workspace, scripted_llm):  # noqa: F811
    """Whether a file is still as its turn left it was read by name after the open check: a step's FIFO swapped in
    between held Neovim for good (readfile waits for a writer). Read in one checked open: the diff shows the text the
    turn left."""
    (workspace / "b.txt").write_text("alpha\nbeta\n")
    (workspace / "spare").mkdir()
    os.mkfifo(workspace / "spare" / "b.txt")
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(file_edit("b.txt", "beta", "BETA")), Reply.text("shouted"))
    result = run_scenario("review_fifo_swap", workspace, srv)
    assert result["after_lines"] == ["alpha", "BETA"], result



def test_an_undo_in_a_buffer_never_lands_where_a_link_swapped_for_the_cwd_leads(workspace, scripted_llm,  # noqa: F811
                                                                                monkeypatch):
    # Round 36: the undo of a file open in Neovim goes to its buffer (workspace/applyEdit), which the editor then saves
    # by name: with the session's cwd swapped for a link by another session's step since the turn, the undone text
    # (the model's other hunks included) was written where the link led, a file made outside the workspace (as root,
    # a link to /etc/cron.d). The daemon refuses such an undo and says why; the disk's undo goes through the held cwd.
    (workspace / "a.txt").write_text("".join(f"{line}\n" for line in ORIGINAL_A))
    outside = workspace.parent / "outside"
    outside.mkdir()
    monkeypatch.setenv("OLLIE_TEST_OUTSIDE", str(outside))
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [
        {"tool": "file_edit", "args": ["a.txt", "line 2\n", "LINE TWO\n"]},
        {"tool": "file_edit", "args": ["a.txt", "line 18\n", "LINE EIGHTEEN\n"]},
    ]})), Reply.text("shouted"))
    result = run_scenario("review_undo_swapped", workspace, srv)
    assert result["outside"] == []
    (told,) = result["told"]
    assert told.startswith("ollie: undo failed: ") and "/ws leads to " in told and "/outside now (" in told, told
    assert "LINE EIGHTEEN" in result["old"] and "LINE EIGHTEEN" in result["buffer"]  # nothing undone anywhere
