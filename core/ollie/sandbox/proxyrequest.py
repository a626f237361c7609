"""What a step asks the egress proxy: its request head, read and checked, and the first bytes of a tunnel.

Plain HTTP comes in absolute form and becomes one origin-form request whose Host is the host decided on (only that
request goes upstream: one pipelined behind it could name any Host); a `CONNECT` tunnel must open with TLS naming
the host asked for (or none), or with SSH: plain HTTP in a tunnel could name any virtual host at that address.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket

MAX_HEAD = 64 * 1024  # a request's line and headers; more is refused
# A ClientHello is one record, or a few for a large one (2^14 bytes each). Each check of a tunnel's opening walks its
# records from the first on the daemon's loop: a hello dribbled in one-byte records (~20,000) held it for seconds.
MAX_HELLO_RECORDS = 16
_NAME = re.compile(r"(?=.{1,253}$)[a-z0-9_-]{1,63}(\.[a-z0-9_-]{1,63})*")  # a host name, normalized, as DNS allows
# A last label that is a number: no name (no top-level domain is one), but the resolver's inet_aton reads `127.1`,
# `2130706433`, `0x7f.1` and `0177.0.0.1` as 127.0.0.1 (a listed IP literal denied, or a question hiding it).
_NUMBER = re.compile(r"[0-9]+|0x[0-9a-f]*")
# A request line's method and target as HTTP writes them: a tab or another control in one could carry a second URL
# to a server that splits the line on any whitespace (its absolute URL naming another host than the one decided).
_METHOD = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_TARGET = re.compile(rb"[\x21-\x7e]+")
_HOP_BY_HOP = {b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization", b"proxy-authenticate",
               b"te", b"trailer", b"upgrade"}


class RequestError(Exception):
    """A request the proxy refuses to read (400)."""


def normal_host(host: str) -> str:
    """`host` lower-cased, without a trailing dot or IPv6 brackets, IP literals in their canonical form."""
    host = host.strip().lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


def is_ip(host: str) -> bool:
    """Whether `host` is an IP literal."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _authority(text: str, default_port: int) -> tuple[str, int]:
    """(host, port) of `host[:port]` / `[v6][:port]`; RequestError when it is not one."""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ("" if not rest else "x")
    else:
        host, _, port_text = text.partition(":")
    if not port_text:
        port = default_port
    elif port_text.isdigit() and 0 < int(port_text) < 65536:
        port = int(port_text)
    else:
        raise RequestError(f"bad port in {text!r}")
    name = host.lower().rstrip(".")
    # Only a DNS name or an IP literal: the host is asked about and an "always" answer saves it as a pattern,
    # so "*.com" or a name with a line break in it (\x0b, \x1c split the saved file's lines) would save a
    # wider pattern than the user saw. An IPv6 zone (`fe80::1%eth0`) is any text to `ipaddress`: none is taken.
    if "%" in name or not (is_ip(name) if text.startswith("[") else (is_ip(name) or _NAME.fullmatch(name))):
        raise RequestError(f"bad host in {text!r}")
    if not is_ip(name) and _NUMBER.fullmatch(name.rpartition(".")[2]):
        raise RequestError(f"bad host in {text!r}: a number that is no IP address as written (write it a.b.c.d)")
    return normal_host(host), port


async def _read_head(client: socket.socket) -> tuple[bytes, bytes]:
    """(the request head with its blank line, what the step sent after it)."""
    loop = asyncio.get_running_loop()
    data = b""
    while (end := data.find(b"\r\n\r\n")) < 0:
        if len(data) >= MAX_HEAD:
            raise RequestError(f"a request head over {MAX_HEAD} bytes")
        chunk = await loop.sock_recv(client, MAX_HEAD - len(data))
        if not chunk:
            raise RequestError("the connection ended inside the request head")
        data += chunk
    return data[:end + 4], data[end + 4:]


async def read_request(client: socket.socket) -> tuple[bytes, str, int, bytes, bytes, int | None]:
    """(method, host, port, the request head to send upstream: origin-form, hop-by-hop headers dropped; empty for
    CONNECT, what the step sent after its head, and the length of the request's body: None for CONNECT)."""
    raw, early = await _read_head(client)
    lines = raw[:-4].split(b"\r\n")
    if any(b"\n" in line or b"\r" in line or b"\0" in line for line in lines):
        raise RequestError("bare CR, LF or NUL in the request head")
    parts = lines[0].split(b" ")
    if (len(parts) != 3 or not _METHOD.fullmatch(parts[0]) or not _TARGET.fullmatch(parts[1])
            or parts[2] not in (b"HTTP/1.0", b"HTTP/1.1")):
        raise RequestError("not an HTTP/1.x request line")
    method, target, version = parts
    headers: list[tuple[bytes, bytes]] = []
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep or not name or name != name.strip() or line[:1] in (b" ", b"\t"):
            raise RequestError("malformed header line")
        headers.append((name.lower(), value.strip()))
    text = target.decode("ascii")
    if method == b"CONNECT":
        host, port = _authority(text, 443)
        return method, host, port, b"", early, None
    if not text.lower().startswith("http://"):
        raise RequestError("plain HTTP needs an absolute http:// URL (https goes through CONNECT)")
    rest = text[len("http://"):]
    # The authority ends at the path or the query (`http://host?q` is `GET /?q`: its query was dropped).
    end = min((at for at in (rest.find("/"), rest.find("?")) if at >= 0), default=len(rest))
    authority, origin = rest[:end], rest[end:]
    if "@" in authority:
        raise RequestError("credentials in the URL")
    host, port = _authority(authority, 80)
    # The Host header must name the same host: a server picking its virtual host by the header
    # must not be steered to another than the one the proxy decided on.
    hosts = [value for name, value in headers if name == b"host"]
    if len(hosts) > 1 or (hosts and _authority(hosts[0].decode("ascii", "replace"), port) != (host, port)):
        raise RequestError("the Host header does not name the URL's host")
    # Only this one request goes upstream: a second one pipelined behind it could name any Host.
    if any(name == b"transfer-encoding" for name, _ in headers):
        raise RequestError("a chunked request body (send a Content-Length)")
    lengths = {value for name, value in headers if name == b"content-length"}
    if len(lengths) > 1 or not all(v.isdigit() for v in lengths):
        raise RequestError("a bad Content-Length")
    body = int(lengths.pop()) if lengths else 0
    kept = [(n, v) for n, v in headers if n not in _HOP_BY_HOP and n != b"host"]
    host_header = authority.encode()
    head = b"%s %s %s\r\nhost: %s\r\n" % (method, ("/" + origin.removeprefix("/")).encode(), version, host_header)
    head += b"".join(b"%s: %s\r\n" % (n, v) for n, v in kept) + b"connection: close\r\n\r\n"
    return method, host, port, head, early, body


def tls_server_name(data: bytes) -> str | None:
    """The server name (SNI) of the TLS ClientHello that `data` begins with, "" when it names none; None while
    the hello is not all there. RequestError when `data` does not begin a ClientHello."""
    hello, pos, records = b"", 0, 0
    while len(hello) < 4 or len(hello) < 4 + int.from_bytes(hello[1:4], "big"):
        if records == MAX_HELLO_RECORDS:
            raise RequestError(f"a TLS ClientHello in more than {MAX_HELLO_RECORDS} records")
        records += 1
        if len(data) < pos + 5:
            return None
        if data[pos] != 22 or data[pos + 1] != 3:
            raise RequestError("not a TLS handshake")
        size = int.from_bytes(data[pos + 3:pos + 5], "big")
        if len(data) < pos + 5 + size:
            return None
        hello += data[pos + 5:pos + 5 + size]
        pos += 5 + size
        if hello[:1] != b"\x01" or len(hello) > MAX_HEAD:
            raise RequestError("not a TLS ClientHello")
    body = hello[4:4 + int.from_bytes(hello[1:4], "big")]

    def field(at: int, width: int) -> tuple[bytes, int]:
        size = int.from_bytes(body[at:at + width], "big")
        if len(body) < at + width + size:
            raise RequestError("a malformed TLS ClientHello")
        return body[at + width:at + width + size], at + width + size

    at = 34  # version, random
    for width in (1, 2, 1):  # session id, cipher suites, compression methods
        _, at = field(at, width)
    if at == len(body):
        return ""
    extensions, _ = field(at, 2)
    at = 0
    while at + 4 <= len(extensions):
        kind = int.from_bytes(extensions[at:at + 2], "big")
        size = int.from_bytes(extensions[at + 2:at + 4], "big")
        if kind == 0:  # server_name: a list of (type, name); type 0 is a host name
            names = extensions[at + 4 + 2:at + 4 + size]
            if names[:1] != b"\x00":
                raise RequestError("a malformed TLS server name")
            length = int.from_bytes(names[1:3], "big")
            return names[3:3 + length].decode("ascii", "replace")
        at += 4 + size
    return ""


async def tunnel_opening(client: socket.socket, host: str, early: bytes) -> bytes:
    """The step's first bytes in a CONNECT tunnel to `host` (`early`: those sent with the request), once they show
    TLS (its server name, if it gives one, is `host`) or SSH; RequestError for anything else: plain HTTP in a
    tunnel could name any Host."""
    loop = asyncio.get_running_loop()
    data = early
    while True:
        if data[:1] == b"\x16":
            name = tls_server_name(data)
            if name is not None:
                if name and normal_host(name) != host:
                    raise RequestError(f"TLS names another server ({name[:100]!r}) than the one asked for")
                return data
        elif data.startswith(b"SSH-"):
            return data
        elif not b"SSH-".startswith(data):
            raise RequestError("a CONNECT tunnel carries TLS or SSH only (plain HTTP: send http:// requests)")
        if len(data) > 2 * MAX_HEAD:
            raise RequestError("a TLS ClientHello past its size")
        chunk = await loop.sock_recv(client, MAX_HEAD)
        if not chunk:
            raise RequestError("the tunnel closed before anything was sent")
        data += chunk
