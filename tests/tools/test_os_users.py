"""Two OS users on one machine, and a normal user's unreadable paths: real users (setpriv), real sandboxed steps."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.asuser import os_user, run_as

ALICE, BOB = "ollie-test-alice", "ollie-test-bob"

# One execute_code step (or a call_tool batch) as the calling user; prints the result's text as JSON.
STEP = """
import asyncio, json, os
from pathlib import Path
from ollie.tools.execute.server import ExecuteServer

async def main():
    server = ExecuteServer(cwd=Path(os.environ["WORK"]), session_id="1700000000000000000-users1")
    calls = os.environ.get("CALLS")  # a call_tool batch (JSON), else CODE as one bash step
    result = await (server.call("call_tool", {"calls": json.loads(calls)}) if calls
                    else server.call("execute_code", {"steps": [{"code": os.environ["CODE"]}]}))
    print(json.dumps(result.text))

asyncio.run(main())
"""

# As the calling user: a checkpoint of WORK, a step's change of vendor/mine.py (in place, as file_edit writes there),
# its undo, the change again and a rewind to the checkpoint; prints the file after each.
REVIEW = """
import asyncio, os
from pathlib import Path
from ollie.workspace import review
from ollie.workspace.checkpoints import Checkpoints

async def main():
    work = Path(os.environ["WORK"])
    mine = work / "vendor" / "mine.py"
    points = Checkpoints(work)
    before = await points.snapshot()
    mine.write_text("x = 2\\n")
    change, = await points.changes(before, await points.snapshot())
    await review.undo(work, "vendor/mine.py", None, change)
    print("undone:", mine.read_text().strip())
    mine.write_text("x = 2\\n")
    await points.snapshot()
    await points.restore(before)
    print("rewound:", mine.read_text().strip())

asyncio.run(main())
"""


@pytest.fixture
def shared() -> Iterator[Path]:
    """A /tmp-like dir (1777) both users reach (pytest's tmp_path is root's, 0700)."""
    path = Path(tempfile.mkdtemp(prefix="ollie-users-", dir="/tmp"))
    os.chmod(path, 0o1777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def home_of(name: str, shared: Path) -> Path:
    """A home dir of `name`'s own under `shared`, with its XDG dirs and a workspace."""
    user = os_user(name)
    home = shared / f"home-{name}"
    for sub in ("", "config", "data", "state", "work"):
        (home / sub).mkdir(exist_ok=True)
        os.chown(home / sub, user.pw_uid, user.pw_gid)
    return home


def env_of(name: str, shared: Path) -> dict[str, str]:
    """`name`'s environment: her home's XDG dirs, TMPDIR=`shared`, WORK her workspace."""
    home = home_of(name, shared)
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "TMPDIR": str(shared),
            "WORK": str(home / "work"), "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_DATA_HOME": str(home / "data"), "XDG_STATE_HOME": str(home / "state"), "LANG": "C.UTF-8"}


def step_as(name: str, shared: Path, code: str, **env: str) -> str:
    """Run `code` as one execute_code step of `name`'s, with TMPDIR=`shared`; the result's text."""
    base = {**env_of(name, shared), "CODE": code}
    return json.loads(run_as(name, STEP, env={**base, **env}, cwd=Path(base["WORK"])).strip().splitlines()[-1])


def test_a_second_os_user_runs_tool_steps_beside_the_first(shared):
    alice, bob = os_user(ALICE), os_user(BOB)
    assert "[step 1 bash] exit 0" in (first := step_as(ALICE, shared, "echo hello from $(id -u)")), first
    assert f"hello from {alice.pw_uid}" in first
    # The first user's runtime dir is theirs and private; the second gets their own (a shared
    # $TMPDIR/ollie, made 0700 by the first, failed the second's first tool call).
    mine = shared / f"ollie-{alice.pw_uid}"
    assert mine.stat().st_uid == alice.pw_uid and mine.stat().st_mode & 0o777 == 0o700
    second = step_as(BOB, shared, "echo hello from $(id -u)")
    assert f"hello from {bob.pw_uid}" in second, second
    assert (shared / f"ollie-{bob.pw_uid}").stat().st_uid == bob.pw_uid


def plant_runtime_dir(shared, planted: str):
    """Alice plants Bob's runtime dir before his first step: a dir of hers, or a symlink to one: (its path, her dir)."""
    target = shared / f"ollie-{os_user(BOB).pw_uid}"
    decoy = home_of(ALICE, shared) / "decoy"
    run_as(ALICE, f"import os; os.mkdir({str(decoy)!r}, 0o777); os.chmod({str(decoy)!r}, 0o777)\n"
           + (f"os.mkdir({str(target)!r}, 0o777); os.chmod({str(target)!r}, 0o777)" if planted == "dir"
              else f"os.symlink({str(decoy)!r}, {str(target)!r})"),
           env={"PATH": "/usr/bin:/bin"}, cwd=shared)
    return target, decoy


@pytest.mark.parametrize("planted", ["dir", "symlink"])
def test_a_runtime_dir_planted_by_another_user_is_refused(shared, planted):
    target, decoy = plant_runtime_dir(shared, planted)
    text = step_as(BOB, shared, "echo ran")
    assert "ran" not in text.replace("[step 1 bash]", ""), text
    assert str(target) in text and ("belongs to uid" in text or "not a directory" in text), text
    assert os.listdir(decoy) == [], "Bob's session files went into Alice's dir"
    assert os_user(ALICE).pw_uid != os_user(BOB).pw_uid


def her_file_in_roots_dir(shared: Path) -> Path:
    """Her workspace's `vendor` dir, root's (0755), holding her own `mine.py` (`x = 1`)."""
    user = os_user(ALICE)
    vendor = home_of(ALICE, shared) / "work" / "vendor"
    vendor.mkdir()
    (vendor / "mine.py").write_text("x = 1\n")
    os.chown(vendor / "mine.py", user.pw_uid, user.pw_gid)
    return vendor


def test_her_file_in_a_dir_she_may_not_write_is_edited_in_place(shared):
    # Root's dir holding her file: no temporary file can be made beside it to rename over it (the edit was refused as
    # "permission denied"); it is written in place, as her editor would. A new file there is refused.
    user, vendor = os_user(ALICE), her_file_in_roots_dir(shared)
    edit = [{"tool": "file_edit", "args": ["vendor/mine.py", "x = 1", "x = 2"]}]
    text = step_as(ALICE, shared, "", CALLS=json.dumps(edit))
    assert "[call 1 file_edit] exit 0" in text, text
    assert (vendor / "mine.py").read_text() == "x = 2\n" and (vendor / "mine.py").stat().st_uid == user.pw_uid
    write = [{"tool": "file_write", "args": ["vendor/new.py", "y = 1\n"]}]
    text = step_as(ALICE, shared, "", CALLS=json.dumps(write))
    said = "file_write: vendor/new.py: its directory is read-only (no write permission), not created"
    assert said in text and not (vendor / "new.py").exists(), text


def test_her_file_in_a_dir_she_may_not_write_is_undone_and_rewound(shared):
    # The daemon's undo and rewind write beneath the workspace by a rename too: they failed there.
    user, vendor = os_user(ALICE), her_file_in_roots_dir(shared)
    said = run_as(ALICE, REVIEW, env=env_of(ALICE, shared), cwd=vendor.parent)
    assert "undone: x = 1" in said and "rewound: x = 1" in said, said
    assert (vendor / "mine.py").stat().st_uid == user.pw_uid


def test_a_fifo_or_a_link_in_a_dir_she_may_not_write_is_never_written_in_place(shared):
    # No temporary file can go beside them, so the write opens the name itself: never through a link (the repository's
    # own, to her ~/.bashrc, say), never into a FIFO (a reader lets it open for writing; the truncate's EINVAL alone
    # kept the bytes out). Neither the O_NOFOLLOW nor the regular-file check, removed, failed a test; nor O_NONBLOCK,
    # without which a FIFO nobody reads held the write (an undo, the daemon's thread) for good.
    user, vendor = os_user(ALICE), her_file_in_roots_dir(shared)
    outside = home_of(ALICE, shared) / "bashrc"
    outside.write_text("hers\n")
    os.mkfifo(vendor / "pipe")
    os.mkfifo(vendor / "unread")
    (vendor / "link").symlink_to(outside)
    for path in (outside, vendor / "pipe", vendor / "unread"):
        os.chown(path, user.pw_uid, user.pw_gid)
    code = ("import os\nfrom ollie import beneath\nreader = os.open('vendor/pipe', os.O_RDONLY | os.O_NONBLOCK)\n"
            "for name in ('pipe', 'link', 'unread'):\n    try:\n"
            "        beneath.write_bytes_sync('.', f'vendor/{name}', b'planted')\n"
            "    except PermissionError:\n        print(name, 'refused')\nprint(os.read(reader, 64))\n")
    said = run_as(ALICE, code, env=env_of(ALICE, shared), cwd=vendor.parent, timeout=60)
    assert said == "pipe refused\nlink refused\nunread refused\nb''\n" and outside.read_text() == "hers\n", said


def test_an_unreadable_path_entry_is_skipped(shared):
    # /root is 0700: as a normal user, every lookup under /root/bin fails with EACCES (it failed the turn).
    text = step_as(ALICE, shared, "echo still runs", PATH="/root/bin:/root/.venv/bin:/usr/local/bin:/usr/bin:/bin")
    assert "[step 1 bash] exit 0" in text and "still runs" in text, text


@pytest.mark.parametrize("what", ["file", "dir"])
def test_an_unreadable_sandbox_yaml_fails_closed_naming_it(shared, what):
    user = os_user(ALICE)
    config = home_of(ALICE, shared) / "config" / "ollie"
    config.mkdir(exist_ok=True)
    policy = config / "sandbox.yaml"
    policy.write_text("filesystem: {rox: ['/usr', '/bin', '/lib', '/lib64'], rwx: ['{CWD}']}\n")
    for path in (config, policy):
        os.chown(path, user.pw_uid, user.pw_gid)
    os.chmod(policy if what == "file" else config, 0)
    text = step_as(ALICE, shared, "echo ran")
    # Neither run under the bundled default nor a crash: the step is refused and the file named.
    assert "ran" not in text.replace("[step 1 bash]", "") and str(policy) in text, text


def test_a_normal_users_own_files_outside_the_writable_paths_are_read_only(shared):
    from tests.sandbox.test_readonly_view import EXPECTED, PROBE

    user = os_user(ALICE)
    home = home_of(ALICE, shared)
    outside, inside = home / "notes.txt", home / "work" / "mine.txt"
    for path in (outside, inside, home / "work" / "probe.py"):
        path.write_text(PROBE if path.name == "probe.py" else "hers\n")
        os.chown(path, user.pw_uid, user.pw_gid)  # hers: as their owner she may change them, but for the sandbox
    text = step_as(ALICE, shared, f"python3 probe.py {outside} {inside}")
    assert "[step 1 bash] exit 0" in text, text
    if "setxattr inside ok" not in text:
        pytest.skip("this filesystem has no user xattrs")
    assert {line for line in text.splitlines()[1:] if line} == EXPECTED, text


def test_a_normal_users_step_is_held_to_its_memory_limit_without_a_cgroup(shared):
    # A normal user may write no cgroup here: each process gets RLIMIT_AS, and the result says why it failed.
    user = os_user(ALICE)
    config = home_of(ALICE, shared) / "config" / "ollie"
    config.mkdir(exist_ok=True)
    os.chown(config, user.pw_uid, user.pw_gid)
    (config / "sandbox.yaml").write_text(
        (Path(__file__).parents[2] / "sandbox.yaml").read_text().replace("  memory: 50%", "  memory: 256M"))
    text = step_as(ALICE, shared, "python3 -c 'x = bytearray(512 << 20); print(\"allocated\")'; "
                                  "python3 -c 'x = bytearray(16 << 20); print(\"small fits\")'")
    assert "MemoryError" in text and "allocated" not in text and "small fits" in text, text
    assert "the step reached its memory limit (limits.memory: 256 MiB" in text, text


def test_a_planted_runtime_dir_is_never_swept(shared):
    alice, bob = os_user(ALICE), os_user(BOB)
    decoy = home_of(ALICE, shared) / "decoy"
    old = decoy / "1600000000000000000-old"
    run_as(ALICE, f"import os; os.makedirs({str(old)!r}); os.chmod({str(decoy)!r}, 0o777); "
           f"os.chmod({str(old)!r}, 0o777); os.utime({str(old)!r}, (0, 0)); "
           f"os.symlink({str(decoy)!r}, {str(shared / f'ollie-{bob.pw_uid}')!r})", env={"PATH": "/usr/bin:/bin"},
           cwd=shared)
    # A session starting sweeps the dirs of crashed sessions: through the planted symlink, Alice's files.
    swept = run_as(BOB, "from ollie.tools.execute.sessiondirs import sweep_stale; print(sweep_stale())",
                   env={"PATH": "/usr/bin:/bin", "TMPDIR": str(shared), "HOME": str(shared)}, cwd=shared)
    assert swept.strip() == "[]" and old.is_dir(), swept
    assert alice.pw_uid != bob.pw_uid


# As the calling user: her configured MCP server starts (its sandbox's network goes through the egress proxy).
MCP_START = """
import asyncio, os
from pathlib import Path
from ollie.mcp.config import ServerSpec
from ollie.mcp.stdio import spawn_server

async def main():
    spec = ServerSpec(name="notes", command="python3", args=("-c", "import sys; sys.stdin.read()"))
    try:
        proc = await spawn_server(spec, cwd=Path(os.environ["WORK"]), environ=os.environ, network_from="default")
    except Exception as error:
        print("refused:", error)
        return
    from ollie.sandbox import egress
    print("started, the proxy at", os.path.realpath(egress.proxy().path))
    proc.kill_group()

asyncio.run(main())
"""


@pytest.mark.parametrize("planted", ["dir", "symlink"])
def test_a_runtime_dir_planted_by_another_user_never_holds_the_egress_proxy_s_socket(shared, planted):
    """Before Bob's first step, Alice plants his runtime dir; his MCP server starts first, through the egress proxy.
    (Bug: the proxy made its socket's dir in hers, which she may rename, so she could put her own socket at its path:
    the listeners of his sandboxes' network namespaces came to her, and with them every connection they made.)"""
    target, decoy = plant_runtime_dir(shared, planted)
    said = run_as(BOB, MCP_START, env=env_of(BOB, shared), cwd=home_of(BOB, shared) / "work")
    assert "refused:" in said and str(target) in said, said
    assert os.listdir(decoy) == [] and os.listdir(target) == []
    assert os_user(ALICE).pw_uid != os_user(BOB).pw_uid
