"""The locks that keep an editor from being handed a path a running step may swap (ollie.sandbox.writers)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from ollie.sandbox import writers
from ollie.sandbox.errors import SandboxError
from tests.sandbox.conftest import Workspace


async def quiet(path: Path, wait_s: float = 0.0) -> bool:
    async with writers.quiet(path, wait_s=wait_s) as alone:
        return alone


async def test_a_step_holding_a_dir_keeps_everything_beneath_it_from_being_quiet(tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLIE_STATE_DIR", str(tmp_path / "state"))
    ws, other = tmp_path / "ws", tmp_path / "other"
    ws.mkdir()
    release = await writers.hold(writers.places([ws]))
    assert not await quiet(ws / "sub" / "a.py") and not await quiet(ws)
    assert await quiet(other / "a.py") and await quiet(tmp_path)  # beside it, or above it: a step there cannot swap it
    release()
    assert await quiet(ws / "sub" / "a.py")


async def test_a_step_takes_no_lock_for_a_device_it_may_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default policy's /dev/null, /dev/tty...: a device swaps no link, so its lock (five calls on each step's
    path) guarded nothing; the directories beside them keep theirs."""
    monkeypatch.setenv("OLLIE_STATE_DIR", str(tmp_path / "state"))
    ws, linked = tmp_path / "ws", tmp_path / "null"
    ws.mkdir()
    linked.symlink_to("/dev/null")  # followed, as the realpath of a policy's path is
    release = await writers.hold(writers.places([Path("/dev/null"), Path("/dev/zero"), linked, ws]))
    assert len(list((tmp_path / "state" / "writers").iterdir())) == 1  # the work tree's
    assert writers.holder(Path("/dev/null")) is None and not await quiet(ws / "a.py")
    release()
    assert await quiet(ws / "a.py")


async def test_a_step_starting_while_quiet_is_held_waits_and_a_cancelled_one_leaves_no_lock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLIE_STATE_DIR", str(tmp_path / "state"))
    ws = tmp_path / "ws"
    ws.mkdir()
    async with writers.quiet(ws / "a.py") as alone:
        assert alone
        waiting = asyncio.ensure_future(writers.hold(writers.places([ws])))
        cancelled = asyncio.ensure_future(writers.hold(writers.places([ws])))
        await asyncio.sleep(0)
        cancelled.cancel()
        assert not waiting.done()
    release = await waiting  # once the editor's answer is in
    assert not await quiet(ws / "a.py")
    release()
    # The cancelled one took its lock in its thread after all, and lets it go: quiet again.
    for _ in range(3000):
        if await quiet(ws / "a.py"):
            break
        await asyncio.sleep(0.01)
    else:
        pytest.fail("the cancelled step's lock was never released")


async def test_quiet_waits_for_the_step_to_end_names_it_past_the_bound_and_stops_when_cancelled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An editor's edit waits for the steps that may write its file (bounded; Stop cancels it), then names one."""
    monkeypatch.setenv("OLLIE_STATE_DIR", str(tmp_path / "state"))
    ws = tmp_path / "ws"
    ws.mkdir()
    writers.running.set("make test")
    release = await writers.hold(writers.places([ws]))
    async with writers.quiet(ws / "a.py", wait_s=0.1) as alone:
        assert not alone and writers.holder(ws / "a.py") == "make test" and writers.holder(tmp_path) is None
    stopped = asyncio.ensure_future(quiet(ws / "a.py", 30))
    waiting = asyncio.ensure_future(quiet(ws / "a.py", 30))
    await asyncio.sleep(0.1)
    stopped.cancel()  # Stop: the wait ends, holding nothing
    assert not waiting.done()
    release()
    assert await waiting and writers.holder(ws / "a.py") is None
    (await asyncio.wait_for(writers.hold(writers.places([ws])), 5))()  # the stopped wait left no lock behind



async def test_a_step_never_gets_a_writable_path_swapped_for_a_link_after_its_lock(
        ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's policy lists `shared`, inside the work tree another step may write: that step swaps `shared` for a
    link to a tree outside once the lock is taken, before the step opens its Landlock rules. The rule must not
    follow the link (the lock guards `shared`, not where it leads now: an editor would save there meanwhile)."""
    monkeypatch.setenv("OLLIE_STATE_DIR", str(ws.root / "state"))
    (ws.work / "shared").mkdir()
    listing = ws.policy('filesystem: {rox: ["/usr", "/bin", "/lib", "/lib64"], rw: ["{CWD}/shared"]}\n')
    write = f"echo step > {ws.work}/shared/note"
    assert (await ws.bash(write, listing))[0] == 0 and (ws.work / "shared" / "note").exists()
    taken = writers.hold
    swapped: list[str] = []

    async def hold_then_swap(places: dict[str, str]):  # the lock is held; the step's process is not started yet
        release = await taken(places)
        if not swapped:
            swapped.append("once")  # the swapping step's own spawn takes its lock unhooked
            status, _, err = await ws.bash(f"mv shared shared.was && ln -s {ws.outside} shared", ws.default_policy())
            assert status == 0 and (ws.work / "shared").is_symlink(), err
        return release

    monkeypatch.setattr(writers, "hold", hold_then_swap)
    refused = ""
    try:
        await ws.bash(write, listing)
    except SandboxError as exc:
        refused = str(exc)
    assert swapped and not (ws.outside / "note").exists()  # written through the link, where no lock was held
    assert f"{ws.work}/shared leads to {ws.outside}" in refused


async def test_a_directory_another_step_renames_away_stays_locked_while_a_step_may_write_it(
        ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    """Round 31: a user's policy lists `shared`, inside the work tree another step may write. While a step that may
    write `shared` runs, that other step renames it to `moved`: the running step's rule follows the directory (Landlock's
    are on inodes), so an editor's save of `moved/note` must wait for it as for `shared/note` (it could swap a link in
    there), and not only until the renaming step ends."""
    monkeypatch.setenv("OLLIE_STATE_DIR", str(ws.root / "state"))
    (ws.work / "shared").mkdir()
    os.mkfifo(ws.work / "shared" / "go")
    listing = ws.policy('filesystem: {rox: ["/usr", "/bin", "/lib", "/lib64"], rw: ["{CWD}/shared"]}\n')
    writers.running.set("the waiting step")
    running = asyncio.ensure_future(ws.bash("cat shared/go", listing))
    opening = asyncio.ensure_future(asyncio.to_thread(open, ws.work / "shared" / "go", "w"))  # once the step reads it
    await asyncio.wait([running, opening], return_when=asyncio.FIRST_COMPLETED)
    if not opening.done():  # the step ended without reading: the thread's open is let go, and the test fails
        os.close(os.open(ws.work / "shared" / "go", os.O_RDONLY | os.O_NONBLOCK))
        (await opening).close()
        pytest.fail(f"the step never read its FIFO: {await running}")
    go = await opening
    writers.running.set("")
    try:
        status, _, err = await ws.bash("mv shared moved", ws.default_policy())
        assert status == 0 and (ws.work / "moved" / "go").exists(), err
        assert not await quiet(ws.work / "moved" / "note")
        assert writers.holder(ws.work / "moved" / "note") == "the waiting step"
    finally:
        go.close()
    assert (await running)[0] == 0
    assert await quiet(ws.work / "moved" / "note")


async def test_a_writable_path_swapped_for_a_link_into_the_runtime_dir_while_resolved_is_still_locked(
        ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    """Round 32: a user's policy lists `shared`, inside the work tree another step may write. That step swaps `shared`
    for a link into ollie's runtime dir (its own TMPDIR is there) just after the daemon looked `shared` up, and back
    before the step opens its rules: the path must not be taken for a session's temp dir (pinned, not locked) while
    its rule still leads to `shared` (an editor's save there would be handed a link the step swaps in)."""
    monkeypatch.setenv("OLLIE_STATE_DIR", str(ws.root / "state"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(ws.root / "run"))
    parked = ws.root / "run" / "ollie" / "parked"  # where the swapping step's TMPDIR would be
    parked.mkdir(parents=True)
    shared = ws.work / "shared"
    shared.mkdir()
    os.mkfifo(shared / "go")
    listing = ws.policy('filesystem: {rox: ["/usr", "/bin", "/lib", "/lib64"], rw: ["{CWD}/shared"]}\n')
    armed: list[str] = []

    def swap_after(real):  # the other step's rename, at the instant after the daemon's first look at `shared`
        def look(path, *args, **kwargs):
            found = real(path, *args, **kwargs)
            if armed and os.fspath(path) == str(shared):
                armed.clear()
                os.rename(shared, ws.work / "shared.was")
                os.symlink(parked, shared)
            return found
        return look

    def places_armed(writable, resolve=writers.places):
        armed.append("once")
        try:
            return resolve(writable)
        finally:
            armed.clear()

    async def swap_back_then_hold(places, hold=writers.hold):  # before the step's process opens its rules
        if shared.is_symlink():
            shared.unlink()
            os.rename(ws.work / "shared.was", shared)
        return await hold(places)

    monkeypatch.setattr(os, "stat", swap_after(os.stat))
    monkeypatch.setattr(os, "open", swap_after(os.open))
    monkeypatch.setattr(writers, "places", places_armed)
    monkeypatch.setattr(writers, "hold", swap_back_then_hold)
    running = asyncio.ensure_future(ws.bash("cat shared/go", listing))
    opening = asyncio.ensure_future(asyncio.to_thread(open, shared / "go", "w"))  # once the step reads it
    await asyncio.wait([running, opening], return_when=asyncio.FIRST_COMPLETED)
    if not opening.done():
        os.close(os.open(shared / "go", os.O_RDONLY | os.O_NONBLOCK))
        (await opening).close()
        pytest.fail(f"the step never read its FIFO: {await running}")
    go = await opening
    try:
        assert not shared.is_symlink() and not await quiet(shared / "note")
    finally:
        go.close()
    assert (await running)[0] == 0
    assert await quiet(shared / "note")


async def test_a_writable_path_that_was_no_directory_when_locked_is_never_a_link_to_one_when_opened(
        ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    """Round 32: a user's policy lists `shared`, inside the work tree another step may write. That step makes `shared`
    a FIFO before the policy is read (no directory or file: no lock, and it was not pinned either) and, once the daemon
    has resolved it, a link to a tree outside: the step's rule followed it there, and the step read and wrote outside
    every path its policy grants."""
    monkeypatch.setenv("OLLIE_STATE_DIR", str(ws.root / "state"))
    status, _, err = await ws.bash("mkfifo shared", ws.default_policy())
    assert status == 0, err
    listing = ws.policy('filesystem: {rox: ["/usr", "/bin", "/lib", "/lib64"], rw: ["{CWD}/shared"]}\n')
    taken = writers.hold
    swapped: list[str] = []

    async def hold_then_swap(places: dict[str, str]):  # resolved; the step's process is not started yet
        release = await taken(places)
        if not swapped:
            swapped.append("once")  # the swapping step's own spawn takes its lock unhooked
            status, _, err = await ws.bash(f"ln -sfn {ws.outside} shared", ws.default_policy())
            assert status == 0 and os.readlink(ws.work / "shared") == str(ws.outside), err
        return release

    monkeypatch.setattr(writers, "hold", hold_then_swap)
    refused = ""
    try:
        await ws.bash(f"echo step > {ws.work}/shared/note", listing)
    except SandboxError as exc:
        refused = str(exc)
    assert swapped and not (ws.outside / "note").exists()  # written through the link, outside the policy
    assert f"{ws.work}/shared leads to {ws.outside}" in refused


async def test_an_editors_write_is_refused_while_a_step_may_write_past_the_wait_or_once_it_swapped_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The editor writes by the file's name, following a link: not while a step that may write it runs past the edit's
    wait, nor once such a step swapped the file for a link and ended (the path is looked at again after the wait).
    Neither refusal, removed, failed a test (the daemon's tests' steps ended early, and swapped nothing then)."""
    from ollie.tools import documents

    monkeypatch.setenv("OLLIE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(documents, "EDIT_WAIT_S", 0.2)
    ws, outside = tmp_path / "ws", tmp_path / "bashrc"
    ws.mkdir()
    (ws / "notes.txt").write_text("old\n")
    written: list[Path] = []

    async def write(target: Path) -> documents.ApplyResult:
        written.append(target)
        return documents.ApplyResult("applied")

    release = await writers.hold(writers.places([ws]))  # a step's
    refused = await documents.while_no_step_writes(ws, ws / "notes.txt", write)
    assert (refused.status, written) == ("refused", []) and "still running after 0.2 s" in refused.reason, refused
    monkeypatch.setattr(documents, "EDIT_WAIT_S", 30.0)
    waiting = asyncio.ensure_future(documents.while_no_step_writes(ws, ws / "notes.txt", write))
    await asyncio.wait([waiting], timeout=0.5)  # it looked at the path (a plain file) and waits for the step
    assert not waiting.done()
    (ws / "notes.txt").unlink()
    (ws / "notes.txt").symlink_to(outside)
    release()  # the step ends
    async with asyncio.timeout(30):
        refused = await waiting
    assert (refused.status, written) == ("refused", []) and "became a symlink" in refused.reason, refused
