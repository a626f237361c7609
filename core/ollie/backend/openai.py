"""OpenAI-compatible chat completions (`/v1/chat/completions`): OpenAI, OpenRouter, local servers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import replace
from typing import Any

from ollie.backend.errors import BackendError, BackendUnreachableError
from ollie.backend.fim import FIM_TEMPERATURE, chat_fill
from ollie.backend.framing import SSEEvent
from ollie.backend.settings import SPECS, BackendSpec
from ollie.backend.stream import HTTPBackend
from ollie.backend.types import GenerationParams, Image, Message, StreamEvent, Tool, ToolCall, Usage
from ollie.backend.urls import shown_url

# GenerationParams fields sent under their own names.
_PARAMS = ("max_tokens", "max_completion_tokens", "temperature", "top_p", "frequency_penalty", "presence_penalty",
           "stop", "reasoning_effort", "verbosity")
# Parameters only OpenRouter understands; a strict OpenAI endpoint rejects them.
_OPENROUTER_ONLY = ("top_k", "min_p", "top_a", "repetition_penalty")
# OpenRouter shows these on its leaderboards and in its logs.
_OPENROUTER_HEADERS = {"HTTP-Referer": "https://github.com/ollie-agent/ollie", "X-Title": "ollie"}


class OpenAIBackend(HTTPBackend):
    """Streams from any `/chat/completions` endpoint; `base_url` ends with `/v1` (or `/api/v1`)."""

    def __init__(self, *, model: str, base_url: str = "https://api.openai.com/v1", api_key: str = "", name: str = "",
                 spec: BackendSpec = SPECS["openai"], **options: Any) -> None:
        """`options`: HTTPBackend's (timeout, limits)."""
        self.openrouter = "openrouter" in (name, spec.name) or "openrouter.ai" in base_url
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        headers.update(_OPENROUTER_HEADERS if self.openrouter else {})
        super().__init__(spec=spec, name=name, model=model, base_url=base_url, headers=headers, **options)
        self._no_fim = False  # the server answered /completions with an error: chat prompts from then on
        self._models: list[dict[str, Any]] | None = None

    def build_request(self, messages: list[Message], tools: list[Tool], params: GenerationParams) -> dict[str, Any]:
        """The JSON body for one streamed completion."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [_wire_message(m) for m in tool_images_as_user(messages)],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            body["tools"] = function_tools(tools)
        body.update(self._wire_params(params))
        if self.openrouter and (self.model.startswith("anthropic/") or "claude" in self.model.lower()):
            _mark_cache_points(body)
        return body

    def _wire_params(self, params: GenerationParams) -> dict[str, Any]:
        keys = _PARAMS + _OPENROUTER_ONLY if self.openrouter else _PARAMS
        out: dict[str, Any] = {key: value for key in keys if (value := getattr(params, key)) is not None}
        if params.response_format:
            out["response_format"] = {"type": params.response_format}
        if self.openrouter:
            if params.include_reasoning is not None:
                out["include_reasoning"] = params.include_reasoning
            if params.reasoning is not None:
                out["reasoning"] = {"max_tokens": params.reasoning}
            out["usage"] = {"include": True}  # ask OpenRouter to report the cost
        return out

    async def _events(self, body: dict[str, Any]) -> AsyncGenerator[StreamEvent, None]:
        """Stream one completion: content/reasoning deltas, then a done event with calls and usage."""
        calls: dict[int, dict[str, str]] = {}  # the streamed tool calls by their `index`
        usage: Usage | None = None
        stop_reason = ""
        # `[DONE]` is no JSON: skipped (it is the last frame anyway).
        async with aclosing(self._stream_json(
            "/chat/completions", body, framing="sse", is_terminator=_is_done, skip=_is_done,
        )) as chunks:
            async for chunk in chunks:
                if chunk.get("usage"):
                    usage = _usage(chunk["usage"])
                for choice in chunk.get("choices") or []:
                    delta = choice.get("delta") or {}
                    reasoning = delta.get("reasoning") or delta.get("reasoning_content") or ""
                    content = delta.get("content") or ""
                    if reasoning or content:
                        yield StreamEvent(content=content, reasoning=reasoning)
                    for part in delta.get("tool_calls") or []:
                        _add_call(calls, part)
                    if delta.get("function_call"):  # the deprecated single call: one at index 0
                        _add_call(calls, {"index": 0, "function": delta["function_call"]})
                    if choice.get("finish_reason"):
                        # The engine's names: "refusal" (content_filter: the vendor withheld the reply) and
                        # "max_tokens" (length: cut at the output token limit).
                        finish = choice["finish_reason"]
                        stop_reason = {"content_filter": "refusal", "length": "max_tokens"}.get(finish) or finish
        tool_calls = [ToolCall(id=c["id"] or f"call_{index}", name=c["name"], arguments=c["arguments"] or "{}")
                      for index, c in sorted(calls.items())]  # a missing id gets a positional one
        yield StreamEvent(done=True, tool_calls=tool_calls, usage=usage, stop_reason=stop_reason)

    async def _model_list(self) -> list[dict[str, Any]]:
        if self._models is not None:
            return self._models
        # One GET /models for all who ask one endpoint at once: a first turn's context length and ACP's model
        # picker, and every session started together (50 sessions' first turns sent 50: ~2 ms of the loop each).
        # Shielded: a caller that gives up (a timeout) does not cancel it for the others. A failure is asked again.
        key = (asyncio.get_running_loop(), self.base_url, *self._client.headers.items())
        listing = _listings.get(key)
        if listing is None:
            listing = _listings[key] = asyncio.ensure_future(self._fetch_models())
            listing.add_done_callback(lambda t: (_listings.pop(key, None), t.cancelled() or t.exception()))
        try:
            models = await asyncio.shield(listing)
        except RuntimeError:  # the session that asked first closed its client meanwhile: ask with ours
            models = await self._fetch_models()
        self._models = models
        return models

    async def _fetch_models(self) -> list[dict[str, Any]]:
        try:
            data = await self._request_json("GET", "/models")
        except BackendError as exc:
            if exc.status == 404:
                await self._no_api_here(exc)
            raise
        return [m for m in (data.get("data") or []) if isinstance(m, dict)]

    async def _no_api_here(self, missed: BackendError) -> None:
        """A URL written without its /v1 (a 404 on /models passed for a server without a model list, and each turn
        failed on one): BackendUnreachableError naming the URL to set, when the API answers there."""
        if self.base_url.endswith("/v1") or "?" in self.base_url:
            return
        try:
            await self._request_json("GET", "/v1/models")
        except BackendError:
            return
        raise BackendUnreachableError(f"{self.said}: HTTP 404 at {shown_url(self.base_url)}",
                                      hint=f"set {self.spec.url_var}={shown_url(self.base_url)}/v1 (the API answers "
                                           "there)") from missed

    async def fill_in_middle(self, prefix: str, suffix: str, *, max_tokens: int = 128) -> str:
        """`/completions` with `suffix` (llama.cpp, vLLM, Mistral-style servers); a server without it (a 400 or
        404) gets the chat prompt instead, from then on."""
        if not self._no_fim:
            body = {"model": self.model, "prompt": prefix, "suffix": suffix, "max_tokens": max_tokens,
                    "temperature": FIM_TEMPERATURE, "stream": False}
            try:
                data = await self._request_json("POST", "/completions", body)
            except BackendError as exc:
                if exc.status not in (400, 404, 405, 501):
                    raise
                self._no_fim = True
            else:
                choices = data.get("choices") if isinstance(data, dict) else None
                first = choices[0] if isinstance(choices, list) and choices else {}
                return str(first.get("text") or "") if isinstance(first, dict) else ""
        return await chat_fill(self.stream, prefix, suffix, max_tokens=max_tokens)

    async def list_models(self) -> list[str]:
        """Model ids from `/models`."""
        return [str(m.get("id")) for m in await self._model_list()]

    async def _entry(self) -> dict[str, Any]:
        """The current model's entry in `/models` ({} when it has none)."""
        return next((e for e in await self._model_list() if e.get("id") == self.model), {})

    async def _lookup_vision(self) -> bool | None:
        """OpenRouter's `/models` lists each model's input modalities; plain OpenAI and local servers do not say."""
        modalities = ((await self._entry()).get("architecture") or {}).get("input_modalities")
        return "image" in modalities if isinstance(modalities, list) else None

    async def _lookup_context_length(self) -> int | None:
        """The model's window from `/models` (OpenRouter `context_length`, vLLM `max_model_len`, llama.cpp `n_ctx_train`)."""
        entry = await self._entry()
        for value in (entry.get("context_length"), entry.get("max_model_len"),
                      (entry.get("top_provider") or {}).get("context_length"), (entry.get("meta") or {}).get("n_ctx_train")):
            if isinstance(value, int) and value > 0:
                return value
        return None


# The GET /models of each endpoint (loop, URL, headers) in flight now: see OpenAIBackend._model_list.
_listings: dict[tuple[Any, ...], asyncio.Future[list[dict[str, Any]]]] = {}


def function_tools(tools: list[Tool]) -> list[dict[str, Any]]:
    """Tools in OpenAI's `{"type": "function", "function": {...}}` shape (Ollama takes it too)."""
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in tools
    ]


def _mark_cache_points(body: dict[str, Any]) -> None:
    """Claude through OpenRouter caches only where asked: the system prompt and the last tool (as Anthropic's own)."""
    ephemeral = {"type": "ephemeral"}
    for message in body["messages"]:
        if message["role"] == "system" and isinstance(message["content"], str) and message["content"]:
            message["content"] = [{"type": "text", "text": message["content"], "cache_control": ephemeral}]
    if body.get("tools"):
        body["tools"][-1]["cache_control"] = ephemeral


def _is_done(frame: SSEEvent) -> bool:
    data = frame.data
    return data[:1] != "{" and data.strip() == "[DONE]"  # called twice per frame: a JSON object is out at once


def _usage(raw: dict[str, Any]) -> Usage:
    """OpenAI counts cached tokens inside prompt_tokens; ollie's `input_tokens` excludes them."""
    cached = int(((raw.get("prompt_tokens_details") or {}).get("cached_tokens")) or 0)
    cost = raw.get("cost")
    return Usage(
        input_tokens=max(0, int(raw.get("prompt_tokens") or 0) - cached),
        output_tokens=int(raw.get("completion_tokens") or 0),
        cached_input_tokens=cached,
        cost=float(cost) if isinstance(cost, (int, float)) else None,
    )


def tool_images_as_user(messages: list[Message]) -> list[Message]:
    """`messages` with tool results' images moved into a user message after their run of results: chat APIs of
    this shape (OpenAI's, Ollama's) take images in user messages only, and a tool message must follow its call."""
    if not any(m.images for m in messages if m.role == "tool"):
        return messages
    out: list[Message] = []
    held: list[tuple[str, list[Image]]] = []  # (tool name and call id, images) of the run of results so far
    for message in [*messages, None]:
        if held and (message is None or message.role != "tool"):
            names = ", ".join(name for name, _ in held)
            out.append(Message("user", f"[ollie: the images the tool results above returned ({names}), in order]",
                               images=[image for _, images in held for image in images]))
            held = []
        if message is None:
            break
        if message.role == "tool" and message.images:
            held.append((f"{message.name} {message.tool_call_id}", message.images))
            message = replace(message, images=[])
        out.append(message)
    return out


def _wire_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.images:  # a vision model's parts: the text, then each image as a data: URL
        out["content"] = [{"type": "text", "text": message.content}] + [
            {"type": "image_url", "image_url": {"url": f"data:{i.mime};base64,{i.data}"}} for i in message.images
        ]
    if message.role == "assistant" and message.tool_calls:
        out["content"] = message.content or None
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
    return out


def _add_call(calls: dict[int, dict[str, str]], part: dict[str, Any]) -> None:
    """Fold one streamed `tool_calls` fragment into the call at its `index`."""
    call = calls.setdefault(part.get("index", len(calls)), {"id": "", "name": "", "arguments": ""})
    call["id"] = part.get("id") or call["id"]
    function = part.get("function") or {}
    call["name"] += function.get("name") or ""
    args = function.get("arguments") or ""
    # An object (some servers'): unescaped, a lone surrogate in it stays one that ollie.backend.surrogates sees.
    call["arguments"] += args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
