"""Weights: parameters x bits per weight / 8, per component, and each GPU's share."""

from dataclasses import replace

import pytest

from fleet.catalog import reference
from planner.engine.errors import EngineInputError
from planner.engine.sizing.weights import (
    params_bytes,
    weight_breakdown,
    weight_components,
    weights_bytes,
    weights_per_gpu_bytes,
)
from planner.engine.spec import LayerGroup, Layout, ModelArch
from planner.engine.units import GB, TB

KIMI_K3 = reference.model("kimi-k3")
GPT_OSS_120B = reference.model("gpt-oss-120b")
#: Kimi K3's routed experts from its published config (DESIGN.md): 92 MoE layers x 896 experts x 3 matrices
#: x 3584 (latent width) x 3072 (expert intermediate).
K3_EXPERT_PARAMS = 92 * 896 * 3 * 3584 * 3072  # 2,722,740,830,208

DENSE = ModelArch(
    name="dense-10B",
    total_params=10_000_000_000,
    active_params=10_000_000_000,
    layer_groups=(LayerGroup(kind="full", count=32, kv_heads=8, head_dim=128),),
)


#: The seeds' Kimi K3: the model card's rounded 2.8T / 104B (the seeds compute from these), every weight in one
#: format. The catalogue's K3 counts from its config (2,779,481,795,168 / 105,361,336,928).
K3_CARD = replace(KIMI_K3, total_params=2_800_000_000_000, active_params=104_000_000_000, weight_parts=())
K3_CONFIG_TOTAL = 2_779_481_795_168
#: K3's bf16 weights by its config: everything but the routed experts (whose 2,722,740,830,208 are MXFP4).
K3_BF16_PARAMS = K3_CONFIG_TOTAL - K3_EXPERT_PARAMS  # 56,740,964,960


@pytest.mark.parametrize(
    ("fmt", "terabytes"),
    [("bf16", 5.6), ("fp8", 2.8), ("mxfp4", 1.4), ("int2", 0.7)],
)
def test_k3_seed_table_without_scale_overhead(fmt, terabytes):
    """Seeds' table: 2.8T parameters x 2 / 1 / 0.5 / 0.25 bytes = 5.6 / 2.8 / 1.4 / 0.7 TB, exact from the card's
    2.8T; the catalogue's K3 (counted from its config) gives the same figures at the seeds' precision (0.1 TB)."""
    assert weights_bytes(K3_CARD, weight_format=fmt, include_scale_overhead=False) == round(terabytes * TB)
    got = weights_bytes(KIMI_K3, weight_format=fmt, include_scale_overhead=False)
    assert round(got / TB, 1) == terabytes


def test_k3_mxfp4_with_block_scales_is_about_1_49_tb():
    """One 8-bit scale per 32 four-bit weights: 4.25 bits, +6.25%: 2.8e12 x 4.25 / 8 = 1.4875 TB (the seeds, from
    the card); from the config's count 2,779,481,795,168 x 4.25 / 8 = 1.4766 TB."""
    assert weights_bytes(K3_CARD, weight_format="mxfp4", include_scale_overhead=True) == 1_487_500_000_000
    got = weights_bytes(KIMI_K3, weight_format="mxfp4", include_scale_overhead=True)
    assert got == round(K3_CONFIG_TOTAL * 4.25 / 8) == 1_476_599_703_683


def test_k3_catalogue_row_is_the_published_config():
    """DESIGN.md, "Kimi K3's published config.json": MXFP4 on the routed experts; attention, the shared
    experts, the dense first-layer MLP, embeddings and lm_head stay bf16; the counts are the config's (issue 25:
    the card's rounded 2.8T put 20.5B parameters too many in bf16)."""
    assert (KIMI_K3.expert_weight_format, KIMI_K3.weight_format) == ("mxfp4", "bf16")
    assert KIMI_K3.expert_params == K3_EXPERT_PARAMS
    assert (KIMI_K3.total_params, KIMI_K3.active_params) == (K3_CONFIG_TOTAL, 105_361_336_928)
    parts = {(p.part, p.format) for p in KIMI_K3.weight_parts}
    assert ("routed_experts", "mxfp4") in parts and ("latent_projections", "bf16") in parts


def test_components_keep_their_own_formats():
    """K3 ships MXFP4 routed experts and bf16 for the rest (DESIGN.md), so it weighs more than 1.4 TB.

    experts: 92 x 896 x 3 x 3584 x 3072 = 2,722,740,830,208 params x 0.5 B; the other
    2,779,481,795,168 - that = 56,740,964,960 params x 2 B.
    """
    expert, other = weight_components(KIMI_K3, include_scale_overhead=False)
    assert expert == K3_EXPERT_PARAMS // 2 == 1_361_370_415_104
    assert other == K3_BF16_PARAMS * 2 == 113_481_929_920
    assert weights_bytes(KIMI_K3, include_scale_overhead=False) == expert + other


def test_k3_published_checkpoint_is_about_1_56_tb():
    """The published config's formats with MXFP4's scales: 2,722,740,830,208 x 4.25 / 8 = 1,446,456,066,048 B
    of experts + 56,740,964,960 x 2 = 113,481,929,920 B of bf16 = 1,559,937,995,968 B. The checkpoint's
    safetensors hold 1,560,860,324,864 B (tests/fixtures/checkpoint_sizes.json) with its vision tower, which
    the text model leaves out: within 0.1%."""
    assert weights_bytes(KIMI_K3) == 1_559_937_995_968
    assert abs(weights_bytes(KIMI_K3) / 1_560_860_324_864 - 1) < 0.001


def test_gpt_oss_120b_checkpoint_fits_one_80gb_gpu():
    """gpt-oss-120b: MXFP4 experts (4.25 bits) + bf16 attention/embeddings, about 65 GB.

    The catalogue's parameter counts (computed from config.json): routed experts (gate_up, down and their
    biases) x 4.25 / 8, the other parameters x 2 B. The model card says it runs on a single 80 GB GPU.
    """
    experts, total = GPT_OSS_120B.expert_params, GPT_OSS_120B.total_params
    b = weight_breakdown(GPT_OSS_120B)
    assert b.expert_bytes == round(experts * 4.25 / 8)
    assert b.other_bytes == (total - experts) * 2
    assert b.total_bytes == b.expert_bytes + b.other_bytes
    assert 60 * GB < b.total_bytes < 80 * GB
    assert (b.expert_format, b.other_format) == ("mxfp4", "bf16")


def test_override_applies_to_every_component():
    expert, other = weight_components(GPT_OSS_120B, weight_format="fp8", include_scale_overhead=False)
    assert expert == GPT_OSS_120B.expert_params
    assert other == GPT_OSS_120B.total_params - GPT_OSS_120B.expert_params


def test_unknown_expert_params_means_one_dense_component():
    expert, other = weight_components(DENSE)
    assert expert == 0
    assert other == 20 * GB


def test_per_gpu_split_rules():
    """Experts split over tp x dp x pp GPUs; the rest split by tp x pp, replicated per dp rank."""
    layout = Layout(tp=4, pp=2, dp=2, ep=8)
    b = weight_breakdown(GPT_OSS_120B, layout)
    assert b.per_gpu_expert_bytes == -(-b.expert_bytes // 16)
    assert b.per_gpu_other_bytes == -(-b.other_bytes // 8)
    assert b.per_gpu_bytes == weights_per_gpu_bytes(GPT_OSS_120B, layout)


def test_expert_parallel_size_does_not_change_memory():
    """EP only trades TP sharding of experts for whole experts per rank (same bytes per GPU)."""
    a = weights_per_gpu_bytes(KIMI_K3, Layout(tp=8, dp=1, ep=1))
    b = weights_per_gpu_bytes(KIMI_K3, Layout(tp=8, dp=1, ep=8))
    assert a == b


def test_dense_model_split_by_tp_and_pp_only():
    assert weights_per_gpu_bytes(DENSE, Layout(tp=4, pp=2)) == 20 * GB // 8
    assert weights_per_gpu_bytes(DENSE, Layout(tp=4, dp=2)) == 20 * GB // 4


def test_scaled_formats_cost_more_than_raw():
    for fmt in ("mxfp4", "nvfp4", "int4", "int2", "fp8", "int8"):
        assert params_bytes(1_000_000, fmt, True) > params_bytes(1_000_000, fmt, False)
    assert params_bytes(1_000_000, "bf16", True) == params_bytes(1_000_000, "bf16", False) == 2_000_000


def test_unknown_format_is_a_field_error():
    with pytest.raises(EngineInputError) as exc:
        weights_bytes(KIMI_K3, weight_format="fp3")
    assert set(exc.value.errors) == {"weight_format"}


def test_expert_params_above_total_is_a_field_error():
    bad = ModelArch(
        name="bad",
        total_params=10,
        active_params=10,
        layer_groups=DENSE.layer_groups,
        expert_params=11,
    )
    with pytest.raises(EngineInputError) as exc:
        weights_bytes(bad)
    assert set(exc.value.errors) == {"expert_params"}


def test_breakdown_carries_assumptions():
    b = weight_breakdown(KIMI_K3)
    assert b.assumptions and all(isinstance(a, str) for a in b.assumptions)
    assert "mxfp4" in " ".join(b.assumptions)
    assert b.to_dict()["total_bytes"] == b.total_bytes
