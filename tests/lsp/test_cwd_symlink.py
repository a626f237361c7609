"""A symlink a step planted in the workspace never becomes the session's cwd (its policy would grant write there)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from ollie.paths import bundled, config_dir
from ollie.testing import Reply

from .test_methods import rpc_error
from .test_steps import code, run_turn, started


async def _session_in_real(daemon) -> tuple[Path, str]:
    """The workspace folder and a session of its own in its `real` dir, its steps run unasked (approval auto)."""
    ws = daemon.workspace.resolve()
    (ws / "real").mkdir()
    sid = (await daemon.request("ollie/session/new", {"cwd": str(ws / "real")}))["session"]
    await daemon.request("ollie/setApproval", {"session": sid, "approval": "auto"})
    return ws, sid


async def _next_step_is_refused(daemon, llm, sid: str, ws: Path, outside: Path) -> None:
    """The session's next step, in its cwd `real` swapped for a link to `outside`, writes nothing and says why."""
    llm.script(Reply(tool_calls=[code("touch planted")]), Reply.text("done"))
    assert (await daemon.request("ollie/submit", {"session": sid, "text": "go"}))["stop"] == "end"
    assert list(outside.iterdir()) == []
    (tool,) = [e for e in daemon.session_events(sid) if e["role"] == "tool"]
    assert f"the working directory {ws / 'real'} is now a symlink to {outside}" in tool["content"], tool


async def _planted(start_daemon, llm, tmp_path: Path) -> tuple[Any, Path, Path, str]:
    """A daemon whose real sandboxed step planted links to `outside` in the workspace (`sub`) and in its private TMPDIR
    (`t`: its policy grants write there), and made `real/deeper`: (daemon, workspace, outside, that TMPDIR)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    daemon = await started(start_daemon, llm)
    ws = daemon.workspace.resolve()
    await run_turn(daemon, llm, code(f'ln -s {outside} sub && ln -s {outside} "$TMPDIR/t" && mkdir -p real/deeper && '
                                     'printf %s "$TMPDIR" > where'))
    return daemon, ws, outside, (ws / "where").read_text()


async def test_a_planted_symlink_is_refused_by_setcwd_and_cwd_a_real_dir_is_not(start_daemon, llm, tmp_path):
    daemon, ws, outside, tmpdir = await _planted(start_daemon, llm, tmp_path)
    assert (ws / "sub").is_symlink()

    for given in ("sub", str(ws / "sub"), "sub/.", "real/../sub"):
        err = await rpc_error(daemon, "ollie/setCwd", {"cwd": given})
        assert err.code == -32602 and f"cwd: {ws / 'sub'} is a symlink inside {ws}" in err.message, (given, err)
    err = await rpc_error(daemon, "ollie/setCwd", {"cwd": f"{tmpdir}/t"})
    assert err.code == -32602 and f"is a symlink inside {tmpdir}" in err.message
    out = (await daemon.request("ollie/command", {"line": "/cwd sub"}))["output"]
    assert out.startswith(f"/cwd: {ws / 'sub'} is a symlink inside {ws}"), out
    assert (await daemon.request("ollie/state", {}))["cwd"] == str(ws)

    # The session stayed where its policy grants write: a step cannot reach the directory the link points at.
    llm.script(Reply(tool_calls=[code(f"touch {outside}/planted; cd sub && touch planted2")]), Reply.text("done"))
    assert (await daemon.request("ollie/submit", {"text": "go"}))["stop"] == "end"
    assert list(outside.iterdir()) == []

    # Real directories still work, relative and absolute, and the cwd set is the walked real path: a link of the
    # user's own above the workspace is followed; one inside a cwd the session had is not (`..` back to `sub`).
    alias = tmp_path / "alias"
    alias.symlink_to(ws)
    assert await daemon.request("ollie/setCwd", {"cwd": str(alias / "real")}) == {}
    assert (await daemon.request("ollie/state", {}))["cwd"] == str(ws / "real")
    assert (await daemon.request("ollie/command", {"line": "/cwd deeper"}))["output"] == f"cwd: {ws / 'real/deeper'}"
    err = await rpc_error(daemon, "ollie/setCwd", {"cwd": "../../sub"})
    assert err.code == -32602 and "symlink" in err.message
    assert await daemon.request("ollie/setCwd", {"cwd": str(ws)}) == {}
    assert (await daemon.request("ollie/state", {}))["cwd"] == str(ws)

    # A session started in a subdirectory: the workspace folder above it is guarded all the same.
    sid = (await daemon.request("ollie/session/new", {"cwd": str(ws / "real")}))["session"]
    err = await rpc_error(daemon, "ollie/setCwd", {"session": sid, "cwd": "../sub"})
    assert err.code == -32602 and f"is a symlink inside {ws}" in err.message


async def test_a_cwd_another_sessions_step_swapped_for_a_symlink_is_never_granted_nor_forked_into(
        start_daemon, llm, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    daemon = await started(start_daemon, llm)
    ws, sid = await _session_in_real(daemon)
    # The default session's step (its cwd is the workspace folder) swaps the other session's cwd for a link.
    await run_turn(daemon, llm, code(f"mv real real.old && ln -s {outside} real"))

    await _next_step_is_refused(daemon, llm, sid, ws, outside)

    fork = (await daemon.request("ollie/session/fork", {"session": sid}))["session"]
    assert (await daemon.request("ollie/state", {"session": fork}))["cwd"] == str(ws)  # the workspace folder


async def test_a_swapped_cwd_stays_refused_after_an_agent_switch(start_daemon, llm, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    daemon = await started(start_daemon, llm)
    ws, sid = await _session_in_real(daemon)
    await run_turn(daemon, llm, code(f"mv real real.old && ln -s {outside} real"))
    # The user switches that session to another sandboxed agent (no question): its tools are built anew there.
    out = (await daemon.request("ollie/command", {"session": sid, "line": "/agent coding"}))["output"]
    assert out.startswith("agent: coding"), out

    await _next_step_is_refused(daemon, llm, sid, ws, outside)


async def test_a_link_in_a_dir_every_step_may_write_is_refused_before_the_sessions_first_step(
        start_daemon, llm, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    daemon = await started(start_daemon, llm)
    ws = daemon.workspace.resolve()
    # A step plants a link in its project's notes dir, which the policy grants every step (`{OLLIE_DATA_PATH}/memory`).
    await run_turn(daemon, llm, code(f'ln -s {outside} "$OLLIE_MEMORY_PATH/l" && printf %s "$OLLIE_MEMORY_PATH" > where'))
    notes = (ws / "where").read_text()
    # A new session has run no step: its policy, which grants that dir too, was not built yet.
    sid = (await daemon.request("ollie/session/new", {}))["session"]
    err = await rpc_error(daemon, "ollie/setCwd", {"session": sid, "cwd": f"{notes}/l"})
    assert err.code == -32602 and f"is a symlink inside {notes}" in err.message, err


async def test_undo_and_rewind_never_write_through_a_cwd_swapped_for_a_symlink(start_daemon, llm, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    daemon = await started(start_daemon, llm)
    ws, sid = await _session_in_real(daemon)
    for step in ("printf 'evil\\n' > planted", "rm planted"):  # turn 1 makes a file, turn 2 removes it
        llm.script(Reply(tool_calls=[code(step)]), Reply.text("done"))
        assert (await daemon.request("ollie/submit", {"session": sid, "text": "go"}))["stop"] == "end"
    # The default session's step swaps the other session's cwd for a link out of the workspace.
    await run_turn(daemon, llm, code(f"mv real real.old && ln -s {outside} real"))

    # Undoing turn 2's removal, or rewinding to before it, would write the file where the link leads (as the daemon).
    # (Found: the undo wrote `planted` there as the daemon; the rewind also removed every file of the link's target
    # that its checkpoint did not hold, the user's `keep` here: as root, with the link to /etc, the system's.) The
    # session holds its cwd (beneath.hold): each goes to that very dir, `real.old` now, never where the link leads.
    (outside / "keep").write_text("the user's\n")
    changes = await daemon.request("ollie/changes", {"session": sid, "turn": 2})
    assert [c["path"] for c in changes["files"]] == ["planted"], changes
    await daemon.request("ollie/review/undo", {"session": sid, "path": "planted", "turn": 2})
    assert (ws / "real.old" / "planted").read_text() == "evil\n"
    (ws / "real.old" / "planted").unlink()
    await daemon.request("ollie/rewind", {"session": sid, "turn": 2})
    assert (ws / "real.old" / "planted").read_text() == "evil\n"
    assert [p.name for p in outside.iterdir()] == ["keep"]


async def test_hooks_and_prompt_commands_never_run_in_a_cwd_swapped_for_a_symlink(start_daemon, llm, tmp_path):
    # Only steps checked it: a hook or prompt command ran in the link's target, with the write its policy grants cwd.
    outside, agents = tmp_path / "outside", tmp_path / "agents"
    outside.mkdir()
    agents.mkdir()
    (agents / "hooked.json").write_text(json.dumps({
        "prompt": ["touch prompt-planted; echo You are hooked."], "hooks": {"preTurn": "touch hook-planted"},
        "commandSandbox": "default"}))
    daemon = await start_daemon(env={**llm.env(), "OLLIE_AGENTS_DIR": str(agents)})
    await daemon.request("ollie/setApproval", {"approval": "auto"})
    ws = daemon.workspace.resolve()
    (ws / "real").mkdir()
    sid = (await daemon.request("ollie/session/new", {"cwd": str(ws / "real"), "agent": "hooked"}))["session"]
    await run_turn(daemon, llm, code(f"mv real real.old && ln -s {outside} real"))

    llm.script(Reply.text("done"))
    assert (await daemon.request("ollie/submit", {"session": sid, "text": "go"}))["reply"] == "done"
    assert list(outside.iterdir()) == []
    swapped = f"could not start: the working directory {ws / 'real'} is now a symlink to {outside}"
    infos = "\n".join(e["content"] for e in daemon.session_events(sid) if e["role"] == "info")
    assert f"hook preTurn: 'touch hook-planted' {swapped}" in infos, infos
    assert f"prompt command 'touch prompt-planted; echo You are hooked.' {swapped}" in infos, infos


async def test_a_link_any_step_of_the_daemon_planted_is_refused_to_every_session_and_the_users_own_is_followed(
        start_daemon, llm, tmp_path):
    # Found: the guard held only the moving session's own cwds and policy, so a link another session's step planted
    # in its TMPDIR, its plan dir or its cwd outside the workspace folder became this session's cwd (granted write).
    targets = {case: tmp_path / "outside" / case for case in ("tmpdir", "plan", "cwd")}
    for target in targets.values():
        target.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    daemon = await started(start_daemon, llm)
    ws = daemon.workspace.resolve()
    other = (await daemon.request("ollie/session/new", {"cwd": str(elsewhere)}))["session"]
    await daemon.request("ollie/setApproval", {"session": other, "approval": "auto"})
    llm.script(Reply(tool_calls=[code(
        f'ln -s {targets["tmpdir"]} "$TMPDIR/t" && ln -s {targets["plan"]} "$(dirname "$OLLIE_PLAN_FILE")/l" && '
        f'ln -s {targets["cwd"]} l && printf %s "$TMPDIR" > tmpdir && printf %s "$(dirname "$OLLIE_PLAN_FILE")" > plan'
    )]), Reply.text("done"))
    assert (await daemon.request("ollie/submit", {"session": other, "text": "go"}))["stop"] == "end"
    links = {"tmpdir": f"{(elsewhere / 'tmpdir').read_text()}/t", "plan": f"{(elsewhere / 'plan').read_text()}/l",
             "cwd": str(elsewhere / "l")}

    followed = {}
    for case, link in links.items():
        try:
            followed[case] = await daemon.request("ollie/setCwd", {"cwd": link})
        except JsonRpcException as exc:
            assert exc.code == -32602 and f"cwd: {link} is a symlink inside" in exc.message, (case, exc)
    assert followed == {}
    out = (await daemon.request("ollie/command", {"line": f"/cwd {links['tmpdir']}"}))["output"]
    assert out.startswith(f"/cwd: {links['tmpdir']} is a symlink inside"), out
    assert (await daemon.request("ollie/state", {}))["cwd"] == str(ws)

    # A link the user made, outside anything a step may write (~/proj -> /data/proj), is still followed.
    data, home = tmp_path / "data" / "proj", tmp_path / "home"
    data.mkdir(parents=True)
    home.mkdir()
    (home / "proj").symlink_to(data)
    assert await daemon.request("ollie/setCwd", {"cwd": str(home / "proj")}) == {}
    assert (await daemon.request("ollie/state", {}))["cwd"] == str(data)


async def test_a_link_planted_where_only_the_agent_switched_from_could_write_is_refused(start_daemon, llm, tmp_path):
    # Found: the guard took the writable paths of the session's current agent's policy only.
    outside, shared, agents = tmp_path / "outside", tmp_path / "shared", tmp_path / "agents"
    for directory in (outside, shared, agents):
        directory.mkdir()
    policies = config_dir() / "sandbox"
    policies.mkdir(parents=True)
    default = bundled("sandbox.yaml").read_text()
    (policies / "shared.yaml").write_text(default.replace('rwx: ["{CWD}"', f'rwx: ["{shared}", "{{CWD}}"'))
    (agents / "sharing.json").write_text(json.dumps({"prompt": ["You share."], "sandbox": "shared"}))
    daemon = await start_daemon(env={**llm.env(), "OLLIE_AGENTS_DIR": str(agents)})
    sid = (await daemon.request("ollie/session/new", {"agent": "sharing"}))["session"]
    await daemon.request("ollie/setApproval", {"session": sid, "approval": "auto"})
    llm.script(Reply(tool_calls=[code(f"ln -s {outside} {shared}/l")]), Reply.text("done"))
    assert (await daemon.request("ollie/submit", {"session": sid, "text": "go"}))["stop"] == "end"
    assert (shared / "l").is_symlink()
    out = (await daemon.request("ollie/command", {"session": sid, "line": "/agent coding"}))["output"]
    assert out.startswith("agent: coding"), out

    err = await rpc_error(daemon, "ollie/setCwd", {"session": sid, "cwd": str(shared / "l")})
    assert err.code == -32602 and f"cwd: {shared / 'l'} is a symlink inside {shared}" in err.message, err


async def test_a_new_session_is_never_started_in_a_link_a_step_planted(start_daemon, llm, tmp_path):
    # Red team 55: `session/new`'s cwd took the real path of whatever it named. VS Code names a multi-root workspace's
    # folder there (a repository's `.code-workspace` lists its own `sub`, a link committed or a step planted): the new
    # session worked in where the link led, its steps granted write there.
    daemon, ws, _, tmpdir = await _planted(start_daemon, llm, tmp_path)
    for given in (str(ws / "sub"), str(ws / "real/../sub"), f"{tmpdir}/t"):
        err = await rpc_error(daemon, "ollie/session/new", {"cwd": given})
        assert err.code == -32602 and "cwd: " in err.message and "is a symlink inside" in err.message, err

    # A real directory, and one reached through the user's own link above the workspace, start as before.
    alias = tmp_path / "alias"
    alias.symlink_to(ws)
    sid = (await daemon.request("ollie/session/new", {"cwd": str(alias / "real")}))["session"]
    assert (await daemon.request("ollie/state", {"session": sid}))["cwd"] == str(ws / "real")


async def test_a_new_session_is_never_started_in_a_link_of_the_workspace_folder_before_any_step(start_daemon, llm,
                                                                                               tmp_path):
    # No step of this daemon ran yet (an earlier daemon's step planted it, or the repository holds it): the workspace
    # folder is guarded itself, not only where this daemon's steps may write (that guard removed, no test failed).
    outside = tmp_path / "outside"
    outside.mkdir()
    daemon = await started(start_daemon, llm)
    (daemon.workspace / "sub").symlink_to(outside)
    err = await rpc_error(daemon, "ollie/session/new", {"cwd": str(daemon.workspace / "sub")})
    assert err.code == -32602 and "is a symlink inside" in err.message, err


async def test_new_sessions_never_start_in_an_added_workspace_folder_that_is_a_planted_link(start_daemon, llm, tmp_path):
    # Red team 55: the first folder added (VS Code's "Add Folder to Workspace", a workspace file's folders) became new
    # sessions' cwd as named: a link a step planted in the workspace folder, and their steps wrote where it led.
    outside = tmp_path / "outside"
    outside.mkdir()
    daemon = await started(start_daemon, llm)
    ws = daemon.workspace.resolve()
    await run_turn(daemon, llm, code(f"ln -s {outside} sub"))
    daemon.client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        event=types.WorkspaceFoldersChangeEvent(added=[types.WorkspaceFolder(uri=(ws / "sub").as_uri(), name="s")],
                                                removed=[])))
    sid = (await daemon.request("ollie/session/new", {}))["session"]
    assert (await daemon.request("ollie/state", {"session": sid}))["cwd"] == str(ws)
    await daemon.request("ollie/setApproval", {"session": sid, "approval": "auto"})
    llm.script(Reply(tool_calls=[code("touch planted")]), Reply.text("done"))
    assert (await daemon.request("ollie/submit", {"session": sid, "text": "go"}))["stop"] == "end"
    assert list(outside.iterdir()) == []
    shown = [m.message for m in daemon.client.messages]
    assert any(f"{ws / 'sub'} is a symlink inside {ws}" in m and "workspace folder" in m for m in shown), shown


async def test_a_folder_added_is_never_a_link_inside_the_root_folder_the_editor_removed(start_daemon, llm, tmp_path):
    # Sessions go on starting in the root folder after the editor drops it from the workspace: a link the repository
    # commits there (`sub` -> anywhere), added as a folder of its own, is still a link inside it.
    outside, repo, other = tmp_path / "outside", (tmp_path / "repo").resolve(), (tmp_path / "other").resolve()
    for made in (outside, repo, other):
        made.mkdir()
    (repo / "sub").symlink_to(outside)
    daemon = await start_daemon(env=llm.env(), folders=[repo, other])
    daemon.client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        event=types.WorkspaceFoldersChangeEvent(added=[types.WorkspaceFolder(uri=(repo / "sub").as_uri(), name="s")],
                                                removed=[types.WorkspaceFolder(uri=repo.as_uri(), name="repo")])))
    sid = (await daemon.request("ollie/session/new", {}))["session"]
    assert (await daemon.request("ollie/state", {"session": sid}))["cwd"] == str(repo)


async def test_the_first_workspace_folder_is_never_a_link_inside_another(start_daemon, llm, tmp_path):
    # Red team 56: initialize's first folder was taken as the editor named it: a repository's `.code-workspace` listing
    # its committed link `sub` (to anywhere: the user's home) before `.` had the default session's steps write there.
    outside, repo = tmp_path / "outside", (tmp_path / "repo").resolve()
    outside.mkdir()
    repo.mkdir()
    (repo / "sub").symlink_to(outside)
    daemon = await start_daemon(env=llm.env(), folders=[repo / "sub", repo])
    assert (await daemon.request("ollie/state", {}))["cwd"] == str(repo)
    await daemon.request("ollie/setApproval", {"approval": "auto"})
    llm.script(Reply(tool_calls=[code("touch planted")]), Reply.text("done"))
    assert (await daemon.request("ollie/submit", {"text": "go"}))["stop"] == "end"
    assert list(outside.iterdir()) == [] and (repo / "planted").exists()
    shown = [m.message for m in daemon.client.messages]
    assert any(f"{repo / 'sub'} is a symlink inside {repo}" in m for m in shown), shown


async def test_a_folder_added_is_never_a_link_inside_another_workspace_folder(start_daemon, llm, tmp_path):
    # Red team 59: initialize refuses a folder that is a link inside another it names, an added folder was walked
    # with the first folder alone guarded: the workspace's second folder `lib` (another repository) commits `l`, to
    # anywhere, and the `.code-workspace` (a step's to edit) adds `lib/l` alone: new sessions started where it led.
    outside, repo, lib = (tmp_path / "outside").resolve(), (tmp_path / "repo").resolve(), (tmp_path / "lib").resolve()
    for folder in (outside, repo, lib):
        folder.mkdir()
    (lib / "l").symlink_to(outside)
    daemon = await start_daemon(env=llm.env(), folders=[repo, lib])
    daemon.client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        event=types.WorkspaceFoldersChangeEvent(added=[types.WorkspaceFolder(uri=(lib / "l").as_uri(), name="l")],
                                                removed=[])))
    sid = (await daemon.request("ollie/session/new", {}))["session"]
    assert (await daemon.request("ollie/state", {"session": sid}))["cwd"] == str(repo)
    shown = [m.message for m in daemon.client.messages]
    assert any(f"{lib / 'l'} is a symlink inside {lib}" in m for m in shown), shown


async def test_no_session_starts_when_every_workspace_folder_is_a_link_inside_another(start_daemon, llm, tmp_path):
    # Each a link inside where the other leads: never the daemon's own directory instead (VS Code starts it in the
    # first folder, the link followed).
    repo = (tmp_path / "repo").resolve()
    (repo / "x").mkdir(parents=True)
    (repo / "y").mkdir()
    (repo / "x/l").symlink_to(repo)
    (repo / "y/m").symlink_to(repo / "x")
    daemon = await start_daemon(env=llm.env(), folders=[repo / "x/l", repo / "y/m"])
    # session/new answered -32602 naming `cwd`, a field it was not sent (a client blames its request), where every
    # other request says -32603: the params are fine, the workspace has no folder to start in (JSON-RPC, ACP's schema).
    for method, params in (("ollie/state", {}), ("ollie/session/new", {}), ("ollie/session/new", {"cwd": str(repo)})):
        err = await rpc_error(daemon, method, params)
        assert "no workspace folder to start sessions in" in err.message and "is a symlink inside" in err.message, err
        assert err.message.endswith("(they start in the next folder added)"), err  # what to do: it said none
        assert err.code == -32603 and not err.message.startswith("Invalid params"), err
    # A folder added then is new sessions' and the default session's (built then, or at the next request after its
    # build failed above: it stayed failed until the daemon restarted): never the daemon's own.
    added = daemon.workspace.resolve()
    early = await start_daemon(env=llm.env(), folders=[repo / "x/l", repo / "y/m"])
    for each in (daemon, early):
        each.client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(added=[types.WorkspaceFolder(uri=added.as_uri(), name="w")],
                                                    removed=[])))
    sid = (await daemon.request("ollie/session/new", {}))["session"]
    assert (await daemon.request("ollie/state", {"session": sid}))["cwd"] == str(added)
    for each in (daemon, early):
        assert (await each.request("ollie/state", {}))["cwd"] == str(added)


def test_a_daemon_started_in_a_removed_directory_opens_sessions_in_home_s_real_path(tmp_path, monkeypatch):
    # Its fallback was $HOME as written: a home reached through a link (/home -> /usr/home) is no real path, and a
    # session's directory must be one (a link on its way is refused as swapped in), so no session could open.
    from ollie.agent.opening import _work_dir
    from ollie_lsp.server import start_dir

    (tmp_path / "real-home").mkdir()
    (tmp_path / "home").symlink_to(tmp_path / "real-home")
    (tmp_path / "gone").mkdir()
    monkeypatch.chdir(tmp_path / "gone")
    (tmp_path / "gone").rmdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _work_dir(start_dir()) == tmp_path.resolve() / "real-home"
