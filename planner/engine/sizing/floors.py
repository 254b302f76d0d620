"""Floors and the single-accelerator tier. Units: bytes (``int``); VRAM in decimal GB.

* **Weights floor** (seeds, "Quantas GPUs o Kimi K3 precisa"): the fewest GPUs of a SKU
  whose nominal HBM (decimal GB, no utilisation factor, no cache, no runtime) holds one copy
  of the weights: ``ceil(weights_bytes / (hbm_gb x 1e9))``. A floor, not a target.
* **Tier 2, one accelerator** (seeds, "Tier 2"): parameters x bytes per weight, plus the KV
  cache (and any recurrent state) of **one** sequence at the context, plus about 2 GB
  (decimal) of runtime, must fit in the card's memory as its driver reports it
  (``Accelerator.driver_hbm_bytes``, the nominal GB when not known). The seeds' comfortable pairings: 16 GB:
  7B at 4 bits; 24 GB: 14B at 4 bits; 48 GB: 32B at 4 bits; 80 GB: 70B at 4 bits or a
  30B-class MoE at 8 bits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import EngineInputError
from ..formats import DEFAULT_KV_CACHE_DTYPE
from ..limits import MAX_CONTEXT_TOKENS, MAX_HBM_GB, MIN_HBM_GB, float_error, int_error
from ..spec import Accelerator, ModelArch
from ..units import GIB, ceil_div, gb_to_bytes
from .kv_cache import kv_geometry
from .state import state_bytes_per_sequence
from .weights import resolve_formats, weights_bytes

#: Runtime overhead of a single-GPU server in the seeds' tier-2 rule (decimal GB).
TIER2_RUNTIME_GB: float = 2.0
#: Context assumed by ``single_gpu_fit`` when none is given: llama-server's ``-c 8192`` in the seeds.
TIER2_DEFAULT_CONTEXT_TOKENS: int = 8192


def min_gpus_for_weights(weights_bytes: int, accelerator: Accelerator) -> int:
    """Fewest GPUs of ``accelerator`` whose nominal HBM holds ``weights_bytes`` (weights only)."""
    message = float_error(accelerator.hbm_gb, MAX_HBM_GB, MIN_HBM_GB, what="of GB")
    if message:
        raise EngineInputError.single("hbm_gb", message)
    hbm = accelerator.hbm_bytes
    return max(1, ceil_div(weights_bytes, hbm)) if weights_bytes > 0 else 0


@dataclass(frozen=True, slots=True)
class SingleGpuFit:
    """Tier-2 check: one sequence of ``model`` on one ``accelerator``."""

    model: str
    accelerator: str
    context_tokens: int
    weight_format: str
    vram_bytes: int
    weights_bytes: int
    kv_bytes: int
    state_bytes: int
    runtime_bytes: int
    required_bytes: int
    headroom_bytes: int
    fits: bool
    assumptions: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "accelerator": self.accelerator,
            "context_tokens": self.context_tokens,
            "weight_format": self.weight_format,
            "vram_bytes": self.vram_bytes,
            "weights_bytes": self.weights_bytes,
            "kv_bytes": self.kv_bytes,
            "state_bytes": self.state_bytes,
            "runtime_bytes": self.runtime_bytes,
            "required_bytes": self.required_bytes,
            "headroom_bytes": self.headroom_bytes,
            "fits": self.fits,
            "assumptions": list(self.assumptions),
        }


def single_gpu_fit(
    model: ModelArch,
    accelerator: Accelerator,
    context_tokens: int | None = None,
    weight_format: str | None = None,
    include_scale_overhead: bool = True,
    kv_cache_dtype: str = DEFAULT_KV_CACHE_DTYPE,
    runtime_gb: float = TIER2_RUNTIME_GB,
) -> SingleGpuFit:
    """Does ``model`` serve one sequence of ``context_tokens`` on a single ``accelerator``?

    ``required = weights + kv(context) + state + runtime_gb`` must not exceed the nominal VRAM
    (decimal GB). ``context_tokens`` defaults to 8192, capped at the model's maximum.
    """
    errors: dict[str, list[str]] = {}
    if context_tokens is None:
        context = TIER2_DEFAULT_CONTEXT_TOKENS
        if model.max_context_tokens:
            context = min(context, model.max_context_tokens)
    else:
        context = context_tokens
        if int_error(context, 1, MAX_CONTEXT_TOKENS):
            errors["context_tokens"] = [int_error(context, 1, MAX_CONTEXT_TOKENS, "of tokens")]
        elif model.max_context_tokens and context > model.max_context_tokens:
            errors["context_tokens"] = [f"The model's maximum context is {model.max_context_tokens} tokens."]
    message = float_error(runtime_gb, MAX_HBM_GB, what="of GB")
    if message:
        errors["runtime_gb"] = [message]
    message = float_error(accelerator.hbm_gb, MAX_HBM_GB, MIN_HBM_GB, what="of GB")
    if message:
        errors["hbm_gb"] = [message]
    if errors:
        raise EngineInputError(errors)
    other_fmt, expert_fmt = resolve_formats(model, weight_format)
    weights = weights_bytes(model, weight_format, include_scale_overhead)
    kv = kv_geometry(model, kv_cache_dtype).bytes_per_sequence(context)
    state = state_bytes_per_sequence(model)
    runtime = gb_to_bytes(runtime_gb)
    vram = accelerator.driver_hbm_bytes
    required = weights + kv + state + runtime
    fmt = other_fmt if other_fmt == expert_fmt else f"{expert_fmt} experts + {other_fmt}"
    return SingleGpuFit(
        model=model.name,
        accelerator=accelerator.name,
        context_tokens=context,
        weight_format=fmt,
        vram_bytes=vram,
        weights_bytes=weights,
        kv_bytes=kv,
        state_bytes=state,
        runtime_bytes=runtime,
        required_bytes=required,
        headroom_bytes=vram - required,
        fits=required <= vram,
        assumptions=(
            f"Tier 2: weights ({fmt}) + cache of one sequence at {context} tokens ({kv_cache_dtype}) "
            f"+ {runtime_gb:g} GB runtime (decimal) must fit in the {vram / GIB:.2f} GiB the driver reports "
            "(the nominal GB when not known).",
        ),
    )
