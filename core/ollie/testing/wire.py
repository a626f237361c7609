"""Render a scripted Reply as the bytes each vendor sends: OpenAI SSE, Anthropic SSE, Ollama NDJSON."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ollie.backend.types import Usage
from ollie.testing.reply import Reply

FORMATS = ("openai", "anthropic", "ollama")
UNEXPECTED = "scripted server: unexpected request"


@dataclass
class Rendered:
    """A streamed reply: content type, the frames (one per write), and the terminator frames."""

    content_type: str
    frames: list[bytes]
    terminator: list[bytes] = field(default_factory=list)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _usage_for(reply: Reply, request: dict[str, Any] | None) -> Usage:
    """The reply's usage, or a plausible one (about four characters a token)."""
    if reply.usage is not None:
        return reply.usage
    produced = len(reply.text) + len(reply.reasoning) + sum(len(_dumps(a)) for _, a in reply.tool_calls)
    return Usage(input_tokens=max(1, len(_dumps(request or {})) // 4), output_tokens=max(1, produced // 4))


def render_stream(fmt: str, reply: Reply, request: dict[str, Any] | None, *, model: str,
                  reasoning_field: str = "reasoning") -> Rendered:
    """The frames of a successful streamed reply in `fmt`."""
    if fmt == "openai":
        return _openai(reply, request or {}, model, reasoning_field)
    if fmt == "anthropic":
        return _anthropic(reply, request or {}, model)
    return _ollama(reply, request or {}, model)


def _openai(reply: Reply, request: dict[str, Any], model: str, reasoning_field: str) -> Rendered:
    head = {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": model, "system_fingerprint": "fp_scripted"}
    with_usage = bool((request.get("stream_options") or {}).get("include_usage"))

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        obj: dict[str, Any] = {
            **head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if with_usage:
            obj["usage"] = None
        return f"data: {_dumps(obj)}\n\n".encode()

    frames = [chunk({"role": "assistant", "content": "", "refusal": None})]
    frames += [chunk({reasoning_field: p}) for p in _pieces(reply.reasoning, reply.chunk_size)]
    frames += [chunk({"content": p}) for p in _pieces(reply.text, reply.chunk_size)]
    for index, (name, args) in enumerate(reply.tool_calls):
        arguments = args if isinstance(args, str) else _dumps(args)
        if reply.legacy_function_call:
            frames.append(chunk({"function_call": {"name": name, "arguments": ""}}))
            frames += [chunk({"function_call": {"arguments": p}}) for p in _pieces(arguments, reply.chunk_size)]
            break  # the legacy form carries a single call
        call_id = _call_id(reply, index, "call_")
        frames.append(chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                             "function": {"name": name, "arguments": ""}}]}))
        frames += [chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]})
                   for p in _pieces(arguments, reply.chunk_size)]
    finish = reply.stop_reason or ("content_filter" if reply.refused else "length" if reply.truncated else None) or (
        ("function_call" if reply.legacy_function_call else "tool_calls") if reply.tool_calls else "stop"
    )
    frames.append(chunk({}, finish))
    if with_usage:
        usage = _usage_for(reply, request)
        prompt = usage.input_tokens + usage.cached_input_tokens + usage.cache_creation_tokens
        raw: dict[str, Any] = {
            "prompt_tokens": prompt, "completion_tokens": usage.output_tokens,
            "total_tokens": prompt + usage.output_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cached_input_tokens, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": len(reply.reasoning) // 4, "audio_tokens": 0},
        }
        cost = reply.cost if reply.cost is not None else usage.cost
        if cost is not None:
            raw["cost"] = cost  # OpenRouter reports what the request cost
        final = {**head, "choices": [], "usage": raw}
        frames.append(f"data: {_dumps(final)}\n\n".encode())
    return Rendered("text/event-stream; charset=utf-8", frames, [b"data: [DONE]\n\n"])


def _anthropic(reply: Reply, request: dict[str, Any], model: str) -> Rendered:
    def event(name: str, data: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: {_dumps(data)}\n\n".encode()

    usage = _usage_for(reply, request)
    frames = [
        event("message_start", {"type": "message_start", "message": {
            "id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": usage.input_tokens,
                      "cache_creation_input_tokens": usage.cache_creation_tokens,
                      "cache_read_input_tokens": usage.cached_input_tokens, "output_tokens": 1}}}),
        event("ping", {"type": "ping"}),
    ]
    index = 0

    def block(start: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
        nonlocal index
        frames.append(event("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}))
        frames.extend(event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
                      for d in deltas)
        frames.append(event("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1

    if reply.reasoning:
        block({"type": "thinking", "thinking": "", "signature": ""},
              [{"type": "thinking_delta", "thinking": p} for p in _pieces(reply.reasoning, reply.chunk_size)]
              + [{"type": "signature_delta", "signature": f"sig-{uuid.uuid4().hex}"}])
    if reply.text:
        block({"type": "text", "text": ""},
              [{"type": "text_delta", "text": p} for p in _pieces(reply.text, reply.chunk_size)])
    for index, (name, args) in enumerate(reply.tool_calls):
        text = args if isinstance(args, str) else _dumps(args)
        block({"type": "tool_use", "id": _call_id(reply, index, "toolu_"), "name": name, "input": {}},
              [{"type": "input_json_delta", "partial_json": ""}]
              + [{"type": "input_json_delta", "partial_json": p} for p in _pieces(text, reply.chunk_size)])
    stop = reply.stop_reason or ("refusal" if reply.refused else "max_tokens" if reply.truncated
                                 else "tool_use" if reply.tool_calls else "end_turn")
    frames.append(event("message_delta", {"type": "message_delta",
                                          "delta": {"stop_reason": stop, "stop_sequence": None},
                                          "usage": {"output_tokens": usage.output_tokens}}))
    return Rendered("text/event-stream; charset=utf-8", frames, [event("message_stop", {"type": "message_stop"})])


def _call_id(reply: Reply, index: int, prefix: str) -> str:
    """The id of the reply's call `index`: the script's, else a fresh one of the vendor's form."""
    return reply.call_ids[index] if index < len(reply.call_ids) else f"{prefix}{uuid.uuid4().hex[:24]}"


def _ollama(reply: Reply, request: dict[str, Any], model: str) -> Rendered:
    def line(message: dict[str, Any], **extra: Any) -> bytes:
        stamp = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        obj = {"model": model, "created_at": stamp, "message": {"role": "assistant", "content": "", **message},
               "done": False, **extra}
        return (_dumps(obj) + "\n").encode()

    frames = [line({"content": "", "thinking": p}) for p in _pieces(reply.reasoning, reply.chunk_size)]
    frames += [line({"content": p}) for p in _pieces(reply.text, reply.chunk_size)]
    # Ollama sends each tool call whole (arguments as an object), one call per line.
    frames += [line({"tool_calls": [{"function": {"name": name, "arguments": args}}]})
               for name, args in reply.tool_calls]
    usage = _usage_for(reply, request)
    final = line({}, done=True, done_reason=reply.stop_reason or ("length" if reply.truncated else "stop"),
                 total_duration=1_000_000, load_duration=100_000, prompt_eval_count=usage.input_tokens,
                 prompt_eval_duration=200_000,
                 eval_count=usage.output_tokens, eval_duration=700_000)
    return Rendered("application/x-ndjson", frames, [final])


def error_body(fmt: str, reply: Reply, *, model: str) -> Any:
    """The vendor's real error body for the reply's status (or the body the script gave)."""
    if reply.body is not None:
        return reply.body
    kind = reply.error_kind or ("rate_limit" if reply.status == 429 else "server" if reply.status >= 500 else "status")
    return _ERROR_BODIES[fmt](kind, reply.status, model)


def stream_error_frame(fmt: str, reply: Reply, *, model: str) -> bytes:
    """The error a vendor sends inside an already-started 200 stream."""
    status = reply.stream_error or 500
    kind = "rate_limit" if status == 429 else "server"
    body = _ERROR_BODIES[fmt](kind, status, model)
    if fmt == "anthropic":
        return f"event: error\ndata: {_dumps(body)}\n\n".encode()
    if fmt == "ollama":
        return (_dumps(body) + "\n").encode()
    # OpenRouter's shape: a chunk that carries `error` and finish_reason "error".
    chunk = {"id": f"gen-{uuid.uuid4().hex[:16]}", "object": "chat.completion.chunk", "created": int(time.time()),
             "model": model, "error": {"code": status, "message": body["error"]["message"]},
             "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]}
    return f"data: {_dumps(chunk)}\n\n".encode()


def unexpected_body(fmt: str) -> Any:
    """The 500 body sent when a request arrives that the script did not expect."""
    return _ERROR_BODIES[fmt]("unexpected", 500, "")


def _openai_error(kind: str, status: int, model: str) -> Any:
    if kind == "no_tool_endpoints":
        return {"error": {"message": "No endpoints found that support tool use. To learn more about provider "
                                     "routing, visit: https://openrouter.ai/docs/provider-routing", "code": 404}}
    message, etype, param, code = {
        "rate_limit": (f"Rate limit reached for {model} in organization org-scripted on tokens per min (TPM): "
                       "Limit 30000, Used 30000, Requested 1200. Please try again in 2.4s. Visit "
                       "https://platform.openai.com/account/rate-limits to learn more.",
                       "tokens", None, "rate_limit_exceeded"),
        "server": ("The server had an error while processing your request. Sorry about that!",
                   "server_error", None, None),
        "context_overflow": ("This model's maximum context length is 128000 tokens. However, your messages "
                             "resulted in 130532 tokens. Please reduce the length of the messages.",
                             "invalid_request_error", "messages", "context_length_exceeded"),
        "tool_unsupported": (f"{model} does not support tools", "api_error", None, None),
        "unexpected": (UNEXPECTED, "server_error", None, None),
    }.get(kind, (f"scripted error {status}", "invalid_request_error", None, None))
    return {"error": {"message": message, "type": etype, "param": param, "code": code}}


def _anthropic_error(kind: str, status: int, model: str) -> Any:
    etype, message = {
        "rate_limit": ("rate_limit_error", "This request would exceed the rate limit for your organization of "
                       "50,000 input tokens per minute. For details, refer to: "
                       "https://docs.claude.com/en/api/rate-limits."),
        "server": ("overloaded_error", "Overloaded") if status == 529 else ("api_error", "Internal server error"),
        "context_overflow": ("invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"),
        "tool_unsupported": ("invalid_request_error", f"{model} does not support tool use"),
        "unexpected": ("api_error", UNEXPECTED),
    }.get(kind, ("invalid_request_error", f"scripted error {status}"))
    return {"type": "error", "error": {"type": etype, "message": message},
            "request_id": f"req_{uuid.uuid4().hex[:24]}"}


def _ollama_error(kind: str, status: int, model: str) -> Any:
    message = {
        "rate_limit": "server busy, please try again.  maximum pending requests exceeded",
        "server": "llama runner process has terminated: exit status 2",
        "context_overflow": "the input length exceeds the context length",
        "tool_unsupported": f"registry.ollama.ai/library/{model} does not support tools",
        "unexpected": UNEXPECTED,
    }.get(kind, f"scripted error {status}")
    return {"error": message}


_ERROR_BODIES = {"openai": _openai_error, "anthropic": _anthropic_error, "ollama": _ollama_error}


def fim_body(fmt: str, text: str, *, model: str) -> Any:
    """A fill-in-the-middle answer as the vendor sends it unstreamed: Ollama `/api/generate`, OpenAI `/v1/completions`."""
    if fmt == "ollama":
        return {"model": model, "created_at": "2025-01-01T00:00:00Z", "response": text, "done": True,
                "done_reason": "stop", "context": [1, 2, 3], "total_duration": 1_000_000, "load_duration": 1000,
                "prompt_eval_count": 10, "prompt_eval_duration": 1000, "eval_count": 5, "eval_duration": 1000}
    return {"id": "cmpl-scripted", "object": "text_completion", "created": 1_700_000_000, "model": model,
            "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def images_in(fmt: str, body: Any) -> list[tuple[str, bytes]]:
    """Every image a chat request carries, in order, as (media type, bytes); ValueError when one is not in the
    vendor's real shape (OpenAI `image_url` data URL, Anthropic base64 `image` block, Ollama `images`)."""
    import base64

    found: list[tuple[str, bytes]] = []
    for message in (body or {}).get("messages") or []:
        if fmt == "ollama":
            for data in message.get("images") or []:
                if not isinstance(data, str) or data.startswith("data:"):
                    raise ValueError("ollama: an entry of `images` must be bare base64")
                found.append(("", base64.b64decode(data, validate=True)))
            continue
        content = message.get("content")
        parts = content if isinstance(content, list) else []
        if fmt == "anthropic":  # a tool result's own images are blocks in its content
            parts = [inner for part in parts
                     for inner in ([part] + (part.get("content") if part.get("type") == "tool_result"
                                             and isinstance(part.get("content"), list) else []))]
        for part in parts:
            if fmt == "openai" and part.get("type") == "image_url" and message.get("role") != "user":
                raise ValueError(f"openai: image_url is only allowed in user messages, not {message.get('role')!r}")
            if fmt == "openai" and part.get("type") == "image_url":
                url = (part.get("image_url") or {}).get("url") or ""
                head, _, data = url.partition(",")
                if not (head.startswith("data:image/") and head.endswith(";base64")):
                    raise ValueError(f"openai: image_url.url must be a data:image/...;base64 URL, not {url[:40]!r}")
                found.append((head[5:-7], base64.b64decode(data, validate=True)))
            elif fmt == "anthropic" and part.get("type") == "image":
                source = part.get("source") or {}
                if source.get("type") != "base64" or not str(source.get("media_type", "")).startswith("image/"):
                    raise ValueError(f"anthropic: an image block needs a base64 source with media_type, not {source}")
                found.append((source["media_type"], base64.b64decode(source.get("data") or "", validate=True)))
    return found


def images_refused_body(fmt: str, model: str) -> tuple[int, Any]:
    """The status and body a vendor answers when a model without vision is sent an image."""
    if fmt == "openai":
        return 400, {"error": {"message": "Invalid content type. image_url is only supported by certain models.",
                               "type": "invalid_request_error", "param": "messages.[0].content.[1].type",
                               "code": None}}
    if fmt == "ollama":
        return 500, {"error": "this model is missing data required for image input"}
    return 400, {"type": "error", "error": {"type": "invalid_request_error",
                                            "message": f"{model} does not support image input"},
                 "request_id": f"req_{uuid.uuid4().hex[:24]}"}
