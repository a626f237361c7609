"""One set of bounds for the generation parameters: what an agent config refuses, ollie/setGenerationParams refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from ollie.config import GenerationParams
from ollie.shapes import json_schema

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


def _row(key: str, schema: dict) -> str:
    """The docs' table row of one parameter, from its JSON Schema."""
    kind = {"number": "number", "integer": "integer", "string": "string", "boolean": "true or false",
            "array": "array of strings"}[schema["type"]]
    limits = [f"one of {', '.join(f'`{v}`' for v in schema['enum'])}"] if "enum" in schema else []
    limits += [f"{sign} {schema[bound]:g}" for bound, sign in (("minimum", "≥"), ("maximum", "≤")) if bound in schema]
    return f"| `{key}` | {kind} | {', '.join(limits) or 'any'} |"


def test_the_docs_table_of_sampling_parameters_is_the_declaration():
    schema = json_schema(GenerationParams)
    readme = (Path(__file__).parents[2] / "agents" / "README.md").read_text(encoding="utf-8")
    rows = [_row(key, field) for key, field in schema["properties"].items()]
    assert "\n".join(rows) in readme, "\n".join(rows)
