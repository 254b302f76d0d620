"""Plain dataclasses describing what the engine computes over: models, accelerators, layouts.

No Django imports. The Django records (``planner.models.ModelSpec``, ``fleet.models.HardwareSku``)
convert themselves into these with ``to_engine()``.

Layer groups describe the attention/state layout of a model, one item per kind of layer:

* ``full``: ordinary (GQA/MHA) attention; ``kv_heads``, ``head_dim``.
* ``sliding``: sliding-window attention; ``kv_heads``, ``head_dim``, ``window`` (tokens).
* ``mla``: multi-head latent attention (DeepSeek-V2/V3, Kimi); ``kv_lora_rank``,
  ``qk_rope_head_dim``. One latent "head" per token per layer.
* ``linear``: linear attention with a fixed-size recurrent state per sequence (KDA, gated
  DeltaNet, Mamba-style); ``key_heads``, ``value_heads``, ``key_dim``, ``value_dim``,
  ``conv_kernel``, optional ``state_dtype`` (default fp32) and ``conv_dtype`` (default bf16).

Every group has ``count`` (number of layers of that kind).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import EngineInputError
from .formats import DTYPE_BYTES, WEIGHT_FORMATS

LAYER_KINDS: tuple[str, ...] = ("full", "sliding", "mla", "linear")

#: Required integer keys per layer kind (besides ``kind`` and ``count``).
REQUIRED_KEYS: dict[str, tuple[str, ...]] = {
    "full": ("kv_heads", "head_dim"),
    "sliding": ("kv_heads", "head_dim", "window"),
    "mla": ("kv_lora_rank", "qk_rope_head_dim"),
    "linear": ("key_heads", "value_heads", "key_dim", "value_dim", "conv_kernel"),
}
#: Optional dtype keys per layer kind, with their defaults.
OPTIONAL_DTYPES: dict[str, dict[str, str]] = {
    "full": {},
    "sliding": {},
    "mla": {},
    "linear": {"state_dtype": "fp32", "conv_dtype": "bf16"},
}


@dataclass(frozen=True, slots=True)
class LayerGroup:
    """A run of ``count`` layers of one attention kind. Unused dimensions are 0."""

    kind: str
    count: int
    kv_heads: int = 0
    head_dim: int = 0
    window: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    key_heads: int = 0
    value_heads: int = 0
    key_dim: int = 0
    value_dim: int = 0
    conv_kernel: int = 0
    state_dtype: str = "fp32"
    conv_dtype: str = "bf16"

    def to_dict(self) -> dict[str, Any]:
        """The canonical JSON form: only the keys that matter for this kind."""
        out: dict[str, Any] = {"kind": self.kind, "count": self.count}
        for key in REQUIRED_KEYS[self.kind]:
            out[key] = getattr(self, key)
        for key in OPTIONAL_DTYPES[self.kind]:
            out[key] = getattr(self, key)
        return out


def parse_layer_groups(raw: Any) -> tuple[LayerGroup, ...]:
    """Validate a JSON list of layer groups and return them as ``LayerGroup`` objects.

    Raises ``EngineInputError`` with paths like ``layer_groups.1.kv_heads`` for every problem
    found (unknown kind, missing or unknown keys, non-positive integers, unknown dtypes).
    """
    errors: dict[str, list[str]] = {}
    if not isinstance(raw, list) or not raw:
        raise EngineInputError.single("layer_groups", "Give a non-empty list of layer groups.")
    groups: list[LayerGroup] = []
    for i, item in enumerate(raw):
        path = f"layer_groups.{i}"
        if not isinstance(item, dict):
            errors.setdefault(path, []).append("Each layer group must be an object.")
            continue
        kind = item.get("kind")
        if kind not in LAYER_KINDS:
            errors.setdefault(f"{path}.kind", []).append(
                f"Unknown layer kind {kind!r}; use one of {', '.join(LAYER_KINDS)}."
            )
            continue
        allowed = {"kind", "count", *REQUIRED_KEYS[kind], *OPTIONAL_DTYPES[kind]}
        for key in sorted(set(item) - allowed):
            errors.setdefault(f"{path}.{key}", []).append(
                f"Not a field of a {kind!r} layer group (allowed: {', '.join(sorted(allowed))})."
            )
        values: dict[str, Any] = {"kind": kind}
        for key in ("count", *REQUIRED_KEYS[kind]):
            value = item.get(key)
            if value is None:
                errors.setdefault(f"{path}.{key}", []).append(f"Required for a {kind!r} layer group.")
            elif isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                errors.setdefault(f"{path}.{key}", []).append("Must be a positive whole number.")
            else:
                values[key] = value
        for key, default in OPTIONAL_DTYPES[kind].items():
            value = item.get(key, default)
            if value not in DTYPE_BYTES:
                errors.setdefault(f"{path}.{key}", []).append(
                    f"Unknown dtype {value!r}; use one of {', '.join(DTYPE_BYTES)}."
                )
            else:
                values[key] = value
        if kind == "linear" and "conv_kernel" in values and values["conv_kernel"] < 1:
            errors.setdefault(f"{path}.conv_kernel", []).append("Must be at least 1.")
        if not any(k.startswith(path) for k in errors):
            groups.append(LayerGroup(**values))
    if errors:
        raise EngineInputError(errors)
    return tuple(groups)


@dataclass(frozen=True, slots=True)
class ModelArch:
    """A model's architecture as the engine needs it. Parameter counts are plain integers.

    ``expert_params`` are the parameters inside the routed experts (all of them, all layers);
    ``None`` means unknown, and the engine then treats the whole model as one component.
    ``expert_weight_format`` defaults to ``weight_format`` when ``None``.
    """

    name: str
    total_params: int
    active_params: int
    layer_groups: tuple[LayerGroup, ...]
    weight_format: str = "bf16"
    expert_weight_format: str | None = None
    expert_params: int | None = None
    n_routed_experts: int = 0
    n_active_experts: int = 0
    n_shared_experts: int = 0
    hidden_size: int = 0
    vocab_size: int = 0
    max_context_tokens: int = 0
    attention_heads: int | None = None

    def __post_init__(self) -> None:
        if self.weight_format not in WEIGHT_FORMATS:
            raise EngineInputError.single("weight_format", f"Unknown weight format {self.weight_format!r}.")
        if self.expert_weight_format is not None and self.expert_weight_format not in WEIGHT_FORMATS:
            raise EngineInputError.single(
                "expert_weight_format", f"Unknown weight format {self.expert_weight_format!r}."
            )

    @property
    def num_layers(self) -> int:
        """Total layers across all groups."""
        return sum(g.count for g in self.layer_groups)

    @property
    def is_moe(self) -> bool:
        return self.n_routed_experts > 0


@dataclass(frozen=True, slots=True)
class Accelerator:
    """One GPU/accelerator SKU. ``hbm_gb`` is the vendor's nominal decimal GB (1e9 bytes)."""

    name: str
    hbm_gb: float
    hbm_bandwidth_tbps: float = 0.0
    bf16_tflops: float = 0.0
    fp8_tflops: float | None = None
    fp4_tflops: float | None = None
    interconnect_gbps: float = 0.0
    gpus_per_node: int = 8

    @property
    def hbm_bytes(self) -> int:
        """Nominal HBM in bytes (decimal: hbm_gb x 1e9)."""
        return round(self.hbm_gb * 1e9)


@dataclass(frozen=True, slots=True)
class Layout:
    """Parallel layout of one replica: GPUs per replica = tp x pp x dp.

    ``ep`` (expert parallel size) spans the replica's GPUs and must divide them; ``dp`` here
    is data-parallel *attention* inside a replica (DeepSeek-style DP attention), each rank
    holding only its own sequences' cache.
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    def as_dict(self) -> dict[str, int]:
        return {"tp": self.tp, "pp": self.pp, "dp": self.dp, "ep": self.ep}


def layout_errors(
    layout: Layout,
    model: ModelArch | None = None,
    available_gpus: int | None = None,
    replicas: int = 1,
) -> dict[str, list[str]]:
    """Field errors for a layout (empty dict when it is valid).

    Rules (the engines they come from are listed in docs/layouts.md):

    * every size is a positive whole number;
    * a replica uses tp x pp x dp GPUs, and replicas x that must fit in ``available_gpus``;
    * ep must divide the replica's GPUs (vLLM/SGLang place experts over the TP x DP group);
    * tp must divide the attention heads when the model gives them (vLLM and SGLang shard
      query heads evenly), and the number of routed experts must divide evenly by ep;
    * pp must not exceed the number of layers.
    """
    errors: dict[str, list[str]] = {}
    for name in ("tp", "pp", "dp", "ep"):
        value = getattr(layout, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            errors.setdefault(name, []).append("Must be a positive whole number.")
    if errors:
        return errors
    per_replica = layout.gpus
    if layout.ep > 1 and per_replica % layout.ep:
        errors.setdefault("ep", []).append(
            f"Expert parallel size {layout.ep} must divide the replica's {per_replica} GPUs (tp x pp x dp)."
        )
    if available_gpus is not None and replicas * per_replica > available_gpus:
        errors.setdefault("replicas", []).append(
            f"{replicas} replica(s) x {per_replica} GPUs (tp x pp x dp) = {replicas * per_replica} GPUs, "
            f"more than the {available_gpus} the cluster has."
        )
    if model is not None:
        if model.attention_heads and model.attention_heads % layout.tp:
            errors.setdefault("tp", []).append(
                f"Tensor parallel size {layout.tp} must divide the model's {model.attention_heads} attention heads."
            )
        if model.n_routed_experts and layout.ep > 1 and model.n_routed_experts % layout.ep:
            errors.setdefault("ep", []).append(
                f"Expert parallel size {layout.ep} must divide the model's {model.n_routed_experts} routed experts."
            )
        if layout.pp > model.num_layers:
            errors.setdefault("pp", []).append(
                f"Pipeline parallel size {layout.pp} exceeds the model's {model.num_layers} layers."
            )
    return errors
