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

# No optional spaces beside a lazy body (JSON takes them; bodies are stripped): a reply of `<tool_call>` then
# thousands of spaces backtracked quadratically on the event loop (16,000 held the daemon a minute).
_TAGGED = re.compile(r"<tool_call>(?P<body>.*?)(?:</tool_call>|\Z)", re.DOTALL)
_FENCED = re.compile(r"```[ \t]*(?:(?:json|tool_call|tool_code)[ \t]*)?\n(?P<body>.*?)```", re.DOTALL)
_LLAMA_END = "</function>"
_LLAMA = re.compile(r"<function=(?P<name>[\w.-]+)>(?P<body>.*?)" + _LLAMA_END, re.DOTALL)
_MISTRAL = "[TOOL_CALLS]"
_MISTRAL_ARGS = re.compile(r"\s*(?P<name>[\w.-]+)\s*\[ARGS\]\s*")
_SPACES = re.compile(r"\s*")
# Markers looked at in one reply: each payload that fails to decode costs a pass over the text before it (the
# JSON error's line count), so a reply of 80,000 markers took 90 s on the event loop. A model writes one.
MAX_MISTRAL_MARKERS = 16

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
        except (ValueError, RecursionError):  # not JSON, or nested too deep to decode
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
    except (ValueError, RecursionError):  # not JSON, or nested too deep to decode
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
    pos = 0  # by index, never copying the rest
    for _ in range(MAX_MISTRAL_MARKERS):
        if (start := text.find(_MISTRAL, pos)) < 0:
            break
        out.append(text[pos:start])
        after = start + len(_MISTRAL)
        found, pos = _mistral_payload(text, after, tool_names)
        if not found:
            out.append(_MISTRAL)
            pos = after
            continue
        calls.extend(found)
    out.append(text[pos:])
    return "".join(out)


def _mistral_payload(text: str, after: int, tool_names: set[str]) -> tuple[list[ToolCall], int]:
    """The calls at `after` in `text` (right after a `[TOOL_CALLS]` marker) and where they end."""
    try:
        value, end = _DECODER.raw_decode(text, _SPACES.match(text, after).end())  # type: ignore[union-attr]
    except (ValueError, RecursionError):  # not JSON, or nested too deep to decode
        value, end = None, 0
    if value is not None:
        found = _calls_from_value(value, tool_names)
        return (found, end) if found else ([], 0)
    named = _MISTRAL_ARGS.match(text, after)
    if not named or named["name"] not in tool_names:
        return [], 0
    try:
        args, end = _DECODER.raw_decode(text, named.end())
    except (ValueError, RecursionError):  # not JSON, or nested too deep to decode
        return [], 0
    call = _call(named["name"], args, tool_names)
    return ([call], end) if call is not None else ([], 0)


def extract_text_tool_calls(text: str, tool_names: set[str]) -> tuple[str, list[ToolCall]]:
    """Find tool calls written as text; return the text without their markup, and the calls."""
    if not text or not tool_names:
        return text, []
    calls: list[ToolCall] = []
    rest = _replace_matches(text, _TAGGED, calls, lambda m: _calls_from_json(m["body"].strip(), tool_names))
    rest = _mistral(rest, tool_names, calls)

    def llama(match: re.Match[str]) -> list[ToolCall] | None:
        call = _call(match["name"], match["body"].strip(), tool_names)
        return [call] if call is not None else None

    # Searched only up to the last closing tag: each opening after it would scan to the end in vain (quadratic).
    cut = rest.rfind(_LLAMA_END)
    cut = cut + len(_LLAMA_END) if cut >= 0 else 0
    rest = _replace_matches(rest[:cut], _LLAMA, calls, llama) + rest[cut:]
    rest = _replace_matches(rest, _FENCED, calls, lambda m: _calls_from_json(m["body"].strip(), tool_names))
    if not calls:
        whole = _calls_from_json(text.strip(), tool_names) if text.strip()[:1] in "{[" else None
        if whole:
            return "", whole
        return text, []
    return re.sub(r"\n{3,}", "\n\n", rest).strip(), calls
