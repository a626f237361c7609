"""The VS Code extension in real VS Code (code-server + headless Chromium), against the real daemon and scripted LLM:
its package, the daemon's start, settings, questions, images, ghost text, MCP and code actions. The chat's turns,
queue and title: test_vscode_chat_e2e.py (two files, so the two workers of scripts/test share them)."""

from __future__ import annotations

import zipfile

import pytest

pytestmark = pytest.mark.slow


def shows(output: str, *steps: str) -> None:
    """Every one of `steps` (what the e2e script prints once it has seen it happen) is in `output`."""
    for step in steps:
        assert step in output, f"{step!r} not seen; the script printed:\n{output[-4000:]}"


def scenarios_said(output: str, *said: tuple[str, str]) -> None:
    """Each (scenario, step) of a window that holds several is in `output`; a miss names its scenario."""
    for scenario, step in said:
        assert step in output, f"scenario {scenario}: {step!r} not said\n{output[-3000:]}"


def test_vsix_holds_the_manifest_and_the_bundles(vsix):
    """The package has what VS Code installs from: the manifest, package.json and both bundles, no source maps."""
    names = set(zipfile.ZipFile(vsix).namelist())
    for name in ("extension.vsixmanifest", "[Content_Types].xml", "extension/package.json",
                 "extension/dist/extension.js", "extension/dist/webview.js", "extension/media/chat.css"):
        assert name in names
    assert not [n for n in names if n.endswith(".map")]


@pytest.mark.timeout(250)
def test_a_prompt_sent_while_the_daemon_restarts_waits_for_it_in_real_vscode(run_e2e):
    """A rate-limited request's wait to retry is counted down in the status bar (it said "thinking": rate-limited-status),
    the chat saying it in a line (it gave the vendor's paragraph). A prompt sent while Restart's new daemon starts
    shows as waiting and goes once it is up, to the chat's session resumed there (it was answered "the ollie daemon is
    not running", and lost); one sent during a start that fails gets the start's error, and is back in the input; so is
    one sent to a daemon that died before its turn began (it vanished: the chat brought back after the crash has
    nothing of it), and one queued as its daemon died: each with the file and image chips it was sent with (only its
    text came back). The chat brought back after a crash mid-turn still shows the reply streamed so far, marked cut
    short (the session's log has finished rounds only); one whose daemon died after it saved the answer, before the
    turn's end, shows it once (it showed twice). A saved edit of an open file rewound, then undone, leaves the buffer
    clean each time, holding the disk's text (it stayed unsaved, the save refused as a change on disk: rewound-clean,
    undone-clean). A rewind that leaves an open buffer she typed in since the turn's edit
    as it is says so (it said "1 file restored" alone, and her save wrote the edit back: rewind-kept-buffer), again
    after Undo Rewind (the undo lost the turn's buffer edit: rewind-again-kept-buffer), `/rewind` typed in the chat too
    (rewind-kept-buffer-command). The palette's Undo Rewind after a Restart (no notification left to offer it: there
    was no such command) puts the agent's edit back in the buffer a rewind took it out of, her typing kept (it was lost
    unsaid: rewind-undone-after-restart); asked again it says there is no rewind to undo. The Rewind pick of a session longer
    than 30 turns reaches turn 3 (it listed the newest 30: rewind-turn-3-of-many), "Turn 3" typed ranking it first
    (turns 30 and on came before it: rewind-pick-of-many)."""
    shows(run_e2e("restart.mjs", total_ms=200000),
          "a rate-limited request's wait to retry was counted down in the status bar",
          "a prompt typed during Restart was sent once the daemon was up, in the chat's session",
          "a prompt typed during a start that failed got the start's error and is back in the input, with its chips",
          "a prompt whose daemon died before its turn began was back in the input with its chip, and answered once sent again",
          "a prompt queued as the daemon died was back in the input, with its chip",
          "the answer shown when the daemon died stayed in the restored chat, marked cut short",
          "an answer saved before the daemon died showed once in the restored chat, the notice saying it was saved",
          "a saved edit rewound and undone left calc.py clean, its text the disk's",
          "a rewind that left an open buffer she had typed in as it was said so",
          "undone and rewound again, it still named that buffer", "/rewind that left it as it was said so too",
          "Undo Rewind after a Restart put the agent's edit back in the buffer, her typing kept; again: no rewind to undo",
          "the Rewind pick of a session of more than 30 turns reached turn 3")


@pytest.mark.timeout(500)
def test_mcp_and_network_questions_and_images_in_real_vscode(run_e2e):
    """One window, five scenarios (mcpnetwork.mjs):
    - mcp: a workspace's .mcp.json server is asked about in the chat with its command line (screenshot mcp-question),
      allowed always (for this workspace, no feedback offered) its tool runs; `@` lists its resource
      (mcp-resource-pick), whose text the daemon puts in the prompt.
    - mcpcall: under `ask`, the card asking about an MCP tool's call shows every argument (its title names the first
      text one alone: a decoy put first hid the one the server used); screenshot mcp-call-question.
    - network: a step's connection to a host outside the allow-list is a card asking "Allow network access to
      host:port?"; Deny with feedback (words for the model) sends the host nothing, Allow once lets the request
      through, Allow for this session the session's later ones; a question whose step ended first says it is no longer
      asked, mid-turn. Under reduced
      motion (the test profile's workbench.reduceMotion) the running step's icon stands still (it spun at 60 fps).
    - images: an image pasted into the chat input is a chip and goes with the prompt (saved with it by the daemon); a
      dropped one too, and an image file picked with @; bytes that are not an image are refused by the daemon and the
      chat says why. A batch's two file_reads of images: each under the step that read it (screenshot
      image-tool-result; both were under the call), one over 1 MiB named; resumed (its daemon killed, the chat read
      back from disk) each step names its own (image-tool-result-resumed): the session keeps no data once read. A
      session saved before images named their step has them under the call.
    - refused: a model whose vendor refuses images (/model to the scripted server's text-only one): live the prompt
      names its image and the error says so (image-refused-live); resumed (its daemon killed, the chat read back from
      disk) the prompt names the image left out and why, labelled as a kept image is (image-refused-resumed)."""
    from ollie.sandbox.rules import landlock_abi

    if landlock_abi() < 1:
        pytest.skip("needs Landlock")
    scenarios_said(
        run_e2e("mcpnetwork.mjs", total_ms=450000),
        ("mcp", "a workspace's MCP server was asked about in the chat with its command line"),
        ("mcp", "@ offered the MCP server's resource"),
        ("mcpcall", "the MCP call's question showed all its arguments"),
        ("network", "a network question named the host; Deny with feedback sent it nothing"),
        ("network", "Allow once let the request through"),
        ("network", "Allow for this session let the session's later requests through unasked"),
        ("network", "a question whose step ended first said it was no longer asked"),
        ("network", "its running step's icon stood still (reduced motion)"),
        ("images", "a pasted image showed as a chip, went with the prompt and was saved with it"),
        ("images", "a dropped image went with the prompt"),
        ("images", "an image file picked with @ went with the prompt as an image"),
        ("images", "an image the model read showed under its step, one over 1 MiB named with its size under its own"),
        ("images", "a file that is not an image was refused by the daemon and the chat said why"),
        ("images", "resumed, each step named the image it read"),
        ("images", "a session saved before steps were kept showed its images under the call"),
        ("refused", "live, the prompt named its image and the error said the model takes none"),
        ("refused", "resumed, the prompt named the image left out and why"),
    )


@pytest.mark.timeout(370)
def test_without_ollie_lsp_then_code_actions_model_links_and_ghost_text_in_real_vscode(run_e2e):
    """One window, four scenarios (lspfeatures.mjs):
    - nolsp: no ollie-lsp on PATH and no ollie.serverCommand, pipx's in ~/.local/bin: the chat says `pipx ensurepath`
      (it said to install it, and was blank before that), and a prompt sent anyway stays in the chat with the answer
      that the daemon is not running (it was swallowed); screenshot no-ollie-lsp-start. And code-server asks a
      password of a request without the test's cookie (`--auth none` served any user of the machine), and checks the
      cookie it set without argon2 (given the password plain, it ran argon2 at every request: ~7 CPU-s of a window),
      and the window starts none of the built-in extensions no test uses (Git, GitHub, the JSON and TypeScript
      servers: ~2 CPU-s and ~3 s before Ollie activated). Then ollie.serverCommand set starts the daemon.
    - codeaction: Explain from the light bulb with nothing listening fails pointing to the chat's onboarding, which
      says what to do (the error said it all again), and as a warning (codeaction-backend-down); once the model is
      up, the action's prompt shows in the chat with the code it is about, its answer comes, and the chat's "cannot
      be reached" help goes (codeaction-explained).
    - modellinks: a code action's answer holding `[label](command:...)` is a notification VS Code would make a link of,
      run with commands allowed at a click (it was): shown as text. A longer answer, the document VS Code opens, made
      it a link a Ctrl+click ran while it was markdown (it did): it is plain text. Apply on a block whose fence names
      a workspace link to `.git/config` is refused (it put the model's config in the editor, a Save from the disk).
    - ghost: with OLLIE_COMPLETION_MODEL set, typing in a file shows the model's fill-in-the-middle answer as ghost
      text after the cursor (ghost-text); Tab accepts it into the file."""
    scenarios_said(
        run_e2e("lspfeatures.mjs", total_ms=280000),
        ("nolsp", "with no ollie-lsp on PATH the chat says how to put it there"),
        ("nolsp", "code-server asks another user for its password"),
        ("nolsp", "code-server checks the session cookie without argon2"),
        ("nolsp", "the window activated no built-in that no test uses"),
        ("codeaction", "with the backend down, Explain said what to do in the chat and as a warning"),
        ("codeaction", "Explain's prompt showed in the chat with the code it was about"),
        ("modellinks", "a code action's answer with a command link showed as text, with no link to click"),
        ("modellinks", "a code action's longer answer, a document, made no link of the model's command"),
        ("modellinks", "Apply of a block naming a link to .git/config was refused, and the file is unchanged"),
        ("ghost", 'ghost text shown: "r * r"'),
        ("ghost", "ollie's ghost text showed after the cursor and Tab accepted it"),
    )
