"""Rendered fragments and reports kept in the cache under the version of the records they show.

Every open fleet page asks for its table every 5 s, and every viewer of one filter sees the same table:
rendering it (25 clusters, ~125 deployments, their snapshots and prices) was the largest share of the
web processes' CPU under load (docs/benchmarks.md, "Load"). ``fragment`` renders once and serves the
same HTML to every request with the same URL, the same permissions and the same ``fleet_version``,
within one ``window_s()`` window. ``shared`` does the same for any value everyone may read alike (the
month's spend report, the same for every user allowed to see it).

``fleet_version`` is one query: the row count and latest change of every record the fleet table and the
spend report read (clusters and their dated states, SKUs, providers, models, workloads, deployments, GPU
quotes and API prices, capacity snapshots). A save, a recomputed or stale-marked snapshot, an added or
deleted row changes it, so a page never shows an answer older than the records its user has just
changed. The live state is not in it: a poll (a deployment's status and metrics, its daily counts),
beat's poll cycle and what changes with time alone (a status that turns stale by age, the quote in force
at midnight) show at the next window, at most ``window_s()`` late, the fleet table's own refresh period.
In a polled fleet some deployment's poll lands every second or so; were polls in the version, every
answer would be computed anew each time. The API's lists of fleet records are shared the same way
(``fleet.api.views.SharedListMixin``).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest
from django.utils.safestring import SafeString, mark_safe

#: How long a request waits for another one computing the same answer, and how often it looks (seconds).
WAIT_S, WAIT_STEP_S = 1.0, 0.01


def window_s() -> float:
    """Seconds one computation may be served for, at most (``PAGE_CACHE_S``, default 5: the fleet table's
    refresh period); 0 turns sharing off."""
    return float(settings.PAGE_CACHE_S)


def _version_columns() -> list[tuple[Any, tuple[str, ...]]]:
    """(model, columns whose MAX counts) of what the fleet table shows; COUNT(*) of each as well."""
    from fleet.models import (
        ApiPrice,
        CapacitySnapshot,
        Cluster,
        ClusterPurchase,
        ClusterState,
        Deployment,
        ElectricityPrice,
        ExchangeRate,
        GpuQuote,
        HardwareSku,
        ModelSpec,
        OwnedCosts,
        Provider,
        Workload,
    )

    # An owned cluster's price is its purchases (in a currency at its rate), running costs and electricity.
    owned = (OwnedCosts, ClusterPurchase, ElectricityPrice, ExchangeRate)
    stamped = (Cluster, HardwareSku, Provider, ModelSpec, Workload, GpuQuote, ApiPrice, *owned)
    return [
        *((m, ("updated",)) for m in stamped),
        # Not the live state (a deployment's last poll, beat's last cycle): it moves every few seconds in
        # a polled fleet, and would make every answer a miss; it shows within the window instead.
        (Deployment, ("updated",)),
        (CapacitySnapshot, ("computed_at", "stale_since", "failed_at")),
        (ClusterState, ("recorded", "effective_from")),
    ]


def fleet_version(*more: tuple[Any, tuple[str, ...]]) -> str:
    """The row counts and latest changes of every record the fleet table reads, and of ``more`` (model,
    columns) pairs a page also reads, as one string (one query)."""
    quote = connection.ops.quote_name
    parts = []
    for model, columns in (*_version_columns(), *more):
        table = model._meta.db_table
        # Names from the models' _meta, quoted; nothing from a request.
        parts.append(f"(SELECT COUNT(*) FROM {quote(table)})")  # noqa: S608
        parts.extend(f"(SELECT MAX({quote(c)}) FROM {quote(table)})" for c in columns)  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(parts))
        return "|".join(str(v) for v in cursor.fetchone())


@dataclass(frozen=True)
class Expiring:
    """An answer good until ``until`` at most, sooner than its window's end: e.g. a table whose oldest
    poll turns "stale" by age in 3 s. ``until``: a datetime, or None (the window decides)."""

    value: Any
    until: datetime | None = None

    def usable(self) -> bool:
        return self.until is None or time.time() < self.until.timestamp()


def earliest(moments: Iterable[datetime | None]) -> datetime | None:
    """The first of ``moments`` (None where there is none)."""
    return min((m for m in moments if m is not None), default=None)


def cache_key(name: str, parts: Iterable[str], version: str, window: int) -> str:
    """The cache key of an answer: its name, what it is asked with, its records' version and its window."""
    raw = "\n".join((name, *parts, version, str(window)))
    return f"shared:{name}:{hashlib.sha256(raw.encode()).hexdigest()}"


def shared(
    name: str, parts: Iterable[str], compute: Callable[[], Any], version: Callable[[], str] | None = None
) -> Any:
    """``compute()``'s value (picklable, the same for everyone who asks with these ``parts``), from the
    cache when it was computed for the same ``parts`` and the same ``version()`` (default
    ``fleet_version``) in this ``window_s()`` window; ``compute`` may return an ``Expiring`` answer, good
    until a moment sooner than the window's end. An exception in ``compute`` is raised, never kept."""
    seconds = window_s()
    if seconds <= 0:
        return compute()
    key = cache_key(name, parts, (version or fleet_version)(), int(time.time() // seconds))
    value = _usable(cache.get(key))
    if value is not None:
        return value
    # One request computes; the others asking for the same key meanwhile wait for its answer (up to
    # WAIT_S) rather than compute it again: after each poll every open fleet page asks at once.
    lock = f"{key}:computing"
    if cache.add(lock, 1, timeout=max(1, int(seconds))):
        try:
            value = compute()
            cache.set(key, value, timeout=max(1, int(2 * seconds)))
        finally:
            cache.delete(lock)
        return value.value if isinstance(value, Expiring) else value
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        time.sleep(WAIT_STEP_S)
        value = _usable(cache.get(key))
        if value is not None:
            return value
    value = compute()  # the one computing failed or is slow: this request answers for itself
    return value.value if isinstance(value, Expiring) else value


def _usable(stored: Any) -> Any:
    """A cached value, None when absent or past its ``Expiring.until``."""
    if isinstance(stored, Expiring):
        return stored.value if stored.usable() else None
    return stored


def fragment(
    name: str,
    request: HttpRequest,
    render: Callable[[], str | Expiring],
    version: Callable[[], str] | None = None,
    parts: Iterable[str] = (),
) -> SafeString:
    """``render()``'s HTML for this request, shared (``shared``) with every request of the same path and
    query by a user with the same permissions (and the same ``parts``: what else the HTML shows that the
    records' version does not hold). The fragment must hold nothing of one user's but what their
    permissions decide (no CSRF token, no name)."""
    perms = ",".join(sorted(request.user.get_all_permissions()))

    def rendered() -> Expiring:
        out = render()
        return Expiring(str(out.value), out.until) if isinstance(out, Expiring) else Expiring(str(out))

    html = shared(name, (request.get_full_path(), perms, *parts), rendered, version)
    return mark_safe(html)  # noqa: S308 (HTML the template engine rendered and escaped)
