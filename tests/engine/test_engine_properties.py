"""Property tests (hypothesis) over random architectures, SKUs and layouts."""

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from planner.engine.sizing import size
from planner.engine.sizing.kv_cache import kv_bytes_per_token
from planner.engine.spec import Accelerator, LayerGroup, Layout, ModelArch

POW2 = st.sampled_from([1, 2, 4, 8, 16, 32])
TP = st.sampled_from([1, 2, 4, 8])


@st.composite
def layer_group(draw, kinds=("full", "sliding", "mla", "linear")):
    kind = draw(st.sampled_from(kinds))
    count = draw(st.integers(1, 64))
    if kind == "full":
        return LayerGroup(kind=kind, count=count, kv_heads=draw(POW2), head_dim=draw(st.sampled_from([64, 128, 256])))
    if kind == "sliding":
        return LayerGroup(
            kind=kind,
            count=count,
            kv_heads=draw(POW2),
            head_dim=draw(st.sampled_from([64, 128])),
            window=draw(st.integers(1, 8192)),
        )
    if kind == "mla":
        return LayerGroup(kind=kind, count=count, kv_lora_rank=draw(st.sampled_from([256, 512])), qk_rope_head_dim=64)
    return LayerGroup(
        kind=kind,
        count=count,
        key_heads=draw(POW2),
        value_heads=draw(POW2),
        key_dim=draw(st.sampled_from([64, 128])),
        value_dim=draw(st.sampled_from([64, 128])),
        conv_kernel=draw(st.integers(1, 4)),
    )


@st.composite
def model(draw, kinds=("full", "sliding", "mla", "linear")):
    groups = tuple(draw(st.lists(layer_group(kinds), min_size=1, max_size=3)))
    total = draw(st.integers(10**8, 3 * 10**11))
    moe = draw(st.booleans())
    return ModelArch(
        name="random",
        total_params=total,
        active_params=total // 10,
        layer_groups=groups,
        weight_format=draw(st.sampled_from(["bf16", "fp8", "int4"])),
        expert_weight_format=draw(st.sampled_from([None, "mxfp4", "fp8"])),
        expert_params=total * 9 // 10 if moe else None,
        n_routed_experts=64 if moe else 0,
        hidden_size=draw(st.sampled_from([0, 2048, 4096, 8192, 16384])),
        max_context_tokens=1_048_576,
        attention_heads=64,
    )


ACCELERATOR = st.builds(
    lambda gb: Accelerator(name=f"{gb} GB", hbm_gb=gb), st.sampled_from([16, 24, 48, 80, 141, 192, 288])
)
CONTEXT = st.integers(1, 1_048_576)
POOL = st.sampled_from(["unified", "split"])
RATIO = st.floats(0.05, 20)


@settings(max_examples=150, deadline=None)
@given(model(), ACCELERATOR, TP, CONTEXT, CONTEXT, POOL, RATIO)
def test_more_context_never_raises_capacity(m, acc, tp, c1, c2, pool, ratio):
    short, long = sorted((c1, c2))
    kw = {"layout": Layout(tp=tp), "pool": pool, "state_pool_ratio": ratio}
    a = size(m, acc, context_tokens=short, **kw)
    b = size(m, acc, context_tokens=long, **kw)
    assert b.max_concurrent_sequences <= a.max_concurrent_sequences
    assert b.max_concurrent_sequences_unified <= a.max_concurrent_sequences_unified
    assert b.max_concurrent_sequences_split <= a.max_concurrent_sequences_split
    assert b.kv_bytes_per_sequence >= a.kv_bytes_per_sequence


@settings(max_examples=150, deadline=None)
@given(model(), ACCELERATOR, TP, CONTEXT)
def test_fp8_kv_never_costs_more_than_bf16(m, acc, tp, context):
    fp8 = size(m, acc, layout=Layout(tp=tp), context_tokens=context, kv_cache_dtype="fp8")
    bf16 = size(m, acc, layout=Layout(tp=tp), context_tokens=context, kv_cache_dtype="bf16")
    assert fp8.kv_bytes_per_token <= bf16.kv_bytes_per_token
    assert fp8.kv_bytes_per_sequence_per_gpu <= bf16.kv_bytes_per_sequence_per_gpu
    assert fp8.max_concurrent_sequences >= bf16.max_concurrent_sequences


@settings(max_examples=100, deadline=None)
@given(model(kinds=("mla",)), TP, TP)
def test_tp_never_shrinks_the_mla_cache_per_gpu(m, tp1, tp2):
    low, high = sorted((tp1, tp2))
    assert kv_bytes_per_token(m, "bf16", tp=high) >= kv_bytes_per_token(m, "bf16", tp=low)
    assert kv_bytes_per_token(m, "bf16", tp=high) == kv_bytes_per_token(m, "bf16")


@settings(max_examples=150, deadline=None)
@given(
    model(),
    ACCELERATOR,
    st.sampled_from([1, 2, 4]),
    st.sampled_from([1, 2]),
    st.sampled_from([1, 2]),
    st.sampled_from(["tp", "pp", "dp"]),
    st.floats(0.5, 1.0),
)
def test_adding_gpus_never_lowers_the_cache_budget_per_replica(m, acc, tp, pp, dp, axis, utilisation):
    """Doubling tp, pp or dp of a replica never lowers its total cache budget (bytes, all GPUs).

    Data-parallel attention ranks replicate the non-expert weights, so doubling dp keeps each
    GPU's budget and doubles the replica's.

    Holds while usable memory exceeds twice the runtime reserve of the larger layout minus that
    of the smaller (the cost of one more GPU's reserve), i.e. on every card of 16 GB and up at
    a utilisation of at least 0.5.
    """
    before = Layout(tp=tp, pp=pp, dp=dp)
    after = Layout(**{**before.as_dict(), axis: getattr(before, axis) * 2})
    assume(after.pp <= m.num_layers)
    kw = {"gpu_memory_utilization": utilisation, "context_tokens": 4096}
    a = size(m, acc, layout=before, **kw)
    b = size(m, acc, layout=after, **kw)
    # A GPU whose weights and runtime overflow it holds no cache (not a negative amount).
    assert max(0, b.cache_bytes) * after.gpus >= max(0, a.cache_bytes) * before.gpus


@settings(max_examples=150, deadline=None)
@given(model(), ACCELERATOR, TP, CONTEXT, RATIO)
def test_unified_capacity_at_least_split(m, acc, tp, context, ratio):
    r = size(m, acc, layout=Layout(tp=tp), context_tokens=context, state_pool_ratio=ratio)
    assert r.max_concurrent_sequences_unified >= r.max_concurrent_sequences_split
    assert r.stranded_bytes >= 0
    assert r.fits == (r.max_concurrent_sequences >= 1)
    assert (r.deficit_bytes == 0) == r.fits
