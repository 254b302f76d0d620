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
* RMSNorm weights (two per layer and a final one; the attention's q/k norms where the architecture has them:
  Qwen3, Gemma 3/4 and GLM per head, MiniMax-M2 per layer).

Multi-token-prediction (MTP / nextn) layers and vision or audio towers are left out. ``active`` is
everything but the routed experts plus the experts a token is routed to (top-k of each MoE layer).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .layers import Layer, first_key, routed_experts
from .reader import ConfigReader


@dataclass(frozen=True, slots=True)
class ParamCounts:
    """Parameters (plain counts): the whole text model, per token, and inside the routed experts;
    ``modules`` the inventory they add up from (``Module``)."""

    total: int
    active: int
    experts: int
    n_shared_experts: int
    modules: tuple[Module, ...] = ()


@dataclass(frozen=True, slots=True)
class Module:
    """One tensor group of the checkpoint: its module path (``layers.3.self_attn.q_proj``, without the
    checkpoint's prefix; ``embed_tokens``, ``lm_head``, ``norm``), its module class
    (``planner.engine.weight_parts.PARTS``), its parameters, whether it is a linear layer's weight (what
    quantisation libraries quantise; biases, norms, convolutions, gates' scalars are not) and its
    decoder layer (``None``: outside the layers)."""

    name: str
    part: str
    params: int
    linear: bool = True
    layer: int | None = None


def gqa_modules(r: ConfigReader, model_type: str, layer: Layer, hidden: int, heads: int) -> list[tuple]:
    """One softmax-attention layer's projections (q, k, v, o; gates and biases as configured), as
    ``(leaf, params, linear)``."""
    group = layer.group
    if group is None:
        return []
    q = heads * group.head_dim
    kv = group.kv_heads * group.head_dim
    gate = 2 if r.flag("attn_output_gate") else 1
    kv_mats = 1 if model_type == "gemma4_text" and group.kind == "full" and r.flag("attention_k_eq_v") else 2
    out: list[tuple] = [("q_proj", hidden * q * gate, True), ("k_proj", hidden * kv, True)]
    if kv_mats == 2:
        out.append(("v_proj", hidden * kv, True))
    out.append(("o_proj", q * hidden, True))
    norm = qk_norm(r, model_type)
    if norm == "per_head":  # one RMSNorm weight of head_dim for the queries and one for the keys
        out += [("q_norm", group.head_dim, False), ("k_norm", group.head_dim, False)]
    elif norm == "per_layer":  # over all query heads and all key heads together (MiniMax-M2)
        out += [("q_norm", q, False), ("k_norm", kv, False)]
    if r.flag("attention_bias"):
        out.append(("q_proj.bias", q, False))
        out.append(("k_proj.bias", kv_mats * kv, False))
        if model_type == "gpt_oss":
            out.append(("o_proj.bias", hidden, False))
    if model_type == "gpt_oss":
        out.append(("sinks", heads, False))  # attention sinks
    return out


def qk_norm(r: ConfigReader, model_type: str) -> str | None:
    """RMSNorm on queries and keys before RoPE: ``"per_head"`` (Qwen3's ``q_norm`` / ``k_norm`` of head_dim,
    Gemma 3/4's, GLM's with ``use_qk_norm``), ``"per_layer"`` (MiniMax-M2's ``qk_norm_type``), or ``None``."""
    kind = r.string("qk_norm_type")
    if kind in ("per_head", "per_layer"):
        return kind
    if model_type.startswith(("qwen3", "gemma3", "gemma4")) or r.flag("use_qk_norm"):
        return "per_head"
    return None


def mla_modules(r: ConfigReader, model_type: str, hidden: int, heads: int) -> list[tuple]:
    """One MLA layer: q (low-rank through ``q_lora_rank`` when set), kv_a, kv_b, o (+ Kimi's output gate)."""
    rank = r.integer("kv_lora_rank")
    rope = r.integer("qk_rope_head_dim")
    nope = r.integer("qk_nope_head_dim", minimum=0)
    v_dim = r.integer("v_head_dim")
    q_rank = r.optional_integer("q_lora_rank")
    qk = heads * (nope + rope)
    out: list[tuple] = []
    if q_rank:
        out += [("q_a_proj", hidden * q_rank, True), ("q_a_layernorm", q_rank, False), ("q_b_proj", q_rank * qk, True)]
    else:
        out.append(("q_proj", hidden * qk, True))
    out += [
        ("kv_a_proj_with_mqa", hidden * (rank + rope), True),
        ("kv_a_layernorm", rank, False),
        ("kv_b_proj", rank * heads * (nope + v_dim), True),
        ("o_proj", heads * v_dim * hidden, True),
    ]
    if model_type == "kimi_linear" and r.flag("mla_use_output_gate"):
        out.append(("g_proj", hidden * heads * v_dim, True))
    return out


def kda_modules(r: ConfigReader, layer: Layer, hidden: int) -> list[tuple]:
    """One KDA layer: q/k/v with short convolutions, the decay gate (full rank with
    ``use_full_rank_gate``, else through ``head_dim``), beta, the low-rank output gate, o."""
    group = layer.group
    if group is None:
        return []
    heads, dim, kernel = group.value_heads, group.value_dim, group.conv_kernel
    proj = heads * dim
    lac = r.mapping("linear_attn_config") or {}
    full_rank_gate = lac.get("use_full_rank_gate") is True
    out: list[tuple] = [(f"{x}_proj", hidden * proj, True) for x in "qkv"]
    out += [(f"{x}_conv1d", proj * kernel, False) for x in "qkv"]
    out += (
        [("f_proj", hidden * proj, True)]
        if full_rank_gate
        else [("f_a_proj", hidden * dim, True), ("f_b_proj", dim * proj, True)]
    )
    out += [
        ("b_proj", hidden * heads, True),
        ("g_a_proj", hidden * dim, True),
        ("g_b_proj", dim * proj, True),
        ("A_log", heads, False),
        ("dt_bias", proj, False),
        ("o_norm", dim, False),
        ("o_proj", proj * hidden, True),
    ]
    return out


def gdn_modules(model_type: str, layer: Layer, hidden: int) -> list[tuple]:
    """One gated DeltaNet layer: the input projections (Qwen3-Next's fused ``in_proj_qkvz`` / ``in_proj_ba``,
    Qwen3.5's ``in_proj_qkv`` / ``z`` / ``b`` / ``a``), convolution, dt_bias, A_log, norm, out_proj."""
    group = layer.group
    if group is None:
        return []
    k = group.key_heads * group.key_dim
    v = group.value_heads * group.value_dim
    heads = group.value_heads
    if model_type.startswith("qwen3_5"):
        inputs = [
            ("in_proj_qkv", hidden * (2 * k + v), True),
            ("in_proj_z", hidden * v, True),
            ("in_proj_b", hidden * heads, True),
            ("in_proj_a", hidden * heads, True),
        ]
    else:
        inputs = [("in_proj_qkvz", hidden * (2 * k + 2 * v), True), ("in_proj_ba", hidden * 2 * heads, True)]
    return [
        *inputs,
        ("conv1d", (2 * k + v) * group.conv_kernel, False),
        ("dt_bias", heads, False),
        ("A_log", heads, False),
        ("norm", group.value_dim, False),
        ("out_proj", v * hidden, True),
    ]


def mamba2_modules(r: ConfigReader, layer: Layer, hidden: int) -> list[tuple]:
    """One Mamba2 layer: in_proj (x, z, B, C, dt), convolution (+ bias), A_log, D, dt_bias, norm, out_proj."""
    group = layer.group
    if group is None:
        return []
    inner = group.value_heads * group.value_dim
    bc = 2 * group.key_heads * group.key_dim
    conv = (inner + bc) * group.conv_kernel + ((inner + bc) if r.flag("use_conv_bias", True) else 0)
    return [
        ("in_proj", hidden * (2 * inner + bc + group.value_heads), True),
        ("conv1d", conv, False),
        ("A_log", 3 * group.value_heads, False),  # with D and dt_bias
        ("norm", inner, False),
        ("out_proj", inner * hidden, True),
    ]


#: Where each family keeps a layer's modules, HF transformers' module names per model type: the
#: attention and linear-mixer paths, the MLP path, the routed experts' container and leaves, the shared
#: experts' path, the router's module and the norms.
STANDARD: dict[str, Any] = {
    "attention": "self_attn",
    "linear": "linear_attn",
    "mlp": "mlp",
    "experts": "mlp.experts",
    "leaves": ("gate_proj", "up_proj", "down_proj"),
    "shared": "mlp.shared_experts",
    "router": "mlp.gate",
    "norms": ("input_layernorm", "post_attention_layernorm"),
}
FAMILY_NAMES: dict[str, dict[str, Any]] = {
    "nemotron_h": {
        "attention": "mixer",
        "linear": "mixer",
        "mlp": "mixer",
        "experts": "mixer.experts",
        "leaves": ("up_proj", "down_proj"),
        "shared": "mixer.shared_experts",
        "router": "mixer.gate",
        "norms": ("norm",),
    },
    "mixtral": {
        "mlp": "block_sparse_moe",
        "experts": "block_sparse_moe.experts",
        "leaves": ("w1", "w3", "w2"),
        "router": "block_sparse_moe.gate",
    },
    "gpt_oss": {"leaves": ("gate_up_proj", "down_proj"), "router": "mlp.router"},
    # Gemma 4: the experts and their router beside the dense MLP, not inside it.
    "gemma4_text": {"experts": "experts", "router": "router.proj"},
    # Kimi K3 (kimi_linear): its published checkpoint stores exactly the routed experts in MXFP4 (2,722,740,830,208
    # weights) and the experts' latent projections with the rest in bf16 (the safetensors' dtype totals,
    # tests/fixtures/checkpoint_sizes.json): the latent projections are not among the modules its quantisation
    # converts.
    "kimi_linear": {"linear": "self_attn", "latent_quantised": False},
}
FAMILY_NAMES["minimax_m2"] = FAMILY_NAMES["mixtral"]


def family_names(model_type: str) -> dict[str, Any]:
    """One decoder layer's module paths by model type (``STANDARD`` with the family's differences)."""
    names = {**STANDARD, **FAMILY_NAMES.get(model_type, {})}
    if model_type.startswith(("qwen3", "qwen2")):
        names["shared"] = "mlp.shared_expert"
    return names


def count_params(r: ConfigReader, model_type: str, layers: Sequence[Layer], notes: list[str]) -> ParamCounts:
    """Total, active and routed-expert parameters of the text model (the module docstring's convention),
    from the module inventory they add up from."""
    hidden = r.integer("hidden_size")
    vocab = r.integer("vocab_size")
    heads = r.integer("num_attention_heads") if any(layer.mixer in ("gqa", "mla") for layer in layers) else 0
    tied = r.flag("tie_word_embeddings", False)
    if not r.has("tie_word_embeddings"):
        notes.append("tie_word_embeddings is not given: lm_head counted apart from the embedding.")
    gated = model_type != "nemotron_h"  # Nemotron-H: ReLU² MLPs, up and down only
    mats = 3 if gated else 2
    names = family_names(model_type)
    attention, linear_path, mlp, leaves = names["attention"], names["linear"], names["mlp"], names["leaves"]
    shared_path, router_path, norm_names, experts_path = (
        names["shared"],
        names["router"],
        names["norms"],
        names["experts"],
    )
    dense_leaves = ("gate_proj", "up_proj", "down_proj") if gated else ("up_proj", "down_proj")

    experts, top_k = routed_experts(r)
    expert_width = r.integer("moe_intermediate_size") if r.has("moe_intermediate_size") else 0
    if experts and not expert_width:
        expert_width = r.integer("intermediate_size")  # Mixtral, gpt-oss, MiniMax-M2: the experts' width
    latent_key = first_key(r, ("routed_expert_hidden_size", "moe_latent_size"))
    latent = r.integer(latent_key) if latent_key else hidden
    per_expert = mats * latent * expert_width
    expert_bias = 2 * expert_width + hidden if model_type == "gpt_oss" else 0  # gate_up and down biases
    shared_width, n_shared = shared_experts(r, model_type, expert_width)
    has_router_bias = router_bias(r, model_type)
    if latent != hidden:
        notes.append(f"Routed experts work in a {latent}-wide latent space ({latent_key}), with its two projections.")
    dense_width = r.integer("intermediate_size") if any("dense" in layer.ffn for layer in layers) else 0

    modules: list[Module] = [Module("embed_tokens", "embedding", vocab * hidden, linear=False)]
    if not tied:
        modules.append(Module("lm_head", "lm_head", vocab * hidden, linear=False))
    modules.append(Module("norm", "norms", hidden, linear=False))
    expert_active = 0
    for i, layer in enumerate(layers):
        at = f"layers.{i}"

        def add(path: str, part: str, items: Sequence[tuple], at: str = at, i: int = i) -> None:
            for leaf, params, linear in items:
                modules.append(Module(f"{at}.{path}.{leaf}", part, params, linear and part != "norms", i))

        for norm in norm_names:
            modules.append(Module(f"{at}.{norm}", "norms", hidden, False, i))
        if layer.mixer == "gqa":
            add(attention, "attention", gqa_modules(r, model_type, layer, hidden, heads))
        elif layer.mixer == "mla":
            add(attention, "attention", mla_modules(r, model_type, hidden, heads))
        elif layer.mixer == "kda":
            add(linear_path, "linear_attention", kda_modules(r, layer, hidden))
        elif layer.mixer == "gdn":
            add(linear_path, "linear_attention", gdn_modules(model_type, layer, hidden))
        elif layer.mixer == "mamba2":
            add(linear_path, "linear_attention", mamba2_modules(r, layer, hidden))
        if "dense" in layer.ffn:
            add(mlp, "dense_mlp", [(leaf, hidden * dense_width, True) for leaf in dense_leaves])
        if "moe" in layer.ffn:
            add(router_path.rsplit(".", 1)[0], "router", [(router_path.rsplit(".", 1)[1], hidden * experts, False)])
            if has_router_bias:
                add(router_path, "router", [("bias", experts, False)])
            if shared_width:
                add(shared_path, "shared_experts", [(leaf, hidden * shared_width, True) for leaf in dense_leaves])
            if r.has("shared_expert_intermediate_size"):
                add(mlp, "router", [("shared_expert_gate", hidden, False)])
            if latent != hidden:
                quantised = names.get("latent_quantised", True)
                latent_items = [
                    ("fc1_latent_proj", hidden * latent, quantised),
                    ("fc2_latent_proj", latent * hidden, quantised),
                ]
                if r.flag("latent_moe_use_norm"):
                    latent_items.append(("latent_norm", latent, False))
                add(mlp, "latent_projections", latent_items)
            # Each leaf one latent x width matrix per expert; gpt-oss's fused gate_up two.
            widths = {leaf: (2 if leaf == "gate_up_proj" else 1) * latent * expert_width for leaf in leaves}
            add(f"{experts_path}.0", "routed_experts", [(leaf, experts * n, True) for leaf, n in widths.items()])
            if expert_bias:
                add(experts_path, "routed_experts", [("biases", experts * expert_bias, False)])
            expert_active += top_k * (per_expert + expert_bias)
    mtp = r.integer("num_nextn_predict_layers", default=0, minimum=0) or r.integer(
        "mtp_num_hidden_layers", default=0, minimum=0
    )
    if mtp:
        notes.append(f"{mtp} multi-token-prediction layer(s) not counted (not used by plain decoding).")
    if isinstance(r.outer.get("vision_config"), dict) or isinstance(r.outer.get("audio_config"), dict):
        notes.append("Vision/audio towers not counted: the figures are the text model's.")
    total = sum(m.params for m in modules)
    expert_total = sum(m.params for m in modules if m.part == "routed_experts")
    return ParamCounts(
        total=total,
        active=total - expert_total + expert_active,
        experts=expert_total,
        n_shared_experts=n_shared,
        modules=tuple(modules),
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
