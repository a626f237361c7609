"""First run with no model: every front end ends the first turn in under 2 s and says what to do."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from ollie.testing import Reply, ScriptedLLMServer

from .test_cli import run_ollie

HINTS = ("ollama serve", "ollama pull qwen3", "OLLIE_BACKEND")


def closed_url() -> str:
    """A URL where nothing listens (a port bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def no_model_env() -> dict[str, str]:
    return {"OLLIE_BACKEND": "ollama", "OLLIE_OLLAMA_URL": closed_url(), "OLLIE_MODEL": "qwen3"}


async def test_daemon_submit_fails_at_once_with_the_hint(start_daemon):
    daemon = await start_daemon(env=no_model_env())
    await daemon.request("ollie/state", {})
    result = await daemon.request("ollie/submit", {"text": "hello"})
    assert result["stop"] == "error"
    assert all(hint in result["error"] for hint in HINTS), result
    events = daemon.session_events(result["session"])
    assert "limitretry" not in [e["role"] for e in events]
    # The error's class goes as the event's name, for a client to act on, never as a prefix of the words.
    assert [(e["content"], e.get("name")) for e in events if e["role"] == "error"] == [(result["error"], "unreachable")]


async def test_daemon_state_reports_backend_health(start_daemon, scripted_llm, tmp_path):
    # The settings file is the daemon's word (its OLLIE_CONFIG_DIR): the editors said where it is by a copy of its rule.
    daemon = await start_daemon(env={**no_model_env(), "OLLIE_CONFIG_DIR": str(tmp_path / "conf")})
    status = (await daemon.request("ollie/state", {}))["backendStatus"]
    assert (status["ok"], status["reachable"], status["backend"]) == (False, False, "ollama")
    assert "ollama serve" in status["hint"] and status["settingsFile"] == str(tmp_path / "conf" / "env")

    srv = scripted_llm("openai")
    srv.script(Reply.text("hi"))
    healthy = await start_daemon(env=srv.env())
    status = (await healthy.request("ollie/state", {}))["backendStatus"]
    assert status == {"ok": True, "backend": "local", "model": srv.model, "url": srv.env()["OLLIE_OPENAI_URL"],
                      "reachable": True, "modelPresent": True, "keySet": True, "error": "", "hint": "",
                      "settingsFile": str(Path(os.environ["XDG_CONFIG_HOME"]) / "ollie" / "env")}
    await healthy.request("ollie/command", {"line": "/model missing-model"})
    status = (await healthy.request("ollie/state", {}))["backendStatus"]
    assert (status["ok"], status["modelPresent"]) == (False, False)
    await healthy.request("ollie/command", {"line": "/model " + srv.model})
    await healthy.request("ollie/submit", {"text": "hello"})


def test_terminal_one_shot_without_preflight_fails_at_once(tmp_path):
    proc = run_ollie(["-p", "hello", "--no-preflight", "--cwd", str(tmp_path)], env=no_model_env())
    assert proc.returncode != 0
    assert all(hint in proc.stderr for hint in HINTS), proc.stderr
    assert "retrying" not in proc.stderr  # at once: no retry of an unreachable backend (each one says so)


def test_terminal_preflight_names_the_pull_command(tmp_path):
    proc = run_ollie(["-p", "hello", "--cwd", str(tmp_path)], env=no_model_env())
    assert proc.returncode == 2
    assert all(hint in proc.stderr for hint in HINTS), proc.stderr


def test_terminal_interactive_first_turn_says_what_to_do(tmp_path):
    proc = run_ollie(["--no-preflight", "--cwd", str(tmp_path)], env=no_model_env(), input="hello\n")
    assert all(hint in proc.stderr + proc.stdout for hint in HINTS), (proc.stdout, proc.stderr)
    assert "retrying" not in proc.stderr


def test_terminal_rejects_a_url_without_scheme(tmp_path):
    env = {"OLLIE_BACKEND": "ollama", "OLLIE_OLLAMA_URL": "localhost:11434"}
    for extra in ([], ["--no-preflight"]):
        proc = run_ollie(["-p", "hello", *extra, "--cwd", str(tmp_path)], env=env)
        assert proc.returncode != 0
        assert "OLLIE_OLLAMA_URL" in proc.stderr and "http://localhost:11434" in proc.stderr, proc.stderr


async def test_a_failed_health_check_is_asked_again_once_the_backend_is_up(start_daemon):
    """The user starts the backend after seeing the hint: "Check again" (a later ollie/state) sees it, no restart."""
    import asyncio

    url = closed_url()
    port = int(url.rsplit(":", 1)[1])
    daemon = await start_daemon(env={"OLLIE_BACKEND": "openai", "OLLIE_OPENAI_URL": f"{url}/v1",
                                     "OLLIE_OPENAI_KEY": "dummy", "OLLIE_MODEL": "scripted-model"})
    status = (await daemon.request("ollie/state", {}))["backendStatus"]
    assert (status["ok"], status["reachable"]) == (False, False)
    srv = ScriptedLLMServer("openai", port=port).start()
    try:
        deadline = time.monotonic() + 30  # a failure is asked again after 2 s (FAILED_HEALTH_REUSE_S)
        while not (await daemon.request("ollie/state", {}))["backendStatus"]["ok"]:
            assert time.monotonic() < deadline, "the failure was never checked again"
            await asyncio.sleep(0.5)
    finally:
        srv.stop()


async def test_daemon_state_names_another_tools_url_variable(start_daemon):
    # Editors show backendStatus' hint: a user who set OLLAMA_HOST was told to start Ollama on this machine.
    with socket.socket() as sock:
        if sock.connect_ex(("localhost", 11434)) == 0:
            pytest.skip("an Ollama on this machine answers: the hint is \"\" (the terminal and doctor tests say it)")
    daemon = await start_daemon(env={"OLLIE_BACKEND": "ollama", "OLLAMA_HOST": closed_url(), "OLLIE_MODEL": "qwen3"})
    status = (await daemon.request("ollie/state", {}))["backendStatus"]
    assert status["ok"] is False and "OLLAMA_HOST is set, but ollie does not read it: to use that server set " \
        "OLLIE_OLLAMA_URL to its URL" in status["hint"], status
