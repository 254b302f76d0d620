"""What a forward pass reads and computes, per model: active parameters, expert split, attention FLOPs.

Pure Python, no Django. Units: parameters (count), bytes, FLOPs. Formulas: docs/throughput.md.

* **Routed experts** ``routed_params`` = ``ModelArch.expert_params``; when unknown for an MoE model,
  estimated from ``total - active = routed x (1 - k / E)``. Each token activates
  ``routed_active = routed x k / E``.
* **Dense active** (attention, dense MLP, shared experts, lm_head): ``active - routed_active``,
  capped at the stored non-expert parameters. ``total_params`` is usually a rounded card figure
  ("2.8T"), so ``total - expert_params`` carries its rounding error (+-50B for Kimi K3); the
  active count ("104B") is the better anchor for what a step reads.
* **Attention FLOPs** per layer, with ``h`` query heads (``attention_heads``; else ``hidden /
  head_dim``, else the KV heads) and 2 FLOPs per multiply-add:

  - full / sliding, per cached token (decode) or per (query, key) pair (prefill): ``4 h d``;
  - MLA decode (weights absorbed, the form FlashMLA runs): ``2 h (2 kv_lora_rank + rope)`` per cached
    token; MLA prefill (un-absorbed, 128-dim nope/value heads as DeepSeek-V3): ``2 h (256 + rope)``;
  - linear (KDA, gated DeltaNet) per token, fixed: decode ``6 v dk dv`` (decay, delta update,
    read-out), prefill ``v (6 dk dv + 64 (dk + dv))`` (chunk-wise form, 64-token chunks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..formats import RAW_BITS, SCALED_BITS
from ..sizing.weights import resolve_formats, split_params
from ..spec import LayerGroup, ModelArch

MLA_PREFILL_HEAD_DIM: int = 128
LINEAR_CHUNK_TOKENS: int = 64


@dataclass(frozen=True, slots=True)
class AttnGroup:
    """FLOP coefficients of one layer group: per layer, per query head.

    ``decode`` FLOPs per cached token (full, sliding, MLA) or per token (linear); ``prefill`` FLOPs
    per (query, key) pair (full, sliding, MLA) or per token (linear).
    """

    kind: str
    count: int
    heads: int
    decode: float
    prefill: float
    window: int = 0


@dataclass(frozen=True, slots=True)
class ModelPerf:
    """Per-model figures of the throughput model (one copy of the model, all layers)."""

    name: str
    active_params: float
    dense_active_params: float
    routed_params: float
    routed_active_params: float
    n_experts: int
    top_k: int
    dense_format: str
    expert_format: str
    dense_bytes: float
    expert_bytes: float
    hidden: int
    layers: int
    moe_layers: int
    groups: tuple[AttnGroup, ...]
    notes: tuple[str, ...]

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 1 and self.top_k >= 1 and self.routed_params > 0


def _heads(model: ModelArch, group: LayerGroup) -> int:
    if group.kind == "linear":
        return group.value_heads
    if model.attention_heads:
        return model.attention_heads
    if group.kind in ("full", "sliding"):
        if model.hidden_size and group.head_dim:
            return max(1, model.hidden_size // group.head_dim)
        return group.kv_heads
    return max(1, model.hidden_size // MLA_PREFILL_HEAD_DIM) if model.hidden_size else 1


def _attn_group(model: ModelArch, group: LayerGroup) -> AttnGroup:
    h = _heads(model, group)
    if group.kind in ("full", "sliding"):
        per = 4.0 * group.head_dim
        return AttnGroup(group.kind, group.count, h, per, per, group.window)
    if group.kind == "mla":
        rope = group.qk_rope_head_dim
        return AttnGroup(
            "mla", group.count, h, 2.0 * (2 * group.kv_lora_rank + rope), 2.0 * (2 * MLA_PREFILL_HEAD_DIM + rope)
        )
    dk, dv = group.key_dim, group.value_dim
    return AttnGroup("linear", group.count, h, 6.0 * dk * dv, 6.0 * dk * dv + LINEAR_CHUNK_TOKENS * (dk + dv))


def model_perf(model: ModelArch, weight_format: str | None = None, include_scale_overhead: bool = True) -> ModelPerf:
    """The throughput model's view of ``model`` (see the module docstring)."""
    bits = SCALED_BITS if include_scale_overhead else RAW_BITS
    other_fmt, expert_fmt = resolve_formats(model, weight_format)
    expert_params, other_params = split_params(model)
    total = model.total_params
    active = model.active_params if model.active_params > 0 else total
    notes: list[str] = []
    E, k = model.n_routed_experts, model.n_active_experts
    moe = E > 1 and 1 <= k < E
    if moe and model.expert_params is None:
        routed = min(float(total), max(0.0, (total - active) * E / (E - k)))
        expert_fmt = other_fmt
        notes.append(
            f"Routed-expert parameters not given: estimated from total - active = routed x (1 - k/E) as "
            f"{routed / 1e9:,.1f}B, stored like the rest ({other_fmt})."
        )
        stored_other = total - routed
    else:
        routed = float(expert_params) if moe else 0.0
        stored_other = float(other_params) if moe else float(total)
        if not moe and expert_params:
            notes.append("Expert parameters given without a usable expert count/top-k: the model is read as dense.")
    routed_active = routed * k / E if moe else 0.0
    dense_active = min(max(0.0, active - routed_active), stored_other) if moe else float(active)
    if moe:
        notes.append(
            f"Per token: {routed_active / 1e9:,.1f}B routed-expert parameters ({k} of {E} experts) + "
            f"{dense_active / 1e9:,.1f}B dense (active {active / 1e9:,.1f}B minus routed); total parameters "
            f"set memory, active ones set compute."
        )
    layers = model.num_layers
    hidden = model.hidden_size or max(1, round(math.sqrt(active / (12 * max(1, layers)))))
    if not model.hidden_size:
        notes.append(f"Hidden size not given: estimated as sqrt(active / (12 x layers)) = {hidden} for communication.")
    return ModelPerf(
        name=model.name,
        active_params=float(active),
        dense_active_params=dense_active,
        routed_params=routed,
        routed_active_params=routed_active,
        n_experts=E if moe else 0,
        top_k=k if moe else 0,
        dense_format=other_fmt,
        expert_format=expert_fmt,
        dense_bytes=dense_active * bits[other_fmt] / 8,
        expert_bytes=routed * bits[expert_fmt] / 8,
        hidden=hidden,
        layers=layers,
        moe_layers=layers if moe else 0,
        groups=tuple(_attn_group(model, g) for g in model.layer_groups),
        notes=tuple(notes),
    )


_MEMO: dict[tuple[int, str | None, bool], tuple[ModelArch, ModelPerf]] = {}


def cached_model_perf(model: ModelArch, weight_format: str | None, include_scale_overhead: bool) -> ModelPerf:
    """``model_perf`` memoised per model object (``ModelArch`` is frozen)."""
    key = (id(model), weight_format, include_scale_overhead)
    hit = _MEMO.get(key)
    if hit is not None and hit[0] is model:
        return hit[1]
    if len(_MEMO) > 512:
        _MEMO.clear()
    perf = model_perf(model, weight_format, include_scale_overhead)
    _MEMO[key] = (model, perf)
    return perf


def distinct_experts(n_experts: int, top_k: int, tokens: float) -> float:
    """Expected distinct experts a batch of ``tokens`` tokens touches in one MoE layer.

    Each token picks ``top_k`` of ``n_experts`` (uniform routing): an expert is missed by one token
    with probability ``1 - k/E``, by all of them with ``(1 - k/E)^tokens``, so the expectation is
    ``E x (1 - (1 - k/E)^tokens)``: ``k`` at one token, tending to ``E`` for large batches.
    """
    if n_experts <= 0 or top_k <= 0 or tokens <= 0:
        return 0.0
    if top_k >= n_experts:
        return float(n_experts)
    return n_experts * -math.expm1(tokens * math.log1p(-top_k / n_experts))


def sliding_pairs(n: float, window: int) -> float:
    """Sum over query positions 1..n of min(position, window): attention pairs of a sliding layer."""
    if n <= window:
        return n * (n + 1) / 2
    return window * (window + 1) / 2 + (n - window) * window
