"""Bad input to size() raises EngineInputError keyed by the API's field names."""

import pytest

from fleet.catalog import reference
from planner.engine.errors import EngineInputError
from planner.engine.sizing import capacity_curve, size
from planner.engine.spec import Accelerator, LayerGroup, Layout, ModelArch

DEEPSEEK_V3 = reference.model("deepseek-v3")
GPT_OSS_120B = reference.model("gpt-oss-120b")
H100_80GB = reference.accelerator("h100-sxm-80gb")
KIMI_K3 = reference.model("kimi-k3")
LLAMA_31_70B = reference.model("llama-3.1-70b")


def _fields(**kwargs):
    model = kwargs.pop("model", LLAMA_31_70B)
    accelerator = kwargs.pop("accelerator", H100_80GB)
    with pytest.raises(EngineInputError) as exc:
        size(model, accelerator, **kwargs)
    return set(exc.value.errors)


def test_tp_not_dividing_attention_heads():
    """Llama-3.1-70B has 64 query heads; tp 3 does not divide them."""
    assert "tp" in _fields(layout=Layout(tp=3))


def test_tp_not_dividing_kv_heads():
    no_heads = ModelArch(
        name="kv heads only",
        total_params=1_000_000_000,
        active_params=1_000_000_000,
        layer_groups=(LayerGroup(kind="full", count=4, kv_heads=8, head_dim=64),),
    )
    assert _fields(model=no_heads, layout=Layout(tp=3)) == {"tp"}
    size(no_heads, H100_80GB, layout=Layout(tp=16))  # replicated beyond 8 heads: allowed


def test_ep_not_dividing_experts():
    """DeepSeek-V3 has 256 routed experts; ep 6 on 12 GPUs does not divide them."""
    assert "ep" in _fields(model=DEEPSEEK_V3, layout=Layout(tp=4, dp=3, ep=6))


def test_ep_larger_than_a_pipeline_stage():
    assert _fields(model=GPT_OSS_120B, layout=Layout(tp=2, pp=2, ep=4)) == {"ep"}


def test_pp_beyond_layers():
    assert _fields(layout=Layout(pp=81)) == {"pp"}


def test_non_positive_layout_sizes():
    assert _fields(layout=Layout(tp=0)) == {"tp"}


def test_gpus_not_a_whole_number_of_replicas():
    assert _fields(gpus=6, layout=Layout(tp=4)) == {"gpus"}
    assert _fields(gpus=0) == {"gpus"}


def test_context_beyond_model_maximum():
    assert _fields(context_tokens=LLAMA_31_70B.max_context_tokens + 1) == {"context_tokens"}
    assert _fields(context_tokens=0) == {"context_tokens"}


@pytest.mark.parametrize("value", [0, -0.1, 1.01, float("nan"), "0.9", True])
def test_bad_utilisation(value):
    assert _fields(gpu_memory_utilization=value) == {"gpu_memory_utilization"}


def test_unknown_formats():
    assert _fields(weight_format="fp6") == {"weight_format"}
    assert _fields(kv_cache_dtype="int3") == {"kv_cache_dtype"}
    with pytest.raises(EngineInputError) as exc:
        ModelArch(name="x", total_params=1, active_params=1, layer_groups=(), weight_format="fp6")
    assert set(exc.value.errors) == {"weight_format"}


def test_other_fields():
    assert _fields(pool="shared") == {"pool"}
    assert _fields(state_pool_ratio=0) == {"state_pool_ratio"}
    assert _fields(runtime_reserve_gib=-1) == {"runtime_reserve_gib"}
    assert _fields(batch_tokens=0) == {"batch_tokens"}
    assert _fields(state_slots_per_sequence=0) == {"state_slots_per_sequence"}
    assert _fields(accelerator=Accelerator(name="none", hbm_gb=0)) == {"hbm_gb"}


def test_all_errors_reported_at_once():
    fields = _fields(layout=Layout(tp=3), context_tokens=10**9, gpu_memory_utilization=2, kv_cache_dtype="?")
    assert fields == {"tp", "context_tokens", "gpu_memory_utilization", "kv_cache_dtype"}


def test_messages_are_readable():
    with pytest.raises(EngineInputError) as exc:
        size(KIMI_K3, H100_80GB, gpus=18)
    assert "96" in " ".join(exc.value.errors["tp"])


def test_capacity_curve_validates_every_context():
    with pytest.raises(EngineInputError) as exc:
        capacity_curve(LLAMA_31_70B, H100_80GB, [8192, 10**7], gpus=2)
    assert set(exc.value.errors) == {"context_tokens"}
    with pytest.raises(EngineInputError):
        capacity_curve(LLAMA_31_70B, H100_80GB, [])
