"""Weight formats from a config's ``quantization_config`` (or a ModelOpt ``hf_quant_config.json``).

The record has two formats: ``weight_format`` for everything but the routed experts and
``expert_weight_format`` for the routed experts (``None`` when they are the same). They are read
from the quantisation description:

* ``quant_method: mxfp4`` (gpt-oss): MXFP4, with ``modules_to_not_convert`` left in the model dtype;
* ``quant_method: fp8`` (DeepSeek, Qwen ``-FP8``, MiniMax): FP8, block scales from
  ``weight_block_size``, ``modules_to_not_convert`` / ``ignored_layers`` left unquantised;
* ModelOpt (``quant_method: modelopt`` or a ``quant_algo``, in ``config.json`` or the separate
  ``hf_quant_config.json``): ``quant_algo`` NVFP4, FP8, MXFP4, INT4/INT8 AWQ-style, or
  ``MIXED_PRECISION`` with a per-module ``quantized_layers`` table; ``exclude_modules`` unquantised;
* ``compressed-tensors`` (Kimi K2.5/K3): each ``config_groups`` entry's ``weights`` (``num_bits``,
  ``type``, ``group_size``) or ``format``; ``ignore`` unquantised.

Which parts an exclusion list leaves unquantised is read from the module names it gives, never from
matching them as patterns (a hostile regular expression cannot stall the import): a name naming an
attention mixer's projections (``self_attn``, ``linear_attn``, ``mixer``, ``q_proj``, ...) keeps the
non-expert part in the model dtype; one naming routed ``experts`` keeps the experts unquantised;
norms, routers, indexers and whole first layers do not change either format. The record then counts
each part in one format, which the assumptions say.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import EngineInputError

#: ModelOpt ``quant_algo`` -> the engine's weight format.
MODELOPT_ALGOS: dict[str, str] = {
    "NVFP4": "nvfp4",
    "W4A16_NVFP4": "nvfp4",
    "W4A8_NVFP4_FP8": "nvfp4",
    "NVFP4_AWQ": "nvfp4",
    "FP8": "fp8",
    "FP8_PB_WO": "fp8",
    "FP8_PER_CHANNEL_PER_TOKEN": "fp8",
    "MXFP4": "mxfp4",
    "W4A8_MXFP4_FP8": "mxfp4",
    "INT4_AWQ": "int4",
    "W4A16_AWQ": "int4",
    "W4A8_AWQ": "int4",
    "INT8": "int8",
    "W8A8_SQ_PER_CHANNEL": "int8",
    "W8A16": "int8",
}
#: Config dtype names -> weight formats (an unquantised checkpoint).
DTYPE_FORMATS: dict[str, str] = {"bfloat16": "bf16", "float16": "fp16", "float32": "bf16"}

#: Words in a module name that make it part of an attention mixer's projections.
ATTENTION_WORDS: tuple[str, ...] = (
    "self_attn",
    "linear_attn",
    "attention",
    "mixer",
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "qkv_proj",
    "q_a_proj",
    "q_b_proj",
    "kv_a_proj",
    "kv_b_proj",
    ".attn",
)
#: Words that make an excluded name a small part (norms, routers, the sparse-attention indexer).
SMALL_PART_WORDS: tuple[str, ...] = ("norm", "indexer", "bias", "mlp.gate", "router", ".gate")


@dataclass(frozen=True, slots=True)
class WeightFormats:
    """The record's ``weight_format`` (non-expert part) and ``expert_weight_format`` (``None``: same)."""

    weight_format: str
    expert_weight_format: str | None


def names_attention(name: str) -> bool:
    """An excluded module name that covers an attention mixer's projections (not only its norms)."""
    lowered = name.lower()
    if any(word in lowered for word in SMALL_PART_WORDS):
        return False
    return any(word in lowered for word in ATTENTION_WORDS)


def names_routed_experts(name: str) -> bool:
    """An excluded module name that covers the routed experts (not the shared ones)."""
    lowered = name.lower()
    return "experts" in lowered and "shared_expert" not in lowered


def model_dtype_format(config: Mapping[str, Any], text: Mapping[str, Any] | None) -> str:
    """The unquantised weights' format from ``torch_dtype`` / ``dtype`` (bf16 when absent)."""
    for source in (text or {}, config):
        for key in ("torch_dtype", "dtype"):
            value = source.get(key)
            if isinstance(value, str) and value in DTYPE_FORMATS:
                return DTYPE_FORMATS[value]
    return "bf16"


def quant_description(
    config: Mapping[str, Any], quant_config: Mapping[str, Any] | None
) -> tuple[Mapping[str, Any] | None, str]:
    """The quantisation description and where it was read (``quant_config`` or a config path)."""
    if quant_config is not None:
        inner = quant_config.get("quantization")
        return (inner if isinstance(inner, Mapping) else quant_config), "quant_config"
    text = config.get("text_config")
    for source, path in ((config, "config"), (text, "config.text_config")):
        if isinstance(source, Mapping) and isinstance(source.get("quantization_config"), Mapping):
            return source["quantization_config"], f"{path}.quantization_config"
    return None, ""


def exclusions(desc: Mapping[str, Any]) -> list[str]:
    """Every module name the description leaves unquantised (strings only)."""
    names: list[str] = []
    for key in ("modules_to_not_convert", "ignored_layers", "ignore", "exclude_modules"):
        value = desc.get(key)
        if isinstance(value, list):
            names.extend(v for v in value if isinstance(v, str))
    return names


def compressed_tensors_format(group: Mapping[str, Any], where: str) -> str:
    """One ``config_groups`` entry's format: its ``format`` name, else its ``weights`` figures."""
    fmt = str(group.get("format") or "")
    if "mxfp4" in fmt:
        return "mxfp4"
    if "nvfp4" in fmt:
        return "nvfp4"
    weights = group.get("weights")
    if not isinstance(weights, Mapping):
        raise EngineInputError.single(where, "A config group needs its weights (num_bits, type).")
    bits, kind, size = (
        v if isinstance(v, int | str) else None for v in (weights.get(k) for k in ("num_bits", "type", "group_size"))
    )
    table = {
        (4, "float", 16): "nvfp4",
        (4, "float", 32): "mxfp4",
        (8, "float", None): "fp8",
        (4, "int", None): "int4",
        (8, "int", None): "int8",
        (2, "int", None): "int2",
    }
    found = table.get((bits, kind, size if bits == 4 and kind == "float" else None))
    if found is None:
        raise EngineInputError.single(
            where, f"Unsupported weights: {bits}-bit {kind} (group {size}); known: 4/8-bit float, 2/4/8-bit int."
        )
    return found


def split_by_targets(entries: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The most common format per part, from ``(module name, format)`` pairs: ``experts`` (routed-expert
    names), ``attention`` (attention names) and ``other`` (MLPs, and type names such as ``Linear``)."""
    counts: dict[str, dict[str, int]] = {"experts": {}, "attention": {}, "other": {}}
    for name, fmt in entries:
        part = "experts" if names_routed_experts(name) else "attention" if names_attention(name) else "other"
        counts[part][fmt] = counts[part].get(fmt, 0) + 1
    return {part: max(table, key=lambda k: table[k]) for part, table in counts.items() if table}


def weight_formats(
    config: Mapping[str, Any],
    quant_config: Mapping[str, Any] | None,
    *,
    has_experts: bool,
    notes: list[str],
) -> WeightFormats:
    """The two formats (see the module docstring); the reasoning goes to ``notes``.

    Raises ``EngineInputError`` keyed by the description's path for a method or algorithm the
    engine has no format for.
    """
    text = config.get("text_config") if isinstance(config.get("text_config"), Mapping) else None
    unquantised = model_dtype_format(config, text)
    desc, where = quant_description(config, quant_config)
    if desc is None:
        notes.append(f"No quantization_config: every weight in {unquantised} (the config's dtype).")
        return WeightFormats(unquantised, None)
    method = str(desc.get("quant_method") or "").lower()
    algo = str(desc.get("quant_algo") or "").upper()
    base: str | None = None
    expert_fmt: str | None = None
    if method == "mxfp4":
        base = "mxfp4"
    elif algo or method == "modelopt":
        if algo == "MIXED_PRECISION":
            parts = mixed_precision(desc, where)
            # MoE: the attention's format for the non-expert part; dense: the MLPs' (most weights).
            order = ("attention", "other") if has_experts else ("other", "attention")
            base = next((parts[p] for p in order if p in parts), None)
            expert_fmt = parts.get("experts")
            moe_algo = str(desc.get("moe_quant_algo") or "").upper()
            if moe_algo in MODELOPT_ALGOS:
                expert_fmt = MODELOPT_ALGOS[moe_algo]
            if base is None:
                base = expert_fmt or ("fp8" if method == "fp8" else None)
            if base is None:
                raise EngineInputError.single(where, "MIXED_PRECISION without quantized_layers or config_groups.")
            notes.append(f"Mixed precision ({where}): {', '.join(f'{p} {f}' for p, f in sorted(parts.items()))}.")
        elif algo in MODELOPT_ALGOS:
            base = MODELOPT_ALGOS[algo]
        else:
            raise EngineInputError.single(
                f"{where}.quant_algo", f"Unsupported ModelOpt quant_algo {algo!r}; known: {', '.join(MODELOPT_ALGOS)}."
            )
    elif method == "fp8":
        base = "fp8"
        block = desc.get("weight_block_size")
        notes.append(f"FP8 weights (e4m3) with block scales {block}." if block else "FP8 weights, per-tensor scales.")
    elif method == "compressed-tensors":
        groups = desc.get("config_groups")
        if not isinstance(groups, Mapping) or not groups:
            raise EngineInputError.single(f"{where}.config_groups", "Required for compressed-tensors.")
        pairs: list[tuple[str, str]] = []
        for key, group in groups.items():
            if not isinstance(group, Mapping):
                raise EngineInputError.single(f"{where}.config_groups.{key}", "Must be an object.")
            fmt = compressed_tensors_format(group, f"{where}.config_groups.{key}")
            targets = group.get("targets") if isinstance(group.get("targets"), list) else ["Linear"]
            pairs.extend((str(t), fmt) for t in targets)
        parts = split_by_targets(pairs)
        order = ("attention", "other") if has_experts else ("other", "attention")
        base = next((parts[p] for p in order if p in parts), pairs[0][1])
        expert_fmt = parts.get("experts")
        if base == "int4":
            notes.append(
                "int4 weights counted with the engine's group-128 scales (4.16 bits); this checkpoint's "
                "group size may be smaller (more scale bytes)."
            )
    elif method in ("gptq", "awq"):
        bits = desc.get("bits")
        base = {4: "int4", 8: "int8", 2: "int2"}.get(bits) if isinstance(bits, int) else None
        if base is None:
            raise EngineInputError.single(f"{where}.bits", f"Unsupported {method} bits {bits!r} (2, 4 or 8).")
    else:
        raise EngineInputError.single(
            f"{where}.quant_method",
            f"Unsupported quant_method {method or '(none)'!r}; known: mxfp4, fp8, modelopt, compressed-tensors, "
            "gptq, awq.",
        )
    expert_fmt = expert_fmt or base
    excluded = exclusions(desc)
    attention_kept = [n for n in excluded if names_attention(n)]
    experts_kept = [n for n in excluded if names_routed_experts(n)]
    if experts_kept:
        expert_fmt = unquantised
    non_expert = base
    if has_experts:
        if attention_kept:
            non_expert = unquantised
        parts = "attention, shared experts, dense MLPs, embeddings, lm_head"
        if non_expert == expert_fmt:
            notes.append(f"Weights in {base} ({where}), routed experts and the rest alike ({parts}).")
        else:
            why = f"{len(attention_kept)} excluded module name(s) keep attention unquantised"
            notes.append(
                f"Routed experts in {expert_fmt}, the rest ({parts}) in {non_expert} ({where}: "
                f"{why if attention_kept else 'as the description gives them'})."
            )
    else:
        notes.append(
            f"Dense model: every weight counted in {base} ({where})"
            + (
                f"; {len(attention_kept)} excluded attention module name(s) stay {unquantised} in the checkpoint."
                if attention_kept
                else "."
            )
        )
    if excluded and not attention_kept:
        notes.append(
            f"{len(excluded)} excluded module name(s) (norms, routers, lm_head, ...) are counted in the same format."
        )
    return WeightFormats(non_expert, expert_fmt if has_experts and expert_fmt != non_expert else None)


def mixed_precision(desc: Mapping[str, Any], where: str) -> dict[str, str]:
    """ModelOpt ``MIXED_PRECISION``: formats from ``quantized_layers`` (name -> ``quant_algo``) or
    from ``config_groups`` targets."""
    pairs: list[tuple[str, str]] = []
    layers = desc.get("quantized_layers")
    if isinstance(layers, Mapping):
        for name, entry in layers.items():
            algo = str(entry.get("quant_algo") if isinstance(entry, Mapping) else "").upper()
            if algo not in MODELOPT_ALGOS:
                raise EngineInputError.single(f"{where}.quantized_layers", f"Unsupported quant_algo {algo!r}.")
            pairs.append((str(name), MODELOPT_ALGOS[algo]))
    groups = desc.get("config_groups")
    if not pairs and isinstance(groups, Mapping):
        for key, group in groups.items():
            if isinstance(group, Mapping):
                fmt = compressed_tensors_format(group, f"{where}.config_groups.{key}")
                targets = group.get("targets") if isinstance(group.get("targets"), list) else []
                pairs.extend((str(t), fmt) for t in targets)
    return split_by_targets(pairs)
