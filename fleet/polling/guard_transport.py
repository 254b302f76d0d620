"""The guarded network backend (below httpx, above the socket) and the httpx transport built on it.

The backend resolves the host itself, checks every address (:mod:`fleet.polling.guard_urls`) and connects
to a checked address; every socket operation is bounded by the request's overall deadline.
"""

from __future__ import annotations

import functools
import ssl
import time
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from .guard_networks import IPNetwork
from .guard_urls import UrlRefused, _os_error_text, check_addresses, resolve


class _ResolveFailed(httpcore.ConnectError):
    """The host name did not resolve (or not before the deadline)."""


class _DeadlineExceeded(httpcore.ReadTimeout):
    """The overall per-request deadline expired during a socket operation."""


class _Deadline:
    """One request's overall deadline (monotonic seconds) and the clamp it applies to each wait."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def clamp(self, timeout: float | None) -> tuple[float, bool]:
        """The timeout to use for one socket operation, and whether the deadline is what binds."""
        remaining = self.remaining()
        if timeout is None or remaining < timeout:
            return max(remaining, 0.0), True
        return timeout, False


class _GuardedStream(httpcore.NetworkStream):
    """Wraps a socket stream so every read and write is bounded by the request's deadline."""

    def __init__(self, inner: httpcore.NetworkStream, deadline: _Deadline) -> None:
        self._inner = inner
        self._deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        limit, binding = self._deadline.clamp(timeout)
        if limit <= 0:
            raise _DeadlineExceeded("the request's deadline expired")
        try:
            return self._inner.read(max_bytes, limit)
        except httpcore.ReadTimeout as exc:
            if binding:
                raise _DeadlineExceeded("the request's deadline expired") from exc
            raise

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        limit, _binding = self._deadline.clamp(timeout)
        if limit <= 0:
            raise httpcore.WriteTimeout("the request's deadline expired")
        self._inner.write(buffer, limit)

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        limit, _binding = self._deadline.clamp(timeout)
        if limit <= 0:
            raise httpcore.ConnectTimeout("the request's deadline expired")
        return _GuardedStream(self._inner.start_tls(ssl_context, server_hostname, limit), self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _GuardedBackend(httpcore.NetworkBackend):
    """Resolves the host itself, checks every address, then connects to a checked address.

    httpcore passes the URL's host here and keeps using it for SNI and certificate checks, so
    only the socket's destination changes: it is an address we have just checked.
    """

    def __init__(self, allowed: tuple[IPNetwork, ...], deadline: _Deadline) -> None:
        self._allowed = allowed
        self._deadline = deadline
        self._inner = httpcore.SyncBackend()
        self.connected_to: str | None = None

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        limit, _binding = self._deadline.clamp(timeout)
        try:
            addresses = resolve(host, port, limit)
        except OSError as exc:
            raise _ResolveFailed(f"the host {host!r} does not resolve ({_os_error_text(exc)})") from None
        check_addresses(host, addresses, self._allowed)  # raises UrlRefused, before any connect
        last: Exception | None = None
        for ip in addresses:
            limit, _binding = self._deadline.clamp(timeout)
            if limit <= 0:
                raise httpcore.ConnectTimeout("the request's deadline expired while connecting")
            try:
                stream = self._inner.connect_tcp(
                    str(ip), port, timeout=limit, local_address=local_address, socket_options=socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
                continue
            self.connected_to = str(ip)
            return _GuardedStream(stream, self._deadline)
        assert last is not None
        raise last

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> Any:
        raise UrlRefused("unix sockets are refused")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@functools.lru_cache(maxsize=8)
def _ssl_context(verify: bool | str) -> ssl.SSLContext:
    """One TLS context per ``verify`` value (building one costs ~15 ms, which would skew latencies)."""
    return httpx.create_ssl_context(verify=verify, trust_env=False)


class _GuardedTransport(httpx.HTTPTransport):
    """httpx's transport with the connection pool swapped for one on the guarded backend.

    Relies on ``HTTPTransport`` keeping its pool in ``_pool`` (true for httpx 0.23 to 0.28); the
    guard tests fail loudly if that ever changes, because resolution would no longer be checked.
    """

    def __init__(self, backend: _GuardedBackend, verify: bool | str) -> None:
        ssl_context = _ssl_context(verify)
        super().__init__(verify=ssl_context, trust_env=False, retries=0)
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context,
            max_connections=1,
            max_keepalive_connections=0,
            http1=True,
            http2=False,
            retries=0,
            network_backend=backend,
        )
