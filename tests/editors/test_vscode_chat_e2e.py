"""The chat in real VS Code (code-server + headless Chromium), against the real daemon and scripted LLM: streaming,
Stop, the queue across Stop and reloads, the title, and a prompt a hung extension host never took. The rest of the
extension: test_vscode_e2e.py."""

from __future__ import annotations

import pytest

from .test_vscode_e2e import scenarios_said, shows

pytestmark = pytest.mark.slow


@pytest.mark.timeout(330)
def test_chat_streams_shows_tools_and_stops_in_real_vscode(run_e2e):
    """A prompt in the chat view streams a markdown answer with a tool block; Stop interrupts a slow reply; a resumed
    session loads its earlier pages on scroll (each step once), a restored failed prompt says it failed, an
    archived session is listed on request, and a daemon killed mid-turn is restarted with the chat back. The onboarding
    of a server that is down offers Check again and opens `ollie.serverEnv`, no API key; the first prompt's error
    points to it (it said the same again under it). Once the server is up, a turn that reaches the model (cut at its
    token limit) hides the onboarding (it stayed, pointing at the setting: only a turn ending "end" asked again). Under
    reduced motion (the test profile's workbench.reduceMotion) the status bar's busy icon stands still. While a turn
    runs, Queue, Inject and Stop are one row at the side bar's right (Queue stayed by the model's name, Inject and Stop
    went to the left of a second row: running-buttons), and Ollie: Rewind says to stop the turn first, with no pick (the
    daemon's refusal came as an error, "Invalid params: session: ...", after she picked a turn and confirmed). In the light
    theme an answer's inline code stands out from the chat (it had Light Modern's code block colour, the side bar's),
    and Jump to latest's label is on one line (it broke in two)."""
    shows(run_e2e("run.mjs"),
          "the onboarding of a server that is down offers Check again and ollie.serverEnv, not an API key",
          "the first turn's error pointed to the onboarding, not said it again",
          "a turn that reached the model, cut at its token limit: the onboarding is gone",
          "the busy icon still (reduced motion)", "Escape interrupted the turn", "scrolling up loaded the earlier pages",
          "an archived session leaves the history, Show archived lists it marked",
          "a long word wraps; a markdown link to a file opens it", "in the light theme inline code stands out from the chat",
          "a daemon killed mid-turn: the chat said so, came back with the same conversation",
          "the agent pick highlights the current agent and says a switch keeps the chat's conversation; Enter kept both")


@pytest.mark.timeout(620)
def test_queued_prompts_after_stop_and_reload_in_real_vscode(run_e2e):
    """A prompt the chat's page queues after the turn ended, before the page heard of it, is sent (it waited, queued, for a
    next turn's end). A prompt queued during a slow reply is held by Stop (the chat says so; the input has the focus
    once the clicked Stop hides; it is drawn after "Turn interrupted", not above it) and runs before the next prompt,
    never left marked queued; one queued, held by Stop when the window reloads comes back held and Enter on the empty
    prompt sends it (it did nothing), and so does one with a pasted image queued behind it, with its image, in order (it stayed
    in the input: images went only with a prompt sent when idle); ArrowUp on the empty input takes the latest queued
    prompt back into the input with its pasted image and file chip, the other still queued (`/queued pop` took the oldest and only
    said so: gone from the queue and the input); `/queued pop` typed during a turn runs at once (it was queued behind
    the prompts it was to pop; the button says Send, not Queue) and takes it back too (both while an approval question
    waits), and the reload mid-turn below brings back the other alone (the popped one stayed marked queued, and came
    back); one held that `/queued clear` drops shows dropped (it stayed marked held). That reload, while the approval
    question waits: no empty new chat while the session comes back, and the reload's end of the turn (not "Turn
    interrupted") under the step it cut short; the keys typed for the prompt as the question took the focus go on
    into the prompt (they were lost on its buttons); Ctrl+Alt+O from the editor puts the cursor in the chat's prompt
    box. The pasted image waits in a file of the extension's storage, not in the window's
    state (rewritten whole at each save), and the file goes once its prompt ran. A prompt past the queue's bound (32)
    is refused: the chat says why and what to do, and it is back in the input."""
    shows(run_e2e("queue.mjs", total_ms=580000),
          "a prompt the page queued after the turn had ended was sent, not left queued",
          "after Stop the queued prompt showed held, after the Turn interrupted line, then ran before the next prompt, "
          "neither left marked queued; the input had the focus",
          "a prompt queued when the window reloaded came back held, and Enter on the empty prompt sent it",
          "a prompt with a pasted image queued during a turn showed queued with its image, came back held after a reload, "
          "and ran after the one before it with its image",
          "ArrowUp on the empty input took back the latest queued prompt with its image and file chip, the other still queued",
          "/queued pop typed during the turn ran at once (the button said Send) and took the prompt back into the input, "
          "and a reload brought back only the one held",
          "a held prompt dropped by /queued clear showed dropped and the next prompt ran alone",
          "came back without the empty new chat", "and said the reload ended the turn",
          "keys typed for the prompt as a question took the focus went on into the prompt, answering nothing",
          "Ctrl+Alt+O from the editor put the cursor in the chat's prompt box",
          "a prompt past the queue's bound was refused: the chat said why and what to do, and it was back in the input")


@pytest.mark.timeout(400)
def test_pick_lists_show_hostile_names_escaped_and_a_prompt_past_what_the_daemon_holds_is_back_in_real_vscode(run_e2e):
    """imagebound.mjs, one window, two scenarios.
    pickers: a backend lists the model id `m2 $(pass-filled) approved<LF><U+202E>exe.txt`. Switch Model drew its
    `$(pass-filled)` as a tick and the rest reversed (the label was the id, which the pick sends back); it shows the id
    escaped (switch-model-hostile-id), and picking it switches to the id itself, which the composer and `/model` name
    escaped (switched-to-hostile-id), the switch said in the chat alone (a toast said it again over the chat's input,
    hiding the composer's model). A session titled so is drawn escaped in Switch Session and the chat's header (its
    U+202E reversed the header). Ollie: MCP Servers shows a server's prompt and resource names so made escaped
    (mcp-servers-hostile-names). A prompt about a workspace file named `a<U+202E>txt.exe` names it escaped in its bubble
    (prompt-about-hostile-file-name; red team 53: reversed).
    imagebound: three sessions stream with a long prompt queued behind each (what the daemon holds of prompts not run
    yet, at a cap of 1,000 bytes an image); a prompt with a pasted image sent in a fourth is refused (-32010): the chat
    says why, and it is back in the input with its image (it was gone, only the error said it)."""
    scenarios_said(
        run_e2e("imagebound.mjs", total_ms=330000),
        ("pickers", "a prompt's bubble names a workspace file's U+202E escaped"),
        ("pickers", "Switch Model shows a hostile server's model id escaped: no icon, no line break, no reversal"),
        ("pickers", "picking it switched to the id itself; the composer and /model name it escaped"),
        ("pickers", "Switch Session and the chat's header show such a title escaped"),
        ("pickers", "MCP Servers shows a server's prompt and resource names escaped"),
        ("imagebound", "a prompt past what the daemon holds was refused: the chat said why, and it was back in the input "
                       "with its image"),
    )


@pytest.mark.timeout(470)
def test_text_injected_into_a_running_turn_is_never_lost_and_two_sessions_queued_prompts_in_real_vscode(run_e2e):
    """inject.mjs, one window, two scenarios. inject: a prompt over the length limit is refused at once, said, its
    text kept (it vanished); one the host refuses (an image named past 256 characters) is back in the input, said
    why (it vanished). The status bar says idle only once
    the injected text ran (it said idle between the turns). Text injected twice
    (Ctrl+Enter) into a reply no tool result interrupts runs as the next prompt, one prompt shown once, as sent (it
    stayed marked injected, and showed again as its turn's prompt); the chat drawn anew as it starts keeps the place
    of a user who scrolled up (she was pulled to the bottom). Two injects a Stop held stay held after a command typed
    meanwhile (the second showed "dropped", and a reload lost it). Text injected twice, each with a file chip, that the turn
    has not taken comes back held after a window reload, one prompt (it came back as two), each file before its text
    as the daemon joined them (both files came first); after a Restart before the
    chat view was opened since the window started, it is back in the input with its chip once the view opens, said
    (it vanished: the put-back went to no view).
    queuesessions (queuesessions.mjs, once a window of its own), in new sessions: prompts queued in two sessions (each
    mid-turn) when the window reloads (inject's reload, one for both) come back held, with the notice, each when its
    session is shown; neither runs on its own, each runs before the next prompt sent in its session. A queued and a
    held prompt (with a file chip) when Restart comes are back in the input, before the text being typed, said (they
    vanished without a word); neither is queued in the fresh daemon. A question left open in one session while the
    other is shown: Switch Session's row of it says it waits for her answer (sessions-pick-waiting)."""
    scenarios_said(
        run_e2e("inject.mjs", total_ms=420000),
        ("inject", "a prompt over the limit was refused at once, said, its text kept in the input"),
        ("inject", "a prompt the host refused came back in the input, said why"),
        ("inject", "text injected twice that no tool result took ran as the next prompt, shown once, as sent"),
        ("inject", "the status bar said idle only once the injected text had run"),
        ("inject", "a redraw as the injects started kept the place of the user who had scrolled up"),
        ("inject", "two injects a Stop held as one prompt both stayed held after a command typed meanwhile"),
        ("inject", "text injected and not taken when the window reloaded came back held"),
        ("inject", "the held injects were queued again as the daemon had joined them, each file before its text"),
        ("inject", "after Restart with the chat not opened, the injected text was back in the input with its chip once "
                   "it was, said"),
        ("queuesessions", "after the reload each session's queued prompt came back held, with the notice, when that "
                          "session was shown"),
        ("queuesessions", "neither held prompt ran on its own; each ran before the next prompt sent in its session"),
        ("queuesessions", "after Restart the queued and the held prompt were back in the input, before the text being "
                          "typed, with the chip, said"),
        ("queuesessions", "after Restart neither session's queued prompt came back, and the next prompt in each ran "
                          "alone"),
        ("queuesessions", "Switch Session said which session waited for her answer"),
    )


@pytest.mark.timeout(400)
def test_the_header_shows_the_title_as_the_daemon_gives_it_and_a_hung_host_s_prompt_comes_back_in_real_vscode(run_e2e):
    """title.mjs, one window, six scenarios. title: the first prompt titles the chat's header while its turn still
    streams (it said "New chat" until the turn ended); `/rn` renames it at once; a new session (the view's + button)
    says "New chat", the renamed one (picked from the view's history button) its name when shown again; a prompt's
    "Fork from here" (shown on the prompt's hover or focus: on every prompt it took a line) and "Ollie: Fork Chat"
    switch the chat to a fork titled "<title> (fork)", the history listing
    both, each row with its turns (it had none: two of one title were not told apart). The header shows the whole title
    at the default width, on two lines, and in a side bar dragged narrow (header-default-width, header-narrow): the
    picker's "Ask before edits" beside it cut it to ten letters or so.
    hosthung: a prompt sent while the extension host hangs, which dies before taking it (VS Code starts another), is
    back in the input of the chat made anew, with a note, and runs when sent again: it was in neither the chat nor the
    input. commands: /help's table keeps its columns in the chat (screenshot command-columns): it wrapped in a
    proportional font, each description starting somewhere else; a typo's answer is one error line naming the closest
    command; a `!cmd` that exits non-zero shows failed, as a failed step (command-shell-failed: the daemon's answer did
    not say it failed). `/rewind` and `/agent NAME` take the turns they cut out of the chat (command-cut): they stayed, as if the
    model still had them. The conversation `/agent NAME` ended is kept, said in the chat, and Switch Session brings it
    back (agent-switch-kept): it was lost; `/help` names the editor's session list (it advised a terminal's
    `ollie --session`). A broken sandbox.yaml is a warning notification as the session opens (policy-notification).
    settingsscope: a cloned repository's `.vscode/settings.json` naming a dearer model, `yolo` and a daemon
    command: the chat's model and agent stay the user's (VS Code ignores a workspace's values of `application`-scoped
    settings). The repository changing them restarts no daemon (it did, and the chat emptied: a command's answer lost);
    the user's own change of ollie.model does.
    retry (a session of its own): a reply breaks off with a 503 after its first words, then comes whole: the chat shows
    the retry's note and the answer, not the failed attempt's words above them; one that fails for good (a 400) shows
    the error without the words it streamed (the session never kept them). compacted (a session of its own): a
    session compacted with /compact, then the window reloaded: the chat says the conversation was compacted and shows
    her one prompt (the agent's notes, which the history starts with from then on, showed as her prompt). plan (a
    session of its own): the agent's task plan is a compact checklist above the prompt as its steps change it (screenshot
    plan), each step saying what it did to it ("Check off step 9": nine read "Update the plan"); one longer than its
    list's height scrolls to the step in progress (plan-long: it showed its first steps, all done), and stays where
    she scrolled it as the header changes; the chat it grew over still shows its last reply (it went under the plan,
    "Jump to latest" offered), and in a short window the plan takes less height than the chat (plan-short-window:
    its seven rows left the chat three lines); every step done, it folds to "Plan done · 10 steps" (plan-done: it
    stayed open, taking room), a step added opens it; 150 steps, 60 done, read "Plan 60/150" (plan-150: each of the
    daemon's summaries of a plan past 100 steps counted as one step), each of the 90 left a row, and the 50 check-offs
    of one call each read as done (tests/lsp/test_plan.py: those past a cut result's cap read as failed, the card red),
    its card titled "Add 139 steps to the plan, check off 50 steps" (it read "... and 50 more": 189 steps added);
    `/rewind` puts back the plan its turn found, `/clear` takes it away, and the conversation /clear kept comes back
    with it (plan-resumed): VS Code never showed the plan."""
    output = run_e2e("title.mjs", total_ms=370000)
    shows(output,
          "the header showed the first prompt's title while its turn streamed",
          "/rn renamed the header at once",
          "the view's New Session and Switch Session buttons started a new chat and resumed the earlier one",
          "Fork from here showed on a prompt's hover or focus alone, switched the chat to a fork up to that turn, and "
          "the history lists both, each with its turns",
          "the header shows the whole title at the default width and in a narrow side bar, the approval picker compact",
          "Ollie: Fork Chat forked the whole chat",
          "the composer names the model, opens Switch Model, and shows the agent once switched, by the pick or by /agent",
          "the prompt the hung extension host never took came back in the input, said",
          "sent again, it ran",
          "the broken sandbox.yaml was a notification naming its file and key as the session opened",
          "/help kept its columns; a typo's error named the closest command alone",
          "a !cmd that exited non-zero showed failed, one that worked did not",
          "/rewind and /agent took the turns they cut out of the chat; a failed /rewind took nothing",
          "the conversation /agent ended was kept: the chat said so, /help named the session list, Switch Session "
          "brought it back",
          "the workspace's ollie.model, ollie.agent and ollie.serverCommand were ignored",
          "the repository's changed settings restarted nothing: the chat kept its answers",
          "the user's own change of ollie.model restarted the daemon with it")
    scenarios_said(output, ("retry", "a retried reply shows once, without the failed attempt's words"),
                   ("retry", "a request that failed for good shows its error, without the words it had streamed"),
                   ("compacted", "a compacted session resumed says it was compacted, the agent's notes no prompt of hers"),
                   ("plan", "the agent's plan showed above the prompt, a checklist following its steps"),
                   ("plan", "a long plan shows its step in progress, and stays where she scrolled it"),
                   ("plan", "a finished plan folds to one line, and opens again as a step is added"),
                   ("plan", "a plan of 150 steps, 60 done, counts all of them and shows each step left; its check-offs read "
                            "as done"),
                   ("plan", "/rewind put back the plan its turn found, /clear took it away, the conversation it kept came "
                            "back with it"))
