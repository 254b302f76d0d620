"""Poll one serving endpoint: model list, health, metrics; one plain outcome, no Django.

``poll_endpoint()`` makes at most three guarded GETs (``/v1/models``, the engine's health route,
``/metrics``), each bounded by ``timeout_s``, and classifies the endpoint (docs/polling.md,
"Status rules"):

* ``up``: the model list answered and lists the served model id, health is fine;
* ``loading``: connection refused (not listening yet, or gone), or 503 while starting
  (``/v1/models`` on any engine; the health route on SGLang and llama.cpp);
* ``down``: timeouts, 5xx, a dead engine (vLLM answers 503 on ``/health`` when its engine died);
* ``unauthorized``: 401 or 403;
* ``misconfigured``: the served model id is not listed (or ``/v1/models`` is missing);
* ``error``: a reply that cannot be understood, a refused address, a redirect, a body too large.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from typing import Any, Protocol

from .guard import (
    FetchResult,
    IPNetwork,
    display_url,
    fetch_async,
    parse_networks,
    parse_ports,
    parse_refused_ports,
    redact,
    run_sync,
)
from .metrics import DerivedMetrics, MetricsParseError, MetricsSnapshot, SeriesHeads, derive, parse_metrics

logger = logging.getLogger("fleet.polling")


class PollStatus(StrEnum):
    """An endpoint's state as seen from outside."""

    UP = "up"
    LOADING = "loading"
    DOWN = "down"
    UNAUTHORIZED = "unauthorized"
    MISCONFIGURED = "misconfigured"
    ERROR = "error"


# When several steps report trouble the most severe wins; the others become warnings.
_SEVERITY = {
    PollStatus.UP: 0,
    PollStatus.ERROR: 1,
    PollStatus.MISCONFIGURED: 2,
    PollStatus.UNAUTHORIZED: 3,
    PollStatus.LOADING: 4,
    PollStatus.DOWN: 5,
}


class EngineRoutes(Protocol):
    """What the poller asks one serving engine beyond ``/v1/models``, and how it reads the answers.

    The facts are the serving-engine registry's (``planner.engine.serving_engines.PollRoutes``; this
    package may not import ``planner``, so the Django poller passes ``poll_routes()`` with each poll as
    ``engines``). ``health``: the health route (None: none); ``health_503_means_loading``: a 503 there
    means still loading (else the engine died); ``metrics``: the metrics route (None: none served);
    ``metrics_expected``: metrics are always served, so a 404 or 501 is worth a warning; ``owned_by``:
    the ``owned_by`` values of ``/v1/models`` that name the engine."""

    @property
    def health(self) -> str | None: ...
    @property
    def health_503_means_loading(self) -> bool: ...
    @property
    def metrics(self) -> str | None: ...
    @property
    def metrics_expected(self) -> bool: ...
    @property
    def owned_by(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class _ModelsOnly:
    """An engine the poller has no routes for (an OpenAI-compatible server): ``/v1/models`` only."""

    health: str | None = None
    health_503_means_loading: bool = False
    metrics: str | None = None
    metrics_expected: bool = False
    owned_by: tuple[str, ...] = ()


MODELS_ONLY: EngineRoutes = _ModelsOnly()
#: Statuses from /metrics meaning "metrics not enabled" (llama.cpp without --metrics answers 501).
METRICS_DISABLED = frozenset({404, 501})


@dataclass
class PollOutcome:
    """The result of one poll; ``to_dict()`` is JSON-safe for storage.

    ``latencies_s`` maps a route (``models``, ``health``, ``metrics``) to its request's wall time
    in seconds; ``http_status`` maps it to the HTTP status (None when no response came).
    ``max_model_len`` is in tokens (None when the engine does not say). ``polled_at`` is a Unix
    time in seconds. ``metrics_available`` is None when /metrics was not asked.
    """

    status: PollStatus
    reason: str
    base_url: str
    engine: str
    served_model_id: str
    detected_engine: str | None = None
    model_ids: list[str] = field(default_factory=list)
    max_model_len: int | None = None
    latencies_s: dict[str, float] = field(default_factory=dict)
    http_status: dict[str, int | None] = field(default_factory=dict)
    metrics_available: bool | None = None
    snapshot: MetricsSnapshot | None = None
    derived: DerivedMetrics | None = None
    warnings: list[str] = field(default_factory=list)
    polled_at: float = 0.0

    @property
    def is_up(self) -> bool:
        return self.status == PollStatus.UP

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types only (no NaN or infinity), ready for a JSONField."""
        data: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, MetricsSnapshot | DerivedMetrics):
                data[f.name] = value.to_dict()
            elif isinstance(value, PollStatus):
                data[f.name] = value.value
            elif isinstance(value, list | dict):
                data[f.name] = json.loads(json.dumps(value))
            else:
                data[f.name] = value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PollOutcome:
        """Inverse of :meth:`to_dict` (to get the previous snapshot back from storage)."""
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in known}
        kwargs["status"] = PollStatus(kwargs["status"])
        kwargs["snapshot"] = MetricsSnapshot.from_dict(kwargs.get("snapshot"))
        kwargs["derived"] = DerivedMetrics.from_dict(kwargs.get("derived"))
        return cls(**kwargs)


def normalise_base_url(base_url: str) -> tuple[str, list[str]]:
    """Strip trailing slashes and a trailing ``/v1`` (the base URL is the server's root)."""
    warnings: list[str] = []
    url = (base_url or "").strip().rstrip("/")
    if url.endswith("/v1"):
        url = url[: -len("/v1")]
        warnings.append("the base URL ended in /v1; polling the server's root instead")
    return url, warnings


@dataclass
class _Step:
    status: PollStatus
    reason: str


def _transport_status(result: FetchResult, what: str) -> _Step:
    """Status for a request that got no usable HTTP response."""
    if result.error == "connect":
        return _Step(PollStatus.LOADING, f"{what}: {result.message} (not listening: starting, or gone)")
    if result.error in ("timeout", "deadline", "dns", "network", "protocol", "tls"):
        return _Step(PollStatus.DOWN, f"{what}: {result.message}")
    # refused, redirect, too_large
    return _Step(PollStatus.ERROR, f"{what}: {result.message}")


def _snippet(body: bytes, limit: int = 160) -> str:
    text = body[:limit].decode("utf-8", "replace")
    text = "".join(ch if ch.isprintable() else " " for ch in text).strip()
    return f": {text}" if text else ""


def _http_status(result: FetchResult, what: str, routes: EngineRoutes, route: str) -> _Step | None:
    """Status for an HTTP error response, None for 2xx (``routes``: the engine's, for its 503 rule)."""
    code = result.status or 0
    if 200 <= code < 300:
        return None
    if code in (401, 403):
        return _Step(PollStatus.UNAUTHORIZED, f"{what}: HTTP {code} (API key missing or wrong)")
    if code == 503:
        if route == "models" or (route == "health" and routes.health_503_means_loading):
            return _Step(PollStatus.LOADING, f"{what}: HTTP 503 (starting or loading the model)")
        return _Step(PollStatus.DOWN, f"{what}: HTTP 503 (engine dead)")
    if code >= 500:
        return _Step(PollStatus.DOWN, f"{what}: HTTP {code}{_snippet(result.body)}")
    if code == 404 and route == "models":
        return _Step(PollStatus.MISCONFIGURED, f"{what}: HTTP 404 (no OpenAI-compatible API at this base URL)")
    return _Step(PollStatus.ERROR, f"{what}: unexpected HTTP {code}{_snippet(result.body)}")


def _parse_models(body: bytes) -> list[dict[str, Any]]:
    """The ``data`` list of ``/v1/models``; raises ValueError with a reason when it is not one."""
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not JSON ({exc.__class__.__name__}: {str(exc)[:80]})") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), list):
        raise ValueError("JSON without a 'data' list of models")
    models = [entry for entry in payload["data"] if isinstance(entry, dict) and isinstance(entry.get("id"), str)]
    if len(models) != len(payload["data"]):
        raise ValueError("a model entry without a string 'id'")
    return models


def _max_model_len(entry: dict[str, Any]) -> int | None:
    value = entry.get("max_model_len")
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def poll_endpoint(base_url: str, engine: str, served_model_id: str, api_key: str | None, **kwargs: Any) -> PollOutcome:
    """:func:`poll_endpoint_async` from synchronous code (a new event loop: see ``guard.run_sync``)."""
    return run_sync(poll_endpoint_async(base_url, engine, served_model_id, api_key, **kwargs))


async def poll_endpoint_async(
    base_url: str,
    engine: str,
    served_model_id: str,
    api_key: str | None,
    *,
    timeout_s: float = 5.0,
    max_bytes: int = 8 * 1024 * 1024,
    allowed_networks: Iterable[str | IPNetwork] | None = None,
    allowed_ports: Iterable[int | str] | None = None,
    loopback_refused_ports: Mapping[int, str] | Iterable[int | str] | None = None,
    prev_snapshot: MetricsSnapshot | None = None,
    verify: bool | str = True,
    clock: Callable[[], float] = time.time,
    series_heads: SeriesHeads | None = None,
    engines: Mapping[str, EngineRoutes] | None = None,
) -> PollOutcome:
    """Poll one endpoint and classify it; never raises for endpoint trouble.

    ``engine`` is the registered engine's name and ``engines`` every known engine's routes by name
    (:class:`EngineRoutes`: the serving-engine registry's ``poll_routes()``, which the Django poller
    passes; None or an engine missing from it: ``/v1/models`` only); the engine detected from
    ``/v1/models`` (``owned_by``) chooses the routes when it differs.
    ``api_key`` is sent as ``Authorization: Bearer`` when set and appears nowhere in the outcome.
    ``timeout_s`` (seconds) is the deadline of each of the (at most three) requests, ``max_bytes``
    the cap on each body in bytes, ``allowed_networks`` the guard's networks (None: loopback only),
    ``allowed_ports`` its TCP ports (None or empty: any), ``loopback_refused_ports`` the ports refused on
    loopback (None: the guard's default, PostgreSQL's and Redis's), ``prev_snapshot`` the last poll's snapshot
    (for rates), ``verify`` TLS verification (True, False or a CA bundle path), ``clock`` the Unix-time
    source in seconds,
    ``series_heads`` the metric series heads parsed by other polls of the cycle (None: none).
    Raises ValueError only for a malformed ``allowed_networks``, ``allowed_ports`` or ``loopback_refused_ports``.
    """
    polled_at = clock()
    allowed_networks = parse_networks(allowed_networks)  # once for the poll's requests; may raise ValueError
    ports = parse_ports(allowed_ports)
    refused_ports = parse_refused_ports(loopback_refused_ports)
    url, warnings = normalise_base_url(base_url)
    shown_url = display_url(url)
    engine = (engine or "").lower()
    engines = engines or {}
    secrets = [api_key] if api_key else []
    headers = {"Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    outcome = PollOutcome(
        status=PollStatus.UP,
        reason="",
        base_url=shown_url,
        engine=engine,
        served_model_id=served_model_id or "",
        warnings=warnings,
        polled_at=polled_at,
    )

    async def get(route: str, path: str, accept: str = "application/json") -> FetchResult:
        result = await fetch_async(
            f"{url}{path}",
            headers={**headers, "Accept": accept},
            timeout_s=timeout_s,
            max_bytes=max_bytes,
            allowed_networks=allowed_networks,
            allowed_ports=ports,
            loopback_refused_ports=refused_ports,
            verify=verify,
        )
        outcome.latencies_s[route] = round(result.elapsed_s, 6)
        outcome.http_status[route] = result.status
        return result

    steps: list[_Step] = []

    # 1. The model list: reachability, auth, model ids, engine.
    models = await get("models", "/v1/models")
    if models.error:
        return _finish(outcome, [_transport_status(models, "GET /v1/models")], secrets)
    bad = _http_status(models, "GET /v1/models", engines.get(engine, MODELS_ONLY), "models")
    if bad is not None:
        return _finish(outcome, [bad], secrets)
    try:
        entries = _parse_models(models.body)
    except ValueError as exc:
        return _finish(outcome, [_Step(PollStatus.ERROR, f"GET /v1/models: unparseable reply, {exc}")], secrets)
    outcome.model_ids = [entry["id"] for entry in entries]
    served = next((e for e in entries if e["id"] == served_model_id), None) if served_model_id else None
    reference = served or (entries[0] if entries else None)
    if reference is not None:
        outcome.max_model_len = _max_model_len(reference)
        owned_by = str(reference.get("owned_by", "")).lower()
        outcome.detected_engine = next((name for name, r in engines.items() if owned_by in r.owned_by), None)
    if not entries:
        steps.append(_Step(PollStatus.MISCONFIGURED, "GET /v1/models lists no model"))
    elif served is None:
        listed = ", ".join(outcome.model_ids[:5]) + (" ..." if len(outcome.model_ids) > 5 else "")
        reason = (
            f"model {served_model_id!r} is not served (listed: {listed})"
            if served_model_id
            else f"no served model id is registered, so the models listed ({listed}) cannot be checked"
        )
        steps.append(_Step(PollStatus.MISCONFIGURED, reason))
    routes = engines.get(outcome.detected_engine or engine, MODELS_ONLY)
    registered = engines.get(engine, MODELS_ONLY)
    if outcome.detected_engine and registered.metrics and outcome.detected_engine != engine:
        warnings.append(f"registered as {engine} but the server says {outcome.detected_engine}")

    # 2. The engine's health route.
    health_path = routes.health
    if health_path:
        health = await get("health", health_path, accept="*/*")
        if health.error:
            steps.append(_transport_status(health, f"GET {health_path}"))
        elif health.status == 404:
            warnings.append(f"GET {health_path}: HTTP 404 (no health route)")
        else:
            bad = _http_status(health, f"GET {health_path}", routes, "health")
            if bad is not None:
                steps.append(bad)

    # 3. Metrics, where the engine serves them.
    if routes.metrics:
        metrics_path = routes.metrics
        scrape = await get("metrics", metrics_path, accept="text/plain")
        if scrape.error:
            outcome.metrics_available = False
            steps.append(_transport_status(scrape, f"GET {metrics_path}"))
        elif scrape.status in METRICS_DISABLED:
            outcome.metrics_available = False
            if routes.metrics_expected:
                shown = outcome.detected_engine or engine
                warnings.append(f"GET {metrics_path}: HTTP {scrape.status} ({shown} normally serves metrics)")
        elif (bad := _http_status(scrape, f"GET {metrics_path}", routes, "metrics")) is not None:
            outcome.metrics_available = False
            steps.append(bad)
        else:
            try:
                snapshot = parse_metrics(scrape.body, scraped_at=clock(), heads=series_heads)
            except MetricsParseError as exc:
                outcome.metrics_available = False
                steps.append(_Step(PollStatus.ERROR, f"GET {metrics_path}: unparseable reply, {exc}"))
            else:
                outcome.metrics_available = True
                outcome.snapshot = snapshot
                outcome.derived = derive(prev_snapshot, snapshot)
                if outcome.derived.counter_reset:
                    warnings.append("counters went back: the engine restarted since the last poll")
    return _finish(outcome, steps, secrets)


#: What people are shown for each status (pages, API): one sentence per status, never the transport's
#: words ("connection refused", "malformed reply", a parser's message), which would let anyone who may
#: register an endpoint and poll it tell open ports from closed ones on hosts the poller reaches.
#: The detailed reason goes to the worker's log (``fleet.poll_store``).
PUBLIC_REASONS = {
    PollStatus.LOADING: "not ready: starting, loading the model, or not listening (details in the worker log)",
    PollStatus.DOWN: "no usable answer in time, or the engine reports a failure (details in the worker log)",
    PollStatus.UNAUTHORIZED: "the endpoint refused the request: the API key is missing or wrong",
    PollStatus.MISCONFIGURED: "the base URL or the served model id does not match what the endpoint serves "
    "(details in the worker log)",
    PollStatus.ERROR: "the endpoint's reply could not be used, or the address is not one the poller may reach "
    "(details in the worker log)",
}


def public_outcome(outcome: PollOutcome) -> PollOutcome:
    """``outcome`` as shown to people: the reason is :data:`PUBLIC_REASONS`' for its status, and only
    the poller's own warnings are kept (the others are demoted steps' reasons, in transport words).

    An outcome of no request at all (``http_status`` empty: a stored key that cannot be decrypted)
    keeps its reason, which is ours. ``up`` keeps its reason (the served model id, nothing else)."""
    if not outcome.http_status or outcome.status == PollStatus.UP:
        reason = outcome.reason
    else:
        reason = PUBLIC_REASONS[outcome.status]
    warnings = [w for w in outcome.warnings if w.startswith(OWN_WARNING_PREFIXES)]
    return replace(outcome, reason=reason, warnings=warnings)


#: Warnings worded by the poller itself, not by the endpoint's transport (kept in public outcomes).
OWN_WARNING_PREFIXES = ("the base URL ended in /v1", "counters went back", "registered as ")


def _finish(outcome: PollOutcome, steps: list[_Step], secrets: list[str]) -> PollOutcome:
    """Pick the most severe step as the status, demote the others to warnings, scrub secrets."""
    if steps:
        worst = max(steps, key=lambda step: _SEVERITY[step.status])
        outcome.status, outcome.reason = worst.status, worst.reason
        outcome.warnings.extend(step.reason for step in steps if step is not worst)
    else:
        outcome.status = PollStatus.UP
        outcome.reason = "the model list answered" + (
            f" and lists {outcome.served_model_id!r}" if outcome.served_model_id else ""
        )
    outcome.reason = redact(outcome.reason, secrets)
    outcome.warnings = [redact(w, secrets) for w in outcome.warnings]
    logger.info("poll %s: %s (%s)", outcome.base_url, outcome.status.value, outcome.reason)
    return outcome
