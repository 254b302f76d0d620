"""Weight memory: one copy of the model, and each GPU's share of it under a layout.

Units: bytes (``int``). Formula (docs/sizing.md, "Weights"):

    bytes = parameters x bits per weight / 8

computed per component, because real checkpoints store components in different formats
(gpt-oss keeps its routed experts in MXFP4 and attention, router, embeddings and lm_head in
bf16; Kimi K3 does the same with MXFP4 experts). The two components are:

* **routed experts** (``ModelArch.expert_params``), in ``expert_weight_format``
  (``weight_format`` when unset);
* **everything else** (attention, dense MLP, shared experts, embeddings, lm_head, norms), in
  ``weight_format``.

When ``expert_params`` is ``None`` the whole model is treated as "everything else".

Per-GPU share under a layout of ``tp x pp x dp`` GPUs per replica:

* everything else is split by ``tp`` (vLLM and SGLang shard attention and MLP weights by
  tensor parallelism and shard embeddings/lm_head by vocabulary) and by ``pp`` (layers), and
  is **replicated** on every data-parallel attention rank (each DP rank is a full copy of
  the attention stack). Small replicated tensors (norms, router gates, MLA's latent
  down-projection) are ignored.
* routed experts are split over all ``tp x dp`` GPUs of a pipeline stage and by ``pp``: vLLM
  forms a ``DP x TP`` tensor-parallel group for expert layers by default, or an expert-
  parallel group of the same size with ``--enable-expert-parallel`` (docs.vllm.ai, "Data
  Parallel Deployment"); SGLang shards experts over ``ep`` ranks and each expert ``tp/ep``
  ways. Either way each GPU holds ``1 / (tp x dp)`` of a stage's experts, so ``ep`` changes
  the communication pattern, not the memory.

A record with ``weight_parts`` (``planner.engine.weight_parts``: the checkpoint's module classes, each
in its own format with its own bits per weight, scales included) counts each part in its format: the
routed experts' parts are the expert component, every other part the rest.

A ``weight_format`` override applies to every component and part (``include_scale_overhead=False``
gives the raw element size, which is how the seeds' table is drawn).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import EngineInputError
from ..formats import RAW_BITS, SCALED_BITS, WEIGHT_FORMATS
from ..spec import Layout, ModelArch
from ..units import ceil_div
from ..weight_parts import PARTS, ROUTED, summarise


@dataclass(frozen=True, slots=True)
class WeightBreakdown:
    """Weights of one model copy and one GPU's share, in bytes."""

    total_bytes: int
    expert_bytes: int
    other_bytes: int
    expert_format: str
    other_format: str
    include_scale_overhead: bool
    per_gpu_bytes: int
    per_gpu_expert_bytes: int
    per_gpu_other_bytes: int
    assumptions: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "total_bytes": self.total_bytes,
            "expert_bytes": self.expert_bytes,
            "other_bytes": self.other_bytes,
            "expert_format": self.expert_format,
            "other_format": self.other_format,
            "include_scale_overhead": self.include_scale_overhead,
            "per_gpu_bytes": self.per_gpu_bytes,
            "per_gpu_expert_bytes": self.per_gpu_expert_bytes,
            "per_gpu_other_bytes": self.per_gpu_other_bytes,
            "assumptions": list(self.assumptions),
        }


def check_weight_format(fmt: str, field: str = "weight_format") -> None:
    """Raise ``EngineInputError`` on ``field`` unless ``fmt`` is a known weight format."""
    if fmt not in RAW_BITS:
        raise EngineInputError.single(field, f"Unknown weight format {fmt!r}; use one of {', '.join(WEIGHT_FORMATS)}.")


def resolve_formats(model: ModelArch, weight_format: str | None = None) -> tuple[str, str]:
    """``(other_format, expert_format)``: the override for both, else the model's own."""
    if weight_format is not None:
        check_weight_format(weight_format)
        return weight_format, weight_format
    return model.weight_format, model.expert_weight_format or model.weight_format


def split_params(model: ModelArch) -> tuple[int, int]:
    """``(expert_params, other_params)``; all parameters are "other" when experts are unknown."""
    errors: dict[str, list[str]] = {}
    if model.total_params < 0:
        errors["total_params"] = ["Must not be negative."]
    experts = model.expert_params
    if experts is not None and experts < 0:
        errors["expert_params"] = ["Must not be negative."]
    elif experts is not None and experts > model.total_params:
        errors["expert_params"] = ["Cannot exceed the total parameter count."]
    if errors:
        raise EngineInputError(errors)
    if experts is None:
        return 0, model.total_params
    return experts, model.total_params - experts


def params_bytes(params: int, fmt: str, include_scale_overhead: bool = True) -> int:
    """Bytes for ``params`` weights stored in ``fmt`` (rounded to the nearest byte)."""
    check_weight_format(fmt)
    bits = (SCALED_BITS if include_scale_overhead else RAW_BITS)[fmt]
    return round(params * bits / 8)


def weight_components(
    model: ModelArch, weight_format: str | None = None, include_scale_overhead: bool = True
) -> tuple[int, int]:
    """``(expert_bytes, other_bytes)`` of one model copy: by part when the record has parts and no
    override is given, else by the two formats."""
    other_fmt, expert_fmt = resolve_formats(model, weight_format)
    if model.weight_parts and weight_format is None:
        split_params(model)  # the counts' own errors first
        expert = sum(p.bytes(include_scale_overhead) for p in model.weight_parts if p.part == ROUTED)
        other = sum(p.bytes(include_scale_overhead) for p in model.weight_parts if p.part != ROUTED)
        return expert, other
    expert_params, other_params = split_params(model)
    return (
        params_bytes(expert_params, expert_fmt, include_scale_overhead),
        params_bytes(other_params, other_fmt, include_scale_overhead),
    )


def weights_bytes(model: ModelArch, weight_format: str | None = None, include_scale_overhead: bool = True) -> int:
    """Bytes of one full copy of the model's weights."""
    expert_bytes, other_bytes = weight_components(model, weight_format, include_scale_overhead)
    return expert_bytes + other_bytes


def per_gpu_shares(expert_bytes: int, other_bytes: int, layout: Layout, n_experts: int = 0) -> tuple[int, int]:
    """``(expert_bytes_per_gpu, other_bytes_per_gpu)`` on the busiest GPU (rounded up).

    With ``layout.redundant_experts`` slots beside the ``n_experts`` routed experts, each GPU also holds
    its share of the replicas: expert bytes x (E + redundant) / E.
    """
    if layout.redundant_experts and n_experts:
        expert_bytes = ceil_div(expert_bytes * (n_experts + layout.redundant_experts), n_experts)
    return (
        ceil_div(expert_bytes, layout.tp * layout.dp * layout.pp),
        ceil_div(other_bytes, layout.tp * layout.pp),
    )


def weights_per_gpu_bytes(
    model: ModelArch,
    layout: Layout | None = None,
    weight_format: str | None = None,
    include_scale_overhead: bool = True,
) -> int:
    """Bytes of weights held by one GPU of a replica laid out as ``layout``."""
    expert_bytes, other_bytes = weight_components(model, weight_format, include_scale_overhead)
    expert_gpu, other_gpu = per_gpu_shares(expert_bytes, other_bytes, layout or Layout(), model.n_routed_experts)
    return expert_gpu + other_gpu


def weight_assumptions(
    model: ModelArch, other_fmt: str, expert_fmt: str, include_scale_overhead: bool, by_parts: bool = False
) -> tuple[str, ...]:
    """Human-readable statements of what the weight figures assume."""
    scales = (
        "including block-scale overhead (e.g. MXFP4 = 4.25 bits per weight)"
        if include_scale_overhead
        else "raw element size, without block scales (bf16 2 bytes, fp8 1, 4-bit 0.5, 2-bit 0.25)"
    )
    out = [f"Weights = parameters x bits per weight / 8, {scales}."]
    if by_parts and model.weight_parts:
        rows = summarise(model.weight_parts)
        listed = "; ".join(
            f"{PARTS[p.part].lower()} {p.params:,} in {p.format} ({p.bits:g} bits)" for p in rows if p.params
        )
        out.append(
            f"Each module class in the checkpoint's own format: {listed}. Routed experts split over tp x dp x pp "
            "GPUs, the rest over tp x pp and replicated on each data-parallel rank."
        )
        return tuple(out)
    if model.expert_params is None:
        out.append(
            f"Routed-expert parameters unknown: the whole model ({model.total_params:,} parameters) "
            f"is stored as {other_fmt} and split by tp x pp like dense weights."
        )
    else:
        out.append(
            f"Routed experts ({model.expert_params:,} parameters) stored as {expert_fmt}, split over "
            f"tp x dp x pp GPUs; the other {model.total_params - model.expert_params:,} parameters "
            f"stored as {other_fmt}, split by tp x pp and replicated on each data-parallel rank."
        )
    return tuple(out)


def weight_table(model: ModelArch, include_scale_overhead: bool = True) -> list[dict[str, Any]]:
    """The model page's weights by module class: one row per (class, format, bits) with its label,
    parameters, bytes and share of the checkpoint's bytes in percent (empty when the record has no parts)."""
    rows = summarise(model.weight_parts)
    total = sum(p.bytes(include_scale_overhead) for p in rows) or 1
    return [
        {
            "part": p.part,
            "label": PARTS[p.part],
            "format": p.format,
            "params": p.params,
            "bits": p.bits,
            "bytes": p.bytes(include_scale_overhead),
            "share": 100 * p.bytes(include_scale_overhead) / total,
        }
        for p in rows
    ]


def weight_breakdown(
    model: ModelArch,
    layout: Layout | None = None,
    weight_format: str | None = None,
    include_scale_overhead: bool = True,
) -> WeightBreakdown:
    """Weights of one model copy and of one GPU under ``layout``, with their assumptions."""
    layout = layout or Layout()
    other_fmt, expert_fmt = resolve_formats(model, weight_format)
    expert_bytes, other_bytes = weight_components(model, weight_format, include_scale_overhead)
    expert_gpu, other_gpu = per_gpu_shares(expert_bytes, other_bytes, layout, model.n_routed_experts)
    return WeightBreakdown(
        total_bytes=expert_bytes + other_bytes,
        expert_bytes=expert_bytes,
        other_bytes=other_bytes,
        expert_format=expert_fmt,
        other_format=other_fmt,
        include_scale_overhead=include_scale_overhead,
        per_gpu_bytes=expert_gpu + other_gpu,
        per_gpu_expert_bytes=expert_gpu,
        per_gpu_other_bytes=other_gpu,
        assumptions=weight_assumptions(
            model, other_fmt, expert_fmt, include_scale_overhead, by_parts=weight_format is None
        ),
    )
