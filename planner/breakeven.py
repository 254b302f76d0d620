"""Rent-versus-API service: check a ``BreakevenRequest``, resolve prices and records, call the
cost engine.

Used by ``POST /api/v1/breakeven/``, by recorded decisions (``planner.decisions``, which freeze
``snapshot``), and by the rent-vs-API page. Prices come either inline or from records: the GPU price
in force on a date (``fleet.prices.PriceBook``: a deployment's cluster's provider's quote, else its
list price; a SKU alone: the cheapest quote, else the cheapest list price), or a quote a person
picked by id (``gpu_quote``: the seeds' assumption, say, which is never in force), and an
``ApiPrice`` by slug; either way the response says which prices, with their dates and basis, it
used.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from datetime import date
from decimal import Decimal
from typing import Any

from django.utils import timezone

from fleet.errors import InputError
from fleet.models import ApiPrice, Deployment, HardwareSku, ModelSpec, Workload
from fleet.models.base import find_by_slug
from fleet.prices import PriceBook
from planner.corrections import corrected_throughput, deployment_throughput, latest_for_many
from planner.engine import (
    DEFAULT_DAYS_PER_MONTH,
    DEFAULT_GPU_MEMORY_UTILIZATION,
    DEFAULT_USEFUL_LIFE_MONTHS,
    GIB,
    PRICING_KINDS,
    Layout,
    PriceInForce,
    ThroughputResult,
    blended_input_usd_per_mtok,
    breakeven,
    buy_option,
    cheapest_of_three,
    estimate,
    month_label,
    size,
    unit_economics,
    weights_bytes,
    weights_storage,
)
from planner.estimates import band_around

PRICE_FIELDS = ApiPrice.PRICES


@dataclass(frozen=True)
class BreakevenRequest:
    """A rent-versus-API comparison. Records by slug; ``None`` means "not given". Either an inline
    rate (``usd_per_gpu_hour``), or the price in force on ``on`` (of the ``deployment``'s cluster, or of a
    ``sku``), or a GPU quote a person picked (``gpu_quote``, an id: priced on it, said so); either an
    ``api_price`` slug or the three inline prices; monthly tokens inline or from a ``workload``;
    a ``deployment`` fills GPUs, SKU, model and (throughput model, with the deployment's live speed
    correction when there is one: ``figures["calibrated"]``) the capacity. Money is Decimal
    USD; token volumes are per month; ``hours_per_day`` 0-24."""

    gpus: int | None = None
    usd_per_gpu_hour: Decimal | None = None
    sku: str | None = None
    gpu_quote: int | None = None
    on: date | None = None
    pricing_kind: str = "on-demand"
    hours_per_day: Decimal = Decimal(24)
    days_per_month: int = DEFAULT_DAYS_PER_MONTH
    api_price: str | None = None
    input_cache_hit_usd_per_mtok: Decimal | None = None
    input_cache_miss_usd_per_mtok: Decimal | None = None
    output_usd_per_mtok: Decimal | None = None
    workload: str | None = None
    deployment: str | None = None
    model: str | None = None
    monthly_input_tokens: int | None = None
    monthly_output_tokens: int | None = None
    cache_hit_rate: float | None = None
    capacity_output_tokens_per_month: int | None = None
    utilisation: float | None = None
    weights_bytes: int | None = None
    download_gbytes_per_s: float | None = None
    storage_usd_per_gb_month: Decimal | None = None
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    ep: int | None = None
    # Buying the same GPUs (``buy_usd_per_gpu`` given): the third option, ``planner.engine.buy_option``.
    buy_usd_per_gpu: Decimal | None = None
    buy_useful_life_months: int | None = None
    buy_residual_share: Decimal | None = None
    buy_pue: Decimal | None = None
    buy_usd_per_kwh: Decimal | None = None
    buy_node_overhead_w: Decimal | None = None
    buy_racks: Decimal | None = None
    buy_usd_per_rack_month: Decimal | None = None
    buy_support_share_per_year: Decimal | None = None
    buy_staff_usd_per_month: Decimal | None = None

    def given(self) -> dict[str, Any]:
        """The fields that were given (not None), for the frozen snapshot."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


@dataclass(frozen=True)
class Resolved:
    """A request's records, looked up by slug, and the values a deployment fills in."""

    gpus: int | None
    sku: HardwareSku | None
    api_price: ApiPrice | None
    workload: Workload | None
    deployment: Deployment | None
    model: ModelSpec | None


@dataclass(frozen=True)
class Preloaded:
    """Records read once for many comparisons (a worker's batch, ``planner.reviews``): ``compare`` takes a
    record from here when its slug is in it, and reads the database only for the others. Deployments
    with their cluster, SKU, provider, model and workload; API prices with their model; the SKUs' GPU
    quotes (every kind: a ``PriceBook``); each deployment's usable live speed correction (absent: none)."""

    deployments: Mapping[str, Deployment] = field(default_factory=dict)
    api_prices: Mapping[str, ApiPrice] = field(default_factory=dict)
    workloads: Mapping[str, Workload] = field(default_factory=dict)
    skus: Mapping[str, HardwareSku] = field(default_factory=dict)
    models: Mapping[str, ModelSpec] = field(default_factory=dict)
    book: PriceBook | None = None
    corrections: Mapping[int, Any] = field(default_factory=dict)

    @classmethod
    def load(
        cls,
        *,
        deployments: Iterable[str] = (),
        api_prices: Iterable[str] = (),
        workloads: Iterable[str] = (),
        skus: Iterable[str] = (),
        models: Iterable[str] = (),
    ) -> Preloaded:
        """The records of these slugs, their SKUs' quotes and the deployments' corrections: seven queries
        however many slugs."""
        found = list(
            Deployment.objects.filter(slug__in=set(deployments))
            .select_related("cluster__sku", "cluster__provider", "model", "workload")
            .defer("api_key_encrypted")
        )
        sku_rows = {s.slug: s for s in HardwareSku.objects.filter(slug__in=set(skus))}
        sku_ids = {d.cluster.sku_id for d in found} | {s.pk for s in sku_rows.values()}
        return cls(
            deployments={d.slug: d for d in found},
            api_prices={a.slug: a for a in ApiPrice.objects.filter(slug__in=set(api_prices)).select_related("model")},
            workloads={w.slug: w for w in Workload.objects.filter(slug__in=set(workloads))},
            skus=sku_rows,
            models={m.slug: m for m in ModelSpec.objects.filter(slug__in=set(models))},
            book=PriceBook.load(sku_ids),
            corrections=latest_for_many(found),
        )


def _lookup(
    preloaded: Mapping[str, Any] | None, queryset: Any, slug: str | None, name: str, errors: dict[str, list[str]]
) -> Any:
    if preloaded is not None and slug in preloaded:
        return preloaded[slug]
    return find_by_slug(queryset, slug, name, errors)


def resolve(request: BreakevenRequest, preloaded: Preloaded | None = None) -> Resolved:
    """Look up the records (from ``preloaded`` where it holds them) and check which combinations were
    given (InputError per field)."""
    errors: dict[str, list[str]] = {}
    if request.pricing_kind not in PRICING_KINDS:
        errors["pricing_kind"] = [f"Use one of {', '.join(PRICING_KINDS)}."]
    p = preloaded
    deployment = _lookup(
        p and p.deployments, Deployment.objects.select_related("cluster__sku", "cluster__provider", "model"),
        request.deployment,
        "deployment", errors,
    )  # fmt: skip
    sku = _lookup(p and p.skus, HardwareSku.objects, request.sku, "sku", errors)
    api = _lookup(p and p.api_prices, ApiPrice.objects, request.api_price, "api_price", errors)
    workload = _lookup(p and p.workloads, Workload.objects, request.workload, "workload", errors)
    model = _lookup(p and p.models, ModelSpec.objects, request.model, "model", errors)
    gpus = request.gpus
    if deployment is not None:
        gpus = gpus or deployment.replicas * deployment.gpus_per_replica
        if request.usd_per_gpu_hour is None:
            sku = sku or deployment.cluster.sku
        model = model or deployment.model
    if gpus is None and "deployment" not in errors:
        errors["gpus"] = ["Give the number of GPUs, or a deployment."]
    if request.usd_per_gpu_hour is not None and request.gpu_quote is not None:
        errors["gpu_quote"] = ["Give either an inline rate or a GPU quote to price on, not both."]
    buying = request.buy_usd_per_gpu is not None  # the SKU names the GPUs bought (their power), beside a rate
    if request.usd_per_gpu_hour is not None and request.sku is not None and request.deployment is None and not buying:
        errors["usd_per_gpu_hour"] = ["Give either an inline rate or a SKU (its price in force), not both."]
    elif request.usd_per_gpu_hour is None and sku is None and "sku" not in errors and "deployment" not in errors:
        errors["usd_per_gpu_hour"] = ["Give an inline rate, a deployment or a SKU whose price in force is used."]
    inline = [name for name in PRICE_FIELDS if getattr(request, name) is not None]
    if request.api_price is not None and inline:
        errors["api_price"] = ["Give either an API price slug or inline prices, not both."]
    elif request.api_price is None and len(inline) != len(PRICE_FIELDS):
        missing = "Required unless api_price names a stored price."
        if not inline and model is not None and not ApiPrice.objects.filter(model=model).exists():
            # Nothing to price the API side on, and no stored price to name: say so of the model.
            said = no_api_price_note(model)
            errors["api_price"] = [f"{said} Give its three prices inline, or record one and name it."]
        for name in PRICE_FIELDS:
            if getattr(request, name) is None:
                errors[name] = [missing]
    for name in ("monthly_input_tokens", "monthly_output_tokens"):
        if getattr(request, name) is None and request.workload is None:
            errors[name] = ["Required unless a workload is given."]
    if buy_fields_given(request) and request.buy_usd_per_gpu is None:
        errors["buy_usd_per_gpu"] = ["Give the purchase price per GPU to cost buying, or leave the buy figures out."]
    if errors:
        raise InputError(errors)
    return Resolved(gpus=gpus, sku=sku, api_price=api, workload=workload, deployment=deployment, model=model)


@dataclass
class Breakeven:
    """A computed comparison: the engine's figures and the inputs it was computed from."""

    figures: dict[str, Any]
    snapshot: dict[str, Any]

    def response(self) -> dict[str, Any]:
        return {
            **self.figures,
            "quotes_used": self.snapshot["quotes_used"],
            "api_price_used": self.snapshot["api_price"],
        }


def gpu_price(request: BreakevenRequest, r: Resolved, on: date, preloaded: Preloaded | None = None) -> PriceInForce:
    """The GPU price a comparison uses: the quote a person picked (``gpu_quote``), else the price in
    force on ``on`` of the deployment's cluster, else of the SKU alone (InputError when unpriced)."""
    kind = request.pricing_kind
    sku = r.sku
    book = preloaded.book if preloaded is not None else None
    if book is None or not book.covers(sku.pk):
        book = PriceBook.load([sku.pk])
    if request.gpu_quote is not None:
        picked = book.quote(request.gpu_quote)
        if picked is None or picked.sku != sku.slug:
            raise InputError.single("gpu_quote", f"No GPU quote {request.gpu_quote} of {sku.slug}.")
        if not picked.in_force(on):
            raise InputError.single("gpu_quote", f"GPU quote {request.gpu_quote} is not valid on {on.isoformat()}.")
        return PriceInForce(picked)
    deployment = r.deployment
    if deployment is not None and deployment.cluster.sku_id == sku.pk:
        price = book.for_deployment(deployment, on, kind)
        if price is None:
            provider = deployment.cluster.provider.name
            raise InputError.single(
                "deployment",
                f"{deployment.slug}'s cluster is unpriced on {on.isoformat()}: {provider} has no {kind} quote or "
                f"public list price for {sku.slug}. Add {provider}'s quote, give a rate or pick a quote.",
            )
        return price
    price = book.for_sku(sku.slug, on, kind)
    if price is None:
        raise InputError.single(
            "sku",
            f"{sku.slug} is unpriced on {on.isoformat()}: no provider's {kind} quote or public list price is in force. "
            "Add one, give a rate or pick a quote.",
        )
    return price


#: The figures a decision freezes from each record it was made on.
SNAPSHOT_FIELDS: dict[str, tuple[str, ...]] = {
    "sku": ("slug", "name", "vendor", *HardwareSku.FIGURES),
    "model": ("slug", "name", *ModelSpec.FIGURES),
    "workload": ("slug", "name", "team", *Workload.FIGURES),
    "deployment": ("slug", *Deployment.SERVING),
}


def _figures(kind: str, record: Any) -> dict[str, Any] | None:
    """A JSON-ready copy of a record's figures (None when there is no record)."""
    return None if record is None else _plain({name: getattr(record, name) for name in SNAPSHOT_FIELDS[kind]})


def _plain(value: Any) -> Any:
    """JSON-ready copy: Decimals as strings, dates as ISO strings, records as slugs."""
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "slug"):
        return value.slug
    return value


def _throughput_snapshot(
    speed: ThroughputResult | None, model: Any, sku: HardwareSku, deployment: Deployment | None
) -> dict[str, Any] | None:
    """TPOT, tokens/s and the sensitivity band of the estimate a comparison used (None without one)."""
    if speed is None:
        return None
    accelerator = (deployment.cluster.sku if deployment is not None else sku).to_engine()
    utilisation = deployment.gpu_memory_utilization if deployment is not None else DEFAULT_GPU_MEMORY_UTILIZATION
    band = band_around(model, accelerator, speed, gpu_memory_utilization=utilisation)
    return {
        "tpot_ms": speed.tpot_s * 1e3,
        "tokens_per_s_replica": speed.tokens_per_s_replica,
        "batch": speed.batch,
        "layout": speed.layout.as_dict(),
        "sensitivity": band.to_dict(),
    }


def deployment_output_rate(deployment: Deployment, speed: ThroughputResult) -> float:
    """Output tokens/s of the whole deployment: one replica's rate (``speed``, the throughput model at
    its SLO-limited concurrency, corrected or not) x its replicas. The capacity rent vs API prices."""
    return speed.tokens_per_s_replica * deployment.replicas


def compare(request: BreakevenRequest, preloaded: Preloaded | None = None) -> Breakeven:
    """Resolve prices, records and volumes and call the cost engine (InputError / EngineInputError
    with field names when the request cannot be computed). ``preloaded``: records a batch has read
    (``Preloaded.load``); with every record of the request in it, no query."""
    r = resolve(request, preloaded)
    on = request.on or timezone.now().date()
    quotes_used: list[dict[str, Any]] = []
    price_note = None
    if request.usd_per_gpu_hour is not None:
        rate = request.usd_per_gpu_hour
    else:
        price = gpu_price(request, r, on, preloaded)
        rate = price.usd_per_gpu_hour
        quotes_used.append({**price.quote.to_dict(), "basis": price.basis})
        price_note = price.note
    api = r.api_price
    prices = {name: getattr(api, name) if api else getattr(request, name) for name in PRICE_FIELDS}
    workload = r.workload
    days = request.days_per_month
    monthly_input, monthly_output = request.monthly_input_tokens, request.monthly_output_tokens
    if workload is not None:
        if monthly_input is None:
            monthly_input = workload.requests_per_day * workload.mean_prompt_tokens * days
        if monthly_output is None:
            monthly_output = workload.requests_per_day * workload.mean_output_tokens * days
    hit_rate = request.cache_hit_rate
    if hit_rate is None:
        hit_rate = workload.prefix_cache_hit_rate if workload else 0
    model = r.model
    weights = request.weights_bytes
    if weights is None and model is not None and (request.download_gbytes_per_s or request.storage_usd_per_gb_month):
        weights = weights_bytes(model.to_engine())
    capacity = request.capacity_output_tokens_per_month
    tokens_per_s, throughput_note, calibration = None, None, None
    speed, speed_model = None, None
    now = timezone.now()
    deployment = r.deployment
    layout = Layout(**{k: getattr(request, k) or 1 for k in ("tp", "pp", "dp", "ep")}) if request.tp else None
    if layout is not None and deployment is None and r.gpus % layout.gpus:
        raise InputError.single("tp", f"{r.gpus} GPUs are not whole replicas of tp x pp x dp = {layout.gpus}.")
    deficit = _memory_deficit(deployment, layout, model, r.sku, workload)
    if deficit:
        capacity = None  # a layout that does not fit serves nothing: the engine reports the deficit instead
    elif capacity is None and deployment is None and layout is not None and model is not None and r.sku is not None:
        # A layout that is not registered yet: the throughput model on the given model and SKU.
        replicas = r.gpus // layout.gpus
        shape = {}
        if workload:
            shape = {
                "prompt_tokens": workload.mean_prompt_tokens,
                "output_tokens": workload.mean_output_tokens,
                "prefix_cache_hit_rate": workload.prefix_cache_hit_rate,
                "ttft_slo_ms": workload.ttft_slo_ms,
                "tpot_slo_ms": workload.tpot_slo_ms,
            }
        speed_model = model.to_engine()
        speed = estimate(speed_model, r.sku.to_engine(), layout, **shape)
        tokens_per_s = speed.tokens_per_s_replica * replicas
        throughput_note = (
            f"Capacity from the throughput model: {tokens_per_s:,.0f} output tokens/s for {replicas} replica(s) of "
            f"tp {layout.tp} x pp {layout.pp} x dp {layout.dp} (TPOT {speed.tpot_s * 1000:.1f} ms)."
        )
    if capacity is None and deployment is not None and not deficit:
        # The throughput model's output rate of the whole deployment at its SLO-limited concurrency,
        # for the deployment's own workload (or this comparison's).
        if workload is not None and deployment.workload_id is None:
            deployment = copy.copy(deployment)  # a preloaded record is shared by the batch's comparisons
            deployment.workload = workload
        # With the deployment's latest live speed correction applied, when there is one (planner.corrections).
        if preloaded is not None and deployment.slug in preloaded.deployments:
            correction = preloaded.corrections.get(deployment.pk)
            speed_of_deployment = corrected_throughput(deployment, correction, now=now)
        else:
            speed_of_deployment = deployment_throughput(deployment, now=now)
        speed, calibration = speed_of_deployment.result, speed_of_deployment.calibration
        speed_model = deployment.model.to_engine()
        tokens_per_s = deployment_output_rate(deployment, speed)
        throughput_note = (
            f"Capacity from the throughput model: {tokens_per_s:,.0f} output tokens/s for {deployment.slug} "
            f"({deployment.replicas} replica(s), TPOT {speed.tpot_s * 1000:.1f} ms at {speed.concurrency_limit} "
            "concurrent sequences per replica)."
        )
        if calibration is not None:
            throughput_note += " " + speed.assumptions[0]
    result = breakeven(
        gpus=r.gpus,
        usd_per_gpu_hour=rate,
        hours_per_day=request.hours_per_day,
        days_per_month=days,
        monthly_input_tokens=monthly_input,
        monthly_output_tokens=monthly_output,
        cache_hit_rate=hit_rate,
        capacity_output_tokens_per_month=capacity,
        output_tokens_per_s=tokens_per_s,
        utilisation=request.utilisation,
        weights_bytes=weights if request.download_gbytes_per_s else None,
        download_gbytes_per_s=request.download_gbytes_per_s if weights is not None else None,
        memory_deficit_bytes_per_gpu=deficit,
        **prices,
    )
    api_price = {
        "slug": api.slug if api else None,
        "provider": api.provider if api else "inline",
        "model_name": api.model_name if api else None,
        "quoted_on": api.quoted_on.isoformat() if api else None,
        **{name: str(prices[name]) for name in PRICE_FIELDS},
    }
    snapshot = {
        "computed_on": on.isoformat(),
        "request": _plain({**request.given(), "gpus": r.gpus, "sku": r.sku, "model": model}),
        "usd_per_gpu_hour": str(rate),
        "quotes_used": quotes_used,
        "api_price": api_price,
        "monthly_input_tokens": monthly_input,
        "monthly_output_tokens": monthly_output,
        "cache_hit_rate": hit_rate,
        "workload": _figures("workload", workload),
        "model": _figures("model", model),
        "sku": _figures("sku", r.sku),
        "deployment": _figures("deployment", deployment),
        # The throughput estimate the capacity rests on, with its band (each efficiency factor moved):
        # a decision recorded on this comparison carries the uncertainty of that estimate.
        "throughput": _throughput_snapshot(speed, speed_model, r.sku, deployment),
    }
    figures = result.to_dict()
    if price_note:
        figures["assumptions"].insert(0, price_note)
    figures["price_basis"] = quotes_used[0]["basis"] if quotes_used else "inline"
    # The month every monthly figure here is for (the seeds' 30-day month unless the request says
    # otherwise; spend, alone, uses calendar months).
    figures["month"] = month_label(days, request.hours_per_day)
    if throughput_note:
        figures["assumptions"].append(throughput_note)
    figures["memory_deficit_gib_per_gpu"] = deficit / GIB if deficit else None
    # Which model each side prices, and whether they are the same one (never silently different); when
    # they differ, whether the rented model has an API price on record at all (one query, only then).
    rented_priced = None
    if model is not None and (api is None or api.model_id != model.pk):
        rented_priced = ApiPrice.objects.filter(model=model).exists()
    figures["models"] = compared_models(model, api, rented_priced)
    if figures["models"]["note"]:
        figures["assumptions"].insert(0, figures["models"]["note"])
    # The live speed correction behind the capacity (planner.corrections.calibration_of), or None.
    figures["calibrated"] = calibration
    figures["unit_economics"] = None
    if tokens_per_s:
        # Cost per million output tokens, tokens/s per USD-hour and idle cost of the throughput above.
        figures["unit_economics"] = unit_economics(
            r.gpus,
            rate,
            tokens_per_s,
            utilisation=request.utilisation or 1,
            hours_per_day=request.hours_per_day,
            days_per_month=days,
        ).to_dict()
    figures["storage_usd_per_month"] = None
    if request.storage_usd_per_gb_month is not None and weights is not None:
        storage = weights_storage(weights, request.storage_usd_per_gb_month)
        figures["storage_usd_per_month"] = storage.to_dict()["usd"]
        figures["assumptions"].extend(storage.assumptions)
    figures["buy"] = None
    figures["cheapest"] = None
    if request.buy_usd_per_gpu is not None:
        _add_buy_option(figures, request, r, result, days)
    return Breakeven(figures=figures, snapshot=snapshot)


#: What buying needs besides a price per GPU (the rest default: no overhead, colocation, support, staff).
BUY_REQUIRED = ("buy_pue", "buy_usd_per_kwh")


def buy_fields_given(request: BreakevenRequest) -> bool:
    """Whether any buy figure was given (then ``buy_usd_per_gpu`` is required)."""
    return any(getattr(request, f.name) is not None for f in fields(request) if f.name.startswith("buy_"))


def _add_buy_option(figures: dict[str, Any], request: BreakevenRequest, r: Resolved, result: Any, days: int) -> None:
    """Cost buying the comparison's GPUs (``planner.engine.buy_option``: the SKU's full-load and idle power,
    the request's purchase, site and running figures) and say which of the three is cheapest."""
    missing = {name: ["Required to cost buying."] for name in BUY_REQUIRED if getattr(request, name) is None}
    sku = r.sku
    if sku is None:
        missing["sku"] = ["Name the SKU (or a deployment) to cost buying: its power comes from the SKU."]
    elif not sku.tdp_watts:
        missing["buy_usd_per_gpu"] = [f"{sku.slug} has no full-load power (tdp_watts) on record to cost energy."]
    if missing:
        raise InputError(missing)
    power = sku.power(request.buy_node_overhead_w or 0, request.buy_pue)
    option = buy_option(
        gpus=r.gpus,
        gpus_per_node=sku.gpus_per_node,
        usd_per_gpu=request.buy_usd_per_gpu,
        power=power,
        usd_per_kwh=request.buy_usd_per_kwh,
        monthly_rent_usd=result.monthly_rent_usd,
        monthly_api_usd=result.monthly_api_usd,
        hours_per_day=request.hours_per_day,
        days_per_month=days,
        useful_life_months=request.buy_useful_life_months or DEFAULT_USEFUL_LIFE_MONTHS,
        residual_share=request.buy_residual_share or 0,
        utilisation=request.utilisation,
        racks=request.buy_racks or 0,
        usd_per_rack_month=request.buy_usd_per_rack_month or 0,
        support_share_per_year=request.buy_support_share_per_year or 0,
        staff_usd_per_month=request.buy_staff_usd_per_month or 0,
    )
    cheapest, verdict = cheapest_of_three(
        result.monthly_rent_usd, result.monthly_api_usd, option, result.cheaper, result.api_wins_at_every_volume
    )
    figures["buy"] = {**option.to_dict(), "verdict": verdict}
    figures["cheapest"] = cheapest
    figures["assumptions"].extend(option.assumptions)


def _memory_deficit(
    deployment: Deployment | None,
    layout: Layout | None,
    model: ModelSpec | None,
    sku: HardwareSku | None,
    workload: Workload | None,
) -> int | None:
    """Bytes per GPU the rented layout is short of (the sizing engine's ``deficit_bytes``), None
    when it fits or no layout is known: a deployment with its own engine profile and planning
    context, or a layout on a model and SKU at the workload's p95 context."""
    if deployment is not None:
        result = deployment.sizing()
    elif layout is not None and model is not None and sku is not None:
        context = workload.p95_context_tokens if workload is not None else None
        result = size(model.to_engine(), sku.to_engine(), gpus=layout.gpus, layout=layout, context_tokens=context)
    else:
        return None
    return None if result.fits else result.deficit_bytes


def no_api_price_note(model: ModelSpec) -> str:
    """What a comparison says of a model with no API price on record (the page and the API alike)."""
    return f"No API price on record for {model.name}."


def compared_models(
    rented: ModelSpec | None, api: ApiPrice | None, rented_priced: bool | None = None
) -> dict[str, Any]:
    """The model the GPUs serve and the one the API price is for, ``same`` (None: cannot tell) and,
    unless they are the same, a sentence saying what is compared (the seeds' tiers: 1 rent the big
    model, 2 a smaller model on one's own accelerator, 3 the hosted API). ``rented_priced``: whether the
    rented model has any API price on record (None: not looked up); ``rented_api_priced`` says so, and
    when it has none the sentence starts with ``no_api_price_note``."""
    priced = api.model if api is not None else None
    body: dict[str, Any] = {
        "rented": rented.slug if rented else None,
        "api": priced.slug if priced else None,
        "api_model_name": api.model_name if api else None,
        "same": None,
        "rented_api_priced": rented_priced,
        "note": "",
    }
    if rented is None:
        body["note"] = "No model is named for the rented GPUs: this compares prices, not the same model's serving cost."
    elif api is None:
        body["note"] = f"Inline API prices name no model: check they are for {rented.name}."
    elif priced is None:
        body["note"] = (
            f"The API price {api.slug} ({api.provider} {api.model_name}) names no model spec, so it cannot be "
            f"checked against {rented.name}; link it to one."
        )
    elif priced.pk == rented.pk:
        body["same"] = True
        body["rented_api_priced"] = True
    else:
        body["same"] = False
        smaller = rented.total_params < priced.total_params
        why = (
            f"a tier 2 alternative (a smaller model on your own GPUs) against {priced.name}'s API (tier 3)"
            if smaller
            else f"renting a model at least as large as {priced.name}, priced against {priced.name}'s API"
        )
        body["note"] = (
            f"The GPUs serve {rented.name}, the API price is for {priced.name}. This is {why}; "
            "it only answers the question if the rented model is good enough for the workload."
        )
    if rented is not None and rented_priced is False:
        body["note"] = f"{no_api_price_note(rented)} {body['note']}"
    return body


def cost_curve(comparison: Breakeven, steps: int = 40) -> dict[str, Any]:
    """Monthly cost of renting, of the API (and, with the buy option, of buying) against output volume
    (millions of tokens a month), for the rent-vs-API chart. The API's cost per million output tokens
    keeps this comparison's input:output ratio and blends input prices at its cache hit rate (the
    engine's ``blended_input_usd_per_mtok``, in Decimal).

    The cluster serves at most its capacity: past each multiple of it another cluster is rented (or
    bought), so those lines rise in steps there (``clusters_needed``); with no capacity known they stay flat."""
    figures, snapshot = comparison.figures, comparison.snapshot
    prices = snapshot["api_price"]
    output_m = (snapshot["monthly_output_tokens"] or 0) / 1e6
    input_m = (snapshot["monthly_input_tokens"] or 0) / 1e6
    blended = blended_input_usd_per_mtok(
        snapshot["cache_hit_rate"] or 0,
        prices["input_cache_hit_usd_per_mtok"],
        prices["input_cache_miss_usd_per_mtok"],
    )
    ratio = Decimal(input_m / output_m) if output_m else Decimal(0)
    per_output_m = float(Decimal(prices["output_usd_per_mtok"]) + ratio * blended)
    rent = float(figures["monthly_rent_usd"])
    breakeven_tokens = figures["breakeven_output_tokens_per_month_mix"] or figures["breakeven_output_tokens_per_month"]
    breakeven_m = breakeven_tokens / 1e6
    capacity_m = (figures["capacity_output_tokens_per_month"] or 0) / 1e6
    top = max(breakeven_m * 2, output_m * 1.5, capacity_m * 1.1, 1.0)
    # Buying costs the same a month whatever the volume (depreciation and running costs), per cluster.
    buy = float(figures["buy"]["monthly_usd"]) if figures.get("buy") else None
    volumes = [top * i / steps for i in range(steps + 1)]
    # Each capacity ceiling twice: the cost of the clusters so far, then one cluster more (a vertical step).
    ceilings = [capacity_m * k for k in range(1, int(top / capacity_m) + 1)] if capacity_m else []
    samples = sorted([(v, 0) for v in volumes] + [(c, 0) for c in ceilings] + [(c, 1) for c in ceilings])
    points = []
    for volume, past in samples:
        clusters = clusters_needed(volume, capacity_m) + past
        points.append(
            {
                "volume": volume,
                "rent": rent * clusters,
                "api": volume * per_output_m,
                "buy": buy * clusters if buy is not None else None,
                "clusters": clusters,
            }
        )
    return {
        "buy": buy,
        "points": points,
        "current": {"volume": output_m, "api": output_m * per_output_m} if output_m else None,
        "breakeven": {"volume": breakeven_m, "usd": rent},
        "capacity": capacity_m or None,
        "ymax": max(max(p["rent"] for p in points), top * per_output_m, max((p["buy"] or 0) for p in points)),
    }


def clusters_needed(volume: float, capacity: float) -> int:
    """How many clusters of ``capacity`` serve ``volume`` (same units): at least one, one more past each
    multiple of the capacity; one when the capacity is unknown (0)."""
    if capacity <= 0 or volume <= capacity:
        return 1
    return math.ceil(volume / capacity - 1e-12)
