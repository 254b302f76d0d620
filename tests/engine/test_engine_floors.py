"""Weights-only GPU floors and the seeds' single-accelerator tier (tier 2)."""

import pytest

from planner.engine.errors import EngineInputError
from planner.engine.presets import B200_192GB, GB300_288GB, H100_80GB, H200_141GB, KIMI_K3, LLAMA_31_70B
from planner.engine.sizing.floors import min_gpus_for_weights, single_gpu_fit
from planner.engine.sizing.weights import weights_bytes
from planner.engine.spec import Accelerator, LayerGroup, ModelArch


@pytest.mark.parametrize(
    ("accelerator", "floor"),
    [(H100_80GB, 18), (H200_141GB, 10), (B200_192GB, 8), (GB300_288GB, 5)],
)
def test_k3_weights_floor(accelerator, floor):
    """Seeds: 1.4 TB (MXFP4, no scales) over nominal decimal GB: ceil(1400/80) = 18, ceil(1400/141) = 10,
    ceil(1400/192) = 8, ceil(1400/288) = 5."""
    raw = weights_bytes(KIMI_K3, weight_format="mxfp4", include_scale_overhead=False)
    assert raw == 1_400_000_000_000
    assert min_gpus_for_weights(raw, accelerator) == floor


def test_floor_edge_cases():
    assert min_gpus_for_weights(80_000_000_000, H100_80GB) == 1
    assert min_gpus_for_weights(80_000_000_001, H100_80GB) == 2
    assert min_gpus_for_weights(0, H100_80GB) == 0
    with pytest.raises(EngineInputError) as exc:
        min_gpus_for_weights(1, Accelerator(name="none", hbm_gb=0))
    assert set(exc.value.errors) == {"hbm_gb"}


def _dense(name, params, layers, kv_heads, max_context=131_072):
    return ModelArch(
        name=name,
        total_params=params,
        active_params=params,
        layer_groups=(LayerGroup(kind="full", count=layers, kv_heads=kv_heads, head_dim=128),),
        max_context_tokens=max_context,
    )


# Published configs (config.json of each): layers, KV heads, head_dim 128; model-card parameter counts.
QWEN25_7B = _dense("Qwen2.5-7B", 7_610_000_000, 28, 4)
QWEN25_14B = _dense("Qwen2.5-14B", 14_700_000_000, 48, 8)
QWEN25_32B = _dense("Qwen2.5-32B", 32_800_000_000, 64, 8)
QWEN3_30B_A3B = ModelArch(
    name="Qwen3-30B-A3B",
    total_params=30_500_000_000,
    active_params=3_300_000_000,
    layer_groups=(LayerGroup(kind="full", count=48, kv_heads=4, head_dim=128),),
    n_routed_experts=128,
    n_active_experts=8,
    max_context_tokens=131_072,
)


def _card(gb):
    return Accelerator(name=f"{gb} GB card", hbm_gb=gb)


@pytest.mark.parametrize("scales", [True, False])
@pytest.mark.parametrize(
    ("gb", "model", "fmt", "context"),
    [
        (16, QWEN25_7B, "int4", 32_768),  # "7B at 4 bits, with room for a long context"
        (24, QWEN25_14B, "int4", 8192),
        (48, QWEN25_32B, "int4", 8192),
        (80, LLAMA_31_70B, "int4", 8192),
        (80, QWEN3_30B_A3B, "fp8", 8192),  # "a 30B-class MoE at 8 bits"
    ],
)
def test_seed_tier2_pairings_fit(gb, model, fmt, context, scales):
    """Seeds' tier 2: params x bytes + KV for one user + about 2 GB runtime must fit in VRAM."""
    fit = single_gpu_fit(model, _card(gb), context, weight_format=fmt, include_scale_overhead=scales)
    assert fit.fits, fit
    assert fit.required_bytes == fit.weights_bytes + fit.kv_bytes + fit.state_bytes + 2_000_000_000
    assert fit.headroom_bytes >= 0


@pytest.mark.parametrize(
    ("gb", "model"),
    [(16, QWEN25_7B), (24, QWEN25_14B), (48, QWEN25_32B), (80, LLAMA_31_70B)],
)
def test_same_models_in_bf16_do_not_fit(gb, model):
    """Why the seeds quantise: in bf16 each pairing overflows its card."""
    fit = single_gpu_fit(model, _card(gb), 8192, weight_format="bf16")
    assert not fit.fits
    assert fit.headroom_bytes < 0


def test_70b_at_4_bits_does_not_fit_24gb():
    assert not single_gpu_fit(LLAMA_31_70B, _card(24), 8192, weight_format="int4").fits


def test_default_context_and_assumptions():
    fit = single_gpu_fit(QWEN25_7B, _card(16), weight_format="int4")
    assert fit.context_tokens == 8192
    assert "2 GB runtime" in fit.assumptions[0]
    assert fit.to_dict()["fits"] is True


def test_context_beyond_model_maximum_is_a_field_error():
    with pytest.raises(EngineInputError) as exc:
        single_gpu_fit(QWEN25_7B, _card(16), 200_000)
    assert set(exc.value.errors) == {"context_tokens"}
