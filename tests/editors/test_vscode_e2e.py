"""The VS Code extension in real VS Code (code-server + headless Chromium), against the real daemon and scripted LLM."""

from __future__ import annotations

import zipfile

import pytest


def test_vsix_holds_the_manifest_and_the_bundles(vsix):
    """The package has what VS Code installs from: the manifest, package.json and both bundles, no source maps."""
    names = set(zipfile.ZipFile(vsix).namelist())
    for name in ("extension.vsixmanifest", "[Content_Types].xml", "extension/package.json",
                 "extension/dist/extension.js", "extension/dist/webview.js", "extension/media/chat.css"):
        assert name in names
    assert not [n for n in names if n.endswith(".map")]


@pytest.mark.timeout(330)
def test_chat_streams_shows_tools_and_stops_in_real_vscode(run_e2e):
    """A prompt in the chat view streams a markdown answer with a tool block; Stop interrupts a slow reply; a resumed
    session loads its earlier pages on scroll (each step once), a restored failed prompt says it failed, an
    archived session is listed on request, and a daemon killed mid-turn is restarted with the chat back."""
    output = run_e2e("run.mjs")
    for step in ("Stop interrupted the turn", "scrolling up loaded the earlier pages",
                 "an archived session leaves the history, Show archived lists it marked",
                 "a long word wraps; a markdown link to a file opens it",
                 "a daemon killed mid-turn: the chat said so, came back with the same conversation"):
        assert step in output
