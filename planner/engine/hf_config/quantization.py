"""Weight formats module by module, from a config's ``quantization_config`` (or a ModelOpt ``hf_quant_config.json``).

The importer's module inventory (``params.Module``: every tensor group of the checkpoint with its module
path, module class and parameters) is given a storage scheme each: a format and the bits it stores per
weight, scales included. What each quantisation library quantises, and how its lists are matched:

* Only linear layers' weights inside the decoder layers are quantised (every library here replaces
  ``nn.Linear`` modules); embeddings, ``lm_head``, norms, routers, convolutions, biases and the
  linear-attention mixers' scalars stay in the model dtype (``torch_dtype``). vLLM loads them the same
  way: ``VocabParallelEmbedding`` / ``ParallelLMHead`` are not ``LinearBase`` layers, so no
  quantisation method applies to them, and the MoE gate is built without one.
* ``quant_method: mxfp4`` (transformers ``Mxfp4HfQuantizer``, gpt-oss): only the routed experts
  (``GptOssExperts``) are converted, MXFP4 at 4 + 8/32 = 4.25 bits (E2M1 elements, one E8M0 scale per
  32: OCP Microscaling Formats v1.0); ``modules_to_not_convert`` names what stays unconverted.
* ``quant_method: fp8`` (transformers ``FineGrainedFP8``, vLLM ``Fp8Config``): every linear layer in
  the decoder layers, E4M3 with one fp32 scale per ``weight_block_size`` block: 8 + 32/(128 x 128) bits
  (per-tensor scales: 8); ``modules_to_not_convert`` / ``ignored_layers`` stay in the model dtype.
* ``compressed-tensors`` (llm-compressor; Kimi K2.5/K3): each ``config_groups`` entry quantises the
  modules its ``targets`` select (``Linear``: every linear layer) but those ``ignore`` selects. A target
  or ignore entry ``re:<pattern>`` is a regular expression matched at the start of the module's full
  name, any other entry the full name itself or a module class (compressed-tensors
  ``utils/match.py``: ``re.match`` / equality). Bits from the group's ``weights``: integers
  ``num_bits + scale bits / group_size`` (the scale in the model dtype, 16 bits, unless
  ``scale_dtype`` says otherwise; asymmetric groups add a ``num_bits`` zero point per group: int4 g32
  symmetric = 4.5), 4-bit floats in groups of 16 NVFP4 (4.5) and of 32 MXFP4 (4.25), 8-bit floats fp8.
* ModelOpt (``quant_method: modelopt`` or a ``quant_algo``, in ``config.json`` or the
  ``hf_quant_config.json`` beside it): ``quant_algo`` for every linear layer (NVFP4 4 + 8/group_size
  with the E4M3 scale per 16; FP8 8; MXFP4 4.25; INT4 AWQ 4 + 16/group_size; INT8 8), or
  ``MIXED_PRECISION`` with a ``quantized_layers`` table (module -> ``quant_algo``; a module not in it
  stays unquantised); ``moe_quant_algo`` for the routed experts; ``exclude_modules`` as ModelOpt writes
  it: ``fnmatch`` globs (or names) over module paths, a module excluded with what it contains.
* ``gptq`` / ``awq``: ``bits`` with one fp16 scale and one packed ``bits``-wide zero point per
  ``group_size`` weights: bits + (16 + bits)/group_size (4-bit g128: 4.156); ``group_size: -1`` per
  output channel (bits); ``lm_head: true`` quantises the head too.

Full module names are the checkpoint's: the decoder layers under ``model.`` (``backbone.`` for
Nemotron-H), or under the prefix the lists themselves use (``language_model.model.``,
``model.language_model.``); routed experts are represented by expert 0 and by their container
(``mlp.experts``). Regular expressions from a config run on ``regex`` with a time budget
(``PATTERN_BUDGET_S``): a pattern that backtracks without end is refused by name, never a stall.
"""

from __future__ import annotations

import fnmatch
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import regex

from ..errors import EngineInputError
from ..formats import SCALED_BITS
from ..weight_parts import ROUTED, WeightPart, dominant_format, summarise
from .params import Module

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
#: Bits of a scale by its dtype name (``scale_dtype``: ``torch.bfloat16``, ``torch.uint8``, ...).
SCALE_DTYPE_BITS: dict[str, int] = {
    "bfloat16": 16,
    "float16": 16,
    "float32": 32,
    "uint8": 8,
    "float8_e4m3fn": 8,
    "float8_e8m0fnu": 8,
    "int8": 8,
}
#: Wall-clock budget for a config's regular expressions, all matches together (seconds).
PATTERN_BUDGET_S: float = 0.5
#: At most this many list entries are read (exclusion lists of real checkpoints: up to ~1,000).
MAX_PATTERNS: int = 20_000


@dataclass(frozen=True, slots=True)
class Scheme:
    """How one module is stored: a weight format and its bits per weight, scales included."""

    format: str
    bits: float


class Selector:
    """A list of module names and patterns, matched as one library defines it.

    ``style="ct"`` (compressed-tensors): ``re:<pattern>`` matched with ``re.match`` semantics, else the
    full name or a class name (``Linear``). ``style="glob"`` (ModelOpt, transformers, vLLM's
    ``ignored_layers``): an ``fnmatch`` glob or a name, matched against the module and each module
    containing it."""

    def __init__(self, entries: Iterable[Any], style: str, where: str, deadline: list[float]) -> None:
        self.style, self.where, self.deadline = style, where, deadline
        self.exact: set[str] = set()
        self.classes: set[str] = set()
        self.regexes: list[tuple[str, Any]] = []
        globs: list[str] = []
        for i, entry in enumerate(entries):
            if i >= MAX_PATTERNS:
                raise EngineInputError.single(where, f"At most {MAX_PATTERNS:,} entries are read.")
            if not isinstance(entry, str):
                continue
            if style == "ct" and entry.startswith("re:"):
                try:
                    self.regexes.append((entry, regex.compile(entry[3:])))
                except regex.error as exc:
                    raise EngineInputError.single(where, f"{entry!r} is not a regular expression ({exc}).") from None
            elif style == "ct" and entry[:1].isupper() and "." not in entry:
                self.classes.add(entry)
            elif style == "glob" and any(c in entry for c in "*?["):
                globs.append(entry)
            else:
                self.exact.add(entry)
        # fnmatch.translate gives linear-time expressions (no nested quantifiers).
        self.globs = re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in globs)) if globs else None

    def __bool__(self) -> bool:
        return bool(self.exact or self.classes or self.regexes or self.globs)

    def matches(self, name: str, linear: bool) -> bool:
        """Whether the module ``name`` (a full name) is selected."""
        if self.style == "ct":
            if name in self.exact or (linear and "Linear" in self.classes):
                return True
            return any(self._regex(entry, pattern, name) for entry, pattern in self.regexes)
        candidates = [name]
        while "." in candidates[-1]:
            candidates.append(candidates[-1].rsplit(".", 1)[0])
        if any(c in self.exact for c in candidates):
            return True
        return self.globs is not None and any(self.globs.match(c) for c in candidates)

    def _regex(self, entry: str, pattern: Any, name: str) -> bool:
        remaining = self.deadline[0] - time.monotonic()
        try:
            if remaining <= 0:
                raise TimeoutError
            return pattern.match(name, timeout=remaining) is not None
        except TimeoutError:
            raise EngineInputError.single(
                self.where, f"{entry!r} takes too long to match module names (over {PATTERN_BUDGET_S:g} s in all)."
            ) from None


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


def exclusions(desc: Mapping[str, Any]) -> list[Any]:
    """Every entry of the description's exclusion lists."""
    names: list[Any] = []
    for key in ("modules_to_not_convert", "ignored_layers", "ignore", "exclude_modules"):
        value = desc.get(key)
        if isinstance(value, list):
            names.extend(value)
    return names


def scale_bits(weights: Mapping[str, Any], default: int = 16) -> int:
    """A compressed-tensors group's scale width: ``scale_dtype`` (``torch.uint8``, ...) or ``default``."""
    name = str(weights.get("scale_dtype") or "").removeprefix("torch.")
    return SCALE_DTYPE_BITS.get(name, default)


def group_scheme(group: Mapping[str, Any], where: str) -> Scheme:
    """One compressed-tensors ``config_groups`` entry's scheme: its ``format`` name, else its
    ``weights`` figures (see the module docstring)."""
    fmt = str(group.get("format") or "")
    weights = group.get("weights") if isinstance(group.get("weights"), Mapping) else {}
    if "mxfp4" in fmt:
        return Scheme("mxfp4", SCALED_BITS["mxfp4"])
    if "nvfp4" in fmt:
        return Scheme("nvfp4", SCALED_BITS["nvfp4"])
    if not weights:
        raise EngineInputError.single(where, "A config group needs its weights (num_bits, type).")
    bits, kind, size = (weights.get(k) for k in ("num_bits", "type", "group_size"))
    size = size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None
    if kind == "float" and bits == 4 and size in (16, 32):
        return Scheme(*(("nvfp4", SCALED_BITS["nvfp4"]) if size == 16 else ("mxfp4", SCALED_BITS["mxfp4"])))
    if kind == "float" and bits == 8:
        block = weights.get("block_structure")
        if isinstance(block, list) and len(block) == 2 and all(isinstance(b, int) and b > 0 for b in block):
            return Scheme("fp8", 8 + 32 / (block[0] * block[1]))
        return Scheme("fp8", 8.0)
    if kind == "int" and bits in (2, 4, 8):
        extra = 0.0
        if size and weights.get("strategy", "group") == "group":
            extra = scale_bits(weights) / size + (0 if weights.get("symmetric", True) else bits / size)
        return Scheme(f"int{bits}", bits + extra)
    raise EngineInputError.single(
        where, f"Unsupported weights: {bits}-bit {kind} (group {size}); known: 4/8-bit float, 2/4/8-bit int."
    )


def modelopt_scheme(algo: str, group_size: Any, where: str) -> Scheme:
    """A ModelOpt ``quant_algo``'s scheme (``group_size``: NVFP4's and AWQ's scale group)."""
    fmt = MODELOPT_ALGOS.get(algo.upper())
    if fmt is None:
        raise EngineInputError.single(
            f"{where}.quant_algo", f"Unsupported ModelOpt quant_algo {algo!r}; known: {', '.join(MODELOPT_ALGOS)}."
        )
    size = group_size if isinstance(group_size, int) and not isinstance(group_size, bool) and group_size > 0 else None
    if fmt == "nvfp4":
        return Scheme(fmt, 4 + 8 / (size or 16))
    if fmt == "int4":
        return Scheme(fmt, 4 + 16 / (size or 128))
    if fmt == "mxfp4":
        return Scheme(fmt, SCALED_BITS["mxfp4"])
    return Scheme(fmt, 8.0)


def name_prefixes(model_type: str, entries: Sequence[Any]) -> tuple[str, str]:
    """``(decoder prefix, lm_head prefix)`` of full module names: as the lists write them, else the
    family's (``model.``; Nemotron-H ``backbone.``)."""
    layers_prefix = "backbone." if model_type == "nemotron_h" else "model."
    head_prefix = ""
    seen: dict[str, int] = {}
    for entry in entries:
        if not isinstance(entry, str) or entry.startswith(("re:", "mtp")):
            continue
        if ".layers." in entry or entry.startswith("layers."):
            prefix = entry[: entry.index("layers.")]
            seen[prefix] = seen.get(prefix, 0) + 1
    if seen:
        layers_prefix = max(seen, key=lambda p: seen[p])
    for entry in entries:
        if isinstance(entry, str) and not entry.startswith("re:") and entry.endswith("lm_head"):
            head_prefix = entry[: -len("lm_head")]
            break
    return layers_prefix, head_prefix


def full_name(module: Module, model_type: str, prefixes: tuple[str, str]) -> str:
    """The module's name in the checkpoint."""
    layers_prefix, head_prefix = prefixes
    if module.name == "lm_head":
        return f"{head_prefix}lm_head"
    if module.name == "embed_tokens" and model_type == "nemotron_h":
        return f"{layers_prefix}embeddings"
    return f"{layers_prefix}{module.name}"


class Plan:
    """Which scheme each module gets under one description (built by ``module_schemes``)."""

    def __init__(self, base: str) -> None:
        self.base = Scheme(base, SCALED_BITS[base])
        self.default: Scheme | None = None  # every linear layer in the decoder layers
        self.experts: Scheme | None = None  # routed experts (overrides ``default``)
        self.only_experts = False
        self.groups: list[tuple[Selector, Scheme]] = []  # compressed-tensors targets, in order
        self.table: dict[str, Scheme] = {}  # ModelOpt quantized_layers
        self.excluded: Selector | None = None
        self.head: Scheme | None = None

    def scheme(self, module: Module, name: str) -> Scheme:
        if module.name == "lm_head":
            return self.head or self.base
        if not module.linear or module.layer is None:
            return self.base
        if self.excluded is not None and self.excluded.matches(name, module.linear):
            return self.base
        if self.table:
            candidates = [name]
            while "." in candidates[-1]:
                candidates.append(candidates[-1].rsplit(".", 1)[0])
            found = next((self.table[c] for c in candidates if c in self.table), None)
            if found is None:
                return self.base
            return self.experts if (module.part == ROUTED and self.experts) else found
        if self.groups:
            for selector, scheme in self.groups:
                if selector.matches(name, module.linear):
                    return scheme
            return self.base
        if module.part == ROUTED and self.experts:
            return self.experts
        if self.only_experts:
            return self.base
        return self.default or self.base


def build_plan(
    desc: Mapping[str, Any], where: str, base: str, model_type: str, deadline: list[float], notes: list[str]
) -> tuple[Plan, tuple[str, str], str]:
    """The description read into a ``Plan``, the names' prefixes and the method's name for the notes."""
    plan = Plan(base)
    method = str(desc.get("quant_method") or "").lower()
    algo = str(desc.get("quant_algo") or "").upper()
    excluded = exclusions(desc)
    prefixes = name_prefixes(model_type, [*excluded, *(desc.get("quantized_layers") or {})])
    glob_style = "glob"
    if method == "mxfp4":
        plan.experts, plan.only_experts, label = Scheme("mxfp4", SCALED_BITS["mxfp4"]), True, "MXFP4 (transformers)"
    elif method == "fp8":
        block = desc.get("weight_block_size")
        ok = isinstance(block, list) and len(block) == 2 and all(isinstance(b, int) and b > 0 for b in block)
        plan.default = Scheme("fp8", 8 + 32 / (block[0] * block[1]) if ok else 8.0)
        label = f"FP8 with {block[0]}x{block[1]} block scales" if ok else "FP8, per-tensor scales"
    elif algo or (method == "modelopt" and not isinstance(desc.get("config_groups"), Mapping)):
        if algo == "MIXED_PRECISION":
            layers = desc.get("quantized_layers")
            if not isinstance(layers, Mapping) or not layers:
                raise EngineInputError.single(f"{where}.quantized_layers", "MIXED_PRECISION needs quantized_layers.")
            for key, entry in list(layers.items())[:MAX_PATTERNS]:
                entry = entry if isinstance(entry, Mapping) else {}
                algo_of = str(entry.get("quant_algo") or "")
                plan.table[str(key)] = modelopt_scheme(algo_of, entry.get("group_size"), f"{where}.quantized_layers")
            label = "ModelOpt mixed precision (quantized_layers)"
        else:
            plan.default = modelopt_scheme(algo, desc.get("group_size"), where)
            label = f"ModelOpt {algo}"
        moe_algo = str(desc.get("moe_quant_algo") or "")
        if moe_algo:
            plan.experts = modelopt_scheme(moe_algo, desc.get("group_size"), f"{where}.moe")
    elif method in ("compressed-tensors", "modelopt"):
        groups = desc.get("config_groups")
        if not isinstance(groups, Mapping) or not groups:
            raise EngineInputError.single(f"{where}.config_groups", "Required for compressed-tensors.")
        style = "ct" if method == "compressed-tensors" else "glob"
        glob_style = style
        for key, group in groups.items():
            if not isinstance(group, Mapping):
                raise EngineInputError.single(f"{where}.config_groups.{key}", "Must be an object.")
            targets = group.get("targets") if isinstance(group.get("targets"), list) else ["Linear"]
            selector = Selector(targets, "ct", f"{where}.config_groups.{key}.targets", deadline)
            plan.groups.append((selector, group_scheme(group, f"{where}.config_groups.{key}")))
        label = "compressed-tensors" if method == "compressed-tensors" else "ModelOpt (config_groups)"
    elif method in ("gptq", "awq"):
        bits, size = desc.get("bits"), desc.get("group_size")
        if bits not in (2, 4, 8):
            raise EngineInputError.single(f"{where}.bits", f"Unsupported {method} bits {bits!r} (2, 4 or 8).")
        size = size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None
        plan.default = Scheme(f"int{bits}", bits + ((16 + bits) / size if size else 0.0))
        if desc.get("lm_head") is True:
            plan.head = plan.default
        label = f"{method.upper()} {bits}-bit" + (f", groups of {size}" if size else ", per channel")
    else:
        raise EngineInputError.single(
            f"{where}.quant_method",
            f"Unsupported quant_method {method or '(none)'!r}; known: mxfp4, fp8, modelopt, compressed-tensors, "
            "gptq, awq.",
        )
    if excluded:
        plan.excluded = Selector(excluded, glob_style, f"{where}.ignore", deadline)
    return plan, prefixes, label


def weight_parts(
    config: Mapping[str, Any],
    quant_config: Mapping[str, Any] | None,
    modules: Sequence[Module],
    model_type: str,
    notes: list[str],
) -> tuple[WeightPart, ...]:
    """Every module of the inventory in its scheme, merged by module class, format and bits
    (``planner.engine.weight_parts.summarise``); the reasoning goes to ``notes``.

    Raises ``EngineInputError`` keyed by the description's path for a method or algorithm the engine has
    no format for, a malformed pattern, or patterns that take too long to match.
    """
    text = config.get("text_config") if isinstance(config.get("text_config"), Mapping) else None
    base = model_dtype_format(config, text)
    desc, where = quant_description(config, quant_config)
    if desc is None:
        notes.append(f"No quantization_config: every weight in {base} (the config's dtype).")
        return summarise(WeightPart(m.part, base, m.params, SCALED_BITS[base]) for m in modules)
    deadline = [time.monotonic() + PATTERN_BUDGET_S]
    plan, prefixes, label = build_plan(desc, where, base, model_type, deadline, notes)
    parts = []
    for module in modules:
        scheme = plan.scheme(module, full_name(module, model_type, prefixes))
        parts.append(WeightPart(module.part, scheme.format, module.params, scheme.bits))
    rows = summarise(parts)
    quantised = [p for p in rows if p.format != base]
    listed = "; ".join(f"{p.part.replace('_', ' ')} {p.params:,} in {p.format} at {p.bits:g} bits" for p in quantised)
    notes.append(
        f"Weights by module class from {where} ({label}): {listed or 'nothing quantised'}; everything else in "
        f"{base} (embeddings, lm_head, norms, routers and the mixers' small tensors stay unquantised: vLLM loads "
        "them without a quantisation method)."
    )
    if excluded := exclusions(desc):
        notes.append(f"{len(excluded)} exclusion entr{'y' if len(excluded) == 1 else 'ies'} read from {where}.")
    return rows


def record_formats(parts: Sequence[WeightPart]) -> tuple[str, str | None]:
    """The record's ``weight_format`` and ``expert_weight_format`` (``None``: the same) summarising the
    parts: the formats holding the most non-expert and routed-expert parameters."""
    rest = dominant_format(p for p in parts if p.part != ROUTED)
    experts = dominant_format(p for p in parts if p.part == ROUTED)
    rest = rest or experts or "bf16"
    return rest, (experts if experts and experts != rest else None)
