"""What the backends read of an answer that is no success or too big: bounded, and a redirect is a configuration error."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from ollie.backend.errors import BackendError, TransientError
from ollie.backend.reply import MAX_ERROR_BODY, MAX_JSON_BODY

from .conftest import collect
from .rawhttp import Step, backend_for, wire_server

PIECE = b"x" * 65536


def endless(status: bytes, chunks: int) -> Iterator[Step]:
    """A chunked answer of `chunks` 64 KiB chunks (far more than the client should read)."""
    yield b"HTTP/1.1 " + status + b"\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
    for _ in range(chunks):
        yield b"10000\r\n" + PIECE + b"\r\n"
    yield b"0\r\n\r\n"


async def test_an_endless_error_answer_is_read_for_its_first_mebibyte_only():
    async with wire_server(lambda request: endless(b"500 Internal Server Error", 2000)) as srv:  # 125 MiB offered
        backend = backend_for(srv.url)
        try:
            with pytest.raises(TransientError) as caught:
                await asyncio.wait_for(collect(backend), 20)
            assert caught.value.status == 500
            assert len(caught.value.body) == MAX_ERROR_BODY, "the message is kept up to the cap, the rest never read"
            await asyncio.wait_for(srv.ended.wait(), 5)
            assert srv.client_closed == 1, "the connection was dropped, not drained"
        finally:
            await backend.aclose()


async def test_a_json_answer_over_the_cap_is_refused_not_held():
    chunks = MAX_JSON_BODY // len(PIECE) + 20
    async with wire_server(lambda request: endless(b"200 OK", chunks)) as srv:
        backend = backend_for(srv.url)
        try:
            with pytest.raises(BackendError, match=r"/models answered over 32 MiB"):
                await asyncio.wait_for(backend._request_json("GET", "/models"), 30)
            # Asked for the model's window, the backend falls back to the default instead of failing the turn.
            assert await asyncio.wait_for(backend.context_length(), 30) == backend.default_context_length
        finally:
            await backend.aclose()


async def test_a_redirect_is_a_configuration_error_naming_where_it_points():
    moved = b"HTTP/1.1 301 Moved Permanently\r\nLocation: https://api.example.test/v1/chat/completions\r\n" \
            b"Content-Length: 0\r\n\r\n"
    async with wire_server(lambda request: [moved]) as srv:
        backend = backend_for(srv.url)
        try:
            with pytest.raises(BackendError) as caught:
                await asyncio.wait_for(collect(backend), 10)
            assert type(caught.value) is BackendError, "not a transient error: retrying cannot help"
            assert caught.value.status == 301
            assert "redirects to 'https://api.example.test/v1/chat/completions'" in str(caught.value)
            assert len(srv.requests) == 1, "the redirect is not followed (the key would go wherever it points)"
        finally:
            await backend.aclose()


async def test_a_protocol_switch_nobody_asked_for_is_refused_at_once_not_read_as_a_body():
    switch = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x02hi"
    async with wire_server(lambda request: [switch, 30.0]) as srv:
        backend = backend_for(srv.url)
        try:
            with pytest.raises(TransientError, match="answered in something not HTTP"):  # httpx's parser (h11) refuses it
                await asyncio.wait_for(collect(backend), 10)
        finally:
            await backend.aclose()
