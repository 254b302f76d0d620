"""Runtime reserve per GPU: aiconfigurator's defaults, and the single-figure override."""

import pytest

from fleet.catalog import reference
from planner.engine.errors import EngineInputError
from planner.engine.sizing.runtime import activation_bytes, default_batch_tokens, nccl_bytes, runtime_reserve
from planner.engine.spec import LayerGroup, Layout, ModelArch
from planner.engine.units import GIB, MIB

H100_80GB = reference.accelerator("h100-sxm-80gb")
KIMI_K3 = reference.model("kimi-k3")
LLAMA_31_70B = reference.model("llama-3.1-70b")

L40S = reference.accelerator("l40s-48gb")  # 48 GB: below vLLM's 70 GiB threshold


def test_k3_on_h100_at_tp32():
    """framework 3.5 GiB (aiconfigurator other_mem 3,758,096,384 B) + NCCL 392 MiB at tp >= 4
    (411,041,792 B) + activations 2 x 8192 tokens x 7168 hidden x 10 (MoE, tp >= 8) = 1,174,405,120 B."""
    r = runtime_reserve(KIMI_K3, H100_80GB, Layout(tp=32))
    assert r.framework_bytes == 3_758_096_384
    assert r.cuda_graph_bytes == 0
    assert r.nccl_bytes == 411_041_792
    assert r.activation_bytes == 1_174_405_120
    assert r.batch_tokens == 8192
    assert r.total_bytes == 5_343_543_296
    assert not r.overridden
    assert r.assumptions


def test_dense_coefficients_and_single_gpu():
    """Llama-3.1-70B at tp 1 on an 80 GB card: 2 x 8192 x 8192 x 10 = 1,342,177,280 B; no NCCL buffers."""
    r = runtime_reserve(LLAMA_31_70B, H100_80GB)
    assert r.activation_bytes == 1_342_177_280
    assert r.nccl_bytes == 0


def test_batch_budget_follows_vllm_defaults():
    """vLLM: 8192 batched tokens on GPUs of 70 GiB or more, 2048 below."""
    assert default_batch_tokens(H100_80GB) == 8192
    assert default_batch_tokens(L40S) == 2048


def test_nccl_table():
    assert [nccl_bytes(tp) for tp in (1, 2, 3, 4, 8, 16)] == [
        0,
        358_612_992,
        358_612_992,
        411_041_792,
        411_041_792,
        411_041_792,
    ]


def test_activation_floor_when_hidden_size_unknown():
    tiny = ModelArch(
        name="tiny",
        total_params=1,
        active_params=1,
        layer_groups=(LayerGroup(kind="full", count=1, kv_heads=1, head_dim=8),),
    )
    assert activation_bytes(tiny, 1, 8192) == 70 * MIB


def test_activations_shrink_with_tp():
    values = [activation_bytes(KIMI_K3, tp, 8192) for tp in (1, 2, 4, 8)]
    assert values == sorted(values, reverse=True)


def test_single_override():
    r = runtime_reserve(KIMI_K3, H100_80GB, Layout(tp=8), runtime_reserve_gib=10)
    assert r.total_bytes == 10 * GIB
    assert r.overridden
    assert "overridden" in r.assumptions[0]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"runtime_reserve_gib": -1}, "runtime_reserve_gib"),
        ({"runtime_reserve_gib": float("nan")}, "runtime_reserve_gib"),
        ({"batch_tokens": 0}, "batch_tokens"),
        ({"framework_gib": -0.5}, "framework_gib"),
    ],
)
def test_bad_overrides_are_field_errors(kwargs, field):
    with pytest.raises(EngineInputError) as exc:
        runtime_reserve(KIMI_K3, H100_80GB, **kwargs)
    assert set(exc.value.errors) == {field}
