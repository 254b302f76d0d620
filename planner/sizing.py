"""Sizing service: one layout of a model on a SKU -> memory envelopes and admission capacity.

Plain inputs (``SizingRequest``: slugs and numbers), plain outputs (the engine's dataclasses),
domain errors (``fleet.errors.InputError`` for unknown records, ``EngineInputError`` for input
the engine cannot model; both map field names to messages). The REST endpoint
(``planner/api/sizing.py``), the what-if page (``planner/views/whatif.py``) and ``manage.py
size`` are front doors that only turn their input into a ``SizingRequest``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from fleet.errors import InputError
from fleet.models import Deployment, HardwareSku, ModelSpec
from fleet.models.base import find_by_slug
from planner.corrections import calibration_of, correction_for
from planner.corrections import to_engine as correction_to_engine
from planner.engine import (
    DEFAULT_GPU_MEMORY_UTILIZATION,
    DEFAULT_KV_CACHE_DTYPE,
    DEFAULT_STATE_POOL_RATIO,
    GENERIC,
    GENERIC_OPTIONS,
    KV_CACHE_DTYPES,
    EngineOptions,
    Layout,
    SizingResult,
    ThroughputResult,
    apply_correction,
    estimate,
    size,
)

LAYOUT_FIELDS = ("tp", "pp", "dp", "ep")
POOLS = ("unified", "split")


@dataclass(frozen=True)
class SizingRequest:
    """What to size. Records by slug; ``None`` means the default (documented per field in
    docs/api.md): ``gpus`` one replica of the layout, ``tp`` = gpus, ``context_tokens`` the
    model's maximum, ``weight_format`` the model's own, ``engine`` generic.

    With ``deployment`` given, its model, SKU, layout, replicas, KV dtype, served maximum length,
    memory utilisation, engine, engine release and block size are the defaults of every field
    left out (``model`` and ``sku`` may then be omitted).
    """

    model: str | None = None
    sku: str | None = None
    deployment: str | None = None
    gpus: int | None = None
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    ep: int | None = None
    etp: int | None = None
    redundant_experts: int | None = None
    weight_format: str | None = None
    include_scale_overhead: bool = True
    kv_cache_dtype: str | None = None
    context_tokens: int | None = None
    gpu_memory_utilization: float | None = None
    runtime_reserve_gib: float | None = None
    pool: str = "unified"
    state_pool_ratio: float = DEFAULT_STATE_POOL_RATIO
    engine: str | None = None
    engine_version: str | None = None
    max_model_len: int | None = None
    block_size_tokens: int | None = None
    available_kv_cache_gib: float | None = None
    prefix_caching: bool | None = None

    def layout(self) -> Layout | None:
        """The layout asked for; None when no parallel degree is given (the engine uses tp = gpus).

        With only pp/dp/ep and ``gpus`` given, tp takes what the GPUs leave, as "tp = gpus" does.
        """
        if not any(getattr(self, name) for name in LAYOUT_FIELDS):
            return None
        experts = {"etp": self.etp, "redundant_experts": self.redundant_experts or 0}
        layout = Layout(**{name: getattr(self, name) or 1 for name in LAYOUT_FIELDS}, **experts)
        if not self.tp and self.gpus:
            rest = layout.pp * layout.dp
            layout = Layout(tp=max(1, self.gpus // rest), pp=layout.pp, dp=layout.dp, ep=layout.ep, **experts)
        return layout


@dataclass(frozen=True)
class Sizing:
    """A sized request: the records it resolved and the engine's result."""

    request: SizingRequest
    model: ModelSpec
    sku: HardwareSku
    result: SizingResult


def resolve(model_slug: str, sku_slug: str) -> tuple[ModelSpec, HardwareSku]:
    """The model and SKU records by slug (InputError naming each one that does not exist)."""
    errors: dict[str, list[str]] = {}
    model = find_by_slug(ModelSpec.objects, model_slug, "model", errors)
    sku = find_by_slug(HardwareSku.objects, sku_slug, "sku", errors)
    if errors:
        raise InputError(errors)
    return model, sku


def with_deployment_defaults(request: SizingRequest) -> SizingRequest:
    """``request`` with every field it leaves out taken from its ``deployment`` (InputError if unknown)."""
    if not request.deployment:
        return request
    errors: dict[str, list[str]] = {}
    deployment = find_by_slug(
        Deployment.objects.select_related("cluster__sku", "model"), request.deployment, "deployment", errors
    )
    if errors:
        raise InputError(errors)
    defaults = {
        "model": deployment.model.slug,
        "sku": deployment.cluster.sku.slug,
        "kv_cache_dtype": deployment.kv_cache_dtype,
        "gpu_memory_utilization": deployment.gpu_memory_utilization,
        "engine": deployment.engine_profile,
        "engine_version": deployment.engine_version or None,
        "max_model_len": deployment.max_model_len,
        "block_size_tokens": deployment.block_size_tokens,
        "prefix_caching": deployment.enable_prefix_caching,
    }
    changes = {name: value for name, value in defaults.items() if getattr(request, name) is None}
    if not any(getattr(request, name) for name in (*LAYOUT_FIELDS, "gpus")):
        changes.update(deployment.layout.as_dict(), gpus=deployment.gpus)
    return replace(request, **changes)


def size_layout(request: SizingRequest) -> Sizing:
    """Size the request (raises InputError / EngineInputError with field names)."""
    request = with_deployment_defaults(request)
    errors: dict[str, list[str]] = {}
    for name in ("model", "sku"):
        if not getattr(request, name):
            errors[name] = ["This field is required (or give a deployment)."]
    if errors:
        raise InputError(errors)
    model, sku = resolve(request.model, request.sku)
    kv_cache_dtype = request.kv_cache_dtype or DEFAULT_KV_CACHE_DTYPE
    if kv_cache_dtype not in KV_CACHE_DTYPES:
        raise InputError.single("kv_cache_dtype", f"Use one of {', '.join(KV_CACHE_DTYPES)}.")
    engine = request.engine or GENERIC  # size() checks it (EngineInputError under "engine")
    result = size(
        model.to_engine(),
        sku.to_engine(),
        gpus=request.gpus,
        layout=request.layout(),
        weight_format=request.weight_format,
        include_scale_overhead=request.include_scale_overhead,
        kv_cache_dtype=kv_cache_dtype,
        context_tokens=request.context_tokens,
        gpu_memory_utilization=request.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION,
        runtime_reserve_gib=request.runtime_reserve_gib,
        pool=request.pool,
        state_pool_ratio=request.state_pool_ratio,
        engine=engine,
        engine_version=request.engine_version,
        max_model_len=request.max_model_len,
        block_size_tokens=request.block_size_tokens,
        available_kv_cache_gib=request.available_kv_cache_gib,
        prefix_caching=request.prefix_caching,
    )
    return Sizing(request=request, model=model, sku=sku, result=result)


def speed_of(sizing: Sizing, usd_per_gpu_hour: object = None) -> ThroughputResult:
    """Speed and cost of one replica of the sized layout (2,048-token prompts, 256-token answers,
    capped at the context asked for). Sized from a ``deployment`` as it serves, with that deployment's
    latest live correction applied when there is one (the result's first assumption says so)."""
    result = _model_speed(sizing, usd_per_gpu_hour)
    request = sizing.request
    if not request.deployment:
        return result
    deployment = Deployment.objects.select_related("cluster").filter(slug=request.deployment).first()
    fit = correction_for(
        deployment,
        sizing.model.pk,
        sizing.sku.pk,
        sizing.result.layout,
        request.kv_cache_dtype or DEFAULT_KV_CACHE_DTYPE,
    )
    if fit is None:
        return result
    age_s = calibration_of(fit)["age_s"]
    return apply_correction(result, correction_to_engine(fit), age_s=age_s)


def _model_speed(sizing: Sizing, usd_per_gpu_hour: object) -> ThroughputResult:
    """Timed at the concurrency this sizing admits per replica (its pool, engine profile and
    context), not at the throughput model's own memory limit: a split pool that admits 8 sequences
    is quoted at 8, not at the unified pool's 15."""
    request, context = sizing.request, sizing.result.context_tokens
    admitted = sizing.result.max_concurrent_sequences_per_replica
    return estimate(
        sizing.model.to_engine(),
        sizing.sku.to_engine(),
        sizing.result.layout,
        prompt_tokens=min(2048, max(1, context // 2)),
        output_tokens=min(256, max(1, context // 4)),
        context_tokens=context,
        batch=max(1, admitted) if admitted else None,
        usd_per_gpu_hour=usd_per_gpu_hour,
        kv_cache_dtype=request.kv_cache_dtype or DEFAULT_KV_CACHE_DTYPE,
        weight_format=request.weight_format,
        include_scale_overhead=request.include_scale_overhead,
        gpu_memory_utilization=request.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION,
        engine=_engine_options(request),
    )


def _engine_options(request: SizingRequest) -> EngineOptions:
    """The engine profile the request was sized with, for ``estimate()``'s memory admission."""
    if (request.engine or GENERIC) == GENERIC:
        return GENERIC_OPTIONS
    return EngineOptions(
        request.engine, request.engine_version, request.max_model_len, request.block_size_tokens,
        request.available_kv_cache_gib, request.prefix_caching,
    )  # fmt: skip
