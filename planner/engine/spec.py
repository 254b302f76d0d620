"""Plain dataclasses describing what the engine computes over: models, accelerators, layouts.

No Django imports. A catalogue row or a Django record (``planner.models.ModelSpec``,
``fleet.models.HardwareSku``: the same field names as ``fleet/catalog/models.json`` and ``skus.json``)
becomes one of these through ``ModelArch.from_record`` / ``Accelerator.from_record``, which validate
it and raise ``EngineInputError`` keyed by field name.

Layer groups describe the attention/state layout of a model, one item per kind of layer:

* ``full``: ordinary (GQA/MHA) attention; ``kv_heads``, ``head_dim``.
* ``sliding``: sliding-window attention; ``kv_heads``, ``head_dim``, ``window`` (tokens).
* ``mla``: multi-head latent attention (DeepSeek-V2/V3, Kimi); ``kv_lora_rank``,
  ``qk_rope_head_dim``. One latent "head" per token per layer.
* ``linear``: linear attention with a fixed-size recurrent state per sequence (KDA, gated
  DeltaNet, Mamba-style); ``key_heads``, ``value_heads``, ``key_dim``, ``value_dim``,
  ``conv_kernel``; optional ``variant`` (``kda``, ``gated_deltanet``, ``mamba2``: which kernel
  family, because serving engines keep their states in different dtypes), and optional
  ``state_dtype`` / ``conv_dtype``. A dtype left out is the serving engine's default for that
  variant (``planner.engine.profiles``); the ``generic`` profile uses fp32 state and bf16 conv.

Every group has ``count`` (number of layers of that kind). A group may also say where its layers sit in
the decoder stack: ``layers``, the 0-based positions of its ``count`` layers (ascending), with
``decoder_layers``, the stack's length (``num_hidden_layers``, layers without a cache included). Either
every group gives both or none does; the positions of all groups are distinct. Serving engines split
the stack between pipeline stages by position (vLLM ``get_pp_indices``), so with positions a profile
knows each stage's layers; without them each stage is assumed to hold ``ceil(count / pp)`` layers of
each group (an even split). The config importer writes positions where the order can matter (more than
one group, or layers without a cache).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from .errors import EngineInputError, is_int
from .formats import DEFAULT_WEIGHT_FORMAT, DTYPE_BYTES, WEIGHT_FORMATS
from .limits import (
    MAX_CONTEXT_TOKENS,
    MAX_DIMENSION,
    MAX_EXPERTS,
    MAX_GPUS,
    MAX_HBM_GB,
    MAX_LAYERS,
    MAX_PARAMS,
    MAX_RATE,
    MIN_HBM_GB,
    MIN_RATE,
    float_error,
    int_error,
)
from .units import GB
from .weight_parts import WeightPart, parse_weight_parts, parts_errors

LAYER_KINDS: tuple[str, ...] = ("full", "sliding", "mla", "linear")

#: Required integer keys per layer kind (besides ``kind`` and ``count``).
REQUIRED_KEYS: dict[str, tuple[str, ...]] = {
    "full": ("kv_heads", "head_dim"),
    "sliding": ("kv_heads", "head_dim", "window"),
    "mla": ("kv_lora_rank", "qk_rope_head_dim"),
    "linear": ("key_heads", "value_heads", "key_dim", "value_dim", "conv_kernel"),
}
#: Optional dtype keys per layer kind, with their defaults.
OPTIONAL_DTYPES: dict[str, tuple[str, ...]] = {
    "full": (),
    "sliding": (),
    "mla": (),
    "linear": ("state_dtype", "conv_dtype"),
}
#: Kernel families of linear-attention layers (``variant`` of a ``linear`` group).
LINEAR_VARIANTS: tuple[str, ...] = ("kda", "gated_deltanet", "mamba2")
#: Model families whose linear layers take a serving engine's per-family state defaults (``family`` of a
#: ``linear`` group): ``nemotron_h``, vLLM's ``NemotronHForCausalLMConfig`` (its SSM state dtype default).
LINEAR_FAMILIES: tuple[str, ...] = ("nemotron_h",)
#: Dtypes of the ``generic`` profile when a linear group names none (SGLang's defaults).
GENERIC_STATE_DTYPE: str = "fp32"
GENERIC_CONV_DTYPE: str = "bf16"


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
    #: ``None``: the serving engine's default for this variant (see ``planner.engine.profiles``).
    state_dtype: str | None = None
    conv_dtype: str | None = None
    #: Linear-attention kernel family (``LINEAR_VARIANTS``); ``""``: not stated.
    variant: str = ""
    #: The model family whose serving-engine defaults apply (``LINEAR_FAMILIES``); ``""``: none.
    family: str = ""
    #: 0-based positions of the group's layers in the decoder stack, ascending; ``()``: not stated.
    layers: tuple[int, ...] = ()
    #: Layers of the decoder stack the positions are in (``num_hidden_layers``); 0 with no positions.
    decoder_layers: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The canonical JSON form: only the keys that matter for this kind (dtypes and variant when set)."""
        out: dict[str, Any] = {"kind": self.kind, "count": self.count}
        for key in REQUIRED_KEYS[self.kind]:
            out[key] = getattr(self, key)
        if self.kind == "linear" and self.variant:
            out["variant"] = self.variant
        if self.kind == "linear" and self.family:
            out["family"] = self.family
        for key in OPTIONAL_DTYPES[self.kind]:
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.layers:
            out["layers"] = list(self.layers)
            out["decoder_layers"] = self.decoder_layers
        return out


#: Keys every kind of layer group may carry: where its layers sit in the decoder stack.
POSITION_KEYS: tuple[str, ...] = ("layers", "decoder_layers")


def _position_errors(groups: list[LayerGroup] | tuple[LayerGroup, ...], paths: list[str]) -> dict[str, list[str]]:
    """Errors of the groups' ``layers`` / ``decoder_layers`` (positions in the decoder stack), by path."""
    errors: dict[str, list[str]] = {}
    stated = [bool(g.layers) or bool(g.decoder_layers) for g in groups]
    if not any(stated):
        return errors
    if not all(stated):
        errors["layer_groups"] = ["Give layers and decoder_layers for every layer group or for none."]
        return errors
    stacks = {g.decoder_layers for g in groups}
    total = sum(g.count for g in groups)
    if len(stacks) > 1:
        errors["layer_groups"] = ["Every layer group must give the same decoder_layers."]
        return errors
    stack = stacks.pop()
    if not is_int(stack) or not total <= stack <= MAX_LAYERS:
        errors[f"{paths[0]}.decoder_layers"] = [
            f"Must be a whole number from the {total:,} layers of the groups to {MAX_LAYERS:,}."
        ]
        return errors
    seen: set[int] = set()
    for g, path in zip(groups, paths, strict=True):
        positions = g.layers
        if len(positions) != g.count:
            errors[f"{path}.layers"] = [f"Lists {len(positions):,} positions; count is {g.count:,}."]
        elif any(not is_int(i) or not 0 <= i < stack for i in positions):
            errors[f"{path}.layers"] = [f"Positions are whole numbers from 0 to {stack - 1:,} (decoder_layers - 1)."]
        elif any(b <= a for a, b in pairwise(positions)):
            errors[f"{path}.layers"] = ["Positions must be listed in ascending order, each once."]
        elif seen & set(positions):
            errors[f"{path}.layers"] = ["A position is already another layer group's."]
        else:
            seen |= set(positions)
    return errors


def parse_layer_groups(raw: Any) -> tuple[LayerGroup, ...]:
    """Validate a JSON list of layer groups and return them as ``LayerGroup`` objects.

    Raises ``EngineInputError`` with paths like ``layer_groups.1.kv_heads`` for every problem
    found (unknown kind, missing or unknown keys, non-positive integers, unknown dtypes, positions
    (``layers`` / ``decoder_layers``, module docstring) given for some groups only, out of the stack,
    out of order or shared).
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
        allowed = {"kind", "count", *REQUIRED_KEYS[kind], *OPTIONAL_DTYPES[kind], *POSITION_KEYS}
        if kind == "linear":
            allowed |= {"variant", "family"}
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
            elif value > (high := MAX_LAYERS if key == "count" else MAX_DIMENSION):
                errors.setdefault(f"{path}.{key}", []).append(f"Must be at most {high:,}.")
            else:
                values[key] = value
        for key in OPTIONAL_DTYPES[kind]:
            value = item.get(key)
            if value is None:
                continue
            if not isinstance(value, str) or value not in DTYPE_BYTES:
                errors.setdefault(f"{path}.{key}", []).append(
                    f"Unknown dtype {value!r}; use one of {', '.join(DTYPE_BYTES)}."
                )
            else:
                values[key] = value
        for key, known, what in (
            ("variant", LINEAR_VARIANTS, "linear-attention variant"),
            ("family", LINEAR_FAMILIES, "model family"),
        ):
            name = item.get(key) if kind == "linear" else None
            if name in (None, ""):
                continue
            if not isinstance(name, str) or name not in known:
                message = f"Unknown {what} {name!r}; use one of {', '.join(known)}."
                errors.setdefault(f"{path}.{key}", []).append(message)
            else:
                values[key] = name
        if kind == "linear" and "conv_kernel" in values and values["conv_kernel"] < 1:
            errors.setdefault(f"{path}.conv_kernel", []).append("Must be at least 1.")
        positions = item.get("layers")
        if positions is not None:
            if not isinstance(positions, list) or len(positions) > MAX_LAYERS:
                errors.setdefault(f"{path}.layers", []).append(f"Must be a list of at most {MAX_LAYERS:,} positions.")
            elif any(isinstance(i, bool) or not isinstance(i, int) for i in positions):
                errors.setdefault(f"{path}.layers", []).append("Positions are whole numbers.")
            else:
                values["layers"] = tuple(positions)
        stack = item.get("decoder_layers")
        if stack is not None:
            if isinstance(stack, bool) or not isinstance(stack, int) or not 1 <= stack <= MAX_LAYERS:
                errors.setdefault(f"{path}.decoder_layers", []).append(
                    f"Must be a whole number from 1 to {MAX_LAYERS:,}."
                )
            else:
                values["decoder_layers"] = stack
        if not any(k.startswith(path) for k in errors):
            groups.append(LayerGroup(**values))
    if not errors and sum(g.count for g in groups) > MAX_LAYERS:
        errors["layer_groups"] = [f"A model has at most {MAX_LAYERS:,} layers (counts of all groups together)."]
    if not errors:
        errors.update(_position_errors(groups, [f"layer_groups.{i}" for i in range(len(groups))]))
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
    weight_format: str = DEFAULT_WEIGHT_FORMAT
    expert_weight_format: str | None = None
    expert_params: int | None = None
    n_routed_experts: int = 0
    n_active_experts: int = 0
    n_shared_experts: int = 0
    hidden_size: int = 0
    vocab_size: int = 0
    max_context_tokens: int = 0
    attention_heads: int | None = None
    #: The checkpoint's module classes with their formats (``planner.engine.weight_parts``); empty: the
    #: two formats apply to everything.
    weight_parts: tuple[WeightPart, ...] = ()

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

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> ModelArch:
        """Build from a catalogue row (``fleet/catalog/models.json``) or a ``ModelSpec``'s field values.

        Keys are the record's field names; ``layer_groups`` is the JSON list of layer groups
        (``parse_layer_groups``), an empty ``expert_weight_format`` means "same as weight_format",
        and keys the engine does not use (``slug``, ``source``, ``assumptions``, ``id``, ...) are
        ignored. Raises ``EngineInputError`` listing every bad field (``model_errors`` and the
        layer-group paths such as ``layer_groups.1.kv_heads``).
        """
        errors: dict[str, list[str]] = {}
        for key in ("name", "total_params", "active_params", "layer_groups"):
            if record.get(key) is None:
                errors[key] = ["This field is required."]
        if record.get("name") is not None and not isinstance(record["name"], str):
            errors["name"] = ["Must be a string."]
        for key in MODEL_INT_FIELDS:
            value = record.get(key)
            if value is not None and not is_int(value):
                errors[key] = ["Must be a whole number."]
        for key in ("weight_format", "expert_weight_format"):
            value = record.get(key) or None
            if value is not None and value not in WEIGHT_FORMATS:
                errors[key] = [f"Unknown weight format {value!r}; use one of {', '.join(WEIGHT_FORMATS)}."]
        groups: tuple[LayerGroup, ...] = ()
        if record.get("layer_groups") is not None:
            try:
                groups = parse_layer_groups(record["layer_groups"])
            except EngineInputError as exc:
                errors.update(exc.errors)
        parts: tuple[WeightPart, ...] = ()
        try:
            parts = parse_weight_parts(record.get("weight_parts"))
        except EngineInputError as exc:
            errors.update(exc.errors)
        if errors:
            raise EngineInputError(errors)
        optional = {key: record[key] for key in MODEL_OPTIONAL_FIELDS if record.get(key) is not None}
        model = cls(
            name=record["name"],
            total_params=record["total_params"],
            active_params=record["active_params"],
            layer_groups=groups,
            weight_format=record.get("weight_format") or DEFAULT_WEIGHT_FORMAT,
            expert_weight_format=record.get("expert_weight_format") or None,
            expert_params=record.get("expert_params"),
            weight_parts=parts,
            **optional,
        )
        errors = model_errors(model)
        if errors:
            raise EngineInputError(errors)
        return model


#: Integer fields of a model record (``None`` allowed where the dataclass allows it).
MODEL_INT_FIELDS: tuple[str, ...] = (
    "total_params",
    "active_params",
    "expert_params",
    "n_routed_experts",
    "n_active_experts",
    "n_shared_experts",
    "hidden_size",
    "vocab_size",
    "max_context_tokens",
    "attention_heads",
)
#: Every figure of a model record that ``ModelArch.from_record`` reads, in the records' order
#: (``ModelSpec.FIGURES``: the API, the forms and decision snapshots list these).
MODEL_RECORD_FIELDS: tuple[str, ...] = (
    *MODEL_INT_FIELDS,
    "weight_format",
    "expert_weight_format",
    "layer_groups",
    "weight_parts",
)
#: Every figure of an accelerator record that ``Accelerator.from_record`` reads (``HardwareSku.FIGURES``).
ACCELERATOR_RECORD_FIELDS: tuple[str, ...] = (
    "hbm_gb",
    "hbm_bandwidth_tbps",
    "bf16_tflops",
    "fp8_tflops",
    "fp4_tflops",
    "interconnect_gbps",
    "gpus_per_node",
    "scaleup_domain_gpus",
    "hbm_bytes_reported",
)
#: Fields of a model record that fall back to the dataclass default when missing or ``None``.
MODEL_OPTIONAL_FIELDS: tuple[str, ...] = (
    "n_routed_experts",
    "n_active_experts",
    "n_shared_experts",
    "hidden_size",
    "vocab_size",
    "max_context_tokens",
    "attention_heads",
)


def model_errors(model: ModelArch) -> dict[str, list[str]]:
    """Field errors of a model's own figures (empty when the engine can size it).

    ``total_params`` and ``active_params`` whole numbers from 0 to ``MAX_PARAMS``; ``expert_params``
    between 0 and ``total_params``; expert counts up to ``MAX_EXPERTS`` with no more active than routed
    experts; sizes up to ``MAX_DIMENSION``; ``max_context_tokens`` from 0 (not stated) to
    ``MAX_CONTEXT_TOKENS``; a non-empty ``layer_groups`` of at most ``MAX_LAYERS`` layers with every
    dimension within ``MAX_DIMENSION`` (``planner/engine/limits.py``). Layout-dependent rules are ``layout_errors``'.
    """
    errors: dict[str, list[str]] = {}
    for key, high in (("total_params", MAX_PARAMS), ("active_params", MAX_PARAMS)):
        message = int_error(getattr(model, key), 0, high)
        if message:
            errors[key] = [message]
    if "total_params" not in errors and model.expert_params is not None:
        if not is_int(model.expert_params) or model.expert_params < 0:
            errors["expert_params"] = ["Must be a whole number, zero or more."]
        elif model.expert_params > model.total_params:
            errors["expert_params"] = ["Cannot exceed the total parameter count."]
    for key, high in (
        ("n_routed_experts", MAX_EXPERTS),
        ("n_active_experts", MAX_EXPERTS),
        ("n_shared_experts", MAX_EXPERTS),
        ("hidden_size", MAX_DIMENSION),
        ("vocab_size", MAX_DIMENSION),
        ("max_context_tokens", MAX_CONTEXT_TOKENS),
    ):
        message = int_error(getattr(model, key), 0, high)
        if message:
            errors[key] = [message]
    experts_ok = not errors.keys() & {"n_routed_experts", "n_active_experts"}
    if experts_ok and 0 < model.n_routed_experts < model.n_active_experts:
        errors["n_active_experts"] = [f"Cannot exceed the {model.n_routed_experts} routed experts."]
    if model.attention_heads is not None:
        message = int_error(model.attention_heads, 1, MAX_DIMENSION)
        if message:
            errors["attention_heads"] = [message]
    if not model.layer_groups:
        errors["layer_groups"] = ["Give a non-empty list of layer groups."]
    else:
        errors.update(group_errors(model.layer_groups))
    if not errors.keys() & {"total_params", "expert_params"}:
        errors.update(
            parts_errors(
                model.weight_parts,
                model.total_params,
                model.expert_params,
                model.weight_format,
                model.expert_weight_format,
            )
        )
    return errors


def group_errors(groups: tuple[LayerGroup, ...]) -> dict[str, list[str]]:
    """Limits of layer groups built directly (``parse_layer_groups`` checks the same of JSON)."""
    errors: dict[str, list[str]] = {}
    total = 0
    for i, g in enumerate(groups):
        if not isinstance(g, LayerGroup) or g.kind not in LAYER_KINDS:
            errors[f"layer_groups.{i}"] = ["Must be a layer group of a known kind."]
            continue
        for key in ("count", *REQUIRED_KEYS[g.kind]):
            message = int_error(getattr(g, key), 1, MAX_LAYERS if key == "count" else MAX_DIMENSION)
            if message:
                errors[f"layer_groups.{i}.{key}"] = [message]
        for key in OPTIONAL_DTYPES[g.kind]:
            value = getattr(g, key)
            if value is not None and value not in DTYPE_BYTES:
                errors[f"layer_groups.{i}.{key}"] = [f"Unknown dtype {value!r}; use one of {', '.join(DTYPE_BYTES)}."]
        total += g.count if is_int(g.count) else 0
    if not errors and total > MAX_LAYERS:
        errors["layer_groups"] = [f"A model has at most {MAX_LAYERS:,} layers (counts of all groups together)."]
    if not errors:
        errors.update(_position_errors(groups, [f"layer_groups.{i}" for i in range(len(groups))]))
    return errors


#: Figures of an accelerator: (low, high, 0 allowed) for the floats, (low, high) for the counts.
ACCELERATOR_FLOATS: dict[str, tuple[float, float, bool]] = {
    "hbm_gb": (MIN_HBM_GB, MAX_HBM_GB, False),
    "hbm_bandwidth_tbps": (MIN_RATE, MAX_RATE, True),
    "bf16_tflops": (MIN_RATE, MAX_RATE, True),
    "fp8_tflops": (MIN_RATE, MAX_RATE, True),
    "fp4_tflops": (MIN_RATE, MAX_RATE, True),
    "interconnect_gbps": (MIN_RATE, MAX_RATE, True),
}
ACCELERATOR_COUNTS: dict[str, tuple[int, int]] = {
    "gpus_per_node": (1, MAX_GPUS),
    "scaleup_domain_gpus": (1, MAX_GPUS),
    "hbm_bytes_reported": (1, round(MAX_HBM_GB * GB)),
}


def accelerator_errors(values: Mapping[str, Any] | Accelerator, *, speed: bool = False) -> dict[str, list[str]]:
    """Field errors of an accelerator's figures (a record, or an ``Accelerator``); ``None`` is "not stated".

    With ``speed``, the figures a speed estimate divides by (HBM bandwidth, bf16 TFLOPS) must be stated.
    A fresh dict the caller may extend; an ``Accelerator``'s (frozen) are checked once per object and
    ``speed`` (every throughput estimate asks), kept with the object so its id is not reused."""
    if isinstance(values, Accelerator):
        memo_key = (id(values), speed)
        hit = _ACCELERATOR_ERRORS.get(memo_key)
        if hit is None or hit[0] is not values:
            if len(_ACCELERATOR_ERRORS) >= 512:
                _ACCELERATOR_ERRORS.clear()
            found = _accelerator_errors({key: getattr(values, key) for key in ACCELERATOR_RECORD_FIELDS}, speed)
            hit = _ACCELERATOR_ERRORS[memo_key] = (values, found)
        return {name: list(messages) for name, messages in hit[1].items()}
    return _accelerator_errors(values, speed)


def _accelerator_errors(values: Mapping[str, Any], speed: bool) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    if speed:
        for key, what in (("hbm_bandwidth_tbps", "HBM bandwidth (TB/s)"), ("bf16_tflops", "dense bf16 TFLOPS")):
            if not values.get(key):
                errors[key] = [f"A speed estimate needs the accelerator's {what}."]
    for key, (low, high, zero) in ACCELERATOR_FLOATS.items():
        value = values.get(key)
        if value is None and key != "hbm_gb":
            continue
        message = float_error(value, high, low, zero=zero)
        if message:
            errors[key] = [message]
    for key, (low, high) in ACCELERATOR_COUNTS.items():
        value = values.get(key)
        if value is not None:
            message = int_error(value, low, high)
            if message:
                errors[key] = [message]
    return errors


_ACCELERATOR_ERRORS: dict[tuple[int, bool], tuple[Accelerator, dict[str, list[str]]]] = {}


def gpu_memory_bytes(hbm_gb: float, hbm_bytes_reported: int | None) -> int:
    """A SKU's GPU memory (bytes): what its driver reports to a serving engine, else the nominal decimal
    ``hbm_gb`` x 1e9. The one rule every page, table and API figure of "GPU memory" goes through; the
    nominal GB is the SKU's marketing figure ("141GB"), kept in its name."""
    return int(hbm_bytes_reported) if hbm_bytes_reported else round(hbm_gb * GB)


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
    #: GPUs that share the scale-up fabric (NVLink/NVSwitch, Infinity Fabric): 8 on an HGX or MI300X
    #: platform, 72 in a GB300 NVL72 rack whose trays hold 4. None: ``gpus_per_node``.
    scaleup_domain_gpus: int | None = None
    #: Total memory as the driver reports it to a serving engine (``torch.cuda.mem_get_info``), in
    #: bytes: an H100 80GB reports about 79.2 GiB, not 80e9 B. None: not known, use ``hbm_bytes``.
    hbm_bytes_reported: int | None = None

    @property
    def scaleup_domain(self) -> int:
        """GPUs reachable over the scale-up link, ``scaleup_domain_gpus`` or else ``gpus_per_node``."""
        return self.scaleup_domain_gpus or max(1, self.gpus_per_node)

    @property
    def hbm_bytes(self) -> int:
        """Nominal HBM in bytes (decimal: hbm_gb x 1e9)."""
        return round(self.hbm_gb * GB)

    @property
    def driver_hbm_bytes(self) -> int:
        """The memory an engine sees (bytes): ``hbm_bytes_reported``, else the nominal ``hbm_bytes``."""
        return gpu_memory_bytes(self.hbm_gb, self.hbm_bytes_reported)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Accelerator:
        """Build from a catalogue row (``fleet/catalog/skus.json``) or a ``HardwareSku``'s field values.

        Units as in the catalogue: ``hbm_gb`` decimal GB, ``hbm_bandwidth_tbps`` TB/s, dense TFLOPS
        (``fp8_tflops``/``fp4_tflops`` ``None`` when the hardware has no such tensor path),
        ``interconnect_gbps`` GB/s bidirectional (0 = not stated), ``gpus_per_node``,
        ``scaleup_domain_gpus`` (GPUs on one NVLink/xGMI fabric; None: a node's). Keys the engine
        does not use (``slug``, ``vendor``, ``source``, ``assumptions``, ``id``, ...) are ignored.
        Raises ``EngineInputError`` listing every bad field.
        """
        errors: dict[str, list[str]] = {}
        name = record.get("name")
        if not isinstance(name, str) or not name:
            errors["name"] = ["This field is required."]
        errors.update(accelerator_errors(record))
        hbm = record.get("hbm_gb")
        per_node = record.get("gpus_per_node")
        if errors:
            raise EngineInputError(errors)
        return cls(
            name=name,
            hbm_gb=hbm,
            hbm_bandwidth_tbps=record.get("hbm_bandwidth_tbps") or 0.0,
            bf16_tflops=record.get("bf16_tflops") or 0.0,
            fp8_tflops=record.get("fp8_tflops"),
            fp4_tflops=record.get("fp4_tflops"),
            interconnect_gbps=record.get("interconnect_gbps") or 0.0,
            gpus_per_node=per_node if per_node is not None else 8,
            scaleup_domain_gpus=record.get("scaleup_domain_gpus"),
            hbm_bytes_reported=record.get("hbm_bytes_reported"),
        )


@dataclass(frozen=True, slots=True)
class Layout:
    """Parallel layout of one replica: GPUs per replica = tp x pp x dp.

    ``ep`` (expert parallel size) spans the replica's GPUs and must divide them; ``dp`` here
    is data-parallel *attention* inside a replica (DeepSeek-style DP attention), each rank
    holding only its own sequences' cache.

    The routed experts of a pipeline stage run on its ``tp x dp`` GPUs as ``ep`` expert-parallel
    ranks of ``etp`` GPUs each (expert tensor parallelism: every expert's matrices split over
    ``etp``), so ``ep x etp = tp x dp``; ``etp`` None means that quotient (vLLM/SGLang's MoE
    tensor parallel size, TensorRT-LLM's ``moe_tp_size``). ``redundant_experts`` extra expert slots
    (EPLB: SGLang ``--ep-num-redundant-experts``, vLLM ``--num-redundant-experts``) let an ``ep``
    that does not divide the routed experts place ``E + redundant`` slots evenly.
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    etp: int | None = None
    redundant_experts: int = 0

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def expert_tp(self) -> int:
        """GPUs each expert's matrices are split over: ``etp``, else ``tp x dp / ep`` (at least 1)."""
        if self.etp:
            return self.etp
        return max(1, (self.tp * self.dp) // max(1, self.ep))

    def as_dict(self) -> dict[str, int]:
        """``tp``, ``pp``, ``dp``, ``ep``, and ``etp`` / ``redundant_experts`` when given."""
        out = {"tp": self.tp, "pp": self.pp, "dp": self.dp, "ep": self.ep}
        if self.etp is not None:
            out["etp"] = self.etp
        if self.redundant_experts:
            out["redundant_experts"] = self.redundant_experts
        return out


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
        elif value > MAX_GPUS:
            errors.setdefault(name, []).append(f"Must be at most {MAX_GPUS:,}.")
    etp, redundant = layout.etp, layout.redundant_experts
    if etp is not None and (isinstance(etp, bool) or not isinstance(etp, int) or not 1 <= etp <= MAX_GPUS):
        errors.setdefault("etp", []).append(f"Must be a whole number from 1 to {MAX_GPUS:,}.")
    if isinstance(redundant, bool) or not isinstance(redundant, int) or not 0 <= redundant <= MAX_EXPERTS:
        errors.setdefault("redundant_experts", []).append(f"Must be a whole number from 0 to {MAX_EXPERTS:,}.")
    if errors:
        return errors
    if layout.gpus > MAX_GPUS:
        errors["tp"] = [f"A replica has at most {MAX_GPUS:,} GPUs (tp x pp x dp = {layout.gpus:,})."]
        return errors
    stage = layout.tp * layout.dp
    if etp is not None and layout.ep * etp != stage:
        errors.setdefault("etp", []).append(
            f"ep x etp = {layout.ep} x {etp} must equal the {stage} GPUs of a pipeline stage (tp x dp)."
        )
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
        slots = model.n_routed_experts + redundant
        if model.n_routed_experts and layout.ep > 1 and slots % layout.ep:
            needed = -(-model.n_routed_experts // layout.ep) * layout.ep - model.n_routed_experts
            errors.setdefault("ep", []).append(
                f"Expert parallel size {layout.ep} must divide the model's {model.n_routed_experts} routed experts"
                + (f" plus {redundant} redundant" if redundant else "")
                + f" (EPLB: redundant_experts={needed} gives {model.n_routed_experts + needed} slots)."
            )
        if redundant and not model.n_routed_experts:
            errors.setdefault("redundant_experts", []).append(
                "Only a mixture-of-experts model has experts to replicate."
            )
        if layout.pp > model.num_layers:
            errors.setdefault("pp", []).append(
                f"Pipeline parallel size {layout.pp} exceeds the model's {model.num_layers} layers."
            )
    return errors
