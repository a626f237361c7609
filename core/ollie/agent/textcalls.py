"""Tool calls that small local models write as text instead of native calls, parsed into ToolCalls.

Forms recognised (only for names the model was offered):
`<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (Qwen, Hermes; the
closing tag may be missing at the end), ```json fenced objects or arrays with
"name" and "arguments"/"parameters", `[TOOL_CALLS][{...}]` and
`[TOOL_CALLS]name[ARGS]{...}` (Mistral), `<function=name>{...}</function>`
(Llama 3.1), and a reply that is nothing but such a JSON object or array.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable

from ollie.backend.types import ToolCall

_DECODER = json.JSONDecoder()

_TAGGED = re.compile(r"<tool_call>\s*(?P<body>.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
_FENCED = re.compile(r"```[ \t]*(?:json|tool_call|tool_code)?[ \t]*\n(?P<body>.*?)\n?[ \t]*```", re.DOTALL)
_LLAMA = re.compile(r"<function=(?P<name>[\w.-]+)>\s*(?P<body>.*?)\s*</function>", re.DOTALL)
_MISTRAL = "[TOOL_CALLS]"
_MISTRAL_ARGS = re.compile(r"\s*(?P<name>[\w.-]+)\s*\[ARGS\]\s*")

_MatchParser = Callable[[re.Match[str]], "list[ToolCall] | None"]


def new_call_id() -> str:
    """A fresh tool-call id, for calls that came without one (written as text, or from a backend that sends none)."""
    return "call_" + uuid.uuid4().hex[:16]


def _arguments_json(value: object) -> str | None:
    """The call's arguments as a JSON object text, or None when they are not an object."""
    if value is None:
        return "{}"
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except json.JSONDecodeError:
            return None
    if not isinstance(value, dict):
        return None
    return json.dumps(value, ensure_ascii=False)


def _call(name: object, arguments: object, tool_names: set[str]) -> ToolCall | None:
    """A call of a tool the model was offered whose arguments are a JSON object (or its text), else None."""
    if not isinstance(name, str) or name not in tool_names or (args := _arguments_json(arguments)) is None:
        return None
    return ToolCall(id=new_call_id(), name=name, arguments=args)


def _call_from_object(obj: object, tool_names: set[str]) -> ToolCall | None:
    """A ToolCall from `{"name", "arguments"|"parameters"}` (or OpenAI's `{"function": {...}}`)."""
    if not isinstance(obj, dict):
        return None
    inner = obj.get("function")
    if isinstance(inner, dict):
        obj = inner
    return _call(obj.get("name"), obj.get("arguments", obj.get("parameters")), tool_names)


def _calls_from_json(text: str, tool_names: set[str]) -> list[ToolCall] | None:
    """Calls from JSON text holding an object or an array of objects (see `_calls_from_value`)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return _calls_from_value(value, tool_names)


def _calls_from_value(value: object, tool_names: set[str]) -> list[ToolCall] | None:
    """Calls from a decoded object or array; None unless every element is a call of a known tool."""
    items = value if isinstance(value, list) else [value]
    calls = [call for item in items if (call := _call_from_object(item, tool_names)) is not None]
    if not calls or len(calls) != len(items):
        return None
    return calls


def _replace_matches(text: str, pattern: re.Pattern[str], calls: list[ToolCall], parse: _MatchParser) -> str:
    """Cut every match of `pattern` that `parse` turns into calls; keep the others verbatim."""

    def sub(match: re.Match[str]) -> str:
        found = parse(match)
        if not found:
            return match.group(0)
        calls.extend(found)
        return ""

    return pattern.sub(sub, text)


def _mistral(text: str, tool_names: set[str], calls: list[ToolCall]) -> str:
    """Cut `[TOOL_CALLS][...]` and `[TOOL_CALLS]name[ARGS]{...}` runs."""
    out = []
    rest = text
    while (start := rest.find(_MISTRAL)) >= 0:
        out.append(rest[:start])
        after = rest[start + len(_MISTRAL) :]
        found, consumed = _mistral_payload(after, tool_names)
        if not found:
            out.append(_MISTRAL)
            rest = after
            continue
        calls.extend(found)
        rest = after[consumed:]
    out.append(rest)
    return "".join(out)


def _mistral_payload(after: str, tool_names: set[str]) -> tuple[list[ToolCall], int]:
    """The calls right after a `[TOOL_CALLS]` marker and how many characters they took."""
    stripped = len(after) - len(after.lstrip())
    try:
        value, end = _DECODER.raw_decode(after, stripped)
    except json.JSONDecodeError:
        value, end = None, 0
    if value is not None:
        found = _calls_from_value(value, tool_names)
        return (found, end) if found else ([], 0)
    named = _MISTRAL_ARGS.match(after)
    if not named or named["name"] not in tool_names:
        return [], 0
    try:
        args, end = _DECODER.raw_decode(after, named.end())
    except json.JSONDecodeError:
        return [], 0
    call = _call(named["name"], args, tool_names)
    return ([call], end) if call is not None else ([], 0)


def extract_text_tool_calls(text: str, tool_names: set[str]) -> tuple[str, list[ToolCall]]:
    """Find tool calls written as text; return the text without their markup, and the calls."""
    if not text or not tool_names:
        return text, []
    calls: list[ToolCall] = []
    rest = _replace_matches(text, _TAGGED, calls, lambda m: _calls_from_json(m["body"], tool_names))
    rest = _mistral(rest, tool_names, calls)

    def llama(match: re.Match[str]) -> list[ToolCall] | None:
        call = _call(match["name"], match["body"], tool_names)
        return [call] if call is not None else None

    rest = _replace_matches(rest, _LLAMA, calls, llama)
    rest = _replace_matches(rest, _FENCED, calls, lambda m: _calls_from_json(m["body"], tool_names))
    if not calls:
        whole = _calls_from_json(text.strip(), tool_names) if text.strip()[:1] in "{[" else None
        if whole:
            return "", whole
        return text, []
    return re.sub(r"\n{3,}", "\n\n", rest).strip(), calls
