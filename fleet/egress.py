"""The outbound guard's settings as registration and the poller pass them to ``fleet.polling``.

One home for them (and for a budget alert's webhook: ``webhook_guard_kwargs``), so that registering an
endpoint (``fleet.registration.check_endpoint``) and polling
it (``fleet.poller``) apply the same rules: the allowed networks and ports, and the ports refused on
loopback. Those are this installation's own services (docs/polling.md, "Guard rules"): a poller on the
machine of its own database, broker, cache or web server must not be pointed at them, and nothing
else on loopback is refused (``make run``'s demo endpoint on 8100, the tests' fake engines on
ephemeral ports).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

from fleet.polling import DEFAULT_LOOPBACK_REFUSED_PORTS

#: The port each URL scheme of a database, broker or cache defaults to.
SCHEME_PORTS = {"redis": 6379, "rediss": 6379, "amqp": 5672, "pyamqp": 5672, "amqps": 5671}
#: Database engines by the end of Django's ENGINE path: their name and default port.
DATABASE_PORTS = {"postgresql": ("PostgreSQL", 5432), "mysql": ("MySQL", 3306)}


def url_port(url: str) -> int | None:
    """The TCP port a database, broker or cache URL connects to (its scheme's default when it names
    none); None for what has no port (``filesystem://``, ``memory://``, a Unix socket) or cannot be read."""
    try:
        parts = urlsplit(url.strip())
        if not parts.hostname:
            return None
        return parts.port or SCHEME_PORTS.get(parts.scheme.lower())
    except ValueError:
        return None


def bind_port(bind: str) -> int | None:
    """The port of a gunicorn bind (``0.0.0.0:8000``, ``[::]:8000``); None for ``unix:...`` or no port."""
    if bind.startswith(("unix:", "fd://")) or ":" not in bind:
        return None
    port = bind.rsplit(":", 1)[1]
    return int(port) if port.isdigit() and 0 < int(port) < 65536 else None


def database_port(db: Mapping[str, Any] | None = None) -> tuple[str, int] | None:
    """A database's engine name and TCP port (default: the ``default`` database of ``DATABASES``); None
    for SQLite or a Unix socket (no host, or a host that is a socket folder)."""
    db = settings.DATABASES["default"] if db is None else db
    engine = DATABASE_PORTS.get(str(db.get("ENGINE", "")).rsplit(".", 1)[-1])
    host = str(db.get("HOST") or "")
    if engine is None or not host or host.startswith("/"):
        return None
    port = str(db.get("PORT") or "")
    return engine[0], int(port) if port.isdigit() else engine[1]


def loopback_refused_ports() -> dict[int, str]:
    """Ports refused on loopback, each with what it is: ``POLL_LOOPBACK_REFUSED_PORTS`` when set, else
    this installation's own services (database, broker, cache, web server) and PostgreSQL's and Redis's
    default ports (``fleet.polling.DEFAULT_LOOPBACK_REFUSED_PORTS``)."""
    configured = settings.POLL_LOOPBACK_REFUSED_PORTS
    if configured is not None:
        return {int(port): "listed in FLEETCAP_POLL_LOOPBACK_REFUSED_PORTS" for port in configured}
    refused = dict(DEFAULT_LOOPBACK_REFUSED_PORTS)
    database = database_port()
    if database is not None:
        refused[database[1]] = f"this installation's database ({database[0]})"
    for url in str(settings.CELERY_BROKER_URL).split(";"):
        if (port := url_port(url)) is not None:
            refused[port] = "this installation's Celery broker"
    if (cache := getattr(settings, "CACHE_URL", "")) and (port := url_port(cache)) is not None:
        refused[port] = "this installation's cache"
    if (port := bind_port(settings.WEB_BIND)) is not None:
        refused[port] = "fleetcap's own web server"
    return refused


def guard_kwargs() -> dict[str, Any]:
    """The guard's keyword arguments from the settings (``check_url``, ``fetch``, ``poll_endpoint``)."""
    return {
        "allowed_networks": tuple(settings.POLL_ALLOWED_NETWORKS),
        "allowed_ports": tuple(settings.POLL_ALLOWED_PORTS),
        "loopback_refused_ports": loopback_refused_ports(),
    }


def webhook_guard_kwargs() -> dict[str, Any]:
    """The guard's keyword arguments for a budget alert's webhook: its own allowed networks and ports
    (``BUDGET_WEBHOOK_ALLOWED_NETWORKS``, default the poller's; ``BUDGET_WEBHOOK_ALLOWED_PORTS``, default
    any) and the loopback ports the poller refuses (this installation's own services)."""
    return {
        "allowed_networks": tuple(settings.BUDGET_WEBHOOK_ALLOWED_NETWORKS),
        "allowed_ports": tuple(settings.BUDGET_WEBHOOK_ALLOWED_PORTS),
        "loopback_refused_ports": loopback_refused_ports(),
    }
