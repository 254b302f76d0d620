"""Sizing service: one layout of a model on a SKU -> memory envelopes and admission capacity.

Plain inputs (``SizingRequest``: slugs and numbers), plain outputs (the engine's dataclasses),
domain errors (``fleet.errors.InputError`` for unknown records, ``EngineInputError`` for input
the engine cannot model; both map field names to messages). The REST endpoint
(``planner/api/sizing.py``), the what-if page (``planner/views/whatif.py``) and ``manage.py
size`` are front doors that only turn their input into a ``SizingRequest``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from fleet.errors import InputError
from fleet.models import Deployment, HardwareSku, ModelSpec, Workload
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
from planner.estimates import DEFAULT_OUTPUT_TOKENS, DEFAULT_PROMPT_TOKENS

LAYOUT_FIELDS = ("tp", "pp", "dp", "ep")
POOLS = ("unified", "split")


@dataclass(frozen=True)
class SizingRequest:
    """What to size. Records by slug; ``None`` means the default (documented per field in
    docs/api.md): ``gpus`` one replica of the layout, ``tp`` = gpus, ``context_tokens`` the
    model's maximum, ``weight_format`` the model's own, ``engine`` generic.

    With ``deployment`` given, its model, SKU, layout, replicas, KV dtype, served maximum length
    (also the context), memory utilisation, engine, engine release, block size and workload are the
    defaults of every field left out (``deployment_inputs``; ``model`` and ``sku`` may then be
    omitted). ``workload`` (a slug) gives the speed estimate its mean prompt and output tokens
    (default 2,048 in, 256 out).
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
    workload: str | None = None

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
    workload: Workload | None = None
    deployment: Deployment | None = None

    def changes(self) -> list[tuple[str, Any, Any]]:
        """``(field, the deployment's value, this sizing's)`` for each input that differs from the
        deployment it was sized from (``deployment_inputs``), in that order; the layout, GPUs and
        context as sized (a field left blank takes the deployment's, so it never differs)."""
        if self.deployment is None:
            return []
        r = self.request
        sized = {
            **{name: getattr(r, name) for name in ("model", "sku", "gpu_memory_utilization", "engine")},
            "gpus": self.result.gpus,
            **{name: getattr(self.result.layout, name) for name in LAYOUT_FIELDS},
            "kv_cache_dtype": r.kv_cache_dtype or DEFAULT_KV_CACHE_DTYPE,
            "context_tokens": self.result.context_tokens,
            "engine_version": r.engine_version or None,
            "max_model_len": r.max_model_len,
            "block_size_tokens": r.block_size_tokens,
            "prefix_caching": r.prefix_caching,
            "workload": self.workload.slug if self.workload else None,
        }
        served = deployment_inputs(self.deployment)
        return [(name, was, sized[name]) for name, was in served.items() if sized[name] != was]


def resolve(model_slug: str, sku_slug: str) -> tuple[ModelSpec, HardwareSku]:
    """The model and SKU records by slug (InputError naming each one that does not exist)."""
    errors: dict[str, list[str]] = {}
    model = find_by_slug(ModelSpec.objects, model_slug, "model", errors)
    sku = find_by_slug(HardwareSku.objects, sku_slug, "sku", errors)
    if errors:
        raise InputError(errors)
    return model, sku


def deployment_inputs(deployment: Deployment) -> dict[str, Any]:
    """The sizing inputs ``deployment`` serves with, by ``SizingRequest`` field: its model, SKU, GPUs,
    layout, KV dtype, engine (profile and release), memory utilisation, served maximum length (also the
    context capacity is quoted at: ``Deployment.planning_context_tokens``), block size, prefix caching
    and workload (None: the engine's default)."""
    return {
        "model": deployment.model.slug,
        "sku": deployment.cluster.sku.slug,
        "gpus": deployment.gpus,
        **deployment.layout.as_dict(),
        "kv_cache_dtype": deployment.kv_cache_dtype,
        "context_tokens": deployment.planning_context_tokens,
        "gpu_memory_utilization": deployment.gpu_memory_utilization,
        "engine": deployment.engine_profile,
        "engine_version": deployment.engine_version or None,
        "max_model_len": deployment.max_model_len,
        "block_size_tokens": deployment.block_size_tokens,
        "prefix_caching": deployment.enable_prefix_caching,
        "workload": deployment.workload.slug if deployment.workload_id else None,
    }


def find_deployment(slug: str) -> Deployment:
    """The deployment ``slug`` with its SKU, model and workload (InputError on ``deployment`` if unknown)."""
    errors: dict[str, list[str]] = {}
    related = Deployment.objects.select_related("cluster__sku", "model", "workload")
    deployment = find_by_slug(related, slug, "deployment", errors)
    if errors:
        raise InputError(errors)
    return deployment


def with_deployment_defaults(request: SizingRequest, deployment: Deployment | None) -> SizingRequest:
    """``request`` with every field it leaves out taken from ``deployment`` (``deployment_inputs``; the
    layout and GPUs only when no layout field and no GPU count is given)."""
    if deployment is None:
        return request
    defaults = deployment_inputs(deployment)
    layout = {name: defaults.pop(name) for name in (*LAYOUT_FIELDS, "gpus")}
    changes = {name: value for name, value in defaults.items() if getattr(request, name) is None}
    if not any(getattr(request, name) for name in layout):
        changes.update(layout)
    return replace(request, **changes)


def size_layout(request: SizingRequest) -> Sizing:
    """Size the request (raises InputError / EngineInputError with field names)."""
    deployment = find_deployment(request.deployment) if request.deployment else None
    request = with_deployment_defaults(request, deployment)
    errors: dict[str, list[str]] = {}
    for name in ("model", "sku"):
        if not getattr(request, name):
            errors[name] = ["This field is required (or give a deployment)."]
    if errors:
        raise InputError(errors)
    model, sku = resolve(request.model, request.sku)
    workload = None
    if request.workload:
        found: dict[str, list[str]] = {}
        workload = find_by_slug(Workload.objects, request.workload, "workload", found)
        if found:
            raise InputError(found)
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
    return Sizing(request=request, model=model, sku=sku, result=result, workload=workload, deployment=deployment)


def speed_of(sizing: Sizing, usd_per_gpu_hour: object = None) -> ThroughputResult:
    """Speed and cost of one replica of the sized layout (the workload's request shape, else 2,048-token
    prompts and 256-token answers, capped at the context asked for: ``_model_speed``). Sized from a
    ``deployment`` as it serves, with that deployment's latest live correction applied when there is
    one (the result's first assumption says so)."""
    result = _model_speed(sizing, usd_per_gpu_hour)
    request = sizing.request
    if sizing.deployment is None:
        return result
    fit = correction_for(
        sizing.deployment,
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
    is quoted at 8, not at the unified pool's 15. The request shape is the workload's mean prompt and
    output (else 2,048 in, 256 out), capped at half and a quarter of the context."""
    request, context, workload = sizing.request, sizing.result.context_tokens, sizing.workload
    admitted = sizing.result.max_concurrent_sequences_per_replica
    return estimate(
        sizing.model.to_engine(),
        sizing.sku.to_engine(),
        sizing.result.layout,
        prompt_tokens=min(workload.mean_prompt_tokens if workload else DEFAULT_PROMPT_TOKENS, max(1, context // 2)),
        output_tokens=min(workload.mean_output_tokens if workload else DEFAULT_OUTPUT_TOKENS, max(1, context // 4)),
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
