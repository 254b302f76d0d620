"""Calibration service: a serving engine's startup log against the sizing engine's prediction.

``calibrate(CalibrationRequest(log, ...))`` parses the log (``planner.engine.parse_startup_log``),
finds the model and SKU (the deployment's, else the request's, else the model whose Hugging Face
id, slug or name the logged model id names: ``find_logged_model``), sizes the same inputs with the
engine's profile for that serving engine, and stores a ``Calibration`` with, per figure the log
states, ``{logged, predicted, ratio}``.

Two predictions are made. Given the KV cache memory the engine logged (vLLM's "Available KV cache
memory", SGLang's K + V pool) the engine predicts the token count, blocks, block size, padding and
concurrency the log reports: that checks the cache geometry alone. Without it, from the SKU's memory
x ``gpu_memory_utilization`` minus weights and runtime, it predicts the available memory and the
weights per GPU: that checks the memory budget. Domain errors: ``InputError`` (unknown records, a
model or SKU that cannot be found) and ``EngineInputError`` (a log that is not one, inputs the engine
cannot model), both keyed by field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import date
from typing import Any

from django.db import transaction
from django.utils import timezone

from fleet.errors import InputError
from fleet.models import Deployment, HardwareSku, ModelSpec
from fleet.models.base import find_by_slug
from planner.engine import (
    DEFAULT_ENGINE,
    DEFAULT_GPU_MEMORY_UTILIZATION,
    DEFAULT_KV_CACHE_DTYPE,
    GENERIC,
    GIB,
    EngineInputError,
    Layout,
    SizingResult,
    StartupLog,
    parse_startup_log,
    redacted_head,
    size,
    startup_log_engines,
)
from planner.models import Calibration
from planner.models.calibrations import LOG_TEXT_MAX_CHARS

#: Logged dtype (``dtype=torch.bfloat16``, ``dtype='auto'``) -> the KV cache dtype "auto" means.
_MODEL_DTYPES = {"bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "half": "fp16", "fp16": "fp16"}
#: Logged ``kv_cache_dtype`` -> the engine's name for it.
_KV_DTYPES = {"fp8": "fp8", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2", "bfloat16": "bf16", "float16": "fp16"}

#: Logged ``quantization`` -> the weight format it stores (when one format covers the checkpoint).
_WEIGHT_FORMATS = {
    "fp8": "fp8",
    "fbgemm_fp8": "fp8",
    "awq": "int4",
    "awq_marlin": "int4",
    "gptq": "int4",
    "gptq_marlin": "int4",
    "mxfp4": "mxfp4",
    "modelopt_fp4": "nvfp4",
    "nvfp4": "nvfp4",
}

#: (figure, label, unit, where its prediction comes from): the rows of a calibration, in order.
FIGURES: tuple[tuple[str, str, str], ...] = (
    ("available_kv_cache_gib", "Available KV cache memory per GPU", "GiB"),
    ("kv_cache_gib", "KV cache pool per GPU (SGLang, K + V)", "GiB"),
    ("kv_cache_tokens", "GPU KV cache size", "tokens"),
    ("max_total_num_tokens", "Token pool (SGLang max_total_num_tokens)", "tokens"),
    ("kv_pool_tokens", "Token pool (SGLang KV cache #tokens)", "tokens"),
    ("max_concurrency", "Maximum concurrency at max_model_len", "requests"),
    ("num_gpu_blocks", "KV cache blocks per GPU", "blocks"),
    ("attention_block_size_tokens", "Attention block size (hybrid models)", "tokens"),
    ("mamba_page_padding_percent", "State page padding", "%"),
    ("weights_gib", "Weights per GPU", "GiB"),
    ("total_gpu_memory_gib", "Total GPU memory the engine saw", "GiB"),
)


@dataclass(frozen=True)
class CalibrationRequest:
    """A startup log and what it belongs to. Records by slug; without ``deployment_slug``, ``sku_slug``
    is required and the model is ``model_slug`` or the one matching the id the log names.
    ``engine_version`` fills in a release the log does not print (SGLang)."""

    log: str
    deployment_slug: str | None = None
    model_slug: str | None = None
    sku_slug: str | None = None
    engine_version: str | None = None
    measured_on: date | None = None


def find_logged_model(logged_id: str | None) -> ModelSpec | None:
    """The ModelSpec a logged model id or path names, or None.

    The one place a logged name meets the records; extend it here. In order (case-insensitive):
    ``ModelSpec.hf_model_id`` equal to the id as logged (``Qwen/Qwen3-32B``) or to a path's last two
    parts (``/root/models/Qwen/Qwen3-32B``); then the path's last part
    (``/data/models/Qwen3-Next-80B-A3B-Instruct``) against a record's slug or name.
    """
    if not logged_id or not logged_id.strip().strip("/\\"):
        return None
    parts = [p for p in re.split(r"[/\\]", logged_id.strip()) if p]
    for hub_id in dict.fromkeys(["/".join(parts), "/".join(parts[-2:])]):
        found = ModelSpec.objects.filter(hf_model_id__iexact=hub_id).exclude(hf_model_id="").first()
        if found:
            return found
    base = parts[-1]
    return (
        ModelSpec.objects.filter(slug__iexact=base).first()
        or ModelSpec.objects.filter(name__iexact=base).first()
        or ModelSpec.objects.filter(slug__iexact=base.replace("_", "-")).first()
    )


def _resolve(
    request: CalibrationRequest, log: StartupLog
) -> tuple[Deployment | None, ModelSpec | None, HardwareSku | None]:
    errors: dict[str, list[str]] = {}
    deployment = find_by_slug(
        Deployment.objects.select_related("cluster__sku", "model"), request.deployment_slug, "deployment", errors
    )
    model = find_by_slug(ModelSpec.objects, request.model_slug, "model", errors)
    sku = find_by_slug(HardwareSku.objects, request.sku_slug, "sku", errors)
    if errors:
        raise InputError(errors)
    if deployment is not None:
        model = model or deployment.model
        sku = sku or deployment.cluster.sku
    model = model or find_logged_model(log.model)
    if log.unsupported_architecture:
        return deployment, model, sku  # nothing to predict: the engine never started
    if model is None:
        named = f" {log.model!r}" if log.model else ""
        errors["model"] = [f"No model record matches the logged model{named}; give the model's slug."]
    if sku is None:
        errors["sku"] = ["Give the SKU the log was taken on (or a deployment, whose cluster names it)."]
    if errors:
        raise InputError(errors)
    return deployment, model, sku


def _kv_cache_dtype(log: StartupLog, deployment: Deployment | None) -> tuple[str, str | None]:
    """The engine's KV dtype for the logged one, and a note when it was assumed."""
    logged = (log.kv_cache_dtype or "").lower()
    if logged in _KV_DTYPES:
        return _KV_DTYPES[logged], None
    if logged in ("", "auto"):
        model_dtype = _MODEL_DTYPES.get((log.dtype or "").lower())
        if model_dtype:
            return model_dtype, None
        fallback = deployment.kv_cache_dtype if deployment and not logged else DEFAULT_KV_CACHE_DTYPE
        return fallback, f"KV cache dtype {logged or 'not logged'}: taken as {fallback}."
    raise InputError.single("log", f"The logged KV cache dtype {logged!r} is not modelled.")


def _release(version: str | None) -> str | None:
    """The release part of a logged version (``0.11.1rc7.dev262+gb9489f51e`` -> ``0.11.1rc7``)."""
    if not version:
        return None
    m = re.match(r"v?(\d+(?:\.\d+)*(?:(?:rc|a|b|\.post)\d+)?)", version.strip())
    return m.group(1)[:20] if m else None


def _engine_inputs(
    request: CalibrationRequest, log: StartupLog, deployment: Deployment | None, model: ModelSpec
) -> tuple[dict[str, Any], float | None, list[str]]:
    """``size()`` keyword arguments for what the log ran with (the deployment's where it is silent),
    the KV memory per GPU the log states (GiB, or None), and notes on what was assumed."""
    notes: list[str] = []

    def pick(logged: Any, stored: Any, default: Any) -> Any:
        return logged if logged is not None else (stored if stored is not None else default)

    d = deployment
    tp = pick(log.tensor_parallel_size, d.tp if d else None, 1)
    pp = pick(log.pipeline_parallel_size, d.pp if d else None, 1)
    dp = pick(log.data_parallel_size, d.dp if d else None, 1)
    if d is not None and (tp, pp, dp) != (d.tp, d.pp, d.dp):
        notes.append(
            f"The log ran tp {tp} x pp {pp} x dp {dp}; the deployment records tp {d.tp} x pp {d.pp} x dp {d.dp}. "
            "The prediction uses the log's."
        )
    # The deployment's engine where the log does not say and its log is one the parser reads (the registry).
    engine = log.engine or (d.engine if d and d.engine in startup_log_engines() else DEFAULT_ENGINE)
    utilization = log.gpu_memory_utilization if engine == "vllm" else log.mem_fraction_static
    if utilization is None:
        utilization = d.gpu_memory_utilization if d else DEFAULT_GPU_MEMORY_UTILIZATION
        notes.append(f"gpu_memory_utilization not logged: {utilization:g} assumed.")
    max_len = log.max_model_len or log.max_concurrency_tokens or (d.max_model_len if d else None)
    max_len = max_len or model.max_context_tokens
    kv_dtype, dtype_note = _kv_cache_dtype(log, d)
    if dtype_note:
        notes.append(dtype_note)
    version = _release(log.engine_version or request.engine_version or (d.engine_version if d else ""))
    kwargs: dict[str, Any] = {
        "layout": Layout(tp=tp, pp=pp, dp=dp),
        "kv_cache_dtype": kv_dtype,
        "gpu_memory_utilization": utilization,
        "engine": engine,
        "engine_version": version,
        "max_model_len": max_len,
        "context_tokens": max_len,
        "block_size_tokens": log.block_size_tokens or (d.block_size_tokens if d else None),
    }
    if log.prefix_caching is not None:
        kwargs["prefix_caching"] = log.prefix_caching
    quantization = (log.quantization or "").lower()
    if quantization in _WEIGHT_FORMATS:
        kwargs["weight_format"] = _WEIGHT_FORMATS[quantization]
    elif quantization:
        notes.append(f"Quantization {quantization!r} is not mapped to a weight format: the model's own is used.")
    logged_memory = log.available_kv_cache_gib if engine == "vllm" else log.kv_cache_gib
    return kwargs, logged_memory, notes


def _size(model: ModelSpec, sku: HardwareSku, kwargs: dict[str, Any], notes: list[str]) -> SizingResult:
    """``size()``; when the engine has no profile for this serving engine yet, its generic arithmetic."""
    try:
        try:
            return size(model.to_engine(), sku.to_engine(), **kwargs)
        except EngineInputError as exc:
            if set(exc.errors) != {"engine"}:
                raise
        notes.append(f"The engine has no allocator profile for {kwargs['engine']} yet: its generic arithmetic is used.")
        generic = {**kwargs, "engine": GENERIC, "engine_version": None, "block_size_tokens": None}
        return size(model.to_engine(), sku.to_engine(), **generic)
    except EngineInputError as exc:
        # The inputs came from the log: say so beside the log, naming the setting.
        raise InputError(
            {"log": [f"The log's {name}: {' '.join(messages)}" for name, messages in exc.errors.items()]}
        ) from None


def _token_pool(result: SizingResult) -> int | None:
    """The tokens the engine logs, or for the generic arithmetic the cache bytes over bytes per
    token per GPU (attention-only models: SGLang's token pool is exactly that)."""
    if result.engine_kv_cache_tokens is not None:
        return result.engine_kv_cache_tokens
    if result.state_bytes_per_sequence_per_gpu or not result.kv_bytes_per_token_per_gpu:
        return None
    return max(0, result.cache_bytes) // result.kv_bytes_per_token_per_gpu


def _predicted(name: str, given: SizingResult | None, hardware: SizingResult) -> tuple[Any, str]:
    """The predicted value of figure ``name`` and the prediction it comes from."""
    r, basis = (given, "logged_memory") if given is not None else (hardware, "hardware")
    padding = r.page_padding_fraction
    values = {
        "kv_cache_tokens": r.engine_kv_cache_tokens,
        "max_total_num_tokens": _token_pool(r),
        "kv_pool_tokens": _token_pool(r),
        "max_concurrency": r.engine_max_concurrency,
        "num_gpu_blocks": r.engine_num_blocks,
        "attention_block_size_tokens": r.engine_block_size_tokens,
        "mamba_page_padding_percent": None if padding is None else padding * 100,
    }
    if name in values:
        return values[name], basis
    memory = {
        "available_kv_cache_gib": hardware.available_kv_cache_bytes / GIB,
        "kv_cache_gib": hardware.available_kv_cache_bytes / GIB,
        "weights_gib": hardware.weights_bytes_per_gpu / GIB,
        "total_gpu_memory_gib": hardware.gpu_memory_bytes / GIB,
    }
    return memory[name], "hardware"


def compare(log: StartupLog, given: SizingResult | None, hardware: SizingResult) -> list[dict[str, Any]]:
    """One row per figure the log states: label, unit, logged, predicted, ratio (predicted / logged)."""
    rows = []
    for name, label, unit in FIGURES:
        logged = getattr(log, name)
        if logged is None or (name == "kv_pool_tokens" and log.max_total_num_tokens is not None):
            continue  # SGLang prints its pool twice; one row is enough
        predicted, basis = _predicted(name, given, hardware)
        ratio = predicted / logged if predicted is not None and logged else None
        rows.append(
            {
                "name": name,
                "label": label,
                "unit": unit,
                "logged": logged,
                "predicted": round(predicted, 4) if isinstance(predicted, float) else predicted,
                "ratio": None if ratio is None else round(ratio, 4),
                "basis": basis,
            }
        )
    return rows


def _prediction(
    kwargs: dict[str, Any],
    logged_memory: float | None,
    given: SizingResult | None,
    hardware: SizingResult,
    notes: list[str],
) -> dict[str, Any]:
    inputs = {k: (v.as_dict() if isinstance(v, Layout) else v) for k, v in kwargs.items()}
    return {
        "inputs": inputs,
        "available_kv_cache_gib_logged": logged_memory,
        "logged_memory": given.engine_dict() if given is not None else None,
        "hardware": {
            **hardware.engine_dict(),
            "usable_bytes": hardware.usable_bytes,
            "weights_bytes_per_gpu": hardware.weights_bytes_per_gpu,
            "runtime_bytes": hardware.runtime_bytes,
            "cache_bytes": hardware.cache_bytes,
            "fits": hardware.fits,
        },
        "notes": notes,
        "assumptions": list((given or hardware).assumptions),
    }


def calibrate(request: CalibrationRequest, user: Any = None) -> Calibration:
    """Parse, predict, compare and store (raises InputError / EngineInputError keyed by field)."""
    if not isinstance(request.log, str):
        raise InputError.single("log", "Give the log as text.")
    # What a database cannot store (NUL, lone surrogates from a hostile JSON body) is dropped first.
    clean = request.log.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
    request = replace(request, log=clean)
    log = parse_startup_log(request.log)
    deployment, model, sku = _resolve(request, log)
    prediction: dict[str, Any] = {}
    figures: list[dict[str, Any]] = []
    if not log.unsupported_architecture:
        kwargs, logged_memory, notes = _engine_inputs(request, log, deployment, model)
        hardware = _size(model, sku, kwargs, notes)
        given = None
        if logged_memory is not None:
            given = _size(model, sku, {**kwargs, "available_kv_cache_gib": logged_memory}, notes)
        figures = compare(log, given, hardware)
        prediction = _prediction(kwargs, logged_memory, given, hardware, list(dict.fromkeys(notes)))
    # Only what is stored is redacted (its first LOG_TEXT_MAX_CHARS): bounded work for any log.
    log_text, log_truncated = redacted_head(request.log, LOG_TEXT_MAX_CHARS)
    with transaction.atomic():
        return Calibration.objects.create(
            deployment=deployment,
            model=model,
            sku=sku,
            measured_on=request.measured_on or timezone.now().date(),
            engine=log.engine or "",
            engine_version=(log.engine_version or request.engine_version or "")[:40],
            logged_model=(log.model or "")[:300],
            parsed=log.to_dict(),
            prediction=prediction,
            figures=figures,
            unsupported_architecture=(log.unsupported_architecture or "")[:200],
            log_text=log_text,
            log_truncated=log_truncated,
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
