"""Tool calls written as text by local models: each common form, only for offered tools."""

from __future__ import annotations

import json

import pytest

from ollie.agent.textcalls import extract_text_tool_calls

TOOLS = {"call_tool", "execute_code", "pipe"}
ARGS = {"calls": [{"tool": "file_read", "args": ["README.md"]}]}


def _only_call(calls, name="call_tool", args=ARGS):
    assert len(calls) == 1
    assert calls[0].name == name
    assert json.loads(calls[0].arguments) == args
    assert calls[0].id


# One call written as text, each form a local model uses: (the text, what is left of it, the call's name and args).
ONE_CALL = {
    "qwen/hermes tag": (f'Let me read it.\n<tool_call>\n{{"name": "call_tool", "arguments": {json.dumps(ARGS)}}}\n</tool_call>',
                        "Let me read it.", "call_tool", ARGS),
    "tag left open at the end": ('<tool_call>{"name": "pipe", "arguments": {"stages": []}}', "", "pipe", {"stages": []}),
    "fenced json, parameters key": (
        f'I will run:\n```json\n{{"name": "call_tool", "parameters": {json.dumps(ARGS)}}}\n```\nThen report.',
        "I will run:\n\nThen report.", "call_tool", ARGS),
    "mistral array": (f'[TOOL_CALLS][{{"name": "call_tool", "arguments": {json.dumps(ARGS)}}}]', "", "call_tool", ARGS),
    "mistral name/args": (f"Reading.[TOOL_CALLS]call_tool[ARGS]{json.dumps(ARGS)}", "Reading.", "call_tool", ARGS),
    "llama function tag": (f"<function=call_tool>{json.dumps(ARGS)}</function>", "", "call_tool", ARGS),
    "bare json reply": (json.dumps({"name": "call_tool", "parameters": ARGS}), "", "call_tool", ARGS),
}


@pytest.mark.parametrize(("text", "rest", "name", "args"), ONE_CALL.values(), ids=ONE_CALL)
def test_one_call_written_as_text_is_cut_out(text, rest, name, args):
    left, calls = extract_text_tool_calls(text, TOOLS)
    assert left == rest
    _only_call(calls, name, args)


def test_several_tagged_calls_keep_their_order_and_get_distinct_ids():
    text = (
        '<tool_call>{"name": "call_tool", "arguments": {}}</tool_call>'
        '<tool_call>{"name": "execute_code", "arguments": {"steps": []}}</tool_call>'
    )
    rest, calls = extract_text_tool_calls(text, TOOLS)
    assert rest == ""
    assert [c.name for c in calls] == ["call_tool", "execute_code"]
    assert calls[0].id != calls[1].id


def test_fenced_json_array_of_calls():
    body = json.dumps([{"name": "pipe", "arguments": {"stages": [1]}}, {"name": "call_tool", "arguments": ARGS}])
    rest, calls = extract_text_tool_calls(f"```json\n{body}\n```", TOOLS)
    assert rest == "" and [c.name for c in calls] == ["pipe", "call_tool"]


def test_fenced_json_that_is_not_a_call_stays():
    text = 'Example config:\n```json\n{"name": "my-package", "version": "1.0"}\n```'
    assert extract_text_tool_calls(text, TOOLS) == (text, [])


def test_arguments_given_as_a_json_string():
    text = json.dumps({"name": "call_tool", "arguments": json.dumps(ARGS)})
    _only_call(extract_text_tool_calls(f"<tool_call>{text}</tool_call>", TOOLS)[1])


def test_unknown_tool_names_are_left_as_text():
    for text in (
        '<tool_call>{"name": "rm_everything", "arguments": {}}</tool_call>',
        "<function=rm_everything>{}</function>",
        '[TOOL_CALLS][{"name": "rm_everything", "arguments": {}}]',
        '{"name": "rm_everything", "arguments": {}}',
    ):
        assert extract_text_tool_calls(text, TOOLS) == (text, [])


def test_malformed_json_and_non_object_arguments_are_left_as_text():
    for text in (
        '<tool_call>{"name": "call_tool", "arguments": {</tool_call>',
        '<tool_call>{"name": "call_tool", "arguments": [1, 2]}</tool_call>',
        "<function=call_tool>not json</function>",
    ):
        assert extract_text_tool_calls(text, TOOLS) == (text, [])


def test_plain_prose_is_untouched():
    text = "The answer is 42. Use `call_tool` next time."
    assert extract_text_tool_calls(text, TOOLS) == (text, [])
    assert extract_text_tool_calls(text, set()) == (text, [])
