"""Routing advisor service: the fleet as the router sees it, ranked for a request class; the
LiteLLM ``model_list`` export.

``route(request, now=None)`` ranks the fleet for a request class with ``planner.engine.rank``
(formulas and ranking rules: its module docstring, ``planner/engine/routing.py``; docs/routing.md).
The fleet is every enabled deployment (with its cluster, SKU and model), the latest usable speed
correction of each (``planner.corrections.latest_for_many``), the GPU quotes and the hosted API
prices in force, read in a fixed number of queries whatever the fleet's size, turned into the
engine's plain inputs and kept as this process's snapshot; a gateway calls this per request, so a
call first asks one query whether any of those records changed (``fleet_version``) and reuses the
snapshot when none did (poll ages recomputed for now).

``most_served_model()``: the model the route page asks for unless told another.

``litellm_model_list(now=None)``: one LiteLLM router entry per enabled deployment with a base URL
and per hosted API price in force, priced per token from our records and limited (rpm/tpm) by the
deployment's capacity. No API key is ever read or written here: keys are write-only.

Front doors: ``POST /api/v1/route/`` and ``GET /api/v1/route/litellm/`` (``planner/api/routing.py``),
the route page (``planner/views/route.py``). Domain errors: ``InputError`` (an unknown model),
``EngineInputError`` (a request class that cannot be routed), both with field names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Count, Sum
from django.utils import timezone

from fleet.errors import FIELD_ERRORS, InputError
from fleet.models import ApiPrice, Cluster, Deployment, GpuQuote, HardwareSku, ModelSpec
from fleet.prices import PriceBook
from planner.corrections import corrected_throughput, latest_for_many
from planner.corrections import to_engine as correction_to_engine
from planner.engine import (
    DEFAULT_PRICING_KIND,
    Accelerator,
    ApiCandidate,
    DeploymentCandidate,
    ModelArch,
    PriceInForce,
    RequestClass,
    RouteResult,
    rank,
)
from planner.models import SpeedCorrection

#: The pricing kind a deployment's GPU-hours are priced at (the engine's one default).
PRICING_KIND = DEFAULT_PRICING_KIND


@dataclass(frozen=True)
class Route:
    """A ranked request class: the engine's result and when the fleet was read."""

    result: RouteResult
    at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {**self.result.to_dict(), "at": self.at.isoformat()}


#: The columns ranking reads (``Deployment.only``): serving settings, live state, and what the speed
#: correction's validity (``planner.corrections.serving_of``) and the engine's model and SKU read.
ROUTE_FIELDS = (
    "slug",
    "cluster",
    "model",
    *Deployment.SERVING,
    "poll_interval_s",
    "last_status",
    "last_polled",
    "last_metrics",
    "cluster__slug",
    # An owned cluster is priced at its own cost for its GPUs and hours (``PriceBook.for_cluster``).
    "cluster__ownership",
    "cluster__nodes",
    "cluster__gpus_per_node",
    "cluster__hours_per_day",
    "cluster__sku__gpus_per_node",
    "cluster__provider__name",
    "cluster__sku__slug",
    "cluster__sku__name",
    *(f"cluster__sku__{name}" for name in HardwareSku.FIGURES),
    "model__slug",
    "model__name",
    "model__modalities",
    *(f"model__{name}" for name in ModelSpec.FIGURES),
)


def _deployments() -> list[Deployment]:
    """Enabled deployments with the columns ranking reads (one query; never the API key)."""
    return list(
        Deployment.objects.filter(enabled=True)
        .select_related("cluster__sku", "cluster__provider", "model")
        .only(*ROUTE_FIELDS)
        .order_by("slug")
    )


def _export_deployments() -> list[Deployment]:
    """Enabled deployments with a base URL, their workloads too (the LiteLLM export's request shape)."""
    return list(
        Deployment.objects.filter(enabled=True)
        .exclude(base_url="")
        .select_related("cluster__sku", "cluster__provider", "model", "workload")
        .defer("api_key_encrypted", "model__source", "model__assumptions", "cluster__sku__source")
        .order_by("slug")
    )


def _prices(deployments: list[Deployment], now: datetime) -> dict[int, PriceInForce | None]:
    """Deployment id -> its cluster's on-demand price in force today (one query), as every page prices it."""
    today = now.date()
    book = PriceBook.load({d.cluster.sku_id for d in deployments}, until=today, kind=PRICING_KIND)
    return {d.pk: book.for_deployment(d, today, PRICING_KIND) for d in deployments}


def api_prices_in_force(now: datetime) -> list[ApiPrice]:
    """The latest price of each (provider, model name) quoted on or before today (one query)."""
    rows = (
        ApiPrice.objects.filter(quoted_on__lte=now.date())
        .select_related("model")
        .defer("source", "model__source", "model__assumptions")
        .order_by("provider", "model_name", "-quoted_on", "-id")
    )
    latest: dict[tuple[str, str], ApiPrice] = {}
    for row in rows:
        latest.setdefault((row.provider, row.model_name), row)
    return sorted(latest.values(), key=lambda row: row.slug)


def _age_s(deployment: Deployment, now: datetime) -> float | None:
    if deployment.last_polled is None:
        return None
    return max(0.0, (now - deployment.last_polled).total_seconds())


def _metric(metrics: dict[str, Any], name: str) -> float | None:
    value = metrics.get(name)
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def deployment_candidates(deployments: list[Deployment], now: datetime) -> list[DeploymentCandidate]:
    """The engine's view of each deployment (two queries: speed corrections and quotes)."""
    corrections = latest_for_many(deployments, now)
    prices = _prices(deployments, now)
    models: dict[int, ModelArch | None] = {}
    skus: dict[int, Accelerator] = {}
    out = []
    for d in deployments:
        if d.model_id not in models:
            try:
                models[d.model_id] = d.model.to_engine()
            except FIELD_ERRORS:
                models[d.model_id] = None
        arch = models[d.model_id]
        if arch is None:
            continue  # a model record the engine cannot read is refused on save; none should exist
        sku = d.cluster.sku
        if sku.pk not in skus:
            skus[sku.pk] = sku.to_engine()
        fit = corrections.get(d.pk)
        serving = d.serving(
            arch,
            skus[sku.pk],
            correction=None if fit is None else correction_to_engine(fit, with_assumptions=False),
            correction_age_s=None if fit is None else max(0.0, (now - fit.fitted_at).total_seconds()),
        )
        metrics = d.last_metrics or {}
        quote = prices.get(d.pk)
        out.append(
            DeploymentCandidate(
                slug=d.slug,
                model=d.model.slug,
                context_window=d.planning_context_tokens,
                serving=serving,
                modalities=d.model.modality_list,
                status=d.last_status,
                last_poll_age_s=_age_s(d, now),
                stale_after_s=d.stale_after_s,  # the one rule of a stale poll (fleet's Deployment)
                requests_running=_metric(metrics, "requests_running"),
                requests_waiting=_metric(metrics, "requests_waiting"),
                kv_cache_usage=_metric(metrics, "kv_cache_usage"),
                usd_per_gpu_hour=None if quote is None else quote.usd_per_gpu_hour,
                # granularity_tokens left None: the engine works it out from the deployment's allocation
                # (planner.engine.prefix_granularity_tokens: vLLM's block; SGLang's page, or max(64, page)
                # for a hybrid under extra_buffer).
            )
        )
    return out


def api_candidates(prices: list[ApiPrice]) -> list[ApiCandidate]:
    """The engine's view of each hosted API price (its modalities are its model record's; text without one)."""
    block = int(settings.ROUTE_API_CACHE_BLOCK_TOKENS)
    return [
        ApiCandidate(
            slug=p.slug,
            model=p.model.slug if p.model_id else None,
            context_window=p.context_window,
            input_cache_hit_usd_per_mtok=p.input_cache_hit_usd_per_mtok,
            input_cache_miss_usd_per_mtok=p.input_cache_miss_usd_per_mtok,
            output_usd_per_mtok=p.output_usd_per_mtok,
            granularity_tokens=block,
            modalities=p.model.modality_list if p.model_id else ("text",),
            provider=p.provider,
            model_name=p.model_name,
        )
        for p in prices
    ]


@dataclass(frozen=True)
class Fleet:
    """The fleet as the engine sees it, read at ``at``; ``polled`` is each deployment's last poll time
    (its age is recomputed whenever the snapshot is reused)."""

    version: tuple[Any, ...]
    at: datetime
    deployments: tuple[DeploymentCandidate, ...]
    polled: tuple[datetime | None, ...]
    apis: tuple[ApiCandidate, ...]
    models: frozenset[str]


#: The records whose changes make a new fleet snapshot: (model, the columns whose aggregate changes
#: when a row is added, edited or deleted through the ORM or written by the poller).
VERSIONED = (
    (Deployment, ("updated", "last_polled")),
    (ApiPrice, ("updated",)),
    (GpuQuote, ("updated",)),
    (SpeedCorrection, ("fitted_at",)),
    (ModelSpec, ("updated",)),
    (HardwareSku, ("updated",)),
    (Cluster, ("updated",)),
)


def fleet_version(now: datetime) -> tuple[Any, ...]:
    """What the routing inputs were made from, in one query: per record table its row count, largest
    id and the latest of its change timestamps; the minute (quotes and corrections come into force
    and expire with time); the routing settings. Equal versions mean the same inputs, but for a bulk
    ``UPDATE`` that touches none of those columns (never done by the app's own writers), seen within
    the minute."""
    quote = connection.ops.quote_name
    scalars = []
    for model, columns in VERSIONED:
        table = quote(model._meta.db_table)
        for aggregate in ("COUNT(*)", "MAX(id)", *(f"MAX({quote(c)})" for c in columns)):
            # Table and column names are the models' own (quoted), never input.
            scalars.append(f"(SELECT {aggregate} FROM {table})")  # noqa: S608
    sql = "SELECT " + ", ".join(scalars)
    with connection.cursor() as cursor:
        cursor.execute(sql)
        row = tuple(str(v) for v in cursor.fetchone())
    knobs = (settings.ROUTE_STALE_POLL_INTERVALS, settings.ROUTE_STALE_MIN_S, settings.ROUTE_API_CACHE_BLOCK_TOKENS)
    return (now.replace(second=0, microsecond=0).isoformat(), row, knobs)


def read_fleet(now: datetime, version: tuple[Any, ...] = ()) -> Fleet:
    """The engine's inputs, read from the records (four queries)."""
    rows = _deployments()
    deployments = deployment_candidates(rows, now)
    polled = {d.slug: d.last_polled for d in rows}
    return Fleet(
        version=version,
        at=now,
        deployments=tuple(deployments),
        polled=tuple(polled[d.slug] for d in deployments),
        apis=tuple(api_candidates(api_prices_in_force(now))),
        models=frozenset(ModelSpec.objects.values_list("slug", flat=True)),
    )


#: This process's last fleet snapshot (``{"fleet": Fleet}``): reused while ``fleet_version`` is unchanged.
_SNAPSHOT: dict[str, Fleet] = {}


def clear_snapshot() -> None:
    """Forget this process's fleet snapshot (the next call reads the fleet; tests start from none)."""
    _SNAPSHOT.clear()


def current_fleet(now: datetime) -> Fleet:
    """The fleet at ``now``: this process's snapshot when the records have not changed since it was read
    (one query to tell, ``fleet_version``), with every poll age recomputed for ``now``; else read again."""
    version = fleet_version(now)
    cached = _SNAPSHOT.get("fleet")
    if cached is None or cached.version != version:
        cached = _SNAPSHOT["fleet"] = read_fleet(now, version)
        return cached
    if now == cached.at:
        return cached
    aged = tuple(
        d if at is None else replace(d, last_poll_age_s=max(0.0, (now - at).total_seconds()))
        for d, at in zip(cached.deployments, cached.polled, strict=True)
    )
    return replace(cached, at=now, deployments=aged)


def route(request: RequestClass, now: datetime | None = None) -> Route:
    """Rank every enabled deployment and every hosted API price in force for ``request``.

    Raises ``EngineInputError`` (the class's own fields) or ``InputError`` (``model``: no such model).
    Queries: one when nothing changed since this process last read the fleet, six when it did."""
    request.check()
    now = now or timezone.now()
    fleet = current_fleet(now)
    if request.model is not None and request.model not in fleet.models:
        raise InputError.single("model", f"No model {request.model!r}.")
    return Route(result=rank(request, fleet.deployments, fleet.apis), at=now)


def most_served_model() -> str | None:
    """The slug of the model the fleet serves most: on the most enabled deployments, then on the most
    replicas, then the first slug (one query; None when no deployment is enabled). The route page asks
    for this model unless told another."""
    top = (
        Deployment.objects.filter(enabled=True)
        .values("model__slug")
        .annotate(deployments=Count("id"), replicas=Sum("replicas"))
        .order_by("-deployments", "-replicas", "model__slug")
        .first()
    )
    return top["model__slug"] if top else None


# ------------------------------------------------------------------------------------------------
# LiteLLM export
# ------------------------------------------------------------------------------------------------


def _per_token(usd_per_mtok: Any) -> float:
    return float(usd_per_mtok) / 1e6


def _deployment_entry(d: Deployment, quote: PriceInForce | None, correction: Any, now: datetime) -> dict[str, Any]:
    """One deployment as a LiteLLM ``model_list`` entry (docs/routing.md, "LiteLLM")."""
    params: dict[str, Any] = {
        "model": f"openai/{d.served_model_id or d.model.slug}",
        "api_base": d.shown_base_url.rstrip("/") + "/v1",
    }
    info: dict[str, Any] = {
        "id": f"fleetcap-deployment-{d.slug}",
        "fleetcap_kind": "deployment",
        "fleetcap_slug": d.slug,
        "max_input_tokens": d.planning_context_tokens,
    }
    try:
        speed = corrected_throughput(d, correction, now=now).result
    except FIELD_ERRORS as exc:
        info["fleetcap_note"] = f"No capacity figures: {exc}"
        return {"model_name": d.model.slug, "litellm_params": params, "model_info": info}
    # A layout that does not fit memory serves nothing (as rent vs API and /metrics have it): no limits, no cost.
    output_per_s = speed.tokens_per_s_replica * d.replicas if speed.fits else 0.0
    if output_per_s > 0:
        rpm = math.floor(output_per_s * 60 / speed.output_tokens)
        params["rpm"] = max(1, rpm)
        params["tpm"] = max(1, rpm) * (speed.prompt_tokens + speed.output_tokens)
        info["fleetcap_shape"] = {"prompt_tokens": speed.prompt_tokens, "output_tokens": speed.output_tokens}
    if quote is not None and output_per_s > 0:
        usd_per_hour = float(quote.usd_per_gpu_hour) * d.gpus
        params["input_cost_per_token"] = 0.0
        params["output_cost_per_token"] = usd_per_hour / (output_per_s * 3600)
        info["fleetcap_usd_per_hour"] = usd_per_hour
    return {"model_name": d.model.slug, "litellm_params": params, "model_info": info}


def _api_entry(p: ApiPrice) -> dict[str, Any]:
    """One hosted API price as a LiteLLM entry: prices per token; no api_base or key (we store neither)."""
    info: dict[str, Any] = {
        "id": f"fleetcap-api-{p.slug}",
        "fleetcap_kind": "api",
        "fleetcap_slug": p.slug,
        "fleetcap_note": f"{p.provider}: add its api_base and credential (os.environ/...) in your config.",
    }
    if p.context_window:
        info["max_input_tokens"] = p.context_window
    return {
        "model_name": p.model.slug if p.model_id else p.model_name,
        "litellm_params": {
            "model": f"openai/{p.model_name}",
            "input_cost_per_token": _per_token(p.input_cache_miss_usd_per_mtok),
            "cache_read_input_token_cost": _per_token(p.input_cache_hit_usd_per_mtok),
            "output_cost_per_token": _per_token(p.output_usd_per_mtok),
        },
        "model_info": info,
    }


def litellm_model_list(now: datetime | None = None) -> dict[str, Any]:
    """``{"model_list": [...]}``: a LiteLLM router / proxy ``model_list`` of every enabled deployment
    with a base URL and every hosted API price in force, deployments first, each by slug.

    Per deployment: ``model_name`` its model's slug (LiteLLM balances a group of the same name),
    ``litellm_params.model`` ``openai/<served model id>`` at ``api_base`` = its base URL + ``/v1``
    (vLLM, SGLang and llama.cpp serve the OpenAI API there); ``rpm`` = replicas x output tokens/s per
    replica x 60 / output tokens, ``tpm`` = rpm x (prompt + output) for its workload's request shape
    (2,048 / 256 without one) at its SLO-limited concurrency, corrected by its live speed correction;
    ``output_cost_per_token`` = GPUs x USD per GPU-hour / output tokens per hour (busy; the quote in
    force), ``input_cost_per_token`` 0 (the GPU-hour is carried by the output tokens, as rent vs API's
    cost per million output tokens). Per API: its prices per token (cache miss as input, cache hit as
    ``cache_read_input_token_cost``). Never an API key."""
    now = now or timezone.now()
    deployments = _export_deployments()
    corrections = latest_for_many(deployments, now)
    prices = _prices(deployments, now)
    entries = [_deployment_entry(d, prices.get(d.pk), corrections.get(d.pk), now) for d in deployments]
    entries += [_api_entry(p) for p in api_prices_in_force(now)]
    return {"model_list": entries}
