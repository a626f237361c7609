"""`ollie demo` runs this (`python -m ollie_lsp.demo`): the real daemon, an LSP client, the scripted model."""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from ollie.cli.render import Renderer
from ollie_lsp.server import raw_params_converter

SAMPLE_NAME = "hello.py"
SAMPLE = '''"""A sample file for the ollie demo."""


def greet(name: str) -> str:
    """Say hello."""
    return f"Hello, {name}!"


if __name__ == "__main__":
    print(greet("world"))
'''
PROMPT = f"What does {SAMPLE_NAME} do?"
ANSWER = (
    f"{SAMPLE_NAME} defines `greet(name)`, which returns a greeting, and when run as a script "
    "it prints \"Hello, world!\"."
)
LABEL = "scripted model (no real LLM)"
TIMEOUT_S = 60.0


def demo_script() -> list[Any]:
    """The scripted model's two replies: read the sample file through call_tool, then answer."""
    from ollie.testing import Reply

    return [
        Reply(text="Let me read the file.",
              tool_calls=[("call_tool", {"calls": [{"tool": "file_read", "args": [SAMPLE_NAME]}]})]),
        Reply.text(ANSWER),
    ]


def demo_env(home: Path, llm_env: dict[str, str]) -> dict[str, str]:
    """The daemon's environment: private XDG dirs under `home`, the scripted model's OLLIE_* variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OLLIE_")}
    for var, sub in (("XDG_CONFIG_HOME", "config"), ("XDG_DATA_HOME", "data"), ("XDG_STATE_HOME", "state"),
                     ("XDG_CACHE_HOME", "cache")):
        (home / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(home / sub)
    env.update(llm_env)
    return env


async def _drain(stream: asyncio.StreamReader | None, sink: list[bytes]) -> None:
    if stream is None:
        return
    while chunk := await stream.read(65536):
        sink.append(chunk)


async def run_demo(*, out: TextIO | None = None, timeout_s: float = TIMEOUT_S) -> int:
    """Run the demo; 0 when the whole round trip worked."""
    from ollie.testing import ScriptedLLMServer

    sink: TextIO = out if out is not None else sys.stdout
    renderer = Renderer(sink, sink, color=False)
    srv = ScriptedLLMServer("openai").start()
    srv.script(*demo_script())
    try:
        with tempfile.TemporaryDirectory(prefix="ollie-demo-") as tmp:
            root = Path(tmp)
            workspace = root / "workspace"
            workspace.mkdir()
            (workspace / SAMPLE_NAME).write_text(SAMPLE, encoding="utf-8")
            env = demo_env(root / "home", srv.env())
            return await asyncio.wait_for(_session(workspace, env, renderer, sink), timeout_s)
    except TimeoutError:
        print(f"demo: FAILED — no answer within {timeout_s:g} s", file=sink)
        return 1
    finally:
        srv.stop()


async def _session(workspace: Path, env: dict[str, str], renderer: Renderer, out: TextIO) -> int:
    client = LanguageClient("ollie-demo", "1", converter_factory=raw_params_converter)
    events: list[dict[str, Any]] = []
    states: list[str] = []

    @client.feature("ollie/event")
    def on_event(params: dict[str, Any]) -> None:
        events.append(params)
        if params["role"] == "turn" and params["content"] == "start":
            print(f"{LABEL}:", file=out)
        elif params["role"] != "turn":
            steps = params.get("steps") or ([params["tool"]] if params.get("tool") else [])
            renderer.render(params["role"], params["content"], params.get("name", ""),
                            titles=[s.get("title", "") for s in steps],
                            failed=(params.get("tool") or {}).get("status") == "failed")

    @client.feature("ollie/stateChanged")
    def on_state(params: dict[str, Any]) -> None:
        states.append(params["state"])

    print(f"== ollie demo: {LABEL} ==", file=out)
    print(f"daemon: {sys.executable} -m ollie_lsp, workspace {workspace}", file=out)
    await client.start_io(sys.executable, "-m", "ollie_lsp", env=env, cwd=str(workspace))
    stderr: list[bytes] = []
    # pygls' client keeps the process it started only as the private `_server`: its stderr must be drained.
    drain = asyncio.create_task(_drain(client._server.stderr if client._server else None, stderr))
    try:
        result = await client.initialize_async(
            types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=workspace.as_uri(),
                                   workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="demo")])
        )
        client.initialized(types.InitializedParams())
        ollie = (result.capabilities.experimental or {})["ollie"]
        print(f"daemon ready: ollie protocol v{ollie['version']}, {len(ollie['methods'])} methods", file=out)
        print(f"\nyou> {PROMPT}\n", file=out)
        reply = await client.protocol.send_request_async("ollie/submit", {"text": PROMPT})
        renderer.end_line()
        ok = _check(reply, events)
        print(f"\nturn ended: stop={reply['stop']}", file=out)
        await client.shutdown_async(None)
        client.exit(None)
    finally:
        await client.stop()
        drain.cancel()
    if ok:
        print(f"demo: OK — daemon, LSP client, sandboxed tool and {LABEL} all worked", file=out)
        return 0
    print(f"demo: FAILED — {reply}", file=out)
    if stderr:
        print(b"".join(stderr).decode(errors="replace")[-4000:], file=out)
    return 1


def _check(reply: dict[str, Any], events: list[dict[str, Any]]) -> bool:
    roles = [e["role"] for e in events]
    tool_ok = any(e["role"] == "tool" and "greet" in e["content"] for e in events)
    return reply.get("stop") == "end" and reply.get("reply", "").strip() == ANSWER and "call" in roles and tool_ok


def main() -> int:
    """Entry point of `python -m ollie_lsp.demo`, which `ollie demo` runs."""
    return asyncio.run(run_demo())


if __name__ == "__main__":
    sys.exit(main())
