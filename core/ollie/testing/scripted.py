"""ScriptedLLMServer: a real HTTP server on 127.0.0.1 that replays scripted model replies."""

from __future__ import annotations

import asyncio
import collections
import http
import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Self

from ollie.backend.settings import SPECS
from ollie.testing.reply import Reply, as_reply
from ollie.testing.wire import (
    FORMATS,
    UNEXPECTED,
    error_body,
    fim_body,
    images_in,
    images_refused_body,
    render_stream,
    stream_error_frame,
    unexpected_body,
)

CHAT_PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages", "ollama": "/api/chat"}
# Fill-in-the-middle (inline completions): a prompt and a suffix, one JSON answer. Anthropic has none.
FIM_PATHS = {"openai": "/v1/completions", "ollama": "/api/generate"}
DUMMY_KEYS = {"openai": "sk-scripted-0000", "anthropic": "sk-ant-scripted-0000"}


@dataclass
class RecordedRequest:
    """One request as the server saw it; `body` is the parsed JSON (None when there was none)."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any
    raw: bytes


class ScriptedLLMServer:
    """Speaks the OpenAI, Anthropic or Ollama wire format and answers chat requests from a script.

    Runs in its own thread and event loop, so sync and async tests (and other
    processes, via `env()`) can use it. Fails loudly through `assert_done()`.
    """

    def __init__(
        self,
        fmt: str = "openai",
        *,
        model: str = "scripted-model",
        models: dict[str, int] | None = None,
        context_length: int = 32_768,
        reasoning_field: str = "reasoning",
        host: str = "127.0.0.1",
        port: int = 0,
        vision: bool = True,
        says_vision: bool = True,
        text_models: Iterable[str] = (),
    ) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
        self.fmt = fmt
        self.model = model
        self.models = dict(models) if models else {model: context_length}
        self._models_at_start = dict(self.models)
        self.reasoning_field = reasoning_field
        # Whether the model takes images (without: the vendor's real refusal), and whether the model listing
        # says so (OpenRouter's `architecture.input_modalities`, Ollama's `capabilities`).
        self.vision = vision
        self.says_vision = says_vision
        # Models listed beside `model` that take no images, the listing saying nothing of it: the vendor's refusal
        # decides (a test switches to one with /model).
        self.text_models = frozenset(text_models)
        for name in self.text_models:
            self.models.setdefault(name, context_length)
        self.host = host
        self._port = port
        self._replies: collections.deque[Reply] = collections.deque()
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.failures: list[str] = []
        # Requests whose client closed the connection before the (delayed) answer: a cancelled completion.
        self.aborted: list[RecordedRequest] = []
        self.finished_replies = 0
        # Cleared, the model list (GET /v1/models, /api/tags) is answered only once it is set again: a slow one.
        self.models_gate = threading.Event()
        self.models_gate.set()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        # Called with each request as it arrives (the command line prints them: a failed e2e run's log lists them).
        self.on_request: Callable[[RecordedRequest], None] | None = None

    # -- public API -------------------------------------------------------

    @property
    def url(self) -> str:
        """The base URL a backend is pointed at (OpenAI's ends with /v1)."""
        if self._thread is None:
            raise RuntimeError("ScriptedLLMServer: start() it before asking for its url")
        base = f"http://{self.host}:{self._port}"
        return base + "/v1" if self.fmt == "openai" else base

    def env(self, *, backend: str | None = None, approval: str = "auto") -> dict[str, str]:
        """OLLIE_* variables pointing a daemon or Core at this server (`backend="openrouter"` for that flavour).

        A scripted model runs unattended, so its steps run without approval questions unless `approval`
        says otherwise (`"ask"` to test them; `""` for the agent's own default).
        """
        spec = SPECS[self.fmt]
        env = {"OLLIE_BACKEND": backend or self.fmt, "OLLIE_MODEL": self.model, spec.url_var: self.url,
               "OLLIE_APPROVAL": approval}
        if spec.key_var:
            env[spec.key_var] = DUMMY_KEYS[self.fmt]
        return env

    def script(self, *replies: Reply | dict[str, Any] | str) -> ScriptedLLMServer:
        """Append replies; each chat request takes the next one."""
        converted = [as_reply(r) for r in replies]
        with self._lock:
            self._replies.extend(converted)
        return self

    @property
    def pending(self) -> int:
        """Replies not yet served."""
        with self._lock:
            return len(self._replies)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """Only the chat requests (not model-list look-ups)."""
        return [r for r in list(self.requests) if r.path == CHAT_PATHS[self.fmt]]

    def images(self, request: RecordedRequest) -> list[tuple[str, bytes]]:
        """The images a recorded chat request carried, as (media type, bytes); Ollama's have no media type."""
        return images_in(self.fmt, request.body)

    @property
    def fim_requests(self) -> list[RecordedRequest]:
        """Only the fill-in-the-middle requests (`prompt` and `suffix` in their bodies)."""
        path = FIM_PATHS.get(self.fmt)
        return [r for r in list(self.requests) if r.path == path]

    def assert_done(self) -> None:
        """Raise AssertionError when replies are left over or a request came that the script did not expect."""
        problems = list(self.failures)
        with self._lock:
            if self._replies:
                problems.append(f"{len(self._replies)} scripted repl(ies) never requested: {list(self._replies)}")
        if problems:
            raise AssertionError(f"ScriptedLLMServer({self.fmt}): " + "; ".join(problems))

    def reset(self) -> None:
        """Forget the script, the requests and any change to the model list (one server serving test after test)."""
        with self._lock:
            self._replies.clear()
        self.requests.clear()
        self.failures.clear()
        self.aborted.clear()
        self.finished_replies = 0
        self.models = dict(self._models_at_start)
        self.models_gate.set()

    def start(self) -> Self:
        """Listen on 127.0.0.1 (ephemeral port) in a background thread."""
        if self._thread is not None:
            return self
        ready = threading.Event()
        failure: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, args=(ready, failure), name="scripted-llm", daemon=True)
        self._thread.start()
        ready.wait(10)
        if failure:
            self._thread = None
            raise failure[0]
        return self

    def stop(self) -> None:
        """Close every connection and the listener; join the thread."""
        if self._thread is None or self._loop is None:
            return
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._shutdown)
        self._thread.join(10)
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return await asyncio.to_thread(self.start)

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop)

    # -- the server thread ----------------------------------------------------

    def _run(self, ready: threading.Event, failure: list[BaseException]) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)  # this thread's own loop
        self._loop = loop
        try:
            self._server = loop.run_until_complete(asyncio.start_server(self._handle, self.host, self._port))
            self._port = self._server.sockets[0].getsockname()[1]
        except BaseException as exc:  # noqa: BLE001 - handed to the caller of start()
            failure.append(exc)
            ready.set()
            loop.close()
            return
        ready.set()
        try:
            loop.run_forever()
        finally:
            tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in tasks:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            asyncio.set_event_loop(None)
            loop.close()

    def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        assert self._loop is not None
        self._loop.stop()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    break
                self.requests.append(request)
                if self.on_request:
                    self.on_request(request)
                if not await self._respond(request, writer, reader):
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        except asyncio.CancelledError:
            # Shutdown cancels idle keep-alive connections; ending quietly keeps
            # Python 3.11's StreamReaderProtocol from logging the cancellation.
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _respond(self, request: RecordedRequest, writer: asyncio.StreamWriter,
                       reader: asyncio.StreamReader) -> bool:
        """Answer one request; False when the connection must close afterwards."""
        route = (request.method, request.path)
        if route == ("POST", CHAT_PATHS[self.fmt]):
            return await self._chat(request, writer)
        if route == ("POST", FIM_PATHS.get(self.fmt)):
            return await self._fim(request, writer, reader)
        if (self.fmt in ("openai", "anthropic") and route == ("GET", "/v1/models")
                or self.fmt == "ollama" and route == ("GET", "/api/tags")):
            await asyncio.to_thread(self.models_gate.wait, 60)
            return await _send_json(writer, 200, self._model_list())
        if self.fmt == "ollama" and route == ("POST", "/api/show"):
            return await self._ollama_show(request, writer)
        if self.fmt == "ollama" and route == ("GET", "/"):
            return await _send(writer, 200, b"Ollama is running", "text/plain; charset=utf-8")
        self.failures.append(f"{UNEXPECTED}: {request.method} {request.path} is not a {self.fmt} endpoint")
        return await _send_json(writer, 404, unexpected_body(self.fmt))

    def _next_reply(self, request: str) -> Reply | None:
        """The script's next reply; None, a failure noted, once it ran out."""
        with self._lock:
            reply = self._replies.popleft() if self._replies else None
        if reply is None:
            self.failures.append(f"{UNEXPECTED}: {request} after the script ran out")
        return reply

    async def _chat(self, request: RecordedRequest, writer: asyncio.StreamWriter) -> bool:
        if (reply := self._next_reply(f"chat request #{len(self.chat_requests)}")) is None:
            return await _send_json(writer, 500, unexpected_body(self.fmt))
        model = (request.body or {}).get("model") or self.model
        try:
            carried = images_in(self.fmt, request.body)
        except ValueError as exc:
            self.failures.append(f"chat request #{len(self.chat_requests)}: malformed image: {exc}")
            return await _send_json(writer, 400, unexpected_body(self.fmt))
        if carried and not self._sees(model):  # the reply stays scripted for the next request
            with self._lock:
                self._replies.appendleft(reply)
            status, body = images_refused_body(self.fmt, model)
            return await _send_json(writer, status, body)
        if reply.is_error:
            self.finished_replies += 1
            return await _send_json(writer, reply.status, error_body(self.fmt, reply, model=model), reply.headers)
        rendered = render_stream(self.fmt, reply, request.body, model=model, reasoning_field=self.reasoning_field)
        frames = rendered.frames
        if reply.drop_after is not None:
            frames = frames[: reply.drop_after]
            if reply.stream_error is not None:
                frames = frames + [stream_error_frame(self.fmt, reply, model=model)]
        else:
            frames = frames + rendered.terminator
        head = (
            "HTTP/1.1 200 OK\r\n"
            f"Content-Type: {rendered.content_type}\r\n"
            "Transfer-Encoding: chunked\r\nCache-Control: no-cache\r\nConnection: keep-alive\r\n\r\n"
        )
        writer.write(head.encode())
        await writer.drain()
        for number, frame in enumerate(frames):
            if number and reply.delay:
                await asyncio.sleep(reply.delay)
            if number == len(frames) - 1:
                while reply.hold is not None and not reply.hold.is_set():
                    await asyncio.sleep(0.01)
                # Counted before the last write, so a client that has seen the end always sees the count.
                self.finished_replies += 1
            writer.write(b"%x\r\n%s\r\n" % (len(frame), frame))
            await writer.drain()
        if not frames:
            self.finished_replies += 1
        if reply.drop_after is not None and reply.abort:
            writer.transport.abort()  # the body breaks off mid-stream
            return False
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True

    async def _fim(self, request: RecordedRequest, writer: asyncio.StreamWriter, reader: asyncio.StreamReader) -> bool:
        """Answer a fill-in-the-middle request with the next reply's text, after its `delay` unless the client
        leaves first (then recorded in `aborted`)."""
        if (reply := self._next_reply("completion request")) is None:
            return await _send_json(writer, 500, unexpected_body(self.fmt))
        model = (request.body or {}).get("model") or self.model
        if reply.delay:
            try:
                # A client that gives up closes the connection: the read ends (EOF) before the delay.
                async with asyncio.timeout(reply.delay):
                    await reader.read(1)
            except TimeoutError:
                pass
            else:
                self.aborted.append(request)
                self.finished_replies += 1
                return False
        self.finished_replies += 1
        if reply.is_error:
            return await _send_json(writer, reply.status, error_body(self.fmt, reply, model=model), reply.headers)
        return await _send_json(writer, 200, fim_body(self.fmt, reply.text, model=model))

    def _model_list(self) -> Any:
        if self.fmt == "openai":
            return {"object": "list", "data": [
                {"id": name, "object": "model", "created": 1_700_000_000, "owned_by": "scripted",
                 "context_length": ctx, **self._modalities(name)} for name, ctx in self.models.items()]}
        if self.fmt == "anthropic":
            names = list(self.models)
            return {"data": [{"type": "model", "id": n, "display_name": n, "created_at": "2025-01-01T00:00:00Z"}
                             for n in names], "has_more": False, "first_id": names[0], "last_id": names[-1]}
        return {"models": [
            {"name": n, "model": n, "modified_at": "2025-01-01T00:00:00Z", "size": 1_000_000, "digest": "0" * 64,
             "details": {"format": "gguf", "family": "llama", "parameter_size": "1B", "quantization_level": "Q4_K_M"}}
            for n in self.models]}

    async def _ollama_show(self, request: RecordedRequest, writer: asyncio.StreamWriter) -> bool:
        name = (request.body or {}).get("model") or (request.body or {}).get("name") or ""
        if name not in self.models:
            return await _send_json(writer, 404, {"error": f"model '{name}' not found"})
        return await _send_json(writer, 200, {
            "modelfile": "", "parameters": "", "template": "{{ .Prompt }}",
            "details": {"format": "gguf", "family": "llama"},
            "model_info": {"general.architecture": "llama", "general.parameter_count": 1_000_000_000,
                           "llama.context_length": self.models[name], "llama.embedding_length": 2048},
            "capabilities": ["completion", "tools", *(["vision"] if self._sees(name) else [])] if self._says(name)
            else None,
        })

    def _sees(self, model: str) -> bool:
        return self.vision and model not in self.text_models

    def _says(self, model: str) -> bool:
        return self.says_vision and model not in self.text_models

    def _modalities(self, model: str) -> dict[str, Any]:
        """OpenRouter's word on what a model reads."""
        if not self._says(model):
            return {}
        return {"architecture": {"input_modalities": ["text", "image"] if self._sees(model) else ["text"]}}


async def _read_request(reader: asyncio.StreamReader) -> RecordedRequest | None:
    line = await reader.readline()
    if not line.strip():
        return None
    method, target, _ = line.decode("latin-1").split(" ", 2)
    headers: dict[str, str] = {}
    while True:
        raw = await reader.readline()
        if raw in (b"\r\n", b"\n", b""):
            break
        key, _, value = raw.decode("latin-1").partition(":")
        headers[key.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while True:
            size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
            chunk = await reader.readexactly(size + 2)
            if size == 0:
                break
            body += chunk[:-2]
    else:
        body = await reader.readexactly(int(headers.get("content-length") or 0))
    path, _, query = target.partition("?")
    try:
        parsed = json.loads(body) if body else None
    except ValueError:
        parsed = None
    return RecordedRequest(method.upper(), path, query, headers, parsed, body)


async def _send(writer: asyncio.StreamWriter, status: int, payload: bytes, content_type: str,
                headers: dict[str, str] | None = None) -> bool:
    try:
        phrase = http.HTTPStatus(status).phrase
    except ValueError:
        phrase = "Overloaded" if status == 529 else "Error"
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    head = (f"HTTP/1.1 {status} {phrase}\r\nContent-Type: {content_type}\r\nContent-Length: {len(payload)}\r\n"
            f"{extra}Connection: keep-alive\r\n\r\n")
    writer.write(head.encode("latin-1") + payload)
    await writer.drain()
    return True


async def _send_json(writer: asyncio.StreamWriter, status: int, obj: Any, headers: dict[str, str] | None = None) -> bool:
    payload = obj if isinstance(obj, (bytes, str)) else json.dumps(obj)
    data = payload.encode() if isinstance(payload, str) else payload
    return await _send(writer, status, data, "application/json; charset=utf-8", headers)
