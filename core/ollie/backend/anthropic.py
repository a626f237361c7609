"""Anthropic Messages API (`/v1/messages`): thinking, tool_use blocks, prompt caching."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from ollie.backend.settings import SPECS, BackendSpec
from ollie.backend.stream import HTTPBackend
from ollie.backend.types import GenerationParams, Image, Message, StreamEvent, Tool, ToolCall, Usage

ANTHROPIC_VERSION = "2023-06-01"
MIN_THINKING_BUDGET = 1024
DEFAULT_MAX_TOKENS = 8192  # a request's output cap when the agent sets none (the API requires one)
_EPHEMERAL = {"type": "ephemeral"}


class AnthropicBackend(HTTPBackend):
    """Streams from `/v1/messages`; `base_url` is the host root (a trailing `/v1` is accepted)."""

    # Every current Claude model has a 200k window, and the API does not say: the default is the answer.
    default_context_length = 200_000

    def __init__(self, *, model: str, api_key: str, base_url: str = "https://api.anthropic.com",
                 spec: BackendSpec = SPECS["anthropic"], **options: Any) -> None:
        """`options`: HTTPBackend's (name, timeout, limits)."""
        headers = {"x-api-key": api_key, "anthropic-version": ANTHROPIC_VERSION}
        super().__init__(spec=spec, model=model, base_url=base_url.rstrip("/").removesuffix("/v1"), headers=headers,
                         **options)

    def build_request(self, messages: list[Message], tools: list[Tool], params: GenerationParams) -> dict[str, Any]:
        """The JSON body for one streamed message."""
        system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": params.max_tokens or params.max_completion_tokens or DEFAULT_MAX_TOKENS,
            "messages": _wire_messages([m for m in messages if m.role != "system"]),
            "stream": True,
        }
        if system:
            body["system"] = [{"type": "text", "text": system}]
        if tools:
            body["tools"] = [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools]
        thinking = params.reasoning is not None and params.reasoning > 0
        if thinking:
            budget = max(MIN_THINKING_BUDGET, int(params.reasoning or 0))
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
            # max_tokens must exceed the thinking budget.
            if body["max_tokens"] <= budget:
                body["max_tokens"] = budget + DEFAULT_MAX_TOKENS
        # Extended thinking rejects a custom temperature and top_k.
        if params.temperature is not None and not thinking:
            body["temperature"] = params.temperature
        if params.top_k is not None and not thinking:
            body["top_k"] = params.top_k
        if params.top_p is not None:
            body["top_p"] = params.top_p
        if params.stop:
            body["stop_sequences"] = params.stop
        _mark_cache_points(body)
        return body

    async def _events(self, body: dict[str, Any]) -> AsyncGenerator[StreamEvent, None]:
        """Stream one message: text/thinking deltas, then a done event with tool calls and usage."""
        blocks: dict[int, dict[str, Any]] = {}
        usage = Usage()
        stop_reason = ""
        signature = ""
        async with aclosing(self._stream_json(
            "/v1/messages", body, framing="sse",
            is_terminator=lambda frame: frame.event == "message_stop" or '"type":"message_stop"' in frame.data.replace(" ", ""),
            skip=lambda frame: not frame.data or frame.event == "ping",
        )) as events:
            async for data in events:
                kind = data.get("type")
                if kind == "message_start":
                    _update_usage(usage, (data.get("message") or {}).get("usage") or {})
                elif kind == "content_block_start":
                    blocks[data.get("index", len(blocks))] = dict(data.get("content_block") or {}, partial_json="")
                elif kind == "content_block_delta":
                    delta = data.get("delta") or {}
                    block = blocks.setdefault(data.get("index", 0), {"type": "text", "partial_json": ""})
                    dtype = delta.get("type")
                    if dtype == "text_delta" and delta.get("text"):
                        yield StreamEvent(content=delta["text"])
                    elif dtype == "thinking_delta" and delta.get("thinking"):
                        yield StreamEvent(reasoning=delta["thinking"])
                    elif dtype == "signature_delta":
                        signature += delta.get("signature") or ""
                    elif dtype == "input_json_delta":
                        block["partial_json"] += delta.get("partial_json") or ""
                elif kind == "message_delta":
                    stop_reason = (data.get("delta") or {}).get("stop_reason") or stop_reason
                    _update_usage(usage, data.get("usage") or {})
        calls = [
            ToolCall(id=b.get("id", ""), name=b.get("name", ""), arguments=_arguments(b))
            for _, b in sorted(blocks.items())
            if b.get("type") == "tool_use"
        ]
        yield StreamEvent(done=True, tool_calls=calls, usage=usage, stop_reason=stop_reason,
                          reasoning_signature=signature)

    async def _lookup_vision(self) -> bool | None:
        return True  # every current Claude model reads images

    async def list_models(self) -> list[str]:
        """Model ids from `/v1/models`."""
        data = await self._request_json("GET", "/v1/models?limit=1000")
        return [str(m.get("id")) for m in data.get("data") or [] if isinstance(m, dict)]


def _arguments(block: dict[str, Any]) -> str:
    if block.get("partial_json"):
        return block["partial_json"]
    # Unescaped: a lone surrogate in the input stays one that ollie.backend.surrogates sees (an escape reached the tool).
    return json.dumps(block.get("input") or {}, ensure_ascii=False)


def _update_usage(usage: Usage, raw: dict[str, Any]) -> None:
    """Anthropic's counts are cumulative; later events overwrite earlier ones field by field."""
    for field, key in (
        ("input_tokens", "input_tokens"),
        ("output_tokens", "output_tokens"),
        ("cached_input_tokens", "cache_read_input_tokens"),
        ("cache_creation_tokens", "cache_creation_input_tokens"),
    ):
        if isinstance(raw.get(key), int):
            setattr(usage, field, raw[key])


def _image_block(image: Image) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": image.mime, "data": image.data}}


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        if not message.images:
            return [{"type": "tool_result", "tool_use_id": message.tool_call_id, "content": message.content}]
        # A result's images go in its own content, after its text (Anthropic reads images in tool results).
        content = [{"type": "text", "text": message.content or "(images)"}, *map(_image_block, message.images)]
        return [{"type": "tool_result", "tool_use_id": message.tool_call_id, "content": content}]
    blocks: list[dict[str, Any]] = []
    if message.role == "assistant" and message.reasoning and message.reasoning_signature:
        blocks.append({"type": "thinking", "thinking": message.reasoning, "signature": message.reasoning_signature})
    # Images before their text, as Anthropic advises.
    blocks.extend(map(_image_block, message.images))
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls if message.role == "assistant" else []:
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments_object()})
    return blocks


def _wire_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Tool results travel as user blocks; consecutive same-role messages merge (the API alternates)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def _mark_cache_points(body: dict[str, Any]) -> None:
    """Cache breakpoints on the system prompt, the last tool and the last message (3 of the 4 allowed)."""
    if body.get("system"):
        body["system"][-1]["cache_control"] = _EPHEMERAL
    if body.get("tools"):
        body["tools"][-1]["cache_control"] = _EPHEMERAL
    if body["messages"]:
        for block in reversed(body["messages"][-1]["content"]):
            if block.get("type") not in ("thinking", "redacted_thinking"):
                block["cache_control"] = _EPHEMERAL
                break
