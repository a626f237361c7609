"""Load: 20 sessions running turns with tool calls at once through one daemon; every event stream stays its own."""

from __future__ import annotations

import asyncio
import collections
import re
from typing import Any

from ollie.testing import Reply, ScriptedLLMServer

SESSIONS = 20
TAG = re.compile(r"job-(\d\d)")


class RoutedServer(ScriptedLLMServer):
    """The scripted server with one script per job: a request takes the next reply of the job its prompt names.
    With `together`, the first `together` requests are answered once all of them have come."""

    def __init__(self, *args: Any, together: int = 0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.scripts: dict[str, collections.deque[Reply]] = {}
        self._together = together
        self._came = 0
        self._all_came: asyncio.Event | None = None  # made on the server's loop, where the requests are handled

    async def _chat(self, request: Any, writer: Any) -> bool:
        if self._came < self._together:
            self._came += 1
            self._all_came = self._all_came or asyncio.Event()
            if self._came == self._together:
                self._all_came.set()
            await self._all_came.wait()
        first_user = next(m for m in request.body["messages"] if m["role"] == "user")
        job = TAG.search(str(first_user["content"])).group(0)
        # super()._chat pops its reply before its first await, so swapping the queue in is safe.
        self._replies = self.scripts[job]
        return await super()._chat(request, writer)


def test_twenty_sessions_at_once_complete_with_unmixed_events(start_daemon):
    with RoutedServer("openai") as srv:
        for n in range(SESSIONS):
            job = f"job-{n:02d}"
            srv.scripts[job] = collections.deque([
                Reply.tool_calls(("execute_code", {"steps": [{"code": f"echo tool-out-{job}"}]})),
                Reply(text=f"final answer for {job} " * 5, chunk_size=3),
            ])
        daemon = start_daemon(env=srv.env())
        sessions = [daemon.request("ollie/session/new", {}, timeout=60)["session"] for _ in range(SESSIONS)]
        pending = [daemon.request_async("ollie/submit", {"session": s, "text": f"run job-{n:02d}"})
                   for n, s in enumerate(sessions)]
        results = [p.result(120) for p in pending]
        assert not any(srv.scripts.values()), "every job used its whole script"
    for n, (session, result) in enumerate(zip(sessions, results, strict=True)):
        job = f"job-{n:02d}"
        assert result["session"] == session and result["stop"] == "end", result
        assert result["reply"] == f"final answer for {job} " * 5
        events = daemon.events(session)
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1)), f"seq gaps in {job}"
        assert events[0]["role"] == "turn" and events[0]["content"] == "start"
        assert events[-1]["role"] == "turn" and events[-1]["content"] == "end"
        for event in events:
            assert set(TAG.findall(event["content"])) <= {f"{n:02d}"}, (job, event)
        tool = [e for e in events if e["role"] == "tool"]
        assert len(tool) == 1 and f"tool-out-{job}" in tool[0]["content"]
        text = "".join(e["content"] for e in events if e["role"] == "assistant")
        assert text == f"final answer for {job} " * 5


def test_a_cheap_request_is_answered_while_twenty_sessions_stream(start_daemon):
    # Each stream is paced by the server (a chunk every 10 ms, 400 of them): the answer must come in the middle.
    # They start together, once every turn has asked (a loaded machine starts twenty turns over seconds: the first
    # ones' streams had ended before the last ones' began).
    with RoutedServer("openai", together=SESSIONS) as srv:
        for n in range(SESSIONS):
            srv.scripts[f"job-{n:02d}"] = collections.deque([Reply(text="tick " * 400, chunk_size=5, delay=0.01)])
        daemon = start_daemon(env=srv.env())
        sessions = [daemon.request("ollie/session/new", {}, timeout=60)["session"] for _ in range(SESSIONS)]
        pending = [daemon.request_async("ollie/submit", {"session": s, "text": f"run job-{n:02d}"})
                   for n, s in enumerate(sessions)]

        def streaming(session: str) -> bool:
            return any(e["role"] == "assistant" for e in daemon.events(session))

        daemon.wait_for(lambda _: all(streaming(s) for s in sessions), timeout=120)
        cheap = daemon.request_async("ollie/session/list", {})
        assert isinstance(cheap.result(60)["sessions"], list)
        # Ordered by arrival at the client: the answer came while every stream was still going.
        before = [m["params"] for stamp, m in list(daemon.notifications) if stamp < cheap.answered_at]
        ended = [e["session"] for e in before if e.get("role") == "turn" and e.get("content") == "end"]
        assert ended == [], f"{len(ended)} turns ended before a cheap request was answered"
        results = [p.result(180) for p in pending]
    assert all(r["stop"] == "end" for r in results)
