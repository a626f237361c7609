"""The scripted LLM server in a process of its own, so a benchmark's readers never share its GIL.

Run by `LLMProcess` (below) as `python -m bench.llm_process FMT`; it prints its
env as one JSON line, then takes one JSON command a line on stdin and answers
each with one JSON line: `script` (replies: text, chunk_size, delay), `sent`
(delta index -> when its frame was written, perf_counter: CLOCK_MONOTONIC,
the same clock in every process), `call` (a reply calling tools) and `chat_requests`.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from typing import Any, cast

from ollie.testing import Reply, ScriptedLLMServer

_FRAME_TOKEN = re.compile(rb'"content":"(\d{5})\|')


class StampedServer(ScriptedLLMServer):
    """The scripted server, recording when each frame went out."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent: list[tuple[float, bytes]] = []

    async def _chat(self, request: Any, writer: Any) -> bool:  # noqa: D102 - wraps the real one
        return await super()._chat(request, cast(asyncio.StreamWriter, _StampingWriter(writer, self.sent)))

    def send_times(self) -> dict[int, float]:
        """Delta index -> when its frame was written."""
        out = {}
        for stamp, data in self.sent:
            match = _FRAME_TOKEN.search(data)
            if match:
                out[int(match.group(1))] = stamp
        return out


class _StampingWriter:
    def __init__(self, writer: Any, sent: list[tuple[float, bytes]]) -> None:
        self._writer = writer
        self._sent = sent

    def write(self, data: bytes) -> None:
        self._sent.append((time.perf_counter(), data))
        self._writer.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._writer, name)


class LLMProcess:
    """Client side: start the server process, script replies, read its stamps."""

    def __init__(self, fmt: str = "openai") -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "bench.llm_process", fmt], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        hello = json.loads(self._line())
        self.env: dict[str, str] = hello["env"]
        self.url: str = hello["url"]
        self.model: str = hello["model"]

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the scripted LLM process ended")
        return line

    def _ask(self, **command: Any) -> Any:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        return json.loads(self._line())

    def script(self, text: str, *, chunk_size: int = 6, delay: float = 0.0) -> None:
        """Queue one text reply streamed in `chunk_size` pieces, `delay` s apart; forget earlier stamps."""
        self._ask(op="script", text=text, chunk_size=chunk_size, delay=delay)

    def script_call(self, tool: str, args: dict[str, Any], *, calls: int = 1) -> None:
        """Queue one reply that calls `tool` with `args` (`calls` times)."""
        self._ask(op="call", tool=tool, args=args, calls=calls)

    def send_times(self) -> dict[int, float]:
        """Delta index -> when its frame was written."""
        return {int(k): v for k, v in self._ask(op="sent").items()}

    def chat_requests(self) -> int:
        """How many chat requests came so far."""
        return int(self._ask(op="chat_requests"))

    def close(self) -> None:
        """End the server process."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def __enter__(self) -> LLMProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve(fmt: str) -> None:
    """The server process: answer commands until stdin closes."""
    with StampedServer(fmt) as srv:
        print(json.dumps({"env": srv.env(), "url": srv.url, "model": srv.model}), flush=True)
        for line in sys.stdin:
            command = json.loads(line)
            op = command["op"]
            answer: Any = None
            if op == "script":
                srv.sent.clear()
                srv.script(Reply(text=command["text"], chunk_size=command["chunk_size"], delay=command["delay"]))
                answer = True
            elif op == "call":
                srv.script(Reply.tool_calls(*[(command["tool"], command["args"])] * command.get("calls", 1)))
                answer = True
            elif op == "sent":
                answer = {str(k): v for k, v in srv.send_times().items()}
            elif op == "chat_requests":
                answer = len(srv.chat_requests)
            print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    serve(sys.argv[1] if len(sys.argv) > 1 else "openai")
