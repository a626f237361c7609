"""The scripted server itself: wire bytes, failure modes, context managers, JSON scripts, CLI, pytest fixture."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading

import httpx
import pytest

from ollie.backend.errors import TransientError
from ollie.backend.registry import make_backend
from ollie.testing import Reply, ScriptedLLMServer

from .conftest import collect, joined


def test_openai_bytes_are_sse_data_lines_ending_in_done():
    with ScriptedLLMServer("openai") as srv:
        srv.script(Reply.text("hello world"))
        body = {"model": "m", "messages": [], "stream": True, "stream_options": {"include_usage": True}}
        response = httpx.post(f"{srv.url}/chat/completions", json=body)
        assert response.headers["content-type"].startswith("text/event-stream")
        blocks = response.text.split("\n\n")
        assert blocks[-2:] == ["data: [DONE]", ""]
        chunks = [json.loads(b[len("data: "):]) for b in blocks[:-2]]
        assert all(c["object"] == "chat.completion.chunk" for c in chunks)
        assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"]) == "hello world"
        assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0
        srv.assert_done()


def test_anthropic_bytes_have_event_lines_and_message_stop():
    with ScriptedLLMServer("anthropic") as srv:
        srv.script(Reply.text("hi"))
        response = httpx.post(f"{srv.url}/v1/messages", json={"model": "m", "messages": [], "stream": True})
        events = [b.split("\n")[0] for b in response.text.strip().split("\n\n")]
        assert events[0] == "event: message_start" and events[-1] == "event: message_stop"
        assert "event: content_block_delta" in events and "event: message_delta" in events


def test_ollama_bytes_are_ndjson_ending_in_done():
    with ScriptedLLMServer("ollama") as srv:
        srv.script(Reply.text("hi there"))
        response = httpx.post(f"{srv.url}/api/chat", json={"model": "m", "messages": []})
        assert response.headers["content-type"] == "application/x-ndjson"
        lines = [json.loads(line) for line in response.text.splitlines()]
        assert [line["done"] for line in lines] == [False] * (len(lines) - 1) + [True]
        assert lines[-1]["done_reason"] == "stop" and lines[-1]["eval_count"] > 0


@pytest.mark.parametrize("by", ["event", "file"])
def test_a_held_reply_sends_its_deltas_and_ends_once_its_event_is_set(by, tmp_path):
    """Held by an event, or in a JSON script (another process's: an editor's scenario) until a file exists."""
    hold, flag = threading.Event(), tmp_path / "released"
    reply = (Reply(text="held on", chunk_size=2, hold=hold) if by == "event"
             else Reply.from_dict({"text": "held on", "chunk_size": 2, "hold": str(flag)}))
    with ScriptedLLMServer("openai") as srv:
        srv.script(reply)
        body = {"model": "m", "messages": [], "stream": True}
        with httpx.stream("POST", f"{srv.url}/chat/completions", json=body, timeout=30) as response:
            lines, text = response.iter_lines(), ""
            while text != "held on":  # every delta comes before the hold
                line = next(lines)
                if line.startswith("data: {"):
                    text += "".join(c["delta"].get("content") or "" for c in json.loads(line[6:])["choices"])
            assert srv.finished_replies == 0  # the end waits for the test
            if by == "event":
                hold.set()
            else:
                flag.touch()
            assert [line for line in lines if line][-1] == "data: [DONE]"
        assert srv.finished_replies == 1


async def test_leftover_replies_fail_assert_done():
    async with ScriptedLLMServer("openai") as srv:
        srv.script(Reply.text("used"), Reply.text("never used"))
        backend = make_backend(environ=srv.env())
        await collect(backend)
        await backend.aclose()
        assert srv.pending == 1
        with pytest.raises(AssertionError, match="never requested"):
            srv.assert_done()


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "ollama"])
async def test_unexpected_request_gets_a_500_and_fails_assert_done(fmt):
    async with ScriptedLLMServer(fmt) as srv:
        backend = make_backend(environ=srv.env())
        with pytest.raises(TransientError, match="scripted server: unexpected request"):
            await collect(backend)
        await backend.aclose()
        with pytest.raises(AssertionError, match="unexpected request"):
            srv.assert_done()


def test_unknown_path_is_recorded_as_a_failure():
    with ScriptedLLMServer("ollama") as srv:
        response = httpx.post(f"{srv.url}/v1/chat/completions", json={})
        assert response.status_code == 404
        assert srv.requests[0].path == "/v1/chat/completions"
        with pytest.raises(AssertionError, match="not a ollama endpoint"):
            srv.assert_done()


def test_requests_are_recorded_with_headers_and_json():
    with ScriptedLLMServer("openai") as srv:
        srv.script(Reply.text("x"))
        httpx.post(f"{srv.url}/chat/completions?trace=1", json={"model": "m", "messages": [{"role": "user"}]},
                   headers={"X-Custom": "yes"})
        (request,) = srv.requests
        assert (request.method, request.path, request.query) == ("POST", "/v1/chat/completions", "trace=1")
        assert request.headers["x-custom"] == "yes"
        assert request.body == {"model": "m", "messages": [{"role": "user"}]}


def test_env_points_at_the_server():
    with ScriptedLLMServer("anthropic", model="claude-test") as srv:
        env = srv.env()
        assert env["OLLIE_BACKEND"] == "anthropic" and env["OLLIE_ANTHROPIC_URL"] == srv.url
        assert env["OLLIE_ANTHROPIC_KEY"] and env["OLLIE_MODEL"] == "claude-test"
    with ScriptedLLMServer("openai") as srv:
        assert srv.url.endswith("/v1") and srv.env(backend="openrouter")["OLLIE_BACKEND"] == "openrouter"


def test_script_entries_from_json():
    replies = [Reply.from_dict(d) for d in (
        {"text": "hi", "chunk_size": 2},
        {"tool_calls": [{"name": "file_read", "arguments": {"path": "a"}}]},
        {"error": 429, "retry_after": 2},
        {"drop": 3},
        {"context_overflow": True},
    )]
    assert replies[0].text == "hi" and replies[0].chunk_size == 2
    assert replies[1].tool_calls == [("file_read", {"path": "a"})]
    assert replies[2].status == 429 and replies[2].headers["retry-after"] == "2"
    assert replies[3].drop_after == 3
    assert replies[4].error_kind == "context_overflow"
    with pytest.raises(ValueError, match="unknown key.*'txet'"):
        Reply.from_dict({"txet": "typo"})


async def test_reply_class_builders_and_instance_fields_coexist(scripted_llm):
    srv = scripted_llm("ollama")
    reply = Reply.text("abc")
    assert reply.text == "abc" and Reply.text("z").text == "z"
    srv.script(reply, "bare string", {"text": "from dict"})
    backend = make_backend(environ=srv.env())
    try:
        assert [joined(await collect(backend), "content") for _ in range(3)] == ["abc", "bare string", "from dict"]
    finally:
        await backend.aclose()


def _start_cli(tmp_path, script):
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    proc = subprocess.Popen(
        [sys.executable, "-m", "ollie.testing.server", "--fmt", "openai", "--script", str(path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    line = proc.stdout.readline()
    assert line.startswith("URL http://127.0.0.1:"), line
    return proc, line.split(" ", 1)[1].strip()


async def test_cli_serves_the_script_and_exits_cleanly(tmp_path):
    proc, url = _start_cli(tmp_path, [{"text": "from the cli"}, {"tool_calls": [{"name": "t", "arguments": {"a": 1}}]}])
    try:
        env = {"OLLIE_BACKEND": "openai", "OLLIE_OPENAI_URL": url, "OLLIE_OPENAI_KEY": "k", "OLLIE_MODEL": "m"}
        backend = make_backend(environ=env)
        assert joined(await collect(backend), "content") == "from the cli"
        assert (await collect(backend))[-1].tool_calls[0].arguments == '{"a":1}'
        await backend.aclose()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    # Each request is listed as it comes (a failed e2e run's log shows what the model was asked).
    assert out.count('REQUEST POST /v1/chat/completions (2 messages; last user: "hi")') == 2, out


def test_cli_exit_status_reports_leftovers(tmp_path):
    proc, _ = _start_cli(tmp_path, [{"text": "never asked for"}])
    os.killpg(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 1 and "never requested" in err


def test_cli_rejects_a_bad_script(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('[{"text": "ok"}, {"eror": 429}]')
    result = subprocess.run([sys.executable, "-m", "ollie.testing.server", "--script", str(path)],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode != 0 and "entry 1" in result.stderr and "eror" in result.stderr


def test_fixture_fails_the_test_that_leaves_replies(tmp_path):
    test_file = tmp_path / "test_leftover.py"
    test_file.write_text(textwrap.dedent("""
        def test_leaves_one(scripted_llm):
            srv = scripted_llm("openai")
            srv.script("never requested")

        def test_opted_out(scripted_llm):
            scripted_llm("openai", check=False).script("fine")
    """))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "ollie.testing.pytest_plugin", "-p", "no:cacheprovider",
         "-q", str(test_file)], cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 1, result.stdout
    # both tests pass; the first one errors at teardown because a reply was left over
    assert "2 passed, 1 error" in result.stdout and "never requested" in result.stdout
    assert "ERROR test_leftover.py::test_leaves_one" in result.stdout
