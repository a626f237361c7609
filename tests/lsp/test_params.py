"""The daemon's params (ollie_lsp.params on ollie.shapes): each rule, and errors that name every bad field's path."""

from __future__ import annotations

import attrs
import pytest

from ollie.backend.types import GenerationParams
from ollie_lsp.errors import InvalidParams
from ollie_lsp.params import (
    ContextParams,
    EditorContext,
    RewindParams,
    SessionIdParams,
    SessionListParams,
    SessionNewParams,
    SetEnvParams,
    SetGenerationParamsParams,
    SubmitParams,
    TextParams,
    parse,
)


def error(model: type, raw: object) -> str:
    """The -32602 message `parse` raises for `raw`."""
    with pytest.raises(InvalidParams) as caught:
        parse(model, raw)
    assert caught.value.code == -32602
    return caught.value.message


def test_types_are_strict():
    assert "text: expected a string, got an integer" in error(SubmitParams, {"text": 3})
    assert "offset: expected an integer, got a boolean" in error(ContextParams, {"offset": True})
    assert "limit: expected an integer, got a number" in error(ContextParams, {"limit": 1.0})
    assert "offset: expected an integer, got a string" in error(ContextParams, {"offset": "2"})
    assert "undo: expected a boolean, got an integer" in error(RewindParams, {"undo": 1})
    assert "kinds: expected an array, got a string" in error(SessionListParams, {"kinds": "chat"})
    assert "params: expected an object, got an array" in error(SetGenerationParamsParams, {"params": []})
    # null is only accepted where the field is optional.
    assert "text: expected a string, got null" in error(SubmitParams, {"text": None})
    assert parse(SubmitParams, {"text": "x", "session": None}).session is None


def test_bounds_lengths_and_patterns():
    assert "offset: must be >= 0, got -1" in error(ContextParams, {"offset": -1})
    assert parse(ContextParams, {"offset": 0, "limit": 0}).limit == 0
    assert "text: must not be empty" in error(TextParams, {"text": ""})
    assert parse(SubmitParams, {"text": ""}).text == ""  # submit's text may be empty, queue's may not
    assert "agent: must not be empty" in error(SessionNewParams, {"agent": ""})
    assert "key: must match" in error(SetEnvParams, {"key": "1BAD", "value": "v"})
    assert "key: must match" in error(SetEnvParams, {"key": "A-B", "value": "v"})  # the whole key, not a prefix
    assert parse(SetEnvParams, {"key": "_A1", "value": ""}).key == "_A1"


def test_required_defaults_aliases_and_unknown_keys():
    assert "session: required" in error(SessionIdParams, {})
    listing = parse(SessionListParams, {"includeArchived": True, "kinds": ["chat"], "futureField": 1})
    assert attrs.asdict(listing) == {"kinds": ["chat"], "include_archived": True, "limit": None, "cursor": None}
    assert parse(SessionListParams, {"include_archived": True}).include_archived  # the attribute's name too
    assert "includeArchived: expected a boolean" in error(SessionListParams, {"includeArchived": "yes"})
    assert parse(EditorContext, {"uri": "file:///a", "languageId": "rust"}).language_id == "rust"
    assert "text: required" in error(SubmitParams, None)  # params left out: an empty object


def test_params_that_are_not_an_object():
    assert error(SubmitParams, [1, 2]).endswith("params: expected an object, got an array")
    assert error(SubmitParams, "x").endswith("params: expected an object, got a string")


def test_nested_context_one_or_many_and_every_bad_field_named_together():
    one = parse(SubmitParams, {"text": "hi", "context": {"uri": "file:///a", "range": {
        "start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 3}}}})
    assert [c.range.end.character for c in one.contexts if c.range] == [3]
    many = parse(TextParams, {"text": "hi", "context": [{"uri": "file:///a"}, {"uri": "file:///b", "selection": "x"}]})
    assert [c.uri for c in many.contexts] == ["file:///a", "file:///b"] and many.contexts[1].selection == "x"
    assert parse(SubmitParams, {"text": "hi"}).contexts == []
    message = error(SubmitParams, {"context": [{"uri": "file:///a"}, {"uri": 3, "range": {
        "start": {"line": -1, "character": False}}}, 7]})
    assert message == (
        "Invalid params: context[1].uri: expected a string, got an integer; "
        "context[1].range.start.line: must be >= 0, got -1; "
        "context[1].range.start.character: expected an integer, got a boolean; "
        "context[1].range.end: required; context[2]: expected an object, got an integer; text: required"
    )
    assert "context.range.start.line: must be >= 0" in error(SubmitParams, {"text": "x", "context": {
        "uri": "file:///a", "range": {"start": {"line": -2, "character": 0}, "end": {"line": 0, "character": 0}}}})
    assert "context: expected an object or an array, got a string" in error(
        SubmitParams, {"text": "x", "context": "not an object"})
    assert "context.uri: must not be empty" in error(SubmitParams, {"text": "x", "context": {"uri": ""}})


def test_the_shapes_are_frozen():
    params = parse(SubmitParams, {"text": "hi"})
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        params.text = "other"  # type: ignore[misc]
    assert attrs.asdict(params) == attrs.asdict(parse(SubmitParams, {"text": "hi", "other": 1}))
    assert attrs.asdict(params) == {"session": None, "context": None, "text": "hi", "images": None}


def test_generation_params_checks_each_field_by_its_type_and_bounds():
    params = parse(SetGenerationParamsParams, {"params": {
        "temperature": 1, "maxTokens": 77, "top_p": 0.5, "stop": ["\n"], "includeReasoning": True,
        "reasoningEffort": "low", "minP": None}}).params
    assert attrs.asdict(params) == attrs.asdict(GenerationParams(temperature=1.0, max_tokens=77, top_p=0.5, stop=["\n"],
                                                                 include_reasoning=True, reasoning_effort="low"))
    assert isinstance(params.temperature, float)
    message = error(SetGenerationParamsParams, {"params": {
        "warmth": 1, "temperature": "hot", "maxTokens": True, "topK": 1.5, "stop": ["a", 2], "includeReasoning": 1,
        "verbosity": 3, "topP": 1.5, "reasoningEffort": "max"}})
    for part in ("params.warmth: unknown key", "params.temperature: expected a number, got a string",
                 "params.maxTokens: expected an integer, got a boolean", "params.topK: expected an integer, got a number",
                 "params.stop[1]: expected a string, got an integer",
                 "params.includeReasoning: expected a boolean, got an integer",
                 "params.verbosity: expected a string, got an integer", "params.topP: must be <= 1, got 1.5",
                 "params.reasoningEffort: must be one of 'minimal', 'low', 'medium', 'high'"):
        assert part in message, message
