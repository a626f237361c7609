"""The wheel carries the defaults (agents, tools, sandbox policies) and ollie finds them there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Run from the unpacked wheel (first on sys.path, ahead of the editable install): where the
# defaults are found, and a bundled tool script really runs from there under the sandbox.
PROBE = """
import asyncio, json, pathlib, sys
import ollie, ollie.paths as paths
from ollie.tools.execute.server import ExecuteServer

async def main():
    work = pathlib.Path(sys.argv[1])
    (work / "a.txt").write_text("from the wheel\\n")
    server = ExecuteServer(cwd=work, session_id="wheel-probe")
    result = await server.call("call_tool", {"calls": [{"tool": "file_read", "args": ["a.txt"]}]})
    print(json.dumps({"package": ollie.__file__, "agents": str(paths.bundled("agents")),
                      "tools": str(paths.bundled("tools")), "sandbox": str(paths.sandbox_file()),
                      "result": result.text, "error": result.is_error}))

asyncio.run(main())
"""


def test_the_wheel_ships_the_defaults_and_they_are_found(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist),
                    str(ROOT)], check=True, capture_output=True)
    wheel = next(dist.glob("ollie_agent-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        modes = {info.filename: info.external_attr >> 16 for info in zf.infolist()}
    for required in ("ollie/_data/agents/default.json", "ollie/_data/agents/yolo.json", "ollie/_data/sandbox.yaml",
                     "ollie/_data/sandboxes/readonly.yaml", "ollie/_data/tools/file_read", "ollie_lsp/server.py"):
        assert required in names, required
    assert modes["ollie/_data/tools/file_read"] & 0o111, "tool scripts keep their execute bits"

    unpacked = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(unpacked)
    for name, mode in modes.items():
        if mode:
            (unpacked / name).chmod(mode & 0o777)
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(unpacked), "TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", PROBE, str(work)], capture_output=True, text=True, env=env,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["package"].startswith(str(unpacked))
    for key in ("agents", "tools", "sandbox"):
        assert found[key].startswith(str(unpacked / "ollie" / "_data")), found
    assert not found["error"] and "from the wheel" in found["result"], found["result"]
