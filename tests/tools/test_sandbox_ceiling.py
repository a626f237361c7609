"""The agent's sandbox is a ceiling: calls may narrow it, never widen it; only `none` agents run unsandboxed."""

from __future__ import annotations

import pytest

from .conftest import Workspace, code


async def test_call_may_narrow_the_session_policy(ws: Workspace):
    server = ws.server()
    result = await code(server, "echo hi > made.txt", sandbox="readonly")
    assert result.is_error and "Read-only file system" in result.text
    assert f"blocked by ollie's sandbox: {ws.work / 'made.txt'} is outside the writable paths of sandbox policy " \
           "'readonly'" in result.text, result.text
    # The bundled policy is the installation's: the user is sent to a copy of their own, which replaces it.
    from ollie import paths

    mine, bundled = paths.config_dir() / "sandbox" / "readonly.yaml", paths.bundled("sandboxes") / "readonly.yaml"
    # Copied first: a file holding just the grant would lose the rest of the policy, the project too.
    assert f"filesystem.rw in {mine} (copy {bundled} there first: it replaces that file whole)" in result.text
    assert not (ws.work / "made.txt").exists()
    assert not (await code(server, "echo hi > made.txt")).is_error
    assert (ws.work / "made.txt").read_text() == "hi\n"


async def test_call_cannot_widen_a_readonly_session(ws: Workspace):
    server = ws.server(sandbox="readonly")
    result = await code(server, "echo hi > made.txt", sandbox="default")
    assert result.is_error
    assert "wider than this session's policy 'readonly'" in result.text
    assert "may write" in result.text
    assert not (ws.work / "made.txt").exists()


async def test_call_cannot_regain_network_in_a_nonet_session(ws: Workspace):
    server = ws.server(sandbox="nonet")
    result = await code(server, "true", sandbox="default")
    assert result.is_error and "network" in result.text


async def test_call_cannot_turn_the_sandbox_off(ws: Workspace):
    server = ws.server()
    target = ws.outside / "escaped.txt"
    result = await code(server, f"echo x > {target}", sandbox="none")
    assert result.is_error and "cannot turn the sandbox off" in result.text
    assert not target.exists()


async def test_unsandboxed_agent_runs_outside_the_policy(ws: Workspace):
    server = ws.server(sandbox="none")
    target = ws.outside / "yolo.txt"
    result = await code(server, f"echo x > {target}")
    assert not result.is_error, result.text
    assert target.read_text() == "x\n"


def _user_policy(ws: Workspace, monkeypatch, name: str, edit) -> None:
    """Write policy `name` into the user's config dir: the bundled default with `edit` applied to its text."""
    from ollie import paths

    monkeypatch.setenv("OLLIE_CONFIG_DIR", str(ws.root / "config"))
    target = paths.config_dir() / "sandbox" / f"{name}.yaml"
    target.parent.mkdir(parents=True)
    target.write_text(edit(paths.bundled("sandbox.yaml").read_text()))


# What a user's policy may not widen past the bundled default: (its text, the widened text, the refusal says).
CEILINGS = {
    "unix sockets": ("unix: false", "unix: true", "unix sockets"),
    "process limit": ("processes: 512", "processes: 100000", "100000 processes"),
    "host network": ("mode: proxy", "mode: open", "the host's network"),
    "more hosts": ('"pypi.org",', '"pypi.org", "evil.example",', "more hosts"),
    "send cap": ("max_sent: 1G", "max_sent: 0", "send more"),
}


@pytest.mark.parametrize(("old", "new", "refusal"), CEILINGS.values(), ids=CEILINGS)
async def test_call_cannot_widen_a_ceiling_of_the_policy(ws: Workspace, monkeypatch, old, new, refusal):
    _user_policy(ws, monkeypatch, "wider", lambda text: text.replace(old, new))
    result = await code(ws.server(), "true", sandbox="wider")
    assert result.is_error and refusal in result.text
