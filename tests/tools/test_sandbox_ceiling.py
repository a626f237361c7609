"""The agent's sandbox is a ceiling: calls may narrow it, never widen it; only `none` agents run unsandboxed."""

from __future__ import annotations

from .conftest import Workspace, code


async def test_call_may_narrow_the_session_policy(ws: Workspace):
    server = ws.server()
    result = await code(server, "echo hi > made.txt", sandbox="readonly")
    assert result.is_error and "Read-only file system" in result.text
    assert f"blocked by ollie's sandbox: {ws.work / 'made.txt'} is outside the writable paths of sandbox policy " \
           "'readonly'" in result.text, result.text
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


async def test_call_cannot_gain_unix_sockets(ws: Workspace, monkeypatch):
    _user_policy(ws, monkeypatch, "sockets", lambda text: text.replace("unix: false", "unix: true"))
    result = await code(ws.server(), "true", sandbox="sockets")
    assert result.is_error and "unix sockets" in result.text


async def test_call_cannot_raise_the_process_limit(ws: Workspace, monkeypatch):
    _user_policy(ws, monkeypatch, "many", lambda text: text.replace("processes: 512", "processes: 100000"))
    result = await code(ws.server(), "true", sandbox="many")
    assert result.is_error and "100000 processes" in result.text


async def test_call_cannot_trade_the_proxy_for_the_hosts_network(ws: Workspace, monkeypatch):
    _user_policy(ws, monkeypatch, "open", lambda text: text.replace("mode: proxy", "mode: open"))
    result = await code(ws.server(), "true", sandbox="open")
    assert result.is_error and "the host's network" in result.text


async def test_call_cannot_allow_more_hosts(ws: Workspace, monkeypatch):
    _user_policy(ws, monkeypatch, "more", lambda text: text.replace('"pypi.org",', '"pypi.org", "evil.example",'))
    result = await code(ws.server(), "true", sandbox="more")
    assert result.is_error and "more hosts" in result.text


async def test_call_cannot_lift_the_send_cap(ws: Workspace, monkeypatch):
    _user_policy(ws, monkeypatch, "bigger", lambda text: text.replace("max_sent: 1G", "max_sent: 0"))
    result = await code(ws.server(), "true", sandbox="bigger")
    assert result.is_error and "send more" in result.text
