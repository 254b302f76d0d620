"""Input validation of ``size()`` and ``capacity_curve()``: every problem, keyed by API field.

Raises ``EngineInputError`` with all problems at once. Field names are the REST API's:
``gpu_memory_utilization``, ``pool``, ``state_pool_ratio``, ``include_scale_overhead``,
``state_slots_per_sequence``, ``kv_cache_dtype``, ``weight_format``, ``runtime_reserve_gib``,
``batch_tokens``, ``hbm_gb``, ``gpus``, ``tp``/``pp``/``dp``/``ep`` and ``context_tokens``,
plus the model's own (``total_params``, ``expert_params``, ``layer_groups``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from .admission import POOLS
from .errors import EngineInputError
from .formats import DTYPE_BYTES, RAW_BITS, WEIGHT_FORMATS
from .precompute import ModelConstants
from .runtime import runtime_errors
from .spec import Accelerator, Layout

_ONE = Layout()


def is_int(value: Any) -> bool:
    """A whole number (``bool`` excluded)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A finite int or float (``bool`` excluded)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def check_inputs(
    c: ModelConstants,
    accelerator: Accelerator,
    gpus: int | None,
    layout: Layout | None,
    weight_format: str | None,
    include_scale_overhead: bool,
    kv_cache_dtype: str,
    gpu_memory_utilization: float,
    runtime_reserve_gib: float | None,
    pool: str,
    state_pool_ratio: float,
    batch_tokens: int | None,
    state_slots_per_sequence: int,
    contexts: Iterable[int | None],
) -> tuple[Layout, int, bool, bool]:
    """Validate; return ``(layout, gpus, gpus_defaulted, context_defaulted)`` after defaults.

    Defaults: only ``gpus`` -> ``Layout(tp=gpus)``; only ``layout`` -> ``gpus = tp x pp x dp``;
    neither -> one GPU. A ``None`` context means "the model's maximum".
    """
    errors: dict[str, list[str]] = dict(c.errors)
    u = gpu_memory_utilization
    if not is_number(u) or not 0 < u <= 1:
        errors["gpu_memory_utilization"] = ["Must be a fraction above 0 and at most 1."]
    if pool not in POOLS:
        errors["pool"] = [f"Unknown pool {pool!r}; use one of {', '.join(POOLS)}."]
    if not is_number(state_pool_ratio) or state_pool_ratio <= 0:
        errors["state_pool_ratio"] = ["Must be a positive number (state pool : KV pool)."]
    if not isinstance(include_scale_overhead, bool):
        errors["include_scale_overhead"] = ["Must be true or false."]
    if not is_int(state_slots_per_sequence) or state_slots_per_sequence < 1:
        errors["state_slots_per_sequence"] = ["Must be a positive whole number."]
    if kv_cache_dtype not in DTYPE_BYTES:
        errors["kv_cache_dtype"] = [f"Unknown KV cache dtype {kv_cache_dtype!r}; use one of {', '.join(DTYPE_BYTES)}."]
    if weight_format is not None and weight_format not in RAW_BITS:
        errors["weight_format"] = [f"Unknown weight format {weight_format!r}; use one of {', '.join(WEIGHT_FORMATS)}."]
    if runtime_reserve_gib is not None or batch_tokens is not None:
        errors.update(runtime_errors(runtime_reserve_gib, batch_tokens))
    if not is_number(accelerator.hbm_gb) or accelerator.hbm_gb <= 0:
        errors["hbm_gb"] = ["The accelerator's memory must be a positive number of GB."]

    gpus_default = False
    if gpus is not None and (not is_int(gpus) or gpus < 1):
        errors["gpus"] = ["Must be a positive whole number."]
        layout = layout or _ONE
    elif layout is None:
        gpus_default = gpus is not None
        layout = Layout(tp=gpus) if gpus is not None else _ONE
    errors.update(c.layout_errors(layout))
    if "gpus" not in errors and not any(k in errors for k in ("tp", "pp", "dp", "ep")):
        per_replica = layout.tp * layout.pp * layout.dp
        if gpus is None:
            gpus = per_replica
        elif gpus % per_replica:
            errors["gpus"] = [f"{gpus} GPUs is not a whole number of replicas of {per_replica} GPUs (tp x pp x dp)."]
    context_default = False
    limit = c.model.max_context_tokens
    for context in contexts:
        if context is None:
            context_default = True
        elif not is_int(context) or context < 1:
            errors["context_tokens"] = ["Must be a positive whole number of tokens."]
        elif limit and context > limit:
            errors["context_tokens"] = [f"The model's maximum context is {limit} tokens."]
    if errors:
        raise EngineInputError(errors)
    return layout, gpus, gpus_default, context_default
