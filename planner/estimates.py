"""Estimate service: one layout of a model on a SKU at one load -> TPOT, TTFT, tokens/s, the decode
step's breakdown and the band the efficiency factors put around it.

Plain inputs (``EstimateRequest``: slugs and numbers), plain outputs (``Estimate``: the engine's
``ThroughputResult`` and ``SensitivityBand`` with the records they were made on), domain errors
(``fleet.errors.InputError`` for unknown records and combinations, ``EngineInputError`` for input the
engine cannot model; both map field names to messages). Front doors: ``POST /api/v1/estimate/``
(``planner/api/estimate.py``) and the what-if page's speed table (``planner/views/whatif.py``).

**Live correction.** With a ``deployment`` whose latest speed correction (``planner.corrections``,
fitted from its polls) still applies, and an estimate of that same deployment (its model, SKU, layout
and KV dtype), the correction's decode and prefill factors are applied to the estimate
(``apply_correction``) and ``Estimate.calibrated`` carries ``{factor_decode, factor_prefill, samples,
age_s, residual, ...}``; the band stays the documented model's, and the assumptions say both.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from fleet.errors import InputError
from fleet.models import Deployment, HardwareSku, ModelSpec
from fleet.models.base import find_by_slug
from planner.corrections import calibration_of, correction_for
from planner.corrections import to_engine as correction_to_engine
from planner.engine import (
    DEFAULT_GPU_MEMORY_UTILIZATION,
    DEFAULT_KV_CACHE_DTYPE,
    GENERIC_OPTIONS,
    IDLE_TTFT_DEFINITION,
    KV_CACHE_DTYPES,
    TTFT_DEFINITION,
    WEIGHT_FORMATS,
    Layout,
    ModelArch,
    SensitivityBand,
    ThroughputResult,
    apply_correction,
    sensitivity,
)

if TYPE_CHECKING:
    from planner.sizing import Sizing

LAYOUT_FIELDS = ("tp", "pp", "dp", "ep")
#: Request shape when neither the request nor a deployment's workload gives one (as ``estimate()``).
DEFAULT_PROMPT_TOKENS = 2048
DEFAULT_OUTPUT_TOKENS = 256


@dataclass(frozen=True)
class EstimateRequest:
    """What to estimate. Records by slug; ``None`` means the default (docs/api.md, ``estimate/``):
    layout fields 1, ``etp`` tp x dp / ep (``redundant_experts`` 0), ``batch`` the concurrency limit
    (memory at ``context_tokens``),
    ``prompt_tokens`` 2,048, ``output_tokens`` 256, ``context_tokens`` prompt + output,
    ``kv_cache_dtype`` bf16, weight formats the model's own.

    With ``deployment`` given, its model, SKU, layout (when no layout field is given), KV dtype,
    memory utilisation and its workload's mean prompt and output tokens are the defaults of the
    fields left out (``model`` and ``sku`` may then be omitted).
    """

    model: str | None = None
    sku: str | None = None
    deployment: str | None = None
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    ep: int | None = None
    etp: int | None = None
    redundant_experts: int | None = None
    batch: int | None = None
    context_tokens: int | None = None
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    kv_cache_dtype: str | None = None
    weight_format: str | None = None
    expert_weight_format: str | None = None
    usd_per_gpu_hour: Decimal | None = None
    gpu_memory_utilization: float | None = None

    def layout(self) -> Layout:
        sizes = {name: getattr(self, name) or 1 for name in LAYOUT_FIELDS}
        return Layout(**sizes, etp=self.etp, redundant_experts=self.redundant_experts or 0)


@dataclass(frozen=True)
class Estimate:
    """An estimated request: the records it resolved, the engine's result and band, the correction."""

    request: EstimateRequest
    model: ModelSpec
    sku: HardwareSku
    deployment: Deployment | None
    result: ThroughputResult
    band: SensitivityBand
    calibrated: dict[str, Any] | None
    notes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        r, step = self.result, self.result.decode
        return {
            "model": self.model.slug,
            "sku": self.sku.slug,
            "deployment": self.deployment.slug if self.deployment else None,
            "layout": {**r.layout.as_dict(), "etp": r.layout.expert_tp},
            "gpus": r.gpus,
            "batch": r.batch,
            "prompt_tokens": r.prompt_tokens,
            "output_tokens": r.output_tokens,
            "context_tokens": r.context_tokens,
            "kv_cache_dtype": r.kv_cache_dtype,
            "tpot_ms": r.tpot_s * 1e3,
            "ttft_ms": None if r.ttft_s == float("inf") else r.ttft_s * 1e3,
            "ttft_definition": TTFT_DEFINITION.to_dict(),
            "ttft_parts": r.ttft_parts.to_dict(),
            "idle_ttft_ms": r.idle_ttft_s * 1e3,
            "idle_ttft_definition": IDLE_TTFT_DEFINITION.to_dict(),
            "tokens_per_s_per_gpu": r.tokens_per_s_per_gpu,
            "tokens_per_s_per_replica": r.tokens_per_s_replica,
            "bound": step.bound,
            "breakdown": breakdown(r),
            "prefill_share": r.prefill_share,
            "memory_limit": r.memory_limit,
            "fits": r.fits,
            "usd_per_gpu_hour": None if r.usd_per_gpu_hour is None else str(r.usd_per_gpu_hour),
            "usd_per_mtok": r.usd_per_mtok,
            "calibrated": self.calibrated,
            "sensitivity": self.band.to_dict(),
            "assumptions": [*self.notes, *r.assumptions, *self.band.assumptions],
        }


def breakdown(result: ThroughputResult) -> dict[str, float]:
    """One decode step's parts in ms (memory, compute, communication, overhead = kernel launches +
    step overhead), the time overlap hid, and the step itself.

    Memory and compute overlap inside a stage (the stage takes the larger), and two-batch overlap
    hides part of the communication (``overlap_saved_ms``), so the parts can add up to more than
    ``step_ms``; each is at most the step, and the step at most TPOT (which adds the prefill share).
    """
    step = result.decode
    return {
        "memory_ms": step.memory_time_s * 1e3,
        "compute_ms": step.compute_time_s * 1e3,
        "communication_ms": step.communication_time_s * 1e3,
        "overhead_ms": step.overhead_s * 1e3,
        "overlap_saved_ms": step.overlap_saved_s * 1e3,
        "step_ms": step.time_s * 1e3,
    }


def with_deployment_defaults(request: EstimateRequest) -> tuple[EstimateRequest, Deployment | None]:
    """``request`` with every field it leaves out taken from its ``deployment`` (InputError if unknown)."""
    if not request.deployment:
        return request, None
    errors: dict[str, list[str]] = {}
    deployment = find_by_slug(
        Deployment.objects.select_related("cluster__sku", "model", "workload"), request.deployment, "deployment", errors
    )
    if errors:
        raise InputError(errors)
    workload = deployment.workload
    defaults = {
        "model": deployment.model.slug,
        "sku": deployment.cluster.sku.slug,
        "kv_cache_dtype": deployment.kv_cache_dtype,
        "gpu_memory_utilization": deployment.gpu_memory_utilization,
        "prompt_tokens": workload.mean_prompt_tokens if workload else None,
        "output_tokens": workload.mean_output_tokens if workload else None,
    }
    changes = {name: value for name, value in defaults.items() if getattr(request, name) is None}
    if not any(getattr(request, name) for name in LAYOUT_FIELDS):
        changes.update(deployment.layout.as_dict())
    return replace(request, **changes), deployment


def _check(request: EstimateRequest, prompt: int, output: int) -> None:
    """Field errors the engine does not raise itself: missing records, choices, etp, the context."""
    errors: dict[str, list[str]] = {}
    for name in ("model", "sku"):
        if not getattr(request, name):
            errors[name] = ["This field is required (or give a deployment)."]
    if request.kv_cache_dtype is not None and request.kv_cache_dtype not in KV_CACHE_DTYPES:
        errors["kv_cache_dtype"] = [f"Use one of {', '.join(KV_CACHE_DTYPES)}."]
    for name in ("weight_format", "expert_weight_format"):
        value = getattr(request, name)
        if value is not None and value not in WEIGHT_FORMATS:
            errors[name] = [f"Use one of {', '.join(WEIGHT_FORMATS)}."]
    if request.context_tokens is not None and request.context_tokens < prompt + output:
        errors["context_tokens"] = [
            f"Must be at least prompt + output tokens ({prompt + output}): a sequence grows to that length."
        ]
    if errors:
        raise InputError(errors)


def _engine_model(model: ModelSpec, request: EstimateRequest) -> tuple[ModelArch, str | None]:
    """The engine's model and the ``weight_format`` override for ``estimate()``.

    ``weight_format`` alone overrides every component and part (as the sizing API); with
    ``expert_weight_format`` the routed experts take that format and the rest ``weight_format`` (or
    the model's own summary format), the record's weights by module class set aside.
    """
    arch = model.to_engine()
    if request.expert_weight_format is None:
        return arch, request.weight_format
    return replace(
        arch,
        weight_format=request.weight_format or arch.weight_format,
        expert_weight_format=request.expert_weight_format,
        weight_parts=(),
    ), None


def estimate_layout(request: EstimateRequest) -> Estimate:
    """Estimate the request with its band (raises InputError / EngineInputError with field names)."""
    request, deployment = with_deployment_defaults(request)
    prompt = request.prompt_tokens or DEFAULT_PROMPT_TOKENS
    output = request.output_tokens or DEFAULT_OUTPUT_TOKENS
    _check(request, prompt, output)
    errors: dict[str, list[str]] = {}
    model = find_by_slug(ModelSpec.objects, request.model, "model", errors)
    sku = find_by_slug(HardwareSku.objects, request.sku, "sku", errors)
    if errors:
        raise InputError(errors)
    arch, weight_format = _engine_model(model, request)
    band = sensitivity(
        arch,
        sku.to_engine(),
        request.layout(),
        prompt_tokens=prompt,
        output_tokens=output,
        context_tokens=request.context_tokens,
        batch=request.batch,
        usd_per_gpu_hour=request.usd_per_gpu_hour,
        kv_cache_dtype=request.kv_cache_dtype or DEFAULT_KV_CACHE_DTYPE,
        weight_format=weight_format,
        gpu_memory_utilization=request.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION,
        # A deployment's memory admission is its own engine's (release, block size, max_model_len).
        engine=deployment.serving(arch).engine_options() if deployment is not None else GENERIC_OPTIONS,
    )
    fit = correction_for(
        deployment, model.pk, sku.pk, request.layout(), request.kv_cache_dtype or DEFAULT_KV_CACHE_DTYPE
    )
    result, calibration = band.central, None
    if fit is not None:
        now = timezone.now()
        calibration = calibration_of(fit, now)
        result = apply_correction(result, correction_to_engine(fit), age_s=calibration["age_s"])
    notes = []
    if deployment is not None:
        notes.append(
            f"Defaults from deployment {deployment.slug}: model, SKU, layout, KV dtype, memory utilisation, "
            "its engine's memory admission"
            + (" and its workload's mean prompt and output tokens." if deployment.workload_id else ".")
        )
    if calibration is None:
        notes.append("Uncalibrated: the throughput model as documented, no correction fitted from live polls.")
    else:
        notes.append(
            f"Calibrated from live polls: TPOT x {calibration['factor_decode']:.3g}, prefill x "
            f"{calibration['factor_prefill']:.3g} ({calibration['samples']} samples); the sensitivity band is "
            "the uncorrected model's."
        )
    return Estimate(
        request=request,
        model=model,
        sku=sku,
        deployment=deployment,
        result=result,
        band=band,
        calibrated=calibration,
        notes=tuple(notes),
    )


def band_around(
    model: ModelArch,
    accelerator: Any,
    speed: ThroughputResult,
    *,
    weight_format: str | None = None,
    include_scale_overhead: bool = True,
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION,
) -> SensitivityBand:
    """The band of an estimate already made: ``sensitivity()`` on the inputs ``speed`` echoes (layout,
    request shape, prefix-cache rate, batch, price, KV dtype) plus the formats it was made with.

    SLOs are left out: they only choose the batch, which is held at ``speed.batch``. The band's
    ``central`` is ``speed`` recomputed, so a page or a snapshot shows one estimate, not two."""
    return sensitivity(
        model,
        accelerator,
        speed.layout,
        prompt_tokens=speed.prompt_tokens,
        output_tokens=speed.output_tokens,
        context_tokens=speed.context_tokens,
        prefix_cache_hit_rate=speed.prefix_cache_hit_rate,
        batch=speed.batch,
        usd_per_gpu_hour=speed.usd_per_gpu_hour,
        kv_cache_dtype=speed.kv_cache_dtype,
        weight_format=weight_format,
        include_scale_overhead=include_scale_overhead,
        gpu_memory_utilization=gpu_memory_utilization,
        engine=speed.engine,
    )


def band_of(sizing: Sizing, speed: ThroughputResult) -> SensitivityBand:
    """The band of a speed estimate the sizing service made (``planner.sizing.speed_of``)."""
    request = sizing.request
    return band_around(
        sizing.model.to_engine(),
        sizing.sku.to_engine(),
        speed,
        weight_format=request.weight_format,
        include_scale_overhead=request.include_scale_overhead,
        gpu_memory_utilization=request.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION,
    )
