"""A config's layers: which token mixer each layer has, and the engine's layer groups from them.

One ``Layer`` per decoder layer (multi-token-prediction layers are not decoder layers and are left
out): its mixer (``gqa``, ``mla``, ``kda``, ``gdn``, ``mamba2``; ``None`` for a Nemotron-H MLP-only
layer), the cache it keeps as a one-layer ``LayerGroup``, and its feed-forward block (``dense``,
``moe`` or ``none``). Equal one-layer groups are then counted into the model's ``layer_groups``, in
the order they first appear, with their layers' positions where the order can matter
(``count_groups``). Each mapping follows the vLLM model that serves the architecture
(``vllm/model_executor/models/*.py``, v0.33) and is spelled out in docs/sizing.md, "Importing a model
from config.json":

* softmax attention (GQA/MHA): ``full`` or ``sliding`` with ``kv_heads`` = ``num_key_value_heads``
  (``num_attention_heads`` when absent: MHA), ``head_dim`` (else ``hidden_size / heads``); sliding per
  layer from ``layer_types``, a ``sliding_window_pattern``, or Qwen2's ``use_sliding_window`` +
  ``max_window_layers``, with ``window`` = ``sliding_window``;
* MLA (DeepSeek-V2/V3, Kimi K2): ``mla`` with ``kv_lora_rank`` and ``qk_rope_head_dim``;
* KDA (Kimi Linear, Kimi K3): ``linear`` with key = value heads = ``linear_attn_config.num_heads``,
  both dims ``head_dim``, ``conv_kernel`` = ``short_conv_kernel_size`` (vLLM ``kda_state_shape``), and
  ``mla`` for the ``full_attn_layers``;
* gated DeltaNet (Qwen3-Next, Qwen3.5): ``linear`` with ``linear_num_key_heads``/``_value_heads``,
  ``linear_key_head_dim``/``_value_head_dim``, ``linear_conv_kernel_dim`` (vLLM
  ``gated_delta_net_state_shape``), and gated ``full`` attention layers;
* Mamba2 (Nemotron-H): ``linear`` with ``value_heads`` = ``mamba_num_heads``, ``value_dim`` =
  ``mamba_head_dim``, ``key_heads`` = ``n_groups``, ``key_dim`` = ``ssm_state_size``: the engine's
  recurrent state ``value_heads x value_dim x key_dim`` is then vLLM's temporal state
  ``(nheads, head_dim, d_state)`` and its convolution channels ``2 x key_heads x key_dim + value_heads
  x value_dim`` are vLLM's ``intermediate + 2 x n_groups x d_state`` (``mamba2_state_shape``), exactly.

Linear groups name their ``variant`` (``kda``, ``gated_deltanet``, ``mamba2``) and carry a
``state_dtype`` only where the config states one (``mamba_ssm_cache_dtype``, ``mamba_ssm_dtype``):
otherwise the serving-engine profile (``planner.engine.profiles``) decides the dtypes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..limits import MAX_EXPERTS
from ..spec import LayerGroup
from .reader import MAX_LAYERS, ConfigReader

#: Config dtype names -> the engine's cache dtypes (for a state dtype the config states).
STATE_DTYPES: dict[str, str] = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


@dataclass(frozen=True, slots=True)
class Layer:
    """One decoder layer: its mixer, the cache it keeps (a one-layer group or ``None``), its FFN."""

    mixer: str | None
    group: LayerGroup | None
    ffn: str


def count_groups(layers: Sequence[Layer]) -> tuple[LayerGroup, ...]:
    """Equal one-layer groups counted together, in the order they first appear.

    Where the order of the layers can matter (more than one group, or layers without a cache), each
    group also carries its layers' positions in the decoder stack (``layers``, 0-based) and the stack's
    length (``decoder_layers``): serving engines split the stack between pipeline stages by position."""
    positions: dict[LayerGroup, list[int]] = {}
    for i, layer in enumerate(layers):
        if layer.group is not None:
            positions.setdefault(layer.group, []).append(i)
    ordered = len(positions) > 1 or any(layer.group is None for layer in layers)
    return tuple(
        replace(group, count=len(where), layers=tuple(where), decoder_layers=len(layers))
        if ordered
        else replace(group, count=len(where))
        for group, where in positions.items()
    )


def layer_count(r: ConfigReader) -> int:
    """``num_hidden_layers`` (at most ``MAX_LAYERS``)."""
    return r.integer("num_hidden_layers", maximum=MAX_LAYERS)


def attention_geometry(r: ConfigReader, notes: list[str], *, head_dim_key: str = "head_dim") -> tuple[int, int, int]:
    """``(query heads, kv heads, head dim)`` of softmax attention, as vLLM reads them.

    ``num_key_value_heads`` absent means multi-head attention (vLLM ``get_total_num_kv_heads`` falls
    back to the query heads); ``head_dim`` absent means ``hidden_size / num_attention_heads``
    (``llama.py``, ``qwen3.py``), which must then divide evenly.
    """
    heads = r.integer("num_attention_heads")
    kv_heads = r.optional_integer("num_key_value_heads")
    if kv_heads is None and heads:
        kv_heads = heads
        notes.append(f"num_key_value_heads is not given: multi-head attention, {heads} KV heads (as vLLM reads it).")
    head_dim = r.optional_integer(head_dim_key)
    if head_dim is None:
        hidden = r.integer("hidden_size")
        if heads and hidden:
            if hidden % heads:
                r.error(head_dim_key, f"Required: hidden_size {hidden} does not divide by {heads} heads.")
            else:
                head_dim = hidden // heads
                notes.append(f"head_dim is not given: hidden_size / num_attention_heads = {head_dim}.")
    return heads, kv_heads or 0, head_dim or 0


def sliding_flags(r: ConfigReader, n: int, notes: list[str]) -> list[bool]:
    """Which of ``n`` softmax-attention layers use a sliding window (the rules in the module docstring)."""
    window = r.raw("sliding_window")
    has_window = isinstance(window, int) and not isinstance(window, bool) and window > 0
    layer_types = r.sequence("layer_types")
    if layer_types is not None:
        if len(layer_types) != n:
            r.error("layer_types", f"Lists {len(layer_types)} layers; num_hidden_layers is {n}.")
            return [False] * n
        unknown = sorted({str(t) for t in layer_types} - {"full_attention", "sliding_attention"})
        if unknown:
            r.error("layer_types", f"Unsupported layer types {', '.join(unknown)} (full_attention, sliding_attention).")
            return [False] * n
        flags = [t == "sliding_attention" for t in layer_types]
        if any(flags):
            notes.append(f"Sliding-window layers from layer_types: {sum(flags)} of {n}.")
        return flags
    pattern = r.optional_integer("sliding_window_pattern")
    if pattern is not None:
        # Gemma 3: every pattern-th layer (1-based) is global, the others slide.
        flags = [bool((i + 1) % pattern) for i in range(n)]
        notes.append(f"Sliding-window layers from sliding_window_pattern {pattern}: {sum(flags)} of {n}.")
        return flags
    if r.has("use_sliding_window"):
        if r.flag("use_sliding_window") and has_window:
            first = r.integer("max_window_layers", default=n, minimum=0)
            flags = [i >= first for i in range(n)]
            notes.append(f"use_sliding_window: layers from max_window_layers {first} on slide ({sum(flags)} of {n}).")
            return flags
        if has_window:
            notes.append(f"use_sliding_window is false: sliding_window {window} is not used, every layer is full.")
        return [False] * n
    if has_window:
        notes.append(f"sliding_window {window} with no per-layer pattern: every layer slides (vLLM applies it to all).")
        return [True] * n
    return [False] * n


def softmax_group(r: ConfigReader, kv_heads: int, head_dim: int, sliding: bool) -> LayerGroup | None:
    """A ``full`` or ``sliding`` one-layer group (``None`` while a dimension is in error)."""
    if not (kv_heads and head_dim):
        return None
    if sliding:
        window = r.integer("sliding_window")
        if not window:
            return None
        return LayerGroup(kind="sliding", count=1, kv_heads=kv_heads, head_dim=head_dim, window=window)
    return LayerGroup(kind="full", count=1, kv_heads=kv_heads, head_dim=head_dim)


def mla_group(r: ConfigReader) -> LayerGroup | None:
    """An ``mla`` one-layer group: one latent of ``kv_lora_rank + qk_rope_head_dim`` per token."""
    rank = r.integer("kv_lora_rank")
    rope = r.integer("qk_rope_head_dim")
    return LayerGroup(kind="mla", count=1, kv_lora_rank=rank, qk_rope_head_dim=rope) if rank and rope else None


def stated_state_dtype(r: ConfigReader, key: str, notes: list[str]) -> dict[str, str]:
    """``{"state_dtype": ...}`` when the config states the recurrent state's dtype under ``key``."""
    value = r.raw(key)
    if value is None:
        return {}
    if not isinstance(value, str) or value not in STATE_DTYPES:
        r.error(key, f"Unknown dtype {value!r}; use one of {', '.join(STATE_DTYPES)}.")
        return {}
    notes.append(f"Recurrent state in {STATE_DTYPES[value]}: the config's {key} is {value}.")
    return {"state_dtype": STATE_DTYPES[value]}


#: Keys naming the routed experts, the experts per token, across the families (first found wins).
EXPERT_KEYS: tuple[str, ...] = ("n_routed_experts", "num_experts", "num_local_experts")
TOP_K_KEYS: tuple[str, ...] = ("num_experts_per_tok", "num_experts_per_token", "experts_per_token", "top_k_experts")


def first_key(r: ConfigReader, keys: Sequence[str]) -> str | None:
    """The first of ``keys`` the config sets (not ``null``)."""
    return next((key for key in keys if r.has(key)), None)


def routed_experts(r: ConfigReader) -> tuple[int, int]:
    """``(routed experts, experts per token)``; ``(0, 0)`` for a dense model."""
    key = first_key(r, EXPERT_KEYS)
    experts = r.integer(key, minimum=0, maximum=MAX_EXPERTS) if key else 0
    if not experts:
        return 0, 0
    top_key = first_key(r, TOP_K_KEYS) or TOP_K_KEYS[0]
    top_k = r.integer(top_key, maximum=experts)
    return experts, top_k


def moe_flags(r: ConfigReader, n: int) -> list[bool]:
    """Which of ``n`` layers carry routed experts (the rest a dense MLP).

    DeepSeek/Kimi: ``first_k_dense_replace`` dense layers, then every ``moe_layer_freq``-th (an int)
    or the layers a ``moe_layer_freq`` list marks 1; Qwen MoE: every ``decoder_sparse_step``-th layer
    not in ``mlp_only_layers``. Each is how the serving model builds its layers (vLLM
    ``deepseek_v2.py``, ``qwen3_moe.py``).
    """
    if not routed_experts(r)[0]:
        return [False] * n
    flags = [True] * n
    first_dense = r.integer("first_k_dense_replace", default=0, minimum=0, maximum=n)
    for i in range(min(first_dense, n)):
        flags[i] = False
    freq = r.raw("moe_layer_freq")
    if isinstance(freq, list):
        if len(freq) != n or any(v not in (0, 1) for v in freq):
            r.error("moe_layer_freq", f"A list must give 0 or 1 for each of the {n} layers.")
        else:
            flags = [f and bool(v) for f, v in zip(flags, freq, strict=True)]
    elif freq is not None:
        every = r.integer("moe_layer_freq", maximum=MAX_LAYERS)
        if every:
            flags = [f and i % every == 0 for i, f in enumerate(flags)]
    step = r.integer("decoder_sparse_step", default=1, maximum=MAX_LAYERS)
    if step > 1:
        flags = [f and (i + 1) % step == 0 for i, f in enumerate(flags)]
    dense_only = r.sequence("mlp_only_layers") or []
    for i in dense_only:
        if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n:
            flags[i] = False
        else:
            r.error("mlp_only_layers", f"Lists layer indices from 0 to {n - 1}.")
            break
    return flags


def ffn_kinds(r: ConfigReader, n: int) -> list[str]:
    """``moe`` or ``dense`` per layer (``moe_flags``)."""
    return ["moe" if moe else "dense" for moe in moe_flags(r, n)]


def gqa_layers(r: ConfigReader, model_type: str, notes: list[str]) -> list[Layer]:
    """Softmax-attention decoders (Llama, Qwen2/3 and their MoE and VL text models, Mixtral, MiniMax-M2,
    MiMo, gpt-oss, Gemma 3/4): ``full`` and ``sliding`` groups."""
    n = layer_count(r)
    _heads, kv_heads, head_dim = attention_geometry(r, notes)
    sliding = sliding_flags(r, n, notes)
    full_kv, full_dim = kv_heads, head_dim
    ffn = ffn_kinds(r, n)
    if model_type == "gemma4_text":
        # transformers' Gemma4TextConfig: full layers use global_head_dim (default 512) and, with
        # attention_k_eq_v, num_global_key_value_heads; vLLM gemma4.py reads them per layer.
        full_dim = r.integer("global_head_dim", default=512)
        if r.flag("attention_k_eq_v") and r.has("num_global_key_value_heads"):
            full_kv = r.integer("num_global_key_value_heads")
        notes.append(f"Gemma 4 full-attention layers: {full_kv} KV heads x head_dim {full_dim}.")
        if r.flag("enable_moe_block"):
            ffn = ["dense+moe"] * n
    window_group = softmax_group(r, kv_heads, head_dim, True) if any(sliding) else None
    full_group = softmax_group(r, full_kv, full_dim, False) if not all(sliding) else None
    return [Layer("gqa", window_group if sliding[i] else full_group, ffn[i]) for i in range(n)]


def mla_layers(r: ConfigReader, notes: list[str]) -> list[Layer]:
    """DeepSeek-V2/V3 and Kimi K2: every layer MLA (vLLM ``MLAAttention``: one latent head per token)."""
    n = layer_count(r)
    r.integer("num_attention_heads")
    group = mla_group(r)
    return [Layer("mla", group, kind) for kind in ffn_kinds(r, n)]


def kda_layers(r: ConfigReader, notes: list[str]) -> list[Layer]:
    """Kimi Linear / Kimi K3: KDA layers (``linear_attn_config.kda_layers``, 1-based) and MLA layers
    (``full_attn_layers``)."""
    n = layer_count(r)
    r.integer("num_attention_heads")
    ffn = ffn_kinds(r, n)
    lac = r.mapping("linear_attn_config")
    if lac is None:
        notes.append("No linear_attn_config: every layer is MLA.")
        return [Layer("mla", mla_group(r), kind) for kind in ffn]
    sub = ConfigReader(lac, "linear_attn_config")
    sub_errors_prefix = r.path("linear_attn_config")
    heads = sub.integer("num_heads")
    head_dim = sub.integer("head_dim")
    kernel = sub.integer("short_conv_kernel_size")
    kda = sub.sequence("kda_layers")
    full = sub.sequence("full_attn_layers")
    for key, messages in sub.errors.items():
        r.errors.setdefault(key.replace("config", sub_errors_prefix, 1), []).extend(messages)
    if kda is None:
        r.error("linear_attn_config.kda_layers", "Required for a Kimi Linear config.")
        return []
    numbers = {v for v in kda if isinstance(v, int) and not isinstance(v, bool)}
    if len(numbers) != len(kda) or not numbers <= set(range(1, n + 1)):
        r.error("linear_attn_config.kda_layers", f"Lists 1-based layer numbers from 1 to {n}.")
        return []
    if full is not None and set(full) | numbers != set(range(1, n + 1)):
        r.error("linear_attn_config.full_attn_layers", "With kda_layers, must cover every layer 1 to n once.")
    linear = None
    if heads and head_dim and kernel:
        linear = LayerGroup(
            kind="linear",
            count=1,
            key_heads=heads,
            value_heads=heads,
            key_dim=head_dim,
            value_dim=head_dim,
            conv_kernel=kernel,
            variant="kda",
        )
    mla = mla_group(r)
    notes.append(
        f"KDA layers (linear_attn_config): key and value {heads} heads x {head_dim}, short convolution "
        f"kernel {kernel}; the other {n - len(numbers)} layers are MLA."
    )
    return [Layer("kda", linear, ffn[i]) if (i + 1) in numbers else Layer("mla", mla, ffn[i]) for i in range(n)]


def gdn_layers(r: ConfigReader, notes: list[str]) -> list[Layer]:
    """Qwen3-Next / Qwen3.5: gated DeltaNet layers and gated softmax attention, from ``layer_types``
    or every ``full_attention_interval``-th layer (1-based) full."""
    n = layer_count(r)
    _heads, kv_heads, head_dim = attention_geometry(r, notes)
    ffn = ffn_kinds(r, n)
    layer_types = r.sequence("layer_types")
    if layer_types is not None:
        if len(layer_types) != n or not set(map(str, layer_types)) <= {"linear_attention", "full_attention"}:
            r.error("layer_types", f"Must list linear_attention or full_attention for each of the {n} layers.")
            return []
        linear_flags = [t == "linear_attention" for t in layer_types]
    else:
        interval = r.integer("full_attention_interval")
        linear_flags = [bool((i + 1) % interval) for i in range(n)] if interval else [False] * n
    k_heads = r.integer("linear_num_key_heads")
    v_heads = r.integer("linear_num_value_heads")
    k_dim = r.integer("linear_key_head_dim")
    v_dim = r.integer("linear_value_head_dim")
    kernel = r.integer("linear_conv_kernel_dim")
    dtypes = stated_state_dtype(r, "mamba_ssm_dtype", notes)
    linear = None
    if k_heads and v_heads and k_dim and v_dim and kernel:
        linear = LayerGroup(
            kind="linear",
            count=1,
            key_heads=k_heads,
            value_heads=v_heads,
            key_dim=k_dim,
            value_dim=v_dim,
            conv_kernel=kernel,
            variant="gated_deltanet",
            **dtypes,
        )
    full = softmax_group(r, kv_heads, head_dim, False)
    notes.append(
        f"Gated DeltaNet layers: {sum(linear_flags)} of {n} ({k_heads} key heads x {k_dim}, {v_heads} value "
        f"heads x {v_dim}, convolution kernel {kernel}); the others full attention."
    )
    return [Layer("gdn", linear, ffn[i]) if linear_flags[i] else Layer("gqa", full, ffn[i]) for i in range(n)]


#: Nemotron-H layer codes: hybrid_override_pattern characters and layers_block_type names.
NEMOTRON_CODES: dict[str, str] = {
    "M": "M",
    "*": "*",
    "-": "-",
    "E": "E",
    "mamba": "M",
    "linear_attention": "M",
    "attention": "*",
    "full_attention": "*",
    "mlp": "-",
    "moe": "E",
}


def nemotron_pattern(r: ConfigReader) -> str:
    """The layer codes (``M`` Mamba2, ``*`` attention, ``-`` MLP, ``E`` MoE) of a Nemotron-H config."""
    pattern = r.raw("hybrid_override_pattern")
    key = "hybrid_override_pattern"
    if pattern is None:
        key = "layers_block_type"
        pattern = r.sequence(key)
    if pattern is None:
        r.error("hybrid_override_pattern", "Required for a nemotron_h config (or layers_block_type).")
        return ""
    if not isinstance(pattern, str | list) or len(pattern) > MAX_LAYERS or not pattern:
        r.error(key, f"Must be a non-empty string or list of at most {MAX_LAYERS:,} layers.")
        return ""
    codes = [NEMOTRON_CODES.get(c) if isinstance(c, str) else None for c in pattern]
    if None in codes:
        r.error(key, "Uses a layer code other than M, *, -, E (mamba, attention, mlp, moe).")
        return ""
    return "".join(c for c in codes if c)


def mamba2_layers(r: ConfigReader, notes: list[str]) -> list[Layer]:
    """Nemotron-H / Nemotron 3: Mamba2 layers as ``linear`` groups, attention layers as ``full``."""
    pattern = nemotron_pattern(r)
    heads = r.integer("mamba_num_heads")
    head_dim = r.integer("mamba_head_dim")
    groups = r.integer("n_groups")
    state = r.integer("ssm_state_size")
    kernel = r.integer("conv_kernel")
    dtypes = stated_state_dtype(r, "mamba_ssm_cache_dtype", notes)
    linear = None
    if heads and head_dim and groups and state and kernel:
        linear = LayerGroup(
            kind="linear",
            count=1,
            key_heads=groups,
            value_heads=heads,
            key_dim=state,
            value_dim=head_dim,
            conv_kernel=kernel,
            variant="mamba2",
            family="nemotron_h",  # vLLM's NemotronH config class picks its SSM state dtype (profiles/vllm.py)
            **dtypes,
        )
    full = None
    if "*" in pattern:
        key = "head_dim" if r.has("head_dim") else ("attention_head_dim" if r.has("attention_head_dim") else "head_dim")
        _q, kv_heads, attn_dim = attention_geometry(r, notes, head_dim_key=key)
        full = softmax_group(r, kv_heads, attn_dim, False)
    notes.append(
        f"Mamba2 layers as linear groups: value_heads = mamba_num_heads {heads}, value_dim = mamba_head_dim "
        f"{head_dim}, key_heads = n_groups {groups}, key_dim = ssm_state_size {state}, conv_kernel {kernel} "
        "(state = heads x head_dim x d_state; conv channels = heads x head_dim + 2 x n_groups x d_state)."
    )
    cacheless = [f"{pattern.count(c)} {what}" for c, what in (("-", "MLP-only"), ("E", "MoE-only")) if c in pattern]
    if cacheless:
        notes.append(f"{' and '.join(cacheless)} layers hold no cache and are not in layer_groups.")
    mixers = {
        "M": ("mamba2", linear, "none"),
        "*": ("gqa", full, "none"),
        "-": (None, None, "dense"),
        "E": (None, None, "moe"),
    }
    return [Layer(*mixers[c]) for c in pattern]
