"""Malformed JSON-RPC over a raw pipe to `python -m ollie_lsp`: errors come back and the daemon keeps serving."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from bench.lspwire import Pending, RPCError, frame

# Methods a fuzzed message may name. Left out: the ones that end the session or the daemon
# (close, archive, shutdown, exit) and the ones whose text can run a shell (`!cmd`).
SAFE_METHODS = [
    "ollie/interrupt", "ollie/inject", "ollie/queue", "ollie/popQueue", "ollie/state", "ollie/context",
    "ollie/setEnv", "ollie/setGenerationParams", "ollie/session/list", "ollie/session/load",
    "ollie/session/rename", "textDocument/hover", "$/cancelRequest", "$/setTrace", "workspace/symbol",
    "ollie/nonexistent", "no/such/method", "",
]

# No shrinking: each failing example costs a timeout, and the raw example is printed anyway.
FUZZ = settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck), database=None,
                phases=[Phase.explicit, Phase.generate])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**63) | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
huge_strings = st.integers(100_000, 3_000_000).map(lambda n: "x" * n)
param_values = json_values | huge_strings
params = st.one_of(
    json_values,
    st.fixed_dictionaries({}, optional={
        "session": param_values, "text": param_values, "key": param_values, "value": param_values,
        "params": param_values, "title": param_values, "reason": param_values, "limit": param_values,
        "kinds": param_values, "id": param_values,
    }),
)
ids = st.integers(10**6, 10**9) | st.text(max_size=20) | st.none() | st.floats(allow_nan=False) | st.lists(st.integers())
messages = st.fixed_dictionaries(
    {"method": st.sampled_from(SAFE_METHODS) | st.text(max_size=20)},
    optional={"jsonrpc": st.sampled_from(["2.0", "1.0", 2]), "id": ids, "params": params,
              "result": json_values, "error": json_values},
)


def still_serving(daemon) -> None:
    """A valid request right after the garbage is answered."""
    assert isinstance(daemon.request("ollie/session/list", {}, timeout=30)["sessions"], list)
    assert daemon.alive(), daemon.stderr_text()[-2000:]


def send_with_id(daemon, message: dict) -> Pending:
    """Send `message` (which carries an int id) and get the Pending its answer resolves."""
    pending = Pending()
    daemon._pending[message["id"]] = pending
    daemon.send(message)
    return pending


# The env of the module's daemons (`served`, tests/reliability/conftest.py): a backend that never answers.
DAEMON_ENV = {"OLLIE_BACKEND": "openai", "OLLIE_OPENAI_URL": "http://127.0.0.1:9/v1", "OLLIE_OPENAI_KEY": "sk-unused"}


@pytest.fixture
def daemon(start_daemon):
    """A daemon of its own (fuzzing may leave any state behind) with its default session ready."""
    started = start_daemon(env=DAEMON_ENV)
    started.request("ollie/state", {}, timeout=60)
    return started


def test_fuzzed_json_rpc_messages_get_answers_and_the_daemon_keeps_serving(daemon):
    @FUZZ
    @given(message=messages)
    def check(message):
        request = not {"result", "error"} & set(message)
        if isinstance(message.get("id"), int) and request:
            # A request must be answered, with an error when its envelope is not JSON-RPC 2.0.
            pending = send_with_id(daemon, message)
            if "method" in message:
                answer = pending.done.wait(30) and pending.message
                assert answer and ("result" in answer or "error" in answer), answer
        else:
            daemon.send(message)
        still_serving(daemon)

    check()


def test_garbage_bytes_and_broken_framing_are_ignored(daemon):
    @FUZZ
    @given(body=st.binary(max_size=2000), headers=st.lists(st.binary(max_size=40), max_size=4),
           framing=st.sampled_from(["framed", "no length", "bad length", "headers only"]))
    def check(body, headers, framing):
        junk_headers = b"".join(h.replace(b"\r", b"").replace(b"\n", b"") + b"\r\n" for h in headers)
        junk_headers = b"".join(line + b"\r\n" for line in junk_headers.split(b"\r\n")
                                if line and not line.lower().startswith(b"content-length"))
        if framing == "framed":
            data = frame(body)
        elif framing == "no length":
            # Garbage lines with no Content-Length among them: skipped line by line. (A last line
            # without its CRLF would glue onto the next header: that the client cannot do.)
            data = junk_headers + b"\r\n" + body.replace(b"Content-Length", b"X") + b"\r\n\r\n"
        elif framing == "bad length":
            data = b"Content-Length: x1\r\n" + junk_headers + b"\r\n"
        else:
            data = junk_headers + b"\r\n"
        # A body that is itself valid JSON-RPC would be handled as such; garbage is what is wanted here.
        daemon.send_raw(data if b"Content-Length" not in body or framing == "framed" else junk_headers + b"\r\n")
        still_serving(daemon)

    check()


@pytest.mark.parametrize(("method", "params", "code"), [
    ("ollie/no-such-method", {}, -32601),
    ("ollie/submit", {"text": 42}, -32602),
    ("ollie/submit", {}, -32602),
    ("ollie/submit", {"text": "hi", "context": "not an object"}, -32602),
    ("ollie/submit", {"session": ["x"], "text": "hi"}, -32602),
    ("ollie/submit", {"session": "1700000000000000000-abcdef", "text": "hi"}, -32001),
    ("ollie/setGenerationParams", {"params": {"temperature": "hot"}}, -32602),
    ("ollie/session/load", {"session": "../../etc/passwd"}, None),
    ("ollie/queue", {"text": "q" * 3_000_000}, 0),
    ("ollie/session/rename", {"session": "1700000000000000000-abcdef", "title": "t" * 1_000_000}, -32602),
    ("ollie/session/rename", {"session": "1700000000000000000-abcdef", "title": "t"}, -32001),
])
def test_bad_requests_get_the_documented_errors(served, method, params, code):
    if code == 0:
        assert served.request(method, params, timeout=30) is not None
    else:
        with pytest.raises(RPCError) as raised:
            served.request(method, params, timeout=30)
        if code is not None:
            assert raised.value.code == code, raised.value
        assert "Traceback" not in raised.value.message
    still_serving(served)


def test_a_truncated_message_then_a_valid_one_after_the_client_resyncs(served):
    # Invalid JSON in a well-framed message: answered with a parse error (id null), and the daemon reads on.
    served.send_raw(frame(b'{"jsonrpc": "2.0", "id": 99, "method": "ollie/state", "params": {'))
    served.send_raw(frame(json.dumps([1, 2, 3]).encode()))
    served.send_raw(frame(b"null"))
    still_serving(served)
    codes = [m["error"]["code"] for m in served.unmatched if m.get("id") is None and "error" in m]
    assert codes == [-32700, -32600, -32600], served.unmatched


def test_a_request_that_is_not_json_rpc_2_gets_invalid_request(served):
    pending = send_with_id(served, {"jsonrpc": "1.0", "id": 4242, "method": "ollie/state", "params": {}})
    assert pending.done.wait(30)
    assert pending.message["error"]["code"] == -32600
    pending = send_with_id(served, {"id": 4243, "method": "ollie/state", "params": {}})
    assert pending.done.wait(30)
    assert pending.message["error"]["code"] == -32600
    still_serving(served)


@pytest.mark.parametrize("message, code", [
    ({"method": "ollie/state"}, None),  # JSON-RPC lets params be left out
    ({"method": "no/such/method"}, -32601),
    ({"method": "ollie/state", "params": {}, "surprise": 1}, None),  # a member a request should not have
    ({"method": "textDocument/hover", "params": "not an object"}, -32602),  # pygls cannot structure it
    ({"method": "textDocument/hover", "params": {"textDocument": 3}}, -32602),
])
def test_requests_pygls_cannot_structure_are_answered_not_dropped(served, message, code):
    # They went unanswered: the client waited for ever (found by the fuzz test above, under load).
    pending = send_with_id(served, {"jsonrpc": "2.0", "id": 4242, **message})
    assert pending.done.wait(30), f"no answer to {message}"
    answer = pending.message
    if code is None:
        assert "result" in answer, answer
    else:
        assert answer["error"]["code"] == code, answer
    still_serving(served)
