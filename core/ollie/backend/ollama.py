"""Ollama (`/api/chat`, NDJSON): local models, no key."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from ollie.backend.fim import FIM_TEMPERATURE
from ollie.backend.openai import function_tools, tool_images_as_user
from ollie.backend.settings import SPECS, BackendSpec
from ollie.backend.stream import HTTPBackend
from ollie.backend.types import GenerationParams, Message, StreamEvent, Tool, ToolCall, Usage

# GenerationParams field -> Ollama `options` key.
_OPTIONS = {
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "min_p": "min_p",
    "frequency_penalty": "frequency_penalty",
    "presence_penalty": "presence_penalty",
    "repetition_penalty": "repeat_penalty",
    "stop": "stop",
}


class OllamaBackend(HTTPBackend):
    """Streams from a local or remote Ollama server."""

    def __init__(self, *, model: str, base_url: str = "http://localhost:11434", spec: BackendSpec = SPECS["ollama"],
                 **options: Any) -> None:
        """`options`: HTTPBackend's (name, timeout, limits)."""
        super().__init__(spec=spec, model=model, base_url=base_url, **options)
        # What `/api/show` said of each model: (takes images, trained window). Kept, not the answer: that holds the
        # model's template, license and parameters (tens of KB).
        self._shown: dict[str, tuple[bool | None, int | None]] = {}

    def build_request(self, messages: list[Message], tools: list[Tool], params: GenerationParams) -> dict[str, Any]:
        """The JSON body for one streamed chat."""
        body: dict[str, Any] = {"model": self.model, "stream": True,
                                "messages": [_wire_message(m) for m in tool_images_as_user(messages)]}
        if tools:
            body["tools"] = function_tools(tools)
        options = {key: getattr(params, field) for field, key in _OPTIONS.items() if getattr(params, field) is not None}
        limit = params.max_tokens or params.max_completion_tokens
        if limit:
            options["num_predict"] = limit
        if options:
            body["options"] = options
        if params.reasoning_effort:
            body["think"] = params.reasoning_effort  # gpt-oss style levels: low / medium / high
        elif params.include_reasoning is not None:
            body["think"] = params.include_reasoning
        elif params.reasoning:
            body["think"] = True
        if params.response_format == "json_object":
            body["format"] = "json"
        return body

    async def _events(self, body: dict[str, Any]) -> AsyncGenerator[StreamEvent, None]:
        """Stream one chat: content/thinking deltas, then a done event with tool calls and usage."""
        calls: list[ToolCall] = []
        async with aclosing(self._stream_json(
            "/api/chat", body, framing="ndjson", is_terminator=_is_done,
        )) as objects:
            async for obj in objects:
                message = obj.get("message") or {}
                if message.get("content") or message.get("thinking"):
                    yield StreamEvent(content=message.get("content") or "", reasoning=message.get("thinking") or "")
                # Arguments as an object: written back unescaped, so a lone surrogate in them is one that
                # ollie.backend.surrogates sees (an escape of it got to the tool).
                for raw in message.get("tool_calls") or []:
                    function = raw.get("function") or {}
                    args = function.get("arguments", {})
                    calls.append(ToolCall(
                        id=raw.get("id") or f"call_{len(calls)}",
                        name=function.get("name", ""),
                        arguments=args if isinstance(args, str) else json.dumps(args, ensure_ascii=False),
                    ))
                if obj.get("done") is True:
                    usage = Usage(
                        input_tokens=int(obj.get("prompt_eval_count") or 0),
                        output_tokens=int(obj.get("eval_count") or 0),
                    )
                    # Ollama's "length" (cut at num_predict) is the engine's "max_tokens".
                    reason = str(obj.get("done_reason") or "")
                    yield StreamEvent(done=True, tool_calls=calls, usage=usage,
                                      stop_reason="max_tokens" if reason == "length" else reason)

    async def fill_in_middle(self, prefix: str, suffix: str, *, max_tokens: int = 128) -> str:
        """Ollama's own fill-in-the-middle: `/api/generate` with `suffix` (the model's template places it)."""
        body = {"model": self.model, "prompt": prefix, "suffix": suffix, "stream": False,
                "options": {"num_predict": max_tokens, "temperature": FIM_TEMPERATURE}}
        data = await self._request_json("POST", "/api/generate", body)
        return str(data.get("response") or "") if isinstance(data, dict) else ""

    async def list_models(self) -> list[str]:
        """Installed models from `/api/tags`."""
        data = await self._request_json("GET", "/api/tags")
        return [str(m.get("name") or m.get("model")) for m in data.get("models") or [] if isinstance(m, dict)]

    async def _lookup_vision(self) -> bool | None:
        """Whether `/api/show` lists "vision" in the model's capabilities (since Ollama 0.6)."""
        return (await self._show())[0]

    async def _lookup_context_length(self) -> int | None:
        """The model's trained window from `/api/show` (`<arch>.context_length`)."""
        return (await self._show())[1]

    async def _show(self) -> tuple[bool | None, int | None]:
        """What `/api/show` says of the current model, asked once per model (a failure is asked again)."""
        model = self.model
        if model not in self._shown:
            data = await self._request_json("POST", "/api/show", {"model": model})
            self._shown[model] = _shown(data if isinstance(data, dict) else {})
        return self._shown[model]


def _shown(data: dict[str, Any]) -> tuple[bool | None, int | None]:
    """(takes images, trained window) of one `/api/show` answer; None where it does not say."""
    capabilities = data.get("capabilities")
    info = data.get("model_info") or {}
    windows = (v for k, v in info.items() if k.endswith(".context_length") and isinstance(v, int) and v > 0)
    return ("vision" in capabilities if isinstance(capabilities, list) else None), next(windows, None)


def _is_done(obj: object) -> bool:
    return isinstance(obj, dict) and obj.get("done") is True


def _wire_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "content": message.content, "tool_name": message.name}
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.images:  # Ollama takes a message's images as bare base64 strings
        out["images"] = [i.data for i in message.images]
    if message.role == "assistant" and message.tool_calls:
        out["tool_calls"] = [  # Ollama wants the arguments as an object, not a JSON string
            {"function": {"name": c.name, "arguments": c.arguments_object()}} for c in message.tool_calls
        ]
    return out
