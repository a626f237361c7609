"""Shared test set-up: every test gets private XDG/OLLIE dirs so nothing touches the user's files."""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.netserver import Listener

# pytest keeps each test module's assert-rewritten code in __pycache__ only when bytecode may be written: under
# PYTHONDONTWRITEBYTECODE=1 (this machine's shells) every xdist worker rewrote and compiled all ~390 modules it collects
# at every run, ~8 s of CPU each. This process only (the daemons and steps it starts keep the environment's setting).
sys.dont_write_bytecode = False

# The `scripted_llm` fixture: a real HTTP server speaking the vendors' wire formats.
pytest_plugins = ["ollie.testing.pytest_plugin"] + ["tests.cpuprofile"] * bool(os.environ.get("OLLIE_TEST_CPU"))

def in_real_vscode(nodeid: str) -> bool:
    """Whether a test runs the real VS Code (tests/editors: its files' names, or the test's, say so)."""
    file, _, name = nodeid.partition("::")
    return "vscode" in Path(file).name or name.startswith("test_vscode")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The real VS Code's tests first, then files holding a `slow` test, then the others by their number of tests, most
    first (see scripts/test); a test of `shared_daemon`s (tests/lsp/conftest.py) runs in its module's event loop, where
    their client lives."""
    for item in items:
        if "shared_daemon" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.asyncio(loop_scope="module"), append=False)
    # xdist hands whole files to its workers in this order: a slow file last (a real editor: minutes) kept one worker
    # busy long after the others had run out of files. Python's sort is stable: ties keep collection order.
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)

    def rank(tests: list[pytest.Item]) -> tuple[bool, bool, int]:
        return (not any(in_real_vscode(test.nodeid) for test in tests),
                not any(test.get_closest_marker("slow") for test in tests), -len(tests))

    items[:] = [item for tests in sorted(files.values(), key=rank) for item in tests]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """Under `--dist loadfile`: each file on one worker, and the real VS Code tests in two lanes, each on one worker,
    one window at a time."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FilesAndTwoVSCodeLanes(LoadFileScheduling):
        # A window is ~20 s of CPU but mostly waits on its page, daemon and model: one lane of ~1,000 s of windows was
        # the suite's critical path. Two lanes run two at once (three at once on a 2-core machine pushed page loads
        # past the harness's waits); the tests are dealt to them as a snake draft (lanes 0, 1, 1, 0, 0, 1, ...), so
        # each gets its share of a file's long ones. (xdist's `loadgroup` would do this from marks, but its group
        # names never reach the scheduler under pytest 9.)
        def __init__(self, config: pytest.Config, log=None) -> None:
            super().__init__(config, log)
            self.lanes: dict[str, int] = {}

        def _split_scope(self, nodeid: str) -> str:
            if not in_real_vscode(nodeid):
                return super()._split_scope(nodeid)
            if not self.lanes:
                windows = [test for test in self.collection or () if in_real_vscode(test)]
                self.lanes = {test: (0, 1, 1, 0)[n % 4] for n, test in enumerate(windows)}
            return f"real VS Code {self.lanes[nodeid]}"

        def remove_node(self, node) -> str | None:
            # A worker died (kill -9, out of memory) in its first unfinished test. xdist put back every file the worker
            # had ever been given, finished ones too: one handed out again ran nothing, so no report came to ask for
            # more work and the run hung. Only what never ran goes back; the test it died in is reported, not rerun.
            pending = [(scope, test) for scope, unit in self.assigned_work.pop(node).items()
                       for test, done in unit.items() if not done]
            for scope, test in pending[1:]:
                self.workqueue.setdefault(scope, {})[test] = False
            for other in self.assigned_work.keys() & self.registered_collections.keys():  # a replacement collects
                self._reschedule(other)
            return pending[0][1] if pending else None

    return FilesAndTwoVSCodeLanes(config, log)


@pytest.fixture(autouse=True)
def _private_dirs(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    for var, sub in (
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_DATA_HOME", "data"),
        ("XDG_STATE_HOME", "state"),
        ("XDG_CACHE_HOME", "cache"),
    ):
        (home / sub).mkdir()
        monkeypatch.setenv(var, str(home / sub))
    for var in ("OLLIE_CONFIG_DIR", "OLLIE_DATA_DIR", "OLLIE_STATE_DIR", "XDG_RUNTIME_DIR",
                "OLLIE_SESSIONS_DIR", "OLLIE_AGENTS_DIR", "OLLIE_TOOLS_PATH", "OLLIE_BACKEND",
                "OLLIE_MODEL", "OLLIE_OPENAI_KEY", "OLLIE_ANTHROPIC_KEY",
                "OLLIE_STORE", "OLLIE_USER", "OLLIE_TEAMS", "OLLIE_LEASE_TTL"):
        monkeypatch.delenv(var, raising=False)
    # In-process Cores run unattended: steps run without approval questions (tests of approval set their own).
    monkeypatch.setenv("OLLIE_APPROVAL", "auto")
    yield home


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """The project dir sessions run in (`tmp_path/work`)."""
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def ssh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's home (`tmp_path/home`, HOME) with an ssh key in it: the secret a hostile step or server reaches for."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def agents_dir(tmp_path: Path) -> Path:
    """A dir with a `default` agent whose prompt is literal text (the bundled agents' prompts run commands)."""
    path = tmp_path / "agents"
    path.mkdir()
    (path / "default.json").write_text(json.dumps({"prompt": "You are the default test agent.\nBe brief."}))
    return path


@pytest.fixture
def listener() -> Iterator[Listener]:
    """A started stand-in for a remote host on the loopback (tests/netserver.py), closed after the test."""
    server = Listener()
    server.start()
    yield server
    server.sock.close()


@pytest.fixture
def listeners() -> Iterator[tuple[int, int]]:
    """The ports of two TCP listeners on 127.0.0.1 (a policy's allowed port and another), closed after the test."""
    socks = [socket.create_server(("127.0.0.1", 0)) for _ in range(2)]
    yield socks[0].getsockname()[1], socks[1].getsockname()[1]
    for sock in socks:
        sock.close()
