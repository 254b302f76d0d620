"""The config.json importer (planner.engine.model_record_from_config) against what vLLM allocates.

Every real config in tests/fixtures/hf-configs/ (README there: the shared samples and
aiconfigurator_core 0.12.0's model_configs) is imported. Where the importer models the architecture,
the per-token KV cache and the per-sequence state of its layer groups must equal, to the byte, what
vLLM v0.33.0 allocates for that config; the expected bytes are derived here, independently of the
importer, by following vLLM's own code for each model:

* softmax attention: ``vllm/v1/kv_cache_interface.py`` ``AttentionSpec.state_content_size_bytes`` =
  ``(head_size + head_size_v) x dtype`` per KV head per token, ``num_kv_heads`` and ``head_size`` as
  the model's ``Attention`` is built (``models/llama.py``, ``qwen3.py``, ``qwen3_moe.py``,
  ``mixtral.py``, ``minimax_m2.py``, ``gpt_oss.py``; ``gemma4.py`` reads ``per_layer_config``, which
  transformers' ``Gemma4TextConfig`` fills with ``global_head_dim`` and, with ``attention_k_eq_v``,
  ``num_global_key_value_heads`` for the full-attention layers);
* MLA: ``layers/attention/mla_attention.py`` ``get_kv_cache_spec``: one KV head of
  ``kv_lora_rank + qk_rope_head_dim``, no separate V (``MLAAttentionSpec.head_size_v = 0``);
* KDA, gated DeltaNet, Mamba2: ``layers/mamba/mamba_utils.py`` ``MambaStateShapeCalculator``
  (``kda_state_shape``, ``gated_delta_net_state_shape``, ``mamba2_state_shape``) with dtypes from
  ``MambaStateDtypeCalculator`` (``kda_state_dtype``: fp32 recurrent state; the others: the
  ``mamba_ssm_cache_dtype`` that ``models/config.py`` sets from the HF config -
  ``Qwen3_5ForConditionalGenerationConfig`` reads ``mamba_ssm_dtype``,
  ``NemotronHForCausalLMConfig`` ``mamba_ssm_cache_dtype`` defaulting to float32 - and the model
  dtype, bf16, for the convolution state); shapes at tp = 1, no speculative tokens, ``page_size``
  = sum of shape x dtype (``MambaSpec.page_size_bytes``).

Byte counts are integers computed exactly, so they are compared for equality (no tolerance).
Parameter counts are compared with published figures within 2%: a model card rounds its figures to
two or three significant digits (1-2% of rounding), and the importer's counting convention (norms,
biases) differs from a published count by well under 0.5%.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from planner.engine import (
    EngineInputError,
    ModelArch,
    kv_bytes_per_token,
    model_record_from_config,
    state_bytes_per_sequence,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf-configs"
CONFIGS = sorted(p for p in FIXTURES.glob("*_config.json") if not p.name.endswith("_hf_quant_config.json"))
BF16 = 2  # bytes: vLLM's kv-cache-dtype "auto" with a bf16 model, and the conv-state dtype
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
ENGINE_DTYPE = {4: "fp32", 2: "bf16"}

#: Architectures the importer refuses, and a word its message must contain (each checked below).
UNSUPPORTED = {
    "deepseek_v32": "indexer",
    "glm_moe_dsa": "indexer",
    "deepseek_v4": "compressed",
    "deepseek_ref": "compressed",
    "minimax_m3": "sparse",
    "llama4_text": "chunked",
    "mimo_v2_flash": "different widths",
    "nemotron-nas": "block_configs",
    "step3p7": "Step3p7FlashForCausalLM",
}


def load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}_config.json").read_text())


def quant_file(path: Path) -> dict[str, Any] | None:
    side = path.with_name(path.name.replace("_config.json", "_hf_quant_config.json"))
    return json.loads(side.read_text()) if side.exists() else None


def text(config: dict[str, Any]) -> dict[str, Any]:
    """The language model's keys (vLLM ``hf_text_config``)."""
    return config.get("text_config") or config


# --- vLLM's allocation, followed by hand -------------------------------------------------------


def attention_bytes(num_kv_heads: int, head_size: int) -> int:
    """kv_cache_interface.py AttentionSpec: (head_size + head_size_v) x dtype per KV head, per token."""
    return num_kv_heads * (head_size + head_size) * BF16


def vllm_softmax(t: dict[str, Any]) -> list[int]:
    """Per-layer bytes per token of a softmax-attention decoder (llama.py et al.)."""
    heads = t["num_attention_heads"]
    kv_heads = t.get("num_key_value_heads") or heads
    head_dim = t.get("head_dim") or t["hidden_size"] // heads
    out = []
    layer_types = t.get("layer_types") or ["full_attention"] * t["num_hidden_layers"]
    for kind in layer_types:
        if t.get("model_type") == "gemma4_text" and kind == "full_attention":
            # transformers Gemma4TextConfig.per_layer_config for full layers (see module docstring)
            dim = t.get("global_head_dim", 512)
            kv = t["num_global_key_value_heads"] if t.get("attention_k_eq_v") else kv_heads
            out.append(attention_bytes(kv, dim))
        else:
            out.append(attention_bytes(kv_heads, head_dim))
    return out


def vllm_mla(t: dict[str, Any]) -> int:
    """mla_attention.py: one KV head of kv_lora_rank + qk_rope_head_dim, head_size_v = 0."""
    return 1 * (t["kv_lora_rank"] + t["qk_rope_head_dim"] + 0) * BF16


def vllm_expected(config: dict[str, Any]) -> tuple[int, int, dict[str, int]]:
    """(KV bytes per token, state bytes per sequence, linear state dtype bytes) as vLLM allocates."""
    t = text(config)
    mt = t.get("model_type")
    if mt in ("deepseek_v3", "kimi_k2", "deepseek_v2"):
        return t["num_hidden_layers"] * vllm_mla(t), 0, {}
    if mt == "kimi_linear":
        # models/kimi_k3/nvidia/model.py get_mamba_state_shape_from_config -> kda_state_shape
        lac = t["linear_attn_config"]
        h, d, k = lac["num_heads"], lac["head_dim"], lac["short_conv_kernel_size"]
        conv = (k - 1) * (h * d + 2 * h * d)  # conv_dim = proj_size + 2 * proj_k_size
        recurrent = h * d * d  # (num_heads, head_dim, head_dim)
        kda = len(lac["kda_layers"])
        mla = t["num_hidden_layers"] - kda
        state = kda * (conv * BF16 + recurrent * 4)  # kda_state_dtype: fp32 recurrent
        return mla * vllm_mla(t), state, {"state": 4, "conv": BF16}
    if mt in ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"):
        # qwen3_5.py get_mamba_state_shape_from_config -> gated_delta_net_state_shape
        kinds = t["layer_types"]
        hk, hv = t["linear_num_key_heads"], t["linear_num_value_heads"]
        dk, dv, k = t["linear_key_head_dim"], t["linear_value_head_dim"], t["linear_conv_kernel_dim"]
        conv = (k - 1) * (dk * hk * 2 + dv * hv)
        temporal = hv * dv * dk
        ssm = DTYPE_BYTES[t.get("mamba_ssm_dtype", "bfloat16")]  # auto -> the model dtype
        linear = kinds.count("linear_attention")
        full = kinds.count("full_attention")
        head_dim = t.get("head_dim") or t["hidden_size"] // t["num_attention_heads"]
        kv = full * attention_bytes(t["num_key_value_heads"], head_dim)
        return kv, linear * (conv * BF16 + temporal * ssm), {"state": ssm, "conv": BF16}
    if mt == "nemotron_h":
        # nemotron_h.py get_mamba_state_shape_from_config -> mamba2_state_shape (tp 1: no extra groups)
        if "hybrid_override_pattern" in t:
            pattern = t["hybrid_override_pattern"]
        else:
            names = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}
            pattern = "".join(names[x] for x in t["layers_block_type"])
        inter = t["mamba_num_heads"] * t["mamba_head_dim"]
        conv = (t["conv_kernel"] - 1) * (inter + 2 * t["n_groups"] * t["ssm_state_size"])
        temporal = t["mamba_num_heads"] * t["mamba_head_dim"] * t["ssm_state_size"]
        ssm = DTYPE_BYTES[t.get("mamba_ssm_cache_dtype", "float32")]  # NemotronHForCausalLMConfig default
        head_dim = t.get("head_dim") or t["hidden_size"] // t["num_attention_heads"]
        kv = pattern.count("*") * attention_bytes(t["num_key_value_heads"], head_dim)
        return kv, pattern.count("M") * (conv * BF16 + temporal * ssm), {"state": ssm, "conv": BF16}
    return sum(vllm_softmax(t)), 0, {}


def with_vllm_dtypes(model: ModelArch, dtypes: dict[str, int]) -> ModelArch:
    """The model with its linear groups' dtypes set to vLLM's (the importer leaves defaults to the
    serving-engine profile), so the comparison is of the shapes the importer derived."""
    if not dtypes:
        return model
    groups = tuple(
        dataclasses.replace(g, state_dtype=ENGINE_DTYPE[dtypes["state"]], conv_dtype=ENGINE_DTYPE[dtypes["conv"]])
        if g.kind == "linear"
        else g
        for g in model.layer_groups
    )
    return dataclasses.replace(model, layer_groups=groups)


#: The seven files of /work/shared/samples/hf-configs/, copied into the fixtures unchanged (their README),
#: with the architecture each declares.
SHARED_SAMPLE_ARCHITECTURES = {
    "Qwen--Qwen3-30B-A3B_config.json": "Qwen3MoeForCausalLM",
    "Qwen--Qwen3-32B_config.json": "Qwen3ForCausalLM",
    "Qwen--Qwen3.5-35B-A3B_config.json": "Qwen3_5MoeForConditionalGeneration",
    "deepseek-ai--DeepSeek-V3_config.json": "DeepseekV3ForCausalLM",
    "meta-llama--Meta-Llama-3.1-70B_config.json": "LlamaForCausalLM",
    "moonshotai--Kimi-K2-Instruct_config.json": "DeepseekV3ForCausalLM",
    "openai--gpt-oss-120b_config.json": "GptOssForCausalLM",
}


def test_fixtures_hold_every_shared_sample():
    """The shared samples are among the fixtures (README: copied as published), each the model it names; the
    check reads the fixtures only, so it runs on any checkout."""
    assert len(CONFIGS) == 88
    for name, architecture in SHARED_SAMPLE_ARCHITECTURES.items():
        assert json.loads((FIXTURES / name).read_text())["architectures"] == [architecture], name


def test_a_wrapper_of_a_refused_architecture_is_refused_for_the_real_reason():
    """Issue 25: a VL wrapper around a refused language model gets that model's reason, not the generic
    'unsupported'; a refused wrapper around an unknown text model gets the wrapper's."""
    inner = {"model_type": "llama4_text", "attention_chunk_size": 8192}
    with pytest.raises(EngineInputError) as caught:
        model_record_from_config({"model_type": "llama4", "text_config": inner}, name="x")
    (message,) = caught.value.errors["config"]
    assert "'llama4_text' (the language model of this 'llama4' wrapper)" in message and "chunked" in message
    with pytest.raises(EngineInputError) as caught:  # a text_config without its model_type: the wrapper's
        model_record_from_config({"model_type": "llama4", "text_config": {"hidden_size": 5120}}, name="x")
    assert "chunked" in caught.value.errors["config"][0]
    with pytest.raises(EngineInputError) as caught:
        model_record_from_config({"model_type": "step3p7", "text_config": {"model_type": "step3p5"}}, name="x")
    (message,) = caught.value.errors["config"]
    assert "'step3p7' (wrapping 'step3p5')" in message and "Step3p7ForConditionalGeneration" in message


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name.removesuffix("_config.json"))
def test_every_config_imports_as_vllm_allocates_or_is_refused_by_name(path: Path):
    config = json.loads(path.read_text())
    model_type = text(config).get("model_type")
    if model_type in UNSUPPORTED:
        with pytest.raises(EngineInputError) as caught:
            model_record_from_config(config, name=path.name, quant_config=quant_file(path))
        assert list(caught.value.errors) == ["config"]
        assert UNSUPPORTED[model_type] in caught.value.errors["config"][0]
        return
    imported = model_record_from_config(config, name=path.name, quant_config=quant_file(path))
    model = ModelArch.from_record(imported.record)
    kv, state, dtypes = vllm_expected(config)
    assert kv_bytes_per_token(model, "bf16") == kv
    assert state_bytes_per_sequence(with_vllm_dtypes(model, dtypes)) == state
    assert model.num_layers <= text(config).get("num_hidden_layers", 10_000)


# --- named models, by hand -------------------------------------------------------------------


def imported(name: str, **kwargs: Any):
    path = FIXTURES / f"{name}_config.json"
    return model_record_from_config(json.loads(path.read_text()), name=name, quant_config=quant_file(path), **kwargs)


def test_kimi_k3_kda_and_mla():
    """text_config of KimiK3ForConditionalGeneration: 69 KDA layers, 24 MLA (every 4th and the last)."""
    k3 = imported("moonshotai--Kimi-K3", total_params=2_800_000_000_000, active_params=104_000_000_000)
    rec = k3.record
    # Two kinds of layer: each group names its layers' positions (0-based) in the 93-layer stack, which vLLM
    # splits between pipeline stages by position (get_pp_indices).
    mla_at = [*range(3, 92, 4), 92]
    assert rec["layer_groups"] == [
        {
            "kind": "linear",
            "count": 69,
            "key_heads": 96,
            "value_heads": 96,
            "key_dim": 128,
            "value_dim": 128,
            "conv_kernel": 4,
            "variant": "kda",
            "layers": [i for i in range(93) if i not in mla_at],
            "decoder_layers": 93,
        },
        {
            "kind": "mla",
            "count": 24,
            "kv_lora_rank": 512,
            "qk_rope_head_dim": 64,
            "layers": mla_at,
            "decoder_layers": 93,
        },
    ]
    model = ModelArch.from_record(rec)
    # MLA: 24 layers x (512 + 64) x 2 B = 27,648 B per token (bf16 cache)
    assert kv_bytes_per_token(model, "bf16") == 27_648
    # KDA per layer: recurrent 96 x 128 x 128 x 4 B = 6,291,456; conv (4 - 1) x (3 x 96 x 128) x 2 B = 221,184
    assert state_bytes_per_sequence(model) == 69 * (6_291_456 + 221_184) == 449_372_160
    assert (rec["n_routed_experts"], rec["n_active_experts"], rec["n_shared_experts"]) == (896, 16, 2)
    # 896 experts x 3 matrices x 3584 (latent) x 3072 x 92 MoE layers (first_k_dense_replace 1)
    assert rec["expert_params"] == 896 * 3 * 3584 * 3072 * 92 == 2_722_740_830_208
    assert (rec["weight_format"], rec["expert_weight_format"]) == ("bf16", "mxfp4")
    assert (rec["hidden_size"], rec["vocab_size"], rec["max_context_tokens"]) == (7168, 163_840, 1_048_576)
    assert rec["total_params"] == 2_800_000_000_000 and rec["active_params"] == 104_000_000_000
    assert "kimi_linear" in k3.architecture


def test_qwen3_5_27b_and_397b_gated_deltanet():
    small = ModelArch.from_record(imported("Qwen--Qwen3.5-27B").record)
    # 48 GDN layers: conv (4 - 1) x (128 x 16 x 2 + 128 x 48) x 2 B = 61,440; state 48 x 128 x 128 x 4 B = 3,145,728
    assert state_bytes_per_sequence(small) == 48 * (61_440 + 3_145_728) == 153_944_064
    # 16 full layers x 4 KV heads x (256 + 256) x 2 B
    assert kv_bytes_per_token(small, "bf16") == 16 * 4 * 512 * 2 == 65_536
    big = ModelArch.from_record(imported("Qwen--Qwen3.5-397B-A17B").record)
    # 45 GDN layers of 16 key heads x 128, 64 value heads x 128; 15 full layers of 2 KV heads x 256
    conv = 3 * (128 * 16 * 2 + 128 * 64) * 2
    assert state_bytes_per_sequence(big) == 45 * (conv + 64 * 128 * 128 * 4) == 192_061_440
    assert kv_bytes_per_token(big, "bf16") == 15 * 2 * 512 * 2 == 30_720


def test_nemotron_mamba2_hybrids_map_exactly():
    h56 = imported("nvidia--Nemotron-H-56B-Base-8K")
    groups = h56.record["layer_groups"]
    # 54 'M': 256 heads x 64, 8 groups x d_state 256, kernel 4; no mamba_ssm_cache_dtype: no dtype set, the
    # family named so the serving engine's Nemotron-H default applies
    assert groups[0] == {
        "kind": "linear",
        "count": 54,
        "key_heads": 8,
        "value_heads": 256,
        "key_dim": 256,
        "value_dim": 64,
        "conv_kernel": 4,
        "variant": "mamba2",
        "family": "nemotron_h",
        "layers": groups[0]["layers"],
        "decoder_layers": 118,  # the whole hybrid_override_pattern, MLP-only layers included
    }
    assert groups[1] == {
        "kind": "full",
        "count": 10,
        "kv_heads": 8,
        "head_dim": 128,
        "layers": groups[1]["layers"],
        "decoder_layers": 118,
    }
    pattern = json.loads((FIXTURES / "nvidia--Nemotron-H-56B-Base-8K_config.json").read_text())[
        "hybrid_override_pattern"
    ]
    assert groups[0]["layers"] == [i for i, c in enumerate(pattern) if c == "M"]
    assert groups[1]["layers"] == [i for i, c in enumerate(pattern) if c == "*"]
    model = ModelArch.from_record(h56.record)
    # vLLM mamba2_state_shape: temporal (256, 64, 256) fp32; conv (3, 256 x 64 + 2 x 8 x 256) bf16
    assert state_bytes_per_sequence(model) == 54 * (256 * 64 * 256 * 4 + 3 * (16_384 + 4_096) * 2) == 912_605_184
    nano = imported("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    linear = nano.record["layer_groups"][0]
    assert linear["state_dtype"] == "fp32"  # the config states mamba_ssm_cache_dtype float32
    assert "conv_dtype" not in linear
    nano_model = ModelArch.from_record(nano.record)
    # 23 'M': 64 heads x 64, 8 groups x 128: temporal 64 x 64 x 128 x 4; conv 3 x (4096 + 2048) x 2
    assert state_bytes_per_sequence(nano_model) == 23 * (2_097_152 + 36_864) == 49_082_368
    assert kv_bytes_per_token(nano_model, "bf16") == 6 * 2 * 256 * 2 == 6_144


def test_sliding_window_from_layer_types():
    # Two kinds of layer: each group names its positions in the stack (count_groups).
    gpt = imported("openai--gpt-oss-120b").record
    assert gpt["layer_groups"] == [
        {"kind": "sliding", "count": 18, "kv_heads": 8, "head_dim": 64, "window": 128,
         "layers": list(range(0, 36, 2)), "decoder_layers": 36},
        {"kind": "full", "count": 18, "kv_heads": 8, "head_dim": 64,
         "layers": list(range(1, 36, 2)), "decoder_layers": 36},
    ]  # fmt: skip
    gemma = imported("google--gemma-4-26B-A4B").record
    full_at = [5, 11, 17, 23, 29]
    assert gemma["layer_groups"] == [
        {"kind": "sliding", "count": 25, "kv_heads": 8, "head_dim": 256, "window": 1024,
         "layers": [i for i in range(30) if i not in full_at], "decoder_layers": 30},
        # global_head_dim, k_eq_v global heads
        {"kind": "full", "count": 5, "kv_heads": 2, "head_dim": 512, "layers": full_at, "decoder_layers": 30},
    ]  # fmt: skip


def test_qwen2_style_and_pattern_sliding_rules():
    base = {
        "model_type": "qwen2",
        "num_hidden_layers": 4,
        "hidden_size": 256,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 1000,
        "intermediate_size": 512,
        "max_position_embeddings": 4096,
        "sliding_window": 1024,
        "use_sliding_window": True,
        "max_window_layers": 2,
    }
    groups = model_record_from_config(base, name="q").record["layer_groups"]
    assert groups == [
        {"kind": "full", "count": 2, "kv_heads": 2, "head_dim": 64, "layers": [0, 1], "decoder_layers": 4},
        {"kind": "sliding", "count": 2, "kv_heads": 2, "head_dim": 64, "window": 1024,
         "layers": [2, 3], "decoder_layers": 4},
    ]  # fmt: skip
    off = model_record_from_config({**base, "use_sliding_window": False}, name="q").record["layer_groups"]
    assert off == [{"kind": "full", "count": 4, "kv_heads": 2, "head_dim": 64}]  # one kind: no positions
    gemma3 = {**base, "model_type": "gemma3_text", "sliding_window_pattern": 2}
    del gemma3["use_sliding_window"]
    pattern = model_record_from_config(gemma3, name="g").record["layer_groups"]
    assert [(g["kind"], g["count"]) for g in pattern] == [("sliding", 2), ("full", 2)]
    mha = {k: v for k, v in base.items() if k != "num_key_value_heads"}
    mha_groups = model_record_from_config(mha, name="m").record["layer_groups"]
    assert mha_groups[0]["kv_heads"] == 4  # no num_key_value_heads: MHA, as vLLM reads it


def test_multimodal_wrapper_reads_text_config():
    vl = imported("Qwen--Qwen3-VL-32B-Instruct")
    assert vl.record["layer_groups"] == [{"kind": "full", "count": 64, "kv_heads": 8, "head_dim": 128}]
    assert vl.record["hidden_size"] == 5120 and vl.record["max_context_tokens"] == 262_144
    assert any("Vision" in a for a in vl.assumptions)


def test_weight_formats():
    fp8 = imported("Qwen--Qwen3-235B-A22B-FP8")
    assert (fp8.record["weight_format"], fp8.record["expert_weight_format"]) == ("fp8", None)
    assert any("FP8 with 128x128 block scales" in a for a in fp8.assumptions)
    # ModelOpt NVFP4 read from the hf_quant_config.json shipped beside the config (the config has none)
    path = FIXTURES / "nvidia--DeepSeek-V3.1-NVFP4_config.json"
    assert "quantization_config" not in json.loads(path.read_text())
    nvfp4 = imported("nvidia--DeepSeek-V3.1-NVFP4")
    # Its exclusions keep q_a/q_b/kv_a/kv_b of every layer in bf16 and leave o_proj in NVFP4: most of the
    # non-expert weights are NVFP4 (the record's summary), the parts say which (with the latent norms, bf16).
    assert (nvfp4.record["weight_format"], nvfp4.record["expert_weight_format"]) == ("nvfp4", None)
    attention = {p["format"]: p["params"] for p in nvfp4.record["weight_parts"] if p["part"] == "attention"}
    assert attention == {
        "nvfp4": 61 * 128 * 128 * 7168,
        "bf16": 61 * (7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 1536 + 512),
    }
    without = model_record_from_config(json.loads(path.read_text()), name="x")
    assert without.record["weight_format"] == "bf16" and without.record["expert_weight_format"] is None
    gpt = imported("openai--gpt-oss-120b").record
    assert (gpt["weight_format"], gpt["expert_weight_format"]) == ("bf16", "mxfp4")
    k25 = imported("moonshotai--Kimi-K2.5").record  # compressed-tensors int4 experts
    assert (k25["weight_format"], k25["expert_weight_format"]) == ("bf16", "int4")
    mixed = imported("nvidia--Qwen3.6-35B-A3B-NVFP4").record  # MIXED_PRECISION: FP8 attention, NVFP4 experts
    assert (mixed["weight_format"], mixed["expert_weight_format"]) == ("fp8", "nvfp4")
    given = imported("openai--gpt-oss-120b", weight_format="fp8").record
    assert (given["weight_format"], given["expert_weight_format"]) == ("fp8", None)


def test_state_dtypes_only_where_the_config_states_them():
    for name in ("moonshotai--Kimi-K3", "nvidia--Nemotron-H-56B-Base-8K"):
        for group in imported(name, total_params=3 * 10**12).record["layer_groups"]:
            assert "state_dtype" not in group and "conv_dtype" not in group
    qwen = imported("Qwen--Qwen3.5-27B").record["layer_groups"][0]
    assert qwen["state_dtype"] == "fp32" and "conv_dtype" not in qwen  # mamba_ssm_dtype float32
    assert qwen["variant"] == "gated_deltanet"  # the profile picks the conv dtype for the variant


# --- parameter counts against published figures ------------------------------------------------

#: (config, published total, published active or None, source). Active figures compare the count
#: with the input embedding left out where the publisher leaves it out (see each source).
PUBLISHED = [
    ("meta-llama--Meta-Llama-3.1-70B", 70.6e9, None, "Hub model page, 'Model size 70.6B params'"),
    ("Qwen--Qwen3-32B", 32.8e9, None, "Qwen3-32B model card, 'Number of Parameters: 32.8B'"),
    ("Qwen--Qwen3-30B-A3B", 30.5e9, 3.3e9, "Qwen3-30B-A3B model card, '30.5B in total and 3.3B activated'"),
    ("deepseek-ai--DeepSeek-V3", 671e9, 37e9, "DeepSeek-V3 README, '671B total, 37B activated' (+14B MTP)"),
    ("openai--gpt-oss-120b", 116.83e9, 5.13e9, "gpt-oss model card (arXiv 2508.10925) table 1"),
    ("moonshotai--Kimi-K2-Instruct", 1.04e12, 32e9, "Kimi K2 card: 1T (1.04T unrounded) total, 32B activated"),
    ("Qwen--Qwen3.5-35B-A3B", 35e9, None, "Qwen3.5-35B-A3B model card, '35B total, 3B activated'"),
]
#: Publishers that leave the input embedding (a table look-up, not a matmul) out of "active":
#: gpt-oss's table counts 'unembedding' but not the embedding in its 5.13B; Kimi K2's card does not
#: say, but its 32B is 1.0% above the count without the input embedding and 2.7% below it with.
ACTIVE_WITHOUT_INPUT_EMBEDDING = {"openai--gpt-oss-120b", "moonshotai--Kimi-K2-Instruct"}


@pytest.mark.parametrize("name,total,active,source", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_parameter_counts_within_two_percent_of_published(name, total, active, source):
    rec = imported(name).record
    assert rec["total_params"] == pytest.approx(total, rel=0.02), source
    if active is not None:
        counted = rec["active_params"]
        if name in ACTIVE_WITHOUT_INPUT_EMBEDDING:
            counted -= rec["vocab_size"] * rec["hidden_size"]
        assert counted == pytest.approx(active, rel=0.02), source


def test_qwen3_5_35b_active_rounds_to_its_published_3b():
    """'A3B' is one significant figure: the count (3.45B with embeddings) must round to 3B."""
    rec = imported("Qwen--Qwen3.5-35B-A3B").record
    assert round(rec["active_params"] / 1e9) == 3


def test_parameter_counts_exact_figures():
    """The figures the catalogue was built from (fleet/catalog/README.md), to the parameter."""
    assert imported("deepseek-ai--DeepSeek-V3").record["expert_params"] == 653_908_770_816
    assert imported("moonshotai--Kimi-K2-Instruct").record["expert_params"] == 1_014_686_023_680
    assert imported("openai--gpt-oss-120b").record["expert_params"] == 114_701_598_720
    assert imported("meta-llama--Meta-Llama-3.1-70B").record["expert_params"] is None
    v3 = imported("deepseek-ai--DeepSeek-V3")
    assert any("multi-token-prediction" in a for a in v3.assumptions)


# --- bad input ------------------------------------------------------------------------------


def test_unknown_architecture_and_missing_fields_are_named():
    with pytest.raises(EngineInputError) as caught:
        model_record_from_config({"model_type": "falcon_h9"}, name="x")
    assert "falcon_h9" in caught.value.errors["config"][0]
    with pytest.raises(EngineInputError) as caught:
        model_record_from_config({"hidden_size": 4096}, name="x")
    assert "config.model_type" in caught.value.errors
    with pytest.raises(EngineInputError) as caught:
        model_record_from_config({"model_type": "qwen3", "hidden_size": 4096, "num_attention_heads": 32}, name="x")
    for key in ("num_hidden_layers", "vocab_size", "max_position_embeddings"):
        assert f"config.{key}" in caught.value.errors, key
    no_mlp = {k: v for k, v in load("Qwen--Qwen3-32B").items() if k != "intermediate_size"}
    with pytest.raises(EngineInputError) as caught:
        model_record_from_config(no_mlp, name="x")
    assert list(caught.value.errors) == ["config.intermediate_size"]
    wrapped = {"model_type": "qwen3_vl", "text_config": {"model_type": "qwen3_vl_text"}}
    with pytest.raises(EngineInputError) as caught:
        model_record_from_config(wrapped, name="x")
    assert "config.text_config.num_hidden_layers" in caught.value.errors


@pytest.mark.parametrize(
    "change,key",
    [
        ({"num_attention_heads": -8}, "config.num_attention_heads"),
        ({"num_key_value_heads": 0}, "config.num_key_value_heads"),
        ({"hidden_size": 10**30}, "config.hidden_size"),
        ({"num_hidden_layers": 10**9}, "config.num_hidden_layers"),
        ({"vocab_size": 1.5}, "config.vocab_size"),
        ({"head_dim": True}, "config.head_dim"),
        ({"layer_types": "full"}, "config.layer_types"),
        ({"quantization_config": {"quant_method": "bitsandbytes"}}, "config.quantization_config.quant_method"),
    ],
)
def test_hostile_values_are_field_errors(change, key):
    config = {**load("Qwen--Qwen3-32B"), **change}
    with pytest.raises(EngineInputError) as caught:
        model_record_from_config(config, name="x")
    assert key in caught.value.errors


def test_not_an_object_and_bad_arguments():
    for bad in ([], "config", 3, None):
        with pytest.raises(EngineInputError) as caught:
            model_record_from_config(bad, name="x")  # type: ignore[arg-type]
        assert list(caught.value.errors) == ["config"]
    config = load("Qwen--Qwen3-32B")
    with pytest.raises(EngineInputError) as caught:
        model_record_from_config(config, name=" ", total_params=-1, weight_format="fp4", quant_config=[])  # type: ignore[arg-type]
    assert set(caught.value.errors) >= {"name", "total_params", "weight_format", "quant_config"}
    with pytest.raises(EngineInputError) as caught:
        model_record_from_config(load("deepseek-ai--DeepSeek-V3"), name="x", total_params=10**9)
    assert "total_params" in caught.value.errors  # fewer than the routed experts hold
    huge = {**config, "intermediate_size": 2**31 - 1, "hidden_size": 2**31 - 1, "head_dim": 128}
    with pytest.raises(EngineInputError) as caught:
        model_record_from_config(huge, name="x")
    assert "config" in caught.value.errors  # more than 10^15 parameters


def test_mutated_configs_raise_only_field_errors():
    """Real configs with random keys set to hostile values (seeded): a field error or a record, never
    another exception (a 500 at the API)."""
    import random

    hostile = [None, -1, 0, 2**40, 1.5, "x", True, [], {}, [1, 2], {"a": 1}, float("inf"), 10**100]
    rng = random.Random(12)
    for _ in range(600):
        config = json.loads(rng.choice(CONFIGS).read_text())
        target = text(config)
        for _ in range(rng.randint(1, 3)):
            target[rng.choice(list(target))] = rng.choice(hostile)
        try:
            imported_model = model_record_from_config(config, name="x")
        except EngineInputError as exc:
            assert exc.errors and all(isinstance(m, str) for ms in exc.errors.values() for m in ms)
        else:
            ModelArch.from_record(imported_model.record)


def test_catalogue_kimi_k3_is_what_the_importer_derives_from_its_config():
    """One definition: the catalogue row names the config; the importer gives its figures, and the
    published config (the fixture) gives the same record, its counts included (issue 25: the model card's
    rounded 2.8T / 104B are in the row's assumptions, not in its figures)."""
    from fleet.catalog import reference

    catalogue_copy = Path(reference.CATALOG_DIR) / "hf-configs" / "moonshotai--Kimi-K3_config.json"
    assert catalogue_copy.read_bytes() == (FIXTURES / "moonshotai--Kimi-K3_config.json").read_bytes()
    derived = imported("moonshotai--Kimi-K3")
    row = reference.model_record("kimi-k3")
    assert (row["total_params"], row["active_params"]) == (2_779_481_795_168, 105_361_336_928)
    assert any("2.8T" in a and "104B" in a for a in row["assumptions"])
    assert {key: row[key] for key in derived.record} == {**derived.record, "name": "Kimi K3"}
    # The figures the catalogue held before it derived them (issue 12): unchanged.
    assert row["expert_params"] == 2_722_740_830_208
    assert (row["weight_format"], row["expert_weight_format"]) == ("bf16", "mxfp4")
    assert (row["n_routed_experts"], row["n_active_experts"], row["n_shared_experts"]) == (896, 16, 2)
    assert (row["hidden_size"], row["vocab_size"], row["attention_heads"]) == (7168, 163_840, 96)
