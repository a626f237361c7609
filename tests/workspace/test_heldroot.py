"""The held root (red team round 26): once a session holds its cwd, every reach of the daemon into it (checkpoints and
their git, rewind, undo, images, the prompt's file, @environment, .mcp.json, an approval's preview, the editor tools'
source lines, the daemon's disk text) goes to that very directory, never where a link swapped in on its way leads."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ollie import beneath
from ollie.workspace.checkpoints import Checkpoints

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64


@dataclass
class Swapped:
    """The session's cwd `ws/sub` (held as a session holds it), `outside` (the user's ~/.ssh) with files of the same
    names, and `real`, where `sub` went when another session's step swapped it for a link to `outside`."""

    cwd: Path
    outside: Path
    real: Path

    def swap(self) -> None:
        self.cwd.rename(self.real)
        self.cwd.symlink_to(self.outside)


def _tree(root: Path, whose: str) -> None:
    root.mkdir(parents=True)
    (root / "notes.md").write_text(f"{whose} notes\n")
    (root / "shot.png").write_bytes(PNG + whose.encode())
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text(f"ref: refs/heads/{whose}-branch\n")
    (root / ".mcp.json").write_text(f'{{"mcpServers": {{"{whose}": {{"command": "true"}}}}}}')


@pytest.fixture
def swapped(tmp_path: Path) -> Iterator[Swapped]:
    ws = tmp_path / "ws"
    _tree(ws / "sub", "workspace")
    _tree(tmp_path / "home-ssh", "users")
    release = beneath.hold(ws / "sub")
    try:
        yield Swapped(ws / "sub", tmp_path / "home-ssh", ws / "sub.real")
    finally:
        release()


async def _prompt_file(cwd: Path) -> str:
    from ollie.agent.prompt import resolve_prompt
    from ollie.config import Prompt

    return await resolve_prompt(Prompt(text="notes.md"), cwd=cwd, env={})


async def _environment(cwd: Path) -> str:
    from ollie.agent.environment import facts

    return (await asyncio.to_thread(facts, cwd))[0]


async def _mcp_json(cwd: Path) -> str:
    from ollie.mcp.workspace import read_workspace_servers

    return " ".join(await asyncio.to_thread(read_workspace_servers, cwd, []))


async def _approval_preview(cwd: Path) -> str:
    from ollie.agent.previews import read_small

    return await read_small(cwd, "notes.md") or ""


async def _image(cwd: Path) -> str:
    from ollie.backend import images

    return base64.b64decode((await images.read(cwd, "shot.png")).data).decode("latin-1")


async def _daemon_disk_text(cwd: Path) -> str:
    from ollie_lsp.editor import _disk_text

    return await asyncio.to_thread(_disk_text, cwd / "notes.md", cwd) or ""


READS: dict[str, Callable[[Path], Awaitable[str]]] = {
    "prompt file": _prompt_file, "@environment": _environment, ".mcp.json": _mcp_json,
    "approval preview": _approval_preview, "image": _image, "daemon's disk text": _daemon_disk_text,
}


@pytest.mark.parametrize("reach", list(READS))
async def test_a_read_beneath_the_held_cwd_never_goes_where_a_link_swapped_in_leads(swapped: Swapped, reach: str) -> None:
    # Each opened the cwd by name again, following the link: the user's own file reached the model or the prompt.
    swapped.swap()
    got = await READS[reach](swapped.cwd)
    assert "workspace" in got
    assert "users" not in got


async def test_the_editor_tools_source_lines_never_come_from_where_a_swapped_in_link_leads(swapped: Swapped) -> None:
    from ollie.tools.editor.answers import Workspace, _Lines

    lines = _Lines(Workspace(swapped.cwd))  # made with the session, before the swap
    swapped.swap()
    assert lines.line(swapped.cwd / "notes.md", 1) == "workspace notes"


async def test_a_snapshot_never_copies_files_from_where_a_swapped_in_link_leads(swapped: Swapped) -> None:
    # git reached the work tree by its name (GIT_WORK_TREE, its cwd): the user's files went into ollie's checkpoints.
    cps = Checkpoints(swapped.cwd)
    before = await cps.snapshot()
    swapped.swap()
    (swapped.real / "notes.md").write_text("workspace notes, edited\n")
    after = await cps.snapshot()
    [change] = await cps.changes(before, after)
    assert (change.path, change.new_text) == ("notes.md", "workspace notes, edited\n")


async def _two_turns(swapped: Swapped) -> tuple[Checkpoints, str, str]:
    """A step of turn 1 wrote `authorized_keys` (the model's key) in the cwd, one of turn 2 deleted it; then the swap.
    (checkpoints, turns 1, 2)."""
    (swapped.outside / "authorized_keys").write_text("ssh-ed25519 AAAA-the-users-own-key\n")
    cps = Checkpoints(swapped.cwd)
    await cps.snapshot()
    (swapped.cwd / "authorized_keys").write_text("ssh-ed25519 AAAA-the-models-key\n")
    turn1 = await cps.snapshot()
    (swapped.cwd / "authorized_keys").unlink()
    turn2 = await cps.snapshot()
    swapped.swap()
    return cps, turn1, turn2


async def test_a_rewind_writes_the_held_cwd_never_where_a_swapped_in_link_leads(swapped: Swapped) -> None:
    # Each write of the rewind opened the cwd by name: the model's key replaced the user's.
    cps, turn1, _ = await _two_turns(swapped)
    await cps.restore(turn1)
    assert (swapped.real / "authorized_keys").read_text() == "ssh-ed25519 AAAA-the-models-key\n"
    assert (swapped.outside / "authorized_keys").read_text() == "ssh-ed25519 AAAA-the-users-own-key\n"


async def test_an_undo_writes_the_held_cwd_never_where_a_swapped_in_link_leads(swapped: Swapped) -> None:
    # The undo of turn 2's deletion wrote the model's key where the link led (no `authorized_keys` there yet).
    from ollie.workspace.review import undo

    cps, turn1, turn2 = await _two_turns(swapped)
    (swapped.outside / "authorized_keys").unlink()
    [deleted] = [c for c in await cps.changes(turn1, turn2) if c.path == "authorized_keys"]
    await undo(cps.root, "authorized_keys", None, deleted)
    assert (swapped.real / "authorized_keys").read_text() == "ssh-ed25519 AAAA-the-models-key\n"
    assert not (swapped.outside / "authorized_keys").exists()


def test_a_root_is_held_only_where_it_is_the_real_path_it_was_checked_as(tmp_path: Path) -> None:
    # A link swapped in between the walk to the real path and the hold: held, it would be the session's root.
    (tmp_path / "outside").mkdir()
    (tmp_path / "sub").symlink_to(tmp_path / "outside")
    with pytest.raises(beneath.OutsideRoot, match="now leads to"):
        beneath.hold(tmp_path / "sub")


def test_a_session_held_at_home_still_reaches_the_users_own_linked_dirs(tmp_path: Path, monkeypatch) -> None:
    """A session opened at $HOME holds it; ollie's dirs beneath it, reached through the user's own links (a dotfiles
    `~/.local`), are still written (a walk from the held fd refused the link: sessions were not saved)."""
    home = tmp_path / "home"
    dotfiles = tmp_path / "dotfiles" / "local"
    (dotfiles / "share").mkdir(parents=True)
    home.mkdir()
    (home / ".local").symlink_to(dotfiles)
    monkeypatch.setenv("HOME", str(home))
    for held in (home, tmp_path):  # a session at $HOME, and one at a dir holding it (/home, /)
        release = beneath.hold(held)
        try:
            beneath.write_bytes_sync(home / ".local" / "share", "s.jsonl", str(held).encode())
            assert (dotfiles / "share" / "s.jsonl").read_bytes() == str(held).encode()
        finally:
            release()
