"""Weights-only GPU floors and the seeds' single-accelerator tier (tier 2)."""

from dataclasses import replace

import pytest

from fleet.catalog import reference
from planner.engine.errors import EngineInputError
from planner.engine.sizing.floors import min_gpus_for_weights, single_gpu_fit
from planner.engine.sizing.weights import weights_bytes
from planner.engine.spec import Accelerator, LayerGroup, ModelArch

KIMI_K3 = reference.model("kimi-k3")
H100_80GB = reference.accelerator("h100-sxm-80gb")
#: The seeds' four SKUs and their nominal decimal GB.
SEED_SKUS = {"h100-sxm-80gb": 80, "h200-141gb": 141, "b200-192gb": 192, "gb300-288gb": 288}


@pytest.mark.parametrize(
    ("slug", "floor"),
    [("h100-sxm-80gb", 18), ("h200-141gb", 10), ("b200-192gb", 8), ("gb300-288gb", 5)],
)
def test_k3_weights_floor(slug, floor):
    """Seeds: 1.4 TB (every weight in MXFP4, no scales) over nominal decimal GB: ceil(1400/80) = 18,
    ceil(1400/141) = 10, ceil(1400/192) = 8, ceil(1400/288) = 5."""
    accelerator = reference.accelerator(slug)
    assert accelerator.hbm_gb == SEED_SKUS[slug]
    card = replace(KIMI_K3, total_params=2_800_000_000_000, weight_parts=())  # the seeds' input: the card's 2.8T
    raw = weights_bytes(card, weight_format="mxfp4", include_scale_overhead=False)
    assert raw == 1_400_000_000_000
    assert min_gpus_for_weights(raw, accelerator) == floor
    # The catalogue's count from the config (2,779,481,795,168 x 0.5 B = 1,389.7 GB) keeps every floor.
    counted = weights_bytes(KIMI_K3, weight_format="mxfp4", include_scale_overhead=False)
    assert counted == 1_389_740_897_584 and min_gpus_for_weights(counted, accelerator) == floor


@pytest.mark.parametrize(
    ("slug", "floor"),
    [("h100-sxm-80gb", 20), ("h200-141gb", 12), ("b200-192gb", 9), ("gb300-288gb", 6)],
)
def test_k3_published_checkpoint_floor(slug, floor):
    """The published config's checkpoint (MXFP4 experts with scales, bf16 for the rest: 1,559,937,995,968 B)
    needs more than the seeds' floor: ceil(1559.94/80) = 20, ceil(1559.94/141) = 12, ceil(1559.94/192) = 9,
    ceil(1559.94/288) = 6."""
    assert min_gpus_for_weights(weights_bytes(KIMI_K3), reference.accelerator(slug)) == floor


def test_floor_edge_cases():
    assert min_gpus_for_weights(80_000_000_000, H100_80GB) == 1
    assert min_gpus_for_weights(80_000_000_001, H100_80GB) == 2
    assert min_gpus_for_weights(0, H100_80GB) == 0
    with pytest.raises(EngineInputError) as exc:
        min_gpus_for_weights(1, Accelerator(name="none", hbm_gb=0))
    assert set(exc.value.errors) == {"hbm_gb"}


# The catalogue's dense models of the seeds' sizes (7B, 14B, 32B, 70B).
QWEN25_7B = reference.model("qwen2.5-7b")
QWEN3_14B = reference.model("qwen3-14b")
QWEN3_32B = reference.model("qwen3-32b")
LLAMA_31_70B = reference.model("llama-3.1-70b")
# The catalogue has no 30B-class MoE: Qwen3-30B-A3B's shape (config.json: 48 layers, 4 KV heads of 128,
# 128 experts top-8; model card 30.5B total / 3.3B active).
QWEN3_30B_A3B = ModelArch(
    name="Qwen3-30B-A3B",
    total_params=30_500_000_000,
    active_params=3_300_000_000,
    layer_groups=(LayerGroup(kind="full", count=48, kv_heads=4, head_dim=128),),
    n_routed_experts=128,
    n_active_experts=8,
    max_context_tokens=131_072,
)


#: The seeds' tier-2 card sizes (decimal GB) and the catalogue's cards of those sizes.
CARDS = {16: "rtx-4080-16gb", 24: "rtx-4090-24gb", 48: "l40s-48gb", 80: "h100-sxm-80gb"}


def _card(gb):
    card = reference.accelerator(CARDS[gb])
    assert card.hbm_gb == gb
    return card


@pytest.mark.parametrize("scales", [True, False])
@pytest.mark.parametrize(
    ("gb", "model", "fmt", "context"),
    [
        (16, QWEN25_7B, "int4", 32_768),  # "7B at 4 bits, with room for a long context"
        (24, QWEN3_14B, "int4", 8192),
        (48, QWEN3_32B, "int4", 8192),
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
    [(16, QWEN25_7B), (24, QWEN3_14B), (48, QWEN3_32B), (80, LLAMA_31_70B)],
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
    """Qwen2.5-7B-Instruct's config allows 32,768 tokens."""
    with pytest.raises(EngineInputError) as exc:
        single_gpu_fit(QWEN25_7B, _card(16), 40_000)
    assert set(exc.value.errors) == {"context_tokens"}
