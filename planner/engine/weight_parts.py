"""A checkpoint's weights module class by module class: parameters, format and bits per weight.

A model record may carry ``weight_parts``, a list of ``{"part", "format", "params", "bits"}``: how many
parameters of each module class (``PARTS``) the checkpoint stores in which format, and the bits it
stores per weight, scales included (``bits``: int4 in groups of 32 with a bf16 scale is 4 + 16/32 =
4.5, the generic ``int4`` format's 4.16 being group 128; ``planner/engine/hf_config/quantization.py``
reads them from the config's quantisation description). One module class may appear in more than one
format (DeepSeek-V3.1-NVFP4 keeps the first layers' attention in bf16 and the rest in NVFP4).

When a record has parts, they are its weights: ``bytes = sum(params x bits / 8)`` over the parts, the
routed experts' parts (``routed_experts``) sharded like experts, the rest like dense weights
(``planner/engine/sizing/weights.py``). The parts must add up to ``total_params`` and the routed
experts' parts to ``expert_params`` (``parts_errors``), and ``weight_format`` / ``expert_weight_format``
name the format holding most of the non-expert and the expert parameters: the record's two formats
stay its summary, the parts its detail. Without parts, the two formats apply to everything.

Pure Python, no Django. Units: parameters (plain counts), bits per weight (float), bytes (int).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import EngineInputError, is_int
from .formats import RAW_BITS, WEIGHT_FORMATS

#: Module classes, in the order the model page lists them, with the name a reader says.
PARTS: dict[str, str] = {
    "embedding": "Input embedding",
    "lm_head": "Output head (lm_head)",
    "attention": "Attention projections",
    "linear_attention": "Linear-attention mixers",
    "dense_mlp": "Dense MLPs",
    "shared_experts": "Shared experts",
    "routed_experts": "Routed experts",
    "latent_projections": "Expert latent projections",
    "router": "Routers",
    "norms": "Norms and small tensors",
}
#: The module class holding the routed experts (sharded over tp x dp; everything else over tp).
ROUTED = "routed_experts"
#: At most this many parts (one per module class and format: a handful in practice).
MAX_PARTS = 64
#: Bits per weight allowed in a part: 1 to 32 (fp32 norms).
MAX_BITS = 32.0


@dataclass(frozen=True, slots=True)
class WeightPart:
    """``params`` parameters of module class ``part`` stored in ``format`` at ``bits`` bits per weight
    (scales included; ``format``'s raw element size without them: ``raw_bits``)."""

    part: str
    format: str
    params: int
    bits: float

    @property
    def raw_bits(self) -> float:
        """Bits per weight without scales (the format's element size)."""
        return RAW_BITS[self.format]

    def bytes(self, include_scale_overhead: bool = True) -> int:
        """Bytes of this part (rounded to the nearest byte)."""
        return round(self.params * (self.bits if include_scale_overhead else self.raw_bits) / 8)

    def to_dict(self) -> dict[str, Any]:
        return {"part": self.part, "format": self.format, "params": self.params, "bits": self.bits}


def parse_weight_parts(raw: Any, field: str = "weight_parts") -> tuple[WeightPart, ...]:
    """Parts from their JSON list (``None`` or ``[]``: none). Raises ``EngineInputError`` keyed
    ``weight_parts.<i>.<key>``."""
    if raw in (None, "", []):
        return ()
    if not isinstance(raw, list):
        raise EngineInputError.single(field, "Give a list of parts ({part, format, params, bits}), or nothing.")
    if len(raw) > MAX_PARTS:
        raise EngineInputError.single(field, f"At most {MAX_PARTS} parts.")
    errors: dict[str, list[str]] = {}
    parts: list[WeightPart] = []
    for i, item in enumerate(raw):
        where = f"{field}.{i}"
        if not isinstance(item, Mapping):
            errors[where] = ["Must be an object with part, format, params and bits."]
            continue
        part, fmt, params, bits = (item.get(k) for k in ("part", "format", "params", "bits"))
        extra = set(item) - {"part", "format", "params", "bits"}
        if extra:
            errors[where] = [f"Unknown key(s): {', '.join(sorted(map(str, extra)))}."]
        if part not in PARTS:
            errors[f"{where}.part"] = [f"Unknown module class {part!r}; use one of {', '.join(PARTS)}."]
        if fmt not in WEIGHT_FORMATS:
            errors[f"{where}.format"] = [f"Unknown weight format {fmt!r}; use one of {', '.join(WEIGHT_FORMATS)}."]
        if not is_int(params) or params < 0:
            errors[f"{where}.params"] = ["Must be a whole number, zero or more."]
        if isinstance(bits, bool) or not isinstance(bits, int | float) or not 1 <= bits <= MAX_BITS:
            errors[f"{where}.bits"] = [f"Bits per weight (scales included): a number from 1 to {MAX_BITS:g}."]
        if not any(k.startswith(where) for k in errors):
            parts.append(WeightPart(part, fmt, params, float(bits)))
    if errors:
        raise EngineInputError(errors)
    return tuple(parts)


def dominant_format(parts: Iterable[WeightPart]) -> str | None:
    """The format holding the most parameters of ``parts`` (``None``: no parameters)."""
    by_format: dict[str, int] = {}
    for p in parts:
        by_format[p.format] = by_format.get(p.format, 0) + p.params
    if not by_format or not any(by_format.values()):
        return None
    return max(by_format, key=lambda f: by_format[f])


def parts_errors(
    parts: Sequence[WeightPart],
    total_params: Any,
    expert_params: Any,
    weight_format: str,
    expert_weight_format: str | None,
) -> dict[str, list[str]]:
    """Field errors when the parts disagree with the record's counts or its two formats."""
    if not parts:
        return {}
    errors: dict[str, list[str]] = {}
    total = sum(p.params for p in parts)
    routed = sum(p.params for p in parts if p.part == ROUTED)
    if is_int(total_params) and total != total_params:
        errors["weight_parts"] = [
            f"The parts add up to {total:,} parameters, total_params says {total_params:,}: change both, or clear "
            "the parts to count every weight in weight_format."
        ]
    elif routed != (expert_params or 0):
        errors["weight_parts"] = [
            f"The routed experts' parts hold {routed:,} parameters, expert_params says {expert_params or 0:,}."
        ]
    rest = dominant_format(p for p in parts if p.part != ROUTED)
    experts = dominant_format(p for p in parts if p.part == ROUTED)
    if rest is not None and rest != weight_format:
        errors.setdefault("weight_format", []).append(
            f"The parts keep most non-expert weights in {rest}: weight_format must say {rest} (or clear the parts)."
        )
    if experts is not None and experts != (expert_weight_format or weight_format):
        errors.setdefault("expert_weight_format", []).append(
            f"The parts keep the routed experts in {experts}: expert_weight_format must say {experts} (or clear the "
            "parts)."
        )
    return errors


def summarise(parts: Iterable[WeightPart]) -> tuple[WeightPart, ...]:
    """Parts merged by (module class, format, bits), in ``PARTS`` order, empty ones left out."""
    merged: dict[tuple[str, str, float], int] = {}
    for p in parts:
        key = (p.part, p.format, p.bits)
        merged[key] = merged.get(key, 0) + p.params
    order = {name: i for i, name in enumerate(PARTS)}
    rows = [WeightPart(k[0], k[1], n, k[2]) for k, n in merged.items() if n]
    return tuple(sorted(rows, key=lambda p: (order[p.part], -p.params)))
