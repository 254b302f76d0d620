"""The guarded transport: name resolution, the connect-time address check, the connection, and one
HTTP/1.1 exchange (h11 over asyncio streams).

The host is resolved here and every address checked (:mod:`fleet.polling.guard_urls`) before a
socket is opened, and the socket is opened to a checked address itself; TLS keeps the URL's hostname
for SNI and the certificate check. One asyncio loop can hold hundreds of these exchanges at once,
which is what lets a poll cycle start every request at once (docs/polling.md, "Cycle").
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import ssl
import threading
from collections.abc import AsyncIterator, Awaitable, Iterable
from typing import Any, TypeVar

import h11

from .guard_networks import IPAddress, IPNetwork
from .guard_urls import _ip_literal, _os_error_text, check_addresses, resolve

T = TypeVar("T")

#: Bytes asked of the socket per read.
READ_CHUNK = 65536
#: Largest status line plus headers accepted (h11 refuses more as a protocol error).
MAX_HEADER_BYTES = 64 * 1024


class _ResolveFailed(OSError):
    """The host name did not resolve (or not before the deadline)."""


class _ConnectTimeout(TimeoutError):
    """No connection to any of the host's addresses within the connect timeout."""


@functools.lru_cache(maxsize=8)
def _ssl_context(verify: bool | str) -> ssl.SSLContext:
    """One TLS context per ``verify`` value (building one costs ~15 ms, which would skew latencies).

    ``True``: the system's trust store (OpenSSL's default paths, which ``SSL_CERT_FILE`` and
    ``SSL_CERT_DIR`` can move); a path: that CA bundle file (or folder of hashed CA files);
    ``False``: no verification at all (a private test endpoint only). Raises ``OSError`` or
    ``ssl.SSLError`` when the bundle cannot be read.
    """
    if verify is False:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies the chain and the hostname
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if verify is True:
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    elif os.path.isdir(verify):
        context.load_verify_locations(capath=verify)
    else:
        context.load_verify_locations(cafile=verify)
    return context


async def _bounded(awaitable: Awaitable[T], limit: float | None) -> T:
    """``awaitable`` under its own time limit in seconds (None: only the caller's deadline binds)."""
    if limit is None:
        return await awaitable
    return await asyncio.wait_for(awaitable, max(limit, 0.0))


def _resolve_in_thread(host: str, port: int) -> asyncio.Future[list[IPAddress]]:
    """:func:`resolve` in a daemon thread: a resolver that hangs outlives the deadline in its thread
    instead of holding up the loop's shutdown (as the loop's default executor would)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[list[IPAddress]] = loop.create_future()

    def settle(method: str, value: Any) -> None:
        if not future.done():
            getattr(future, method)(value)

    def work() -> None:
        try:
            outcome: tuple[str, Any] = ("set_result", resolve(host, port))
        except OSError as exc:
            outcome = ("set_exception", exc)
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=work, name="fleet-poll-resolve", daemon=True).start()
    return future


async def resolve_checked(host: str, port: int, allowed: tuple[IPNetwork, ...]) -> list[IPAddress]:
    """The host's addresses, each checked; raises :class:`~fleet.polling.guard_urls.UrlRefused` for a
    refused one and :class:`_ResolveFailed` when the name does not resolve."""
    literal = _ip_literal(host)
    if literal is not None:
        addresses = [literal]
    else:
        try:
            addresses = await _resolve_in_thread(host, port)
        except OSError as exc:
            raise _ResolveFailed(f"the host {host!r} does not resolve ({_os_error_text(exc)})") from None
    check_addresses(host, addresses, allowed)
    return addresses


async def connect(
    addresses: Iterable[IPAddress],
    port: int,
    *,
    tls: ssl.SSLContext | None,
    server_hostname: str,
    timeout_s: float | None,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Open a connection to the first checked address that answers (``timeout_s`` per attempt)."""
    last: BaseException | None = None
    for ip in addresses:
        try:
            opening = asyncio.open_connection(
                str(ip), port, ssl=tls, server_hostname=server_hostname if tls else None, limit=READ_CHUNK
            )
            return await _bounded(opening, timeout_s)
        except TimeoutError:
            last = _ConnectTimeout("no connection within the time limit")
        except OSError as exc:  # refused, unreachable, TLS failure (ssl.SSLError is an OSError)
            last = exc
    assert last is not None, "no address to connect to"
    raise last


class Exchange:
    """One GET over an open connection: send the request, then read the response head and body.

    Every read is bounded by ``read_timeout_s`` when given; the caller's overall deadline (an
    ``asyncio.timeout``) bounds the whole. h11 raises ``h11.ProtocolError`` for a malformed reply.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, read_timeout_s: float | None):
        self._reader, self._writer, self._read_timeout_s = reader, writer, read_timeout_s
        self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEADER_BYTES)

    async def send(self, target: bytes, headers: list[tuple[bytes, bytes]]) -> None:
        data = self._h11.send(h11.Request(method=b"GET", target=target, headers=headers))
        data += self._h11.send(h11.EndOfMessage())
        self._writer.write(data)
        await _bounded(self._writer.drain(), self._read_timeout_s)

    async def _next(self) -> Any:
        while True:
            event = self._h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            self._h11.receive_data(await _bounded(self._reader.read(READ_CHUNK), self._read_timeout_s))

    async def response(self) -> h11.Response:
        """The final response head (1xx responses are skipped)."""
        while True:
            event = await self._next()
            if isinstance(event, h11.Response):
                return event
            if isinstance(event, h11.ConnectionClosed):
                raise h11.RemoteProtocolError("the server closed the connection without a response")

    async def body_chunks(self) -> AsyncIterator[bytes]:
        """The body's chunks as they arrive; ends at the end of the message."""
        while True:
            event = await self._next()
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                return
            elif isinstance(event, h11.ConnectionClosed):
                raise h11.RemoteProtocolError("the server closed the connection before the body ended")

    def close(self) -> None:
        """Drop the connection at once (no keep-alive, no lingering TLS close)."""
        self._writer.transport.abort()
