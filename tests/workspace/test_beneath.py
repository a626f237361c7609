"""The chokepoint (ollie.beneath) and the helper resolution (ollie.programs), each refusal on its own.

Run as root here; the last test runs the same checks as a normal user (setpriv), where file
permissions add nothing that would hide a missing check.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ollie import beneath, programs, regularfile


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A root with a file, a subdir, a symlinked dir and file out of it, a link to the subdir, a FIFO and a /dev/zero
    link."""
    return _make_tree(tmp_path)


def _make_tree(base: Path) -> Path:
    root, out = base / "root", base / "out"
    (root / "d").mkdir(parents=True)
    out.mkdir()
    (out / "secret").write_text("secret\n")
    (root / "d" / "f").write_text("hi\n")
    (root / "ln").symlink_to(out)
    (root / "lf").symlink_to(out / "secret")
    (root / "zero").symlink_to("/dev/zero")
    (root / "in").symlink_to("d")  # a link that stays inside is not followed either
    os.mkfifo(root / "fifo")
    return root


@pytest.mark.parametrize("walk", [False, True], ids=["openat2", "O_NOFOLLOW walk"])
def test_reads_refuse_everything_but_regular_files_beneath_the_root(tree: Path, walk: bool,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    if walk:
        monkeypatch.setattr(beneath, "_openat2_ok", False)
    assert beneath.read_bytes_sync(tree, "d/f") == b"hi\n"
    assert beneath.read_bytes_sync(tree, tree / "d" / "f") == b"hi\n"
    assert beneath.read_bytes_sync(tree, "d/./x/../f") == b"hi\n"
    for path in ("ln/secret", "lf", "zero", "in/f", "in", "../out/secret", str(tree.parent / "out" / "secret")):
        with pytest.raises(beneath.OutsideRoot):
            beneath.read_bytes_sync(tree, path)
    for path in ("fifo", "d"):
        with pytest.raises(beneath.NotRegular):
            beneath.read_bytes_sync(tree, path)
    with pytest.raises(FileNotFoundError):
        beneath.read_bytes_sync(tree, "nope")


def test_a_device_node_is_refused_without_reading(tree: Path) -> None:
    os.mknod(tree / "dev", 0o600 | 0o020000, os.makedev(1, 5))  # /dev/zero's numbers (root can)
    with pytest.raises(beneath.NotRegular):
        beneath.read_bytes_sync(tree, "dev")


def test_the_cap_is_a_clear_result_not_a_read(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tree / "big").write_bytes(b"x" * 5000)
    with pytest.raises(beneath.TooLarge, match=r"larger than 4,096 bytes \(5,000\)"):  # its size, known unread
        beneath.read_bytes_sync(tree, "big", 4096)
    # A file whose size says 0 and that reads on (procfs): the cap holds while it is read, too.
    with pytest.raises(beneath.TooLarge):
        regularfile.read_file_sync("/proc/self/maps", 100)
    assert len(regularfile.read_file_sync("/proc/self/maps", 100, head=True)) == 100
    monkeypatch.setenv(beneath.CAP_ENV, "100")
    with pytest.raises(beneath.TooLarge):
        beneath.read_bytes_sync(tree, "big")


def test_writes_and_removals_never_go_through_a_symlink(tree: Path) -> None:
    inode = beneath.write_bytes_sync(tree, "new/dir/x", b"x", 0o640)
    assert (tree / "new" / "dir" / "x").read_bytes() == b"x" and (tree / "new" / "dir" / "x").stat().st_mode & 0o777 == 0o640
    # The inode it wrote, for a session log to know its file by without a stat of the path.
    assert inode == (tree / "new" / "dir" / "x").stat().st_ino != beneath.write_bytes_sync(tree, "new/dir/x", b"y")
    with pytest.raises(beneath.OutsideRoot):
        beneath.write_bytes_sync(tree, "ln/secret", b"pwned")
    with pytest.raises(beneath.OutsideRoot):
        beneath.write_bytes_sync(tree, "ln/sub/new", b"pwned")
    beneath.write_bytes_sync(tree, "lf", b"replaced")  # the link itself is replaced, not its target
    assert not (tree / "lf").is_symlink() and (tree.parent / "out" / "secret").read_text() == "secret\n"
    assert beneath.remove_sync(tree, "zero") and Path("/dev/zero").exists()
    with pytest.raises(beneath.OutsideRoot):
        beneath.remove_sync(tree, "ln/secret")
    assert sorted(os.listdir(tree.parent / "out")) == ["secret"]


def test_kinds_and_walks_do_not_follow_links(tree: Path) -> None:
    assert [beneath.kind_sync(tree, p) for p in ("d/f", "d", "ln", "fifo", "nope")] == \
        ["file", "dir", "symlink", "other", None]
    walked = {d for d, _, _, _ in beneath.walk_sync(tree)}
    assert walked == {".", "./d"}


def test_relative_is_lexical_and_refuses_escapes(tree: Path) -> None:
    assert beneath.relative(tree, "a/../b") == "b"
    assert beneath.relative(tree, str(tree)) == "."
    for bad in ("..", "../x", "/etc/passwd", "a\0b", ""):
        with pytest.raises(beneath.OutsideRoot):
            beneath.relative(tree, bad)


def test_helpers_are_never_found_where_tool_code_or_the_workspace_writes(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    names = ("proj/.venv/bin", "proj/node_modules/.bin", "env/bin", "conda/bin", "wide", "proj/bin")
    for entry in names:
        (home / entry).mkdir(parents=True)
        (home / entry / "git").write_text("#!/bin/sh\n")
        (home / entry / "git").chmod(0o755)
    (home / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (home / "conda" / "conda-meta").mkdir()
    (home / "wide").chmod(0o777)
    entries = [str(home / e) for e in names]
    monkeypatch.setenv("PATH", os.pathsep.join([*entries, ".", "", "bin", "/tmp", "/usr/bin", "/bin"]))
    monkeypatch.setenv("HOME", str(home))
    programs._trusted_entries.cache_clear()
    programs._found.clear()
    # Each entry's own reason: under /tmp here, that alone keeps them all out of trusted_path().
    assert [programs._refused(e, [], home) for e in entries] == [
        "a project's environment", "a project's environment", "a Python environment", "a Python environment",
        "world-writable", None]
    try:
        assert programs.trusted_path() == "/usr/bin:/bin"
        assert programs.program("git") == os.path.realpath(shutil.which("git", path="/usr/bin:/bin") or "")
        with pytest.raises(programs.ProgramNotFound, match="sandboxed code may write"):
            programs.program("git", workspace="/usr")
        # A project's own `bin` (direnv puts it on PATH) is its workspace's: never on the PATH of an MCP server or a
        # prompt command there (judged as if not under /tmp, which alone refuses it here).
        monkeypatch.setattr(programs, "_writable_roots", lambda: [])
        assert programs.trusted(f"{home / 'proj' / 'bin'}:/usr/bin", home / "proj") == "/usr/bin"
    finally:
        programs._trusted_entries.cache_clear()
        programs._found.clear()


def test_a_fifo_interpreter_is_never_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "python3")
    assert not programs.starts_with(str(tmp_path / "python3"), b"#!")


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to become another user")
def test_the_same_refusals_hold_for_a_normal_user() -> None:
    # Not beneath pytest's tmp root: a worker starting meanwhile makes it 0700 again (the user read PermissionError).
    base = Path(tempfile.mkdtemp(prefix="ollie-beneath-"))
    try:
        os.chmod(base, 0o755)
        _refused_for_a_normal_user(_make_tree(base))
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _refused_for_a_normal_user(tree: Path) -> None:
    code = ("import sys\nfrom ollie import beneath\nr = sys.argv[1]\nfor p in ('ln/secret', 'lf', 'zero', 'fifo'):\n"
            "    try:\n        beneath.read_bytes_sync(r, p)\n        print('READ', p)\n"
            "    except OSError as e:\n        print(type(e).__name__, p)\n")
    done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", code,
                           str(tree)], capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": os.pathsep.join(sys.path), "PATH": "/usr/bin:/bin"})
    assert done.stdout.split("\n")[:4] == ["OutsideRoot ln/secret", "OutsideRoot lf", "OutsideRoot zero",
                                           "NotRegular fifo"], done.stdout + done.stderr
