"""One set of bounds for the generation parameters: what an agent config refuses, ollie/setGenerationParams refuses."""

from __future__ import annotations

import json

import pytest
from pygls.exceptions import JsonRpcException

# (key, a value out of range, the reason both give; a value just in range, which both take)
BOUNDS = [
    ("temperature", -5, "must be >= 0, got -5", 0),
    ("topP", 1.5, "must be <= 1, got 1.5", 1),
    ("maxTokens", 0, "must be >= 1, got 0", 1),
    ("reasoningEffort", "max", "must be one of 'minimal', 'low', 'medium', 'high'", "minimal"),
]


async def test_the_daemon_and_an_agent_config_refuse_the_same_out_of_range_parameter(start_daemon, llm, tmp_path):
    agents = tmp_path / "agents"
    agents.mkdir()
    daemon = await start_daemon(env={**llm.env(), "OLLIE_AGENTS_DIR": str(agents)})
    for key, bad, reason, good in BOUNDS:
        with pytest.raises(JsonRpcException) as caught:
            await daemon.request("ollie/setGenerationParams", {"params": {key: bad}})
        assert caught.value.code == -32602 and f"params.{key}: {reason}" in caught.value.message
        file = agents / f"bad-{key}.json"
        file.write_text(json.dumps({key: bad}), encoding="utf-8")
        with pytest.raises(JsonRpcException) as caught:
            await daemon.request("ollie/session/new", {"agent": f"bad-{key}"})
        assert f"{file}: key '{key}': {reason}" in caught.value.message, caught.value.message

        assert await daemon.request("ollie/setGenerationParams", {"params": {key: good}}) == {}
        (agents / f"good-{key}.json").write_text(json.dumps({key: good}), encoding="utf-8")
        assert (await daemon.request("ollie/session/new", {"agent": f"good-{key}"}))["session"]
