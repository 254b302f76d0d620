"""Import a model from its Hugging Face ``config.json``: a catalogue row / ``ModelSpec`` figures.

``model_record_from_config(config, name=...)`` reads the architecture (``model_type``, the language
model's keys in ``text_config`` for a multimodal wrapper), lays out its layers as the engine's layer
groups, counts its parameters from the dimensions unless they are given, and reads its weight formats
from the quantisation description. Every figure it did not read straight from the config is said in
``assumptions``. A config it cannot model exactly raises ``EngineInputError`` keyed by the field to
fix (``config.num_key_value_heads``), or ``config`` for an architecture it does not know: it never
guesses. Non-finite numbers (``Infinity``, ``NaN``) are ignored at keys it does not read and refused
at keys it reads (``finite``).

Modules, by concept: ``finite`` (non-finite numbers), ``reader`` (typed look-ups collecting errors
by path), ``layers`` (layer schedules per family -> layer groups), ``params`` (parameter counts),
``quantization`` (weight formats). The mapping of each family and where it comes from:
docs/sizing.md, "Importing a model from config.json".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import EngineInputError, is_int
from ..formats import WEIGHT_FORMATS
from ..limits import MAX_CONTEXT_TOKENS, MAX_PARAMS
from ..spec import ModelArch
from .finite import finite_config
from .layers import Layer, count_groups, gdn_layers, gqa_layers, kda_layers, mamba2_layers, mla_layers, routed_experts
from .params import ParamCounts, count_params
from .quantization import record_formats, weight_parts
from .reader import ConfigReader

#: Language-model ``model_type`` -> (family, what its layers are). The family picks the layer schedule.
MODEL_TYPES: dict[str, tuple[str, str]] = {
    "llama": ("gqa", "softmax attention (GQA)"),
    "mistral": ("gqa", "softmax attention (GQA)"),
    "mixtral": ("gqa", "softmax attention (GQA), MoE"),
    "qwen2": ("gqa", "softmax attention (GQA)"),
    "qwen2_moe": ("gqa", "softmax attention (GQA), MoE"),
    "qwen3": ("gqa", "softmax attention (GQA)"),
    "qwen3_moe": ("gqa", "softmax attention (GQA), MoE"),
    "qwen3_vl_text": ("gqa", "softmax attention (GQA), text model of a VL wrapper"),
    "qwen3_vl_moe_text": ("gqa", "softmax attention (GQA), MoE, text model of a VL wrapper"),
    "minimax_m2": ("gqa", "softmax attention (GQA), MoE"),
    "mimo": ("gqa", "softmax attention (GQA)"),
    "gpt_oss": ("gqa", "sliding-window + full softmax attention, MoE"),
    "gemma3_text": ("gqa", "sliding-window + full softmax attention"),
    "gemma4_text": ("gqa", "sliding-window + full softmax attention (wider full layers)"),
    "deepseek_v2": ("mla", "multi-head latent attention (MLA), MoE"),
    "deepseek_v3": ("mla", "multi-head latent attention (MLA), MoE"),
    "kimi_k2": ("mla", "multi-head latent attention (MLA), MoE"),
    "kimi_linear": ("kda", "Kimi Delta Attention (KDA) + MLA, MoE"),
    "qwen3_next": ("gdn", "gated DeltaNet + gated softmax attention, MoE"),
    "qwen3_5_text": ("gdn", "gated DeltaNet + gated softmax attention"),
    "qwen3_5_moe_text": ("gdn", "gated DeltaNet + gated softmax attention, MoE"),
    "nemotron_h": ("mamba2", "Mamba2 + softmax attention hybrid"),
}

#: Architectures known but not expressible as layer groups, and why (the message a person gets).
UNSUPPORTED: dict[str, str] = {
    "deepseek_v32": "DeepSeek Sparse Attention keeps an indexer key cache per token beside the MLA latent "
    "(vLLM DeepseekV32IndexerCache), which layer groups cannot express",
    "glm_moe_dsa": "DeepSeek Sparse Attention (GLM-5) keeps an indexer key cache per token beside the MLA latent "
    "(vLLM DeepseekV32IndexerCache), which layer groups cannot express",
    "deepseek_v4": "DeepSeek-V4's compressed sparse attention (compress_ratios, a compressed and a sliding cache "
    "per layer) is not modelled",
    "deepseek_ref": "DeepSeek-V4's compressed sparse attention (compress_ratios) is not modelled",
    "minimax_m3": "MiniMax-M3's block-sparse attention (sparse_attention_config) is not modelled",
    "llama4_text": "Llama 4's chunked local attention (attention_chunk_size) is not modelled",
    # Its VL wrapper, for a text_config that does not name its model_type.
    "llama4": "Llama 4's chunked local attention (attention_chunk_size) is not modelled",
    "mimo_v2_flash": "MiMo-V2-Flash's attention has keys (head_dim) and values (v_head_dim) of different widths, "
    "which a layer group cannot express",
    "nemotron-nas": "a NAS model's per-layer block_configs (attention skipped or narrowed layer by layer) are "
    "not modelled",
    "step3p7": "vLLM registers Step-3.7 only as the vision-language Step3p7ForConditionalGeneration (vLLM 0.33 "
    "model_executor/models/registry.py); the text-only Step3p7FlashForCausalLM this config names is in no "
    "vLLM release modelled here, so there is no serving model whose cache rules to follow",
}

#: Wrapper ``architectures`` names -> language-model ``model_type``, for a config without ``model_type``.
ARCHITECTURE_TYPES: dict[str, str] = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "MixtralForCausalLM": "mixtral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "GptOssForCausalLM": "gpt_oss",
}


@dataclass(frozen=True, slots=True)
class ImportedModel:
    """A converted config: the record (the keys of ``MODEL_RECORD_FIELDS`` plus ``name``), the
    sentences saying what was derived and how, the architecture read, and the Hub id if the config
    names one (``_name_or_path``)."""

    record: dict[str, Any]
    assumptions: tuple[str, ...]
    architecture: str
    hf_model_id: str = ""


def language_model_type(config: Mapping[str, Any]) -> str | None:
    """The language model's ``model_type`` (``text_config``'s for a wrapper), else from ``architectures``."""
    text = config.get("text_config")
    for source in (text, config):
        if isinstance(source, Mapping) and isinstance(source.get("model_type"), str) and source["model_type"]:
            return source["model_type"]
    archs = config.get("architectures")
    if isinstance(archs, list):
        for arch in archs:
            if isinstance(arch, str) and arch in ARCHITECTURE_TYPES:
                return ARCHITECTURE_TYPES[arch]
    return None


def check_count(field: str, value: Any, errors: dict[str, list[str]]) -> int | None:
    """A given parameter count: a whole number from 1 to ``MAX_PARAMS`` (``None`` passes)."""
    if value is None:
        return None
    if not is_int(value) or not 1 <= value <= MAX_PARAMS:
        errors[field] = [f"Must be a whole number from 1 to {MAX_PARAMS:,}."]
        return None
    return value


def model_record_from_config(
    config: Mapping[str, Any],
    *,
    name: str,
    total_params: int | None = None,
    active_params: int | None = None,
    weight_format: str | None = None,
    quant_config: Mapping[str, Any] | None = None,
) -> ImportedModel:
    """Convert a Hugging Face ``config.json`` (parsed) into a model record.

    ``total_params`` / ``active_params`` (plain counts) replace the counts computed from the
    dimensions (a model card's figures, say); ``weight_format`` replaces the formats read from the
    quantisation description (every weight in it); ``quant_config`` is a ModelOpt
    ``hf_quant_config.json`` shipped beside the config. Raises ``EngineInputError`` keyed by field:
    ``config`` (not an object, or an architecture not modelled), ``config.<key>`` (a key the
    architecture needs, missing or out of range), ``name``, ``total_params``, ``active_params``,
    ``weight_format``, ``quant_config``. A non-finite number is ``config.<key>: Must be a finite
    number`` at a key it reads, and ignored elsewhere (``finite``).
    """
    errors: dict[str, list[str]] = {}
    if not isinstance(config, Mapping):
        raise EngineInputError.single("config", "Give the config.json object (a JSON object, not a list or value).")
    if quant_config is not None and not isinstance(quant_config, Mapping):
        errors["quant_config"] = ["Give hf_quant_config.json as a JSON object."]
    config, non_finite = finite_config(config)
    quant_config, _ = finite_config(quant_config, "quant_config")  # read for strings and whole numbers only
    if not isinstance(name, str) or not name.strip():
        errors["name"] = ["Give the model a name."]
    given_total = check_count("total_params", total_params, errors)
    given_active = check_count("active_params", active_params, errors)
    if weight_format is not None and weight_format not in WEIGHT_FORMATS:
        errors["weight_format"] = [f"Unknown weight format {weight_format!r}; use one of {', '.join(WEIGHT_FORMATS)}."]

    model_type = language_model_type(config)
    if model_type is None:
        errors["config.model_type"] = ["Required: the architecture is read from model_type (or architectures)."]
        raise EngineInputError(errors)
    wrapper = config.get("model_type") if isinstance(config.get("model_type"), str) else None
    wrapper = wrapper if wrapper and wrapper != model_type and isinstance(config.get("text_config"), Mapping) else None
    refused = model_type if model_type in UNSUPPORTED else wrapper if wrapper in UNSUPPORTED else None
    if refused is not None:
        # A wrapper (a VL model around a language model) is refused for its language model's reason, or its own.
        where = f" (the language model of this {wrapper!r} wrapper)" if wrapper and refused == model_type else ""
        own = f" (wrapping {model_type!r})" if refused == wrapper else ""
        errors["config"] = [f"Unsupported architecture {refused!r}{where}{own}: {UNSUPPORTED[refused]}."]
        raise EngineInputError(errors)
    if model_type not in MODEL_TYPES:
        errors["config"] = [
            f"Unsupported architecture {model_type!r} (model_type); supported: {', '.join(sorted(MODEL_TYPES))}."
        ]
        raise EngineInputError(errors)
    family, description = MODEL_TYPES[model_type]
    r = ConfigReader(config, model_type, non_finite)
    for key, reason in (
        ("index_topk", "a sparse-attention indexer cache is not modelled"),
        ("attention_chunk_size", "chunked local attention is not modelled"),
        ("num_kv_shared_layers", "layers that reuse another layer's KV cache are not modelled"),
    ):
        value = r.raw(key)
        if value not in (None, 0):
            r.error(key, f"Unsupported: {reason}.")

    notes: list[str] = []
    builders = {
        "gqa": lambda: gqa_layers(r, model_type, notes),
        "mla": lambda: mla_layers(r, notes),
        "kda": lambda: kda_layers(r, notes),
        "gdn": lambda: gdn_layers(r, notes),
        "mamba2": lambda: mamba2_layers(r, notes),
    }
    layers: list[Layer] = builders[family]()
    hidden = r.integer("hidden_size")
    vocab = r.integer("vocab_size")
    context = r.integer("max_position_embeddings", maximum=MAX_CONTEXT_TOKENS)
    experts, top_k = routed_experts(r)
    counts = count_params(r, model_type, layers, notes)  # run anyway: it names its own missing keys
    errors.update(r.errors)
    if errors:
        raise EngineInputError(errors)
    if counts.total > MAX_PARAMS:
        raise EngineInputError.single("config", f"The dimensions give {counts.total:,} parameters, more than 10^15.")

    parts = None
    summary: tuple[str, str | None] = (weight_format or "", None)
    if weight_format is None:
        parts = weight_parts(config, quant_config, counts.modules, model_type, notes)
        summary = record_formats(parts)
    total = given_total if given_total is not None else counts.total
    active = given_active if given_active is not None else counts.active
    assumptions = parameter_notes(counts, given_total, given_active, experts)
    if counts.experts and counts.experts >= total:
        errors["total_params"] = [f"Must exceed the {counts.experts:,} parameters the config puts in routed experts."]
    if active > total:
        errors["active_params"] = ["Cannot exceed the total parameter count."]
    if total > MAX_PARAMS:
        errors["total_params"] = [f"The config's dimensions give {total:,} parameters; the most is {MAX_PARAMS:,}."]
    if errors:
        raise EngineInputError(errors)

    groups = count_groups(layers)
    heads = r.raw("num_attention_heads") if any(layer.mixer in ("gqa", "mla") for layer in layers) else None
    record: dict[str, Any] = {
        "name": name.strip(),
        "total_params": total,
        "active_params": active,
        "expert_params": counts.experts or None,
        "n_routed_experts": experts,
        "n_active_experts": top_k,
        "n_shared_experts": counts.n_shared_experts if experts else 0,
        "hidden_size": hidden,
        "vocab_size": vocab,
        "max_context_tokens": context,
        "attention_heads": heads,
        "weight_format": weight_format or summary[0],
        "expert_weight_format": None if weight_format else summary[1],
        # A linear group's dtypes appear only where the config states them (None otherwise): the
        # serving-engine profile decides the defaults for its variant.
        "layer_groups": [g.to_dict() for g in groups],
    }
    if parts and given_total is None and given_active is None:
        record["weight_parts"] = [p.to_dict() for p in parts]
    elif parts:
        notes.append(
            "Weights by module class not stored: total_params or active_params is given, so the parts counted "
            "from the config would not add up; the two formats apply to every weight."
        )
    if weight_format is not None:
        notes.append(f"weight_format given: every weight counted in {weight_format}.")
    notes.append(f"max_context_tokens is max_position_embeddings {context:,} (no RoPE scaling applied).")
    ModelArch.from_record(record)  # the engine must size what it built (raises EngineInputError)
    name_or_path = r.raw("_name_or_path")
    return ImportedModel(
        record=record,
        assumptions=(*assumptions, *notes),
        architecture=f"{model_type}: {description}",
        hf_model_id=name_or_path if isinstance(name_or_path, str) else "",
    )


def parameter_notes(counts: ParamCounts, given_total: int | None, given_active: int | None, experts: int) -> list[str]:
    """What the parameter figures are: given, or computed (and the convention)."""
    notes: list[str] = []
    if given_total is None:
        notes.append(
            f"total_params {counts.total:,} computed from the dimensions: embeddings and an untied lm_head "
            "included, norms included, MTP layers and vision towers excluded."
        )
    else:
        notes.append(f"total_params {given_total:,} given (computed from the dimensions: {counts.total:,}).")
    if given_active is None:
        notes.append(
            f"active_params {counts.active:,} computed: every parameter outside the routed experts plus the "
            "experts a token is routed to."
            if experts
            else f"active_params {counts.active:,}: a dense model uses every parameter per token."
        )
    else:
        notes.append(f"active_params {given_active:,} given (computed from the dimensions: {counts.active:,}).")
    if experts:
        notes.append(f"expert_params {counts.experts:,} computed: the routed experts of every MoE layer.")
    return notes
