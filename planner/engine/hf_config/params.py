"""Parameter counts from a config's dimensions: total, active per token, and in the routed experts.

Counted per decoder layer, one convention throughout (the catalogue's, fleet/catalog/README.md):

* the input embedding (``vocab_size x hidden_size``) and an untied ``lm_head`` (the same again);
* the token mixer's projections, by kind: softmax attention q/k/v/o (a doubled q for gated
  attention, ``attn_output_gate``; no v for Gemma 4's ``attention_k_eq_v`` full layers; biases when
  ``attention_bias``), MLA's q (through ``q_lora_rank`` when set), ``kv_a``/``kv_b`` and o, KDA's
  q/k/v, gates, beta and o with their short convolutions, gated DeltaNet's ``in_proj_qkvz``/``ba``,
  convolution and ``out_proj``, Mamba2's ``in_proj``, convolution, ``A``/``D``/``dt`` and ``out_proj``;
* the feed-forward block: a dense MLP (gated, 3 matrices; Nemotron-H's ReLU² MLP has 2), or a
  router, routed experts of ``moe_intermediate_size`` (in a latent width when the config has
  ``routed_expert_hidden_size`` or ``moe_latent_size``, with the two latent projections) and shared
  experts;
* RMSNorm weights (two per layer and a final one).

Multi-token-prediction (MTP / nextn) layers and vision or audio towers are left out. ``active`` is
everything but the routed experts plus the experts a token is routed to (top-k of each MoE layer).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .layers import Layer, first_key, routed_experts
from .reader import ConfigReader


@dataclass(frozen=True, slots=True)
class ParamCounts:
    """Parameters (plain counts): the whole text model, per token, and inside the routed experts."""

    total: int
    active: int
    experts: int
    n_shared_experts: int


def gqa_params(r: ConfigReader, model_type: str, layer: Layer, hidden: int, heads: int) -> int:
    """One softmax-attention layer's projections (q, k, v, o; gates and biases as configured)."""
    group = layer.group
    if group is None:
        return 0
    q = heads * group.head_dim
    kv = group.kv_heads * group.head_dim
    gate = 2 if r.flag("attn_output_gate") else 1
    kv_mats = 1 if model_type == "gemma4_text" and group.kind == "full" and r.flag("attention_k_eq_v") else 2
    total = hidden * q * gate + kv_mats * hidden * kv + q * hidden
    if r.flag("attention_bias"):
        total += q + kv_mats * kv + (hidden if model_type == "gpt_oss" else 0)
    if model_type == "gpt_oss":
        total += heads  # attention sinks
    return total


def mla_params(r: ConfigReader, model_type: str, hidden: int, heads: int) -> int:
    """One MLA layer: q (low-rank through ``q_lora_rank`` when set), kv_a, kv_b, o (+ Kimi's output gate)."""
    rank = r.integer("kv_lora_rank")
    rope = r.integer("qk_rope_head_dim")
    nope = r.integer("qk_nope_head_dim", minimum=0)
    v_dim = r.integer("v_head_dim")
    q_rank = r.optional_integer("q_lora_rank")
    qk = heads * (nope + rope)
    q = hidden * q_rank + q_rank + q_rank * qk if q_rank else hidden * qk
    total = q + hidden * (rank + rope) + rank + rank * heads * (nope + v_dim) + heads * v_dim * hidden
    if model_type == "kimi_linear" and r.flag("mla_use_output_gate"):
        total += hidden * heads * v_dim
    return total


def kda_params(r: ConfigReader, layer: Layer, hidden: int) -> int:
    """One KDA layer: q/k/v with short convolutions, the decay gate (full rank with
    ``use_full_rank_gate``, else through ``head_dim``), beta, the low-rank output gate, o."""
    group = layer.group
    if group is None:
        return 0
    heads, dim, kernel = group.value_heads, group.value_dim, group.conv_kernel
    proj = heads * dim
    lac = r.mapping("linear_attn_config") or {}
    full_rank_gate = lac.get("use_full_rank_gate") is True
    decay_gate = hidden * proj if full_rank_gate else hidden * dim + dim * proj
    output_gate = hidden * dim + dim * proj
    # q, k, v; their convolutions; decay gate; beta; output gate; A_log, dt_bias, o_norm; o_proj
    return (
        3 * hidden * proj
        + 3 * proj * kernel
        + decay_gate
        + hidden * heads
        + output_gate
        + heads
        + proj
        + dim
        + proj * hidden
    )


def gdn_params(layer: Layer, hidden: int) -> int:
    """One gated DeltaNet layer: in_proj_qkvz, in_proj_ba, convolution, dt_bias, A_log, norm, out_proj."""
    group = layer.group
    if group is None:
        return 0
    k = group.key_heads * group.key_dim
    v = group.value_heads * group.value_dim
    conv = (2 * k + v) * group.conv_kernel
    heads = group.value_heads
    return hidden * (2 * k + 2 * v) + hidden * 2 * heads + conv + 2 * heads + group.value_dim + v * hidden


def mamba2_params(r: ConfigReader, layer: Layer, hidden: int) -> int:
    """One Mamba2 layer: in_proj (x, z, B, C, dt), convolution (+ bias), A_log, D, dt_bias, norm, out_proj."""
    group = layer.group
    if group is None:
        return 0
    inner = group.value_heads * group.value_dim
    bc = 2 * group.key_heads * group.key_dim
    conv = (inner + bc) * group.conv_kernel + ((inner + bc) if r.flag("use_conv_bias", True) else 0)
    return hidden * (2 * inner + bc + group.value_heads) + conv + 3 * group.value_heads + inner + inner * hidden


def count_params(r: ConfigReader, model_type: str, layers: Sequence[Layer], notes: list[str]) -> ParamCounts:
    """Total, active and routed-expert parameters of the text model (the module docstring's convention)."""
    hidden = r.integer("hidden_size")
    vocab = r.integer("vocab_size")
    heads = r.integer("num_attention_heads") if any(layer.mixer in ("gqa", "mla") for layer in layers) else 0
    tied = r.flag("tie_word_embeddings", False)
    if not r.has("tie_word_embeddings"):
        notes.append("tie_word_embeddings is not given: lm_head counted apart from the embedding.")
    embeddings = vocab * hidden * (1 if tied else 2)
    gated = model_type != "nemotron_h"  # Nemotron-H: ReLU² MLPs, up and down only
    mats = 3 if gated else 2

    experts, top_k = routed_experts(r)
    expert_width = r.integer("moe_intermediate_size") if r.has("moe_intermediate_size") else 0
    if experts and not expert_width:
        expert_width = r.integer("intermediate_size")  # Mixtral, gpt-oss, MiniMax-M2: the experts' width
    latent_key = first_key(r, ("routed_expert_hidden_size", "moe_latent_size"))
    latent = r.integer(latent_key) if latent_key else hidden
    per_expert = mats * latent * expert_width
    if model_type == "gpt_oss":
        per_expert += 2 * expert_width + hidden  # gate_up and down biases
    shared_width, n_shared = shared_experts(r, model_type, expert_width)
    router = hidden * experts + (experts if router_bias(r, model_type) else 0)
    moe_dense = router + mats * hidden * shared_width + (hidden if r.has("shared_expert_intermediate_size") else 0)
    if latent != hidden:
        moe_dense += 2 * hidden * latent + (latent if r.flag("latent_moe_use_norm") else 0)
        notes.append(f"Routed experts work in a {latent}-wide latent space ({latent_key}), with its two projections.")
    dense_width = r.integer("intermediate_size") if any("dense" in layer.ffn for layer in layers) else 0

    total = embeddings + hidden  # + the final norm
    expert_total = 0
    expert_active = 0
    for layer in layers:
        total += (1 if model_type == "nemotron_h" else 2) * hidden
        if layer.mixer == "gqa":
            total += gqa_params(r, model_type, layer, hidden, heads)
        elif layer.mixer == "mla":
            total += mla_params(r, model_type, hidden, heads)
        elif layer.mixer == "kda":
            total += kda_params(r, layer, hidden)
        elif layer.mixer == "gdn":
            total += gdn_params(layer, hidden)
        elif layer.mixer == "mamba2":
            total += mamba2_params(r, layer, hidden)
        if "dense" in layer.ffn:
            total += mats * hidden * dense_width
        if "moe" in layer.ffn:
            total += moe_dense
            expert_total += experts * per_expert
            expert_active += top_k * per_expert
    mtp = r.integer("num_nextn_predict_layers", default=0, minimum=0) or r.integer(
        "mtp_num_hidden_layers", default=0, minimum=0
    )
    if mtp:
        notes.append(f"{mtp} multi-token-prediction layer(s) not counted (not used by plain decoding).")
    if isinstance(r.outer.get("vision_config"), dict) or isinstance(r.outer.get("audio_config"), dict):
        notes.append("Vision/audio towers not counted: the figures are the text model's.")
    return ParamCounts(
        total=total + expert_total,
        active=total + expert_active,
        experts=expert_total,
        n_shared_experts=n_shared,
    )


def shared_experts(r: ConfigReader, model_type: str, expert_width: int) -> tuple[int, int]:
    """``(total shared-expert width, number of shared experts)`` of one MoE layer."""
    for key in ("shared_expert_intermediate_size", "moe_shared_expert_intermediate_size", "shared_intermediate_size"):
        if r.has(key):
            width = r.integer(key, minimum=0)
            count = r.integer("n_shared_experts", default=1, minimum=0) if width else 0
            return (width * max(1, count) if model_type != "nemotron_h" else width), count
    key = first_key(r, ("n_shared_experts", "num_shared_experts"))
    count = r.integer(key, minimum=0) if key else 0
    return count * expert_width, count


def router_bias(r: ConfigReader, model_type: str) -> bool:
    """The router carries a per-expert bias (gpt-oss) or score-correction bias (DeepSeek ``noaux_tc``,
    MiniMax ``use_routing_bias``, Nemotron-H)."""
    return (
        model_type in ("gpt_oss", "nemotron_h")
        or r.string("topk_method") == "noaux_tc"
        or r.flag("use_routing_bias")
        or r.flag("use_moe_router_bias")
    )
