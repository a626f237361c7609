"""The validated agent-config cache: a second load builds no pydantic model and gives the same config, and a
tampered, malformed or stale entry is never used; errors still come from the full validation."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap

import pytest

from ollie import config, validcache
from ollie.config import AgentConfig, parse_agent_config
from ollie.errors import ConfigError

FULL = json.dumps({
    "prompt": ["echo one", "echo two"], "commandSandbox": "default", "hooks": {"preTurn": "echo hi"},
    "backend": "openai", "model": "m", "tools": False, "sandbox": "nonet", "elevation": "deny", "approval": "auto",
    "allowExecutors": ["bash"], "allowTools": ["file_read"], "maxTokens": 100, "maxCompletionTokens": 50,
    "maxSteps": 0, "contextLength": 8192, "temperature": 1, "topP": 0.5, "topK": 3, "minP": 0.1, "topA": 0.2,
    "frequencyPenalty": -0.5, "presencePenalty": 0.5, "repetitionPenalty": 1.1, "reasoning": 2048,
    "reasoningEffort": "low", "includeReasoning": True, "responseFormat": "json", "stop": ["END"],
    "verbosity": "low", "description": "every key",
})


def entry(text: str):
    return validcache.cache_dir(config.KIND) / f"{validcache.cache_key(text, config._CODE)}.json"


def test_a_second_process_reads_the_same_config_without_pydantic(tmp_path):
    agent = tmp_path / "full.json"
    agent.write_text(FULL, encoding="utf-8")
    probe = textwrap.dedent(f"""
        import dataclasses, json, sys
        from pathlib import Path
        from ollie.config import load_agent_config
        cfg = load_agent_config(Path({str(agent)!r}))
        print(json.dumps({{"cfg": dataclasses.asdict(cfg), "pydantic": "pydantic" in sys.modules}}, default=str))
    """)
    first, second = (json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                               check=True, env=dict(os.environ)).stdout) for _ in range(2))
    assert first["pydantic"] and not second["pydantic"]
    assert first["cfg"] == second["cfg"]
    cfg = second["cfg"]
    assert cfg["prompt"] == {"text": "", "commands": ["echo one", "echo two"], "base_dir": str(tmp_path),
                             "sandbox": "default"}
    assert cfg["hooks"] == {"preTurn": ["echo hi"]} and cfg["temperature"] == 1.0 and cfg["max_steps"] == 0
    assert cfg["command_sandbox"] == "default" and cfg["allow_tools"] == ["file_read"]


def test_the_cached_config_equals_the_validated_one_field_for_field():
    validated = parse_agent_config(FULL, "full.json")
    assert entry(FULL).is_file()
    cached = parse_agent_config(FULL, "full.json")
    assert cached == validated and isinstance(cached.temperature, float)
    assert {f.name for f in dataclasses.fields(AgentConfig)} == {*config._FIELDS, "hooks", "prompt"}


@pytest.mark.parametrize("tamper", ["group-writable", "float for int", "unknown hook", "base_dir", "out of range",
                                    "missing key", "bad literal"])
def test_a_tampered_or_malformed_entry_is_ignored(tamper):
    text = json.dumps({"maxSteps": 3, "elevation": "deny", "prompt": "terse"})
    parse_agent_config(text, "a.json")
    path = entry(text)
    stored = json.loads(path.read_text(encoding="utf-8"))
    data = stored["data"]
    data["elevation"] = "allow"  # what a tampered entry would like to grant
    mode = 0o600
    if tamper == "group-writable":
        mode = 0o660
    elif tamper == "float for int":
        data["max_steps"] = 3.0
    elif tamper == "unknown hook":
        data["hooks"] = {"onEverything": ["x"]}
    elif tamper == "base_dir":
        data["prompt"]["base_dir"] = "/"
    elif tamper == "out of range":
        data["top_p"] = 2
    elif tamper == "missing key":
        del data["stop"]
    else:
        data["approval"] = "yes"
    if tamper != "group-writable":
        data["elevation"] = "deny"  # only the malformed field differs: it alone must make the entry unused
        data["max_steps"] = data["max_steps"] if tamper == "float for int" else 3
    path.write_text(json.dumps(stored), encoding="utf-8")
    path.chmod(mode)
    cfg = parse_agent_config(text, "a.json")
    assert cfg.elevation == "deny" and cfg.max_steps == 3 and type(cfg.max_steps) is int and cfg.top_p is None
    assert cfg.hooks == {} and cfg.prompt.base_dir is None and cfg.approval == "ask" and cfg.stop is None


def test_errors_name_the_file_and_key_every_time_and_are_never_cached():
    bad = json.dumps({"maxTokens": 0, "hooks": {"nope": "x"}, "surprise": 1})
    for _ in range(2):
        with pytest.raises(ConfigError) as caught:
            parse_agent_config(bad, "/cfg/agents/x.json")
        message = str(caught.value)
        assert message.startswith("/cfg/agents/x.json: ")
        assert "key 'maxTokens'" in message and "key 'surprise': unknown key" in message
        assert "unknown hook 'nope' (known: agentSpawn," in message
    assert not entry(bad).exists()
    with pytest.raises(ConfigError, match=r"x\.json: invalid JSON at line 1 column 2"):
        parse_agent_config("{", "x.json")
