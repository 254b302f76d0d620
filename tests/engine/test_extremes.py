"""Every public engine entry point survives extreme input (issue 14): it either raises
``EngineInputError`` naming the fields at fault, or answers with finite numbers only.

Inputs range over what a caller can pass: parameter counts from 0 to past 1e15, layer counts 1 to
past 10,000, head and dimension sizes to past 2**31, contexts 0, 1 and 10M, batches 0 to 1e6, every
weight format, KV cache dtype and state dtype, every engine profile and release, every search mode,
and zero, huge, negative, NaN and infinite floats wherever a float goes (HBM, bandwidth, prices,
reserves, requests per day). The config.json importer gets hostile values (huge ints, negatives,
strings where ints go, nested junk) and the startup-log parser gets junk text.

Anything else raised (``ZeroDivisionError``, ``OverflowError``, ``decimal.InvalidOperation``,
``KeyError``, ...) or a NaN/infinity anywhere in a ``to_dict()`` answer fails the test. The
defects these tests found are kept as regressions in ``DEFECTS`` (``test_found_defects_fail_clearly``).
The module's tests take about 7 s on one core (10 s with pytest's start-up; ``max_examples`` kept
small, ``deadline=None``); every property also passed 2,000 examples while the limits were written.
"""

from __future__ import annotations

import dataclasses
import math
from datetime import date
from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.engine import (
    CACHE_DTYPES,
    KV_CACHE_DTYPES,
    MODES,
    PRICING_KINDS,
    WEIGHT_FORMATS,
    Accelerator,
    ClusterState,
    DeploymentShare,
    EngineInputError,
    Layout,
    ModelArch,
    Quote,
    SkuOffer,
    SpeedSample,
    ThroughputOptions,
    Workload,
    apply_correction,
    batch_of,
    breakeven,
    capacity_curve,
    estimate,
    fit_correction,
    kv_bytes_per_token,
    min_gpus_for_weights,
    model_record_from_config,
    parse_startup_log,
    price_in_force,
    redact_startup_log,
    search,
    sensitivity,
    single_gpu_fit,
    size,
    spend_month,
    state_bytes_per_sequence,
    unit_economics,
    weights_bytes,
    weights_storage,
)
from planner.engine.profiles import SGLANG_RELEASES, VLLM_RELEASES

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    database=None,
)

NAN, INF = math.nan, math.inf
#: Floats a form, a JSON body or a poll can carry: zero, signed zero, tiny, huge, negative, NaN, inf.
EXTREME_FLOATS = (0.0, -0.0, -1.0, 5e-324, 1e-300, 1e-9, 0.5, 1.0, 1e9, 1e15, 1e300, 1.7976931348623157e308, NAN, INF)
FLOATS = st.one_of(st.sampled_from(EXTREME_FLOATS), st.floats(allow_nan=True, allow_infinity=True))
#: Whole numbers from tiny to beyond what any record column holds.
EXTREME_INTS = (0, 1, 2, 3, -1, 7, 64, 10_000, 10_001, 2**31 - 1, 2**31, 10**15, 10**15 + 1, 2**63, 10**30)
INTS = st.one_of(st.sampled_from(EXTREME_INTS), st.integers(-(10**3), 10**16))
SMALL_POSITIVE = st.one_of(st.sampled_from((1, 2, 4, 8, 64, 128)), st.integers(1, 10**6))
CONTEXTS = st.one_of(st.sampled_from((None, 0, 1, 2, 8192, 10_000_000, 2**31, 10**15)), st.integers(-5, 10**8))
BATCHES = st.one_of(st.none(), st.sampled_from((0, 1, 2, 10**6, 10**6 + 1, 10**12)), st.integers(-2, 10**6))
MONEY = st.one_of(
    st.sampled_from((0, 1, "2.50", "0", "-1", "1e30", "1e999999", "NaN", "Infinity", "sNaN", "junk", "", None)),
    FLOATS,
    st.integers(-(10**3), 10**20),
    st.decimals(allow_nan=True, allow_infinity=True),
)
RELEASES = st.sampled_from(
    [None, "0", "junk", "9999.0.0", "", " ", "v" + "9" * 30]
    + [r.since for r in VLLM_RELEASES]
    + [r.since for r in SGLANG_RELEASES]
)


# --------------------------------------------------------------------------- the property


BAD_STRINGS = {"nan", "-nan", "inf", "-inf", "+inf", "infinity", "-infinity", "snan"}


def assert_finite(value: Any, path: str = "") -> None:
    """Every number in a ``to_dict()`` tree is finite (floats, Decimals and numbers rendered as strings)."""
    if isinstance(value, dict):
        for key, item in value.items():
            assert isinstance(key, str), f"{path}: key {key!r}"
            assert_finite(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            assert_finite(item, f"{path}.{i}")
    elif isinstance(value, float):
        assert math.isfinite(value), f"{path} = {value!r}"
    elif isinstance(value, Decimal):
        assert value.is_finite(), f"{path} = {value!r}"
    elif isinstance(value, str):
        assert value.strip().lower() not in BAD_STRINGS, f"{path} = {value!r}"
    elif dataclasses.is_dataclass(value):
        assert_finite(dataclasses.asdict(value), path)
    else:
        assert value is None or isinstance(value, bool | int | date), f"{path}: {type(value).__name__}"


def outcome(call: Any, *args: Any, **kwargs: Any) -> Any:
    """``call(...)``'s result (its ``to_dict()`` checked finite), or ``None`` after a clear ``EngineInputError``."""
    try:
        result = call(*args, **kwargs)
    except EngineInputError as exc:
        assert exc.errors, "an EngineInputError must name at least one field"
        for field, messages in exc.errors.items():
            assert isinstance(field, str) and field, exc.errors
            assert messages and all(isinstance(m, str) and m for m in messages), exc.errors
        return None
    if hasattr(result, "to_dict"):
        assert_finite(result.to_dict())
    elif dataclasses.is_dataclass(result):
        assert_finite(dataclasses.asdict(result))
    elif isinstance(result, list):
        for item in result:
            assert_finite(item.to_dict() if hasattr(item, "to_dict") else item)
    else:
        assert_finite(result)
    return result


# --------------------------------------------------------------------------- inputs


@st.composite
def layer_group(draw: Any) -> dict[str, Any]:
    """A layer-group record with any of its keys extreme (count up to past 10,000, dims past 2**31)."""
    kind = draw(st.sampled_from(("full", "sliding", "mla", "linear")))
    dim = st.one_of(st.sampled_from((1, 2, 64, 128, 512, 2**16, 2**31 - 1, 2**31, 10**15)), st.integers(0, 4096))
    count = st.one_of(st.sampled_from((1, 2, 61, 10_000, 10_001, 10**9)), st.integers(0, 200))
    group: dict[str, Any] = {"kind": kind, "count": draw(count)}
    keys = {
        "full": ("kv_heads", "head_dim"),
        "sliding": ("kv_heads", "head_dim", "window"),
        "mla": ("kv_lora_rank", "qk_rope_head_dim"),
        "linear": ("key_heads", "value_heads", "key_dim", "value_dim", "conv_kernel"),
    }[kind]
    for key in keys:
        group[key] = draw(dim)
    if kind == "linear":
        for key in ("state_dtype", "conv_dtype"):
            dtype = draw(st.sampled_from((None, *CACHE_DTYPES)))
            if dtype is not None:
                group[key] = dtype
        group["variant"] = draw(st.sampled_from(("", "kda", "gated_deltanet", "mamba2")))
    return group


@st.composite
def model_record(draw: Any) -> dict[str, Any]:
    """A model record (``ModelArch.from_record``'s input) from tiny to past 1e15 parameters."""
    total = draw(st.one_of(st.sampled_from((0, 1, 10**9, 10**15, 10**15 + 1, 10**30)), st.integers(-1, 2 * 10**15)))
    share = draw(st.sampled_from((None, 0.0, 0.5, 0.97, 1.0)))
    experts = draw(st.one_of(st.sampled_from((0, 1, 8, 64, 384, 2**31)), st.integers(0, 1024)))
    return {
        "name": "extreme",
        "total_params": total,
        "active_params": draw(st.one_of(st.just(max(total // 20, 0)), INTS)),
        "expert_params": None if share is None else int(max(total, 0) * share),
        "n_routed_experts": experts,
        "n_active_experts": draw(st.one_of(st.sampled_from((0, 1, 8, experts, experts + 1)), INTS)),
        "n_shared_experts": draw(st.sampled_from((0, 1, 2, 10**6))),
        "hidden_size": draw(st.one_of(st.sampled_from((0, 1, 7168, 2**31 - 1, 2**40)), st.integers(0, 10**5))),
        "vocab_size": draw(st.sampled_from((0, 1, 163_840, 2**31 - 1, 10**12))),
        "max_context_tokens": draw(st.sampled_from((0, 1, 8192, 1_048_576, 10_000_000, 10**12, -1))),
        "attention_heads": draw(st.sampled_from((None, 1, 64, 128, 2**31 - 1, 0, -8))),
        "weight_format": draw(st.sampled_from(WEIGHT_FORMATS)),
        "expert_weight_format": draw(st.sampled_from(("", *WEIGHT_FORMATS))),
        "layer_groups": draw(st.lists(layer_group(), min_size=1, max_size=3)),
    }


def build_model(record: dict[str, Any]) -> ModelArch | None:
    """The model, or ``None`` when ``from_record`` refuses it with a clear error."""
    return outcome(ModelArch.from_record, record)


#: Per figure of an SKU record: (sane values, extreme values).
_ACC_FIELDS: dict[str, tuple[tuple[Any, ...], Any]] = {
    "hbm_gb": ((80.0, 141, 192.0, 288.0), st.one_of(st.sampled_from((0.001, 1e5, 1e6, 1e-12)), FLOATS)),
    "hbm_bandwidth_tbps": ((3.35, 4.8, 8.0), st.one_of(st.sampled_from((None, 0.0)), FLOATS)),
    "bf16_tflops": ((989.0, 2250.0), st.one_of(st.sampled_from((None, 0.0)), FLOATS)),
    "fp8_tflops": ((None, 1979.0), st.one_of(st.just(0.0), FLOATS)),
    "fp4_tflops": ((None, 4500.0), st.sampled_from((0.0, 1e308, NAN, 5e-324))),
    "interconnect_gbps": ((None, 900.0), st.one_of(st.just(0.0), FLOATS)),
    "gpus_per_node": ((None, 8, 4), st.sampled_from((1, 72, 0, -1, 2**31, 10**9))),
    "scaleup_domain_gpus": ((None, 8, 72), st.sampled_from((1, 0, 10**9))),
    "hbm_bytes_reported": ((None, 85_029_158_912), st.sampled_from((1, 0, 10**30))),
}


@st.composite
def accelerator_record(draw: Any) -> dict[str, Any]:
    """An SKU record: sane but for one extreme figure (NaN, inf, 0, 1e308, ...), or extreme throughout."""
    wild = draw(st.sampled_from((*_ACC_FIELDS, "all")))
    record: dict[str, Any] = {"name": "extreme"}
    for key, (sane, extreme) in _ACC_FIELDS.items():
        record[key] = draw(extreme if wild in (key, "all") else st.sampled_from(sane))
    return record


def build_accelerator(record: dict[str, Any]) -> Accelerator | None:
    return outcome(Accelerator.from_record, record)


def direct_accelerator(record: dict[str, Any]) -> Accelerator:
    """The same figures built without ``from_record``'s checks, as a caller may: the calculators must check."""
    figures = {k: v for k, v in record.items() if v is not None}
    return Accelerator(**figures)


H100 = Accelerator.from_record(
    {"name": "H100", "hbm_gb": 80, "hbm_bandwidth_tbps": 3.35, "bf16_tflops": 989.0, "fp8_tflops": 1979.0}
)
SMALL_MOE = ModelArch.from_record(
    {
        "name": "small-moe",
        "total_params": 30 * 10**9,
        "active_params": 3 * 10**9,
        "expert_params": 28 * 10**9,
        "n_routed_experts": 128,
        "n_active_experts": 8,
        "hidden_size": 2048,
        "vocab_size": 151_936,
        "max_context_tokens": 40_960,
        "attention_heads": 32,
        "weight_format": "bf16",
        "layer_groups": [{"kind": "full", "count": 48, "kv_heads": 4, "head_dim": 128}],
    }
)

LAYOUTS = st.one_of(
    st.sampled_from((None, Layout(), Layout(tp=8), Layout(tp=2, pp=2, dp=2, ep=8), Layout(tp=0), Layout(pp=10**6))),
    st.builds(
        Layout,
        tp=st.sampled_from((1, 2, 8, 64, 2**20, 0, -1)),
        pp=st.sampled_from((1, 2, 4, 10_000, 0)),
        dp=st.sampled_from((1, 2, 8, 2**20)),
        ep=st.sampled_from((1, 2, 8, 64)),
    ),
)


# --------------------------------------------------------------------------- sizing


@SETTINGS
@given(
    model_record=model_record(),
    accelerator_record=accelerator_record(),
    layout=LAYOUTS,
    gpus=st.one_of(st.none(), st.sampled_from((0, 1, 8, 10**6, -1)), st.integers(1, 64)),
    weight_format=st.sampled_from((None, *WEIGHT_FORMATS)),
    kv_cache_dtype=st.sampled_from(CACHE_DTYPES),
    context=CONTEXTS,
    utilization=st.one_of(st.sampled_from((0.9, 1.0, 1e-300)), FLOATS),
    reserve=st.one_of(st.none(), FLOATS),
    ratio=st.one_of(st.sampled_from((0.9, 1e-300, 1e300)), FLOATS),
    batch_tokens=st.one_of(st.none(), st.sampled_from((1, 8192, 10**12)), st.integers(-1, 10**7)),
    pool=st.sampled_from(("unified", "split")),
    slots=st.sampled_from((1, 3, 10**6, 0)),
)
def test_size_extremes(
    model_record, accelerator_record, layout, gpus, weight_format, kv_cache_dtype, context, utilization, reserve,
    ratio, batch_tokens, pool, slots,
):  # fmt: skip
    m, acc = build_model(model_record), build_accelerator(accelerator_record)
    if m is None:
        return
    raw = direct_accelerator(accelerator_record)
    outcome(size, m, raw, gpus=gpus, layout=layout, context_tokens=context)
    outcome(single_gpu_fit, m, raw, context)
    outcome(min_gpus_for_weights, 10**15, raw)
    if acc is None:
        return
    kwargs = {
        "gpus": gpus,
        "layout": layout,
        "weight_format": weight_format,
        "kv_cache_dtype": kv_cache_dtype,
        "context_tokens": context,
        "gpu_memory_utilization": utilization,
        "runtime_reserve_gib": reserve,
        "state_pool_ratio": ratio,
        "batch_tokens": batch_tokens,
        "pool": pool,
        "state_slots_per_sequence": slots,
    }
    outcome(size, m, acc, **kwargs)
    outcome(size, m, H100, **{**kwargs, "gpu_memory_utilization": 0.9, "runtime_reserve_gib": None})
    outcome(weights_bytes, m, weight_format)
    outcome(kv_bytes_per_token, m, kv_cache_dtype)
    outcome(state_bytes_per_sequence, m)
    outcome(single_gpu_fit, m, acc, context, weight_format, True, kv_cache_dtype, runtime_gb=reserve or 2.0)
    outcome(min_gpus_for_weights, 10**15, acc)


@SETTINGS
@given(
    model_record=model_record(),
    engine=st.sampled_from(("vllm", "sglang", "generic", "tgi")),
    version=RELEASES,
    max_model_len=st.sampled_from((None, 0, 1, 2, 8192, 10_000_000, 2**31, 10**15, -1)),
    block=st.sampled_from((None, 1, 16, 544, 65536, 65537, 0)),
    available=st.one_of(st.none(), FLOATS),
    kv_cache_dtype=st.sampled_from(KV_CACHE_DTYPES),
    context=CONTEXTS,
    layout=LAYOUTS,
    prefix_caching=st.booleans(),
    ratio=st.one_of(st.just(0.9), FLOATS),
)
def test_size_engine_profiles_extremes(
    model_record, engine, version, max_model_len, block, available, kv_cache_dtype, context, layout, prefix_caching,
    ratio,
):  # fmt: skip
    m = build_model(model_record)
    if m is None:
        return
    outcome(
        size,
        m,
        H100,
        layout=layout,
        kv_cache_dtype=kv_cache_dtype,
        context_tokens=context,
        engine=engine,
        engine_version=version,
        max_model_len=max_model_len,
        block_size_tokens=block,
        available_kv_cache_gib=available,
        prefix_caching=prefix_caching,
        state_pool_ratio=ratio,
    )


@SETTINGS
@given(
    model_record(), st.lists(CONTEXTS.filter(lambda c: c is not None), max_size=4), st.sampled_from(("vllm", "generic"))
)
def test_capacity_curve_extremes(model_record, contexts, engine):
    m = build_model(model_record)
    if m is None:
        return
    outcome(capacity_curve, m, H100, contexts, engine=engine)


# --------------------------------------------------------------------------- speed


OPTIONS = st.builds(
    ThroughputOptions,
    memory_bandwidth_efficiency=st.one_of(st.just(0.8), FLOATS),
    compute_efficiency=st.one_of(st.just(0.6), FLOATS),
    network_gbps=st.one_of(st.just(50.0), FLOATS),
    step_overhead_s=st.one_of(st.just(0.0), FLOATS),
    prefill_chunk_tokens=st.sampled_from((None, 1, 8192, 10**9)),
    gemm_tile_tokens=st.sampled_from((1, 64, 10**9)),
    cuda_graphs=st.booleans(),
    overlap=st.booleans(),
)


@SETTINGS
@given(
    model_record=model_record(),
    accelerator_record=accelerator_record(),
    layout=LAYOUTS,
    prompt=st.one_of(st.sampled_from((0, 1, 2048, 10_000_000)), st.integers(-1, 10**5)),
    output=st.one_of(st.sampled_from((0, 1, 256, 10_000_000)), st.integers(-1, 10**5)),
    context=CONTEXTS,
    batch=BATCHES,
    hit=st.one_of(st.sampled_from((0.0, 0.5, 0.999999)), FLOATS),
    ttft=st.one_of(st.none(), FLOATS),
    tpot=st.one_of(st.none(), FLOATS),
    price=MONEY,
    kv_cache_dtype=st.sampled_from(KV_CACHE_DTYPES),
    weight_format=st.sampled_from((None, *WEIGHT_FORMATS)),
    options=st.one_of(st.just(ThroughputOptions()), OPTIONS),
    spread=st.sampled_from((0.0, 0.2, 0.5, 0.999999, 1.0, -0.1, NAN)),
)
def test_estimate_extremes(
    model_record, accelerator_record, layout, prompt, output, context, batch, hit, ttft, tpot, price, kv_cache_dtype,
    weight_format, options, spread,
):  # fmt: skip
    m, acc = build_model(model_record), build_accelerator(accelerator_record)
    if m is None:
        return
    outcome(estimate, m, direct_accelerator(accelerator_record), layout, prompt_tokens=prompt, batch=batch)
    acc = acc or H100
    kwargs = {
        "prompt_tokens": prompt,
        "output_tokens": output,
        "context_tokens": context,
        "batch": batch,
        "prefix_cache_hit_rate": hit,
        "ttft_slo_ms": ttft,
        "tpot_slo_ms": tpot,
        "usd_per_gpu_hour": price,
        "kv_cache_dtype": kv_cache_dtype,
        "weight_format": weight_format,
        "options": options,
    }
    result = outcome(estimate, m, acc, layout, **kwargs)
    if result is not None:
        outcome(sensitivity, m, acc, layout, spread=spread, **kwargs)


@SETTINGS
@given(
    batch=st.one_of(st.none(), FLOATS),
    tpot=st.one_of(st.none(), FLOATS),
    ttft=st.one_of(st.none(), FLOATS),
    predicted_tpot=st.one_of(st.sampled_from((0.02, 0.0, 1e-300)), FLOATS),
    predicted_ttft=st.one_of(st.sampled_from((0.2, 0.0)), FLOATS),
    age=st.one_of(st.none(), FLOATS),
    replicas=st.sampled_from((1, 0, -1, 10**6)),
)
def test_correction_extremes(batch, tpot, ttft, predicted_tpot, predicted_ttft, age, replicas):
    from planner.engine import SpeedPrediction

    sample = SpeedSample(
        batch=batch, tpot_s=tpot, ttft_s=ttft, predicted=SpeedPrediction(predicted_tpot, predicted_ttft, 0.0)
    )
    correction = outcome(fit_correction, [sample, sample])
    if correction is not None:
        base = estimate(SMALL_MOE, H100, Layout(tp=2), batch=8)
        outcome(apply_correction, base, correction, age_s=age, tpot_slo_ms=tpot, ttft_slo_ms=ttft)
    outcome(batch_of, batch, replicas)


# --------------------------------------------------------------------------- search


@settings(SETTINGS, max_examples=30)
@given(
    model_record=model_record(),
    requests=st.one_of(st.sampled_from((1.0, 1e6, 1e12)), FLOATS),
    prompt=st.sampled_from((1, 2048, 10_000_000, 0)),
    output=st.sampled_from((1, 256, 10_000_000)),
    p95=st.sampled_from((1, 4096, 10_000_000, 10**15)),
    peak=st.sampled_from((1, 64, 10**6, 0)),
    hit=st.sampled_from((0.0, 0.9, NAN)),
    ttft=st.sampled_from((2000.0, 1e-300, 1e300, INF)),
    tpot=st.sampled_from((50.0, 1e-300, 1e300)),
    price=MONEY,
    modes=st.sampled_from((MODES, ("aggregated",), ("disaggregated",), ("junk",), ())),
    max_nodes=st.sampled_from((1, 2, 0, 10**6)),
)
def test_search_extremes(model_record, requests, prompt, output, p95, peak, hit, ttft, tpot, price, modes, max_nodes):
    m = build_model(model_record)
    if m is None:
        return
    workload = Workload(
        requests_per_day=requests,
        mean_prompt_tokens=prompt,
        mean_output_tokens=output,
        p95_context_tokens=p95,
        prefix_cache_hit_rate=hit,
        peak_concurrency=peak,
        ttft_slo_ms=ttft,
        tpot_slo_ms=tpot,
    )
    outcome(search, m, workload, [SkuOffer(H100, price)], modes=modes, max_nodes=max_nodes, kv_cache_dtypes=("fp8",))


# --------------------------------------------------------------------------- money


@SETTINGS
@given(
    gpus=INTS,
    rate=MONEY,
    hit=MONEY,
    miss=MONEY,
    out=MONEY,
    monthly_in=st.one_of(INTS, MONEY),
    monthly_out=st.one_of(INTS, MONEY),
    hit_rate=MONEY,
    hours=MONEY,
    days=st.sampled_from((1, 30, 31, 0, 32, -1)),
    capacity=st.one_of(st.none(), INTS),
    tps=st.one_of(st.none(), MONEY),
    utilisation=st.one_of(st.none(), MONEY),
    weights=st.one_of(st.none(), INTS),
    bandwidth=st.one_of(st.none(), MONEY),
)
def test_breakeven_extremes(
    gpus, rate, hit, miss, out, monthly_in, monthly_out, hit_rate, hours, days, capacity, tps, utilisation, weights,
    bandwidth,
):  # fmt: skip
    if capacity is not None and tps is not None:
        tps = None  # the two are exclusive (a clear error, covered by test_costs_breakeven)
    outcome(
        breakeven,
        gpus=gpus,
        usd_per_gpu_hour=rate,
        input_cache_hit_usd_per_mtok=hit,
        input_cache_miss_usd_per_mtok=miss,
        output_usd_per_mtok=out,
        monthly_input_tokens=monthly_in,
        monthly_output_tokens=monthly_out,
        cache_hit_rate=hit_rate,
        hours_per_day=hours,
        days_per_month=days,
        capacity_output_tokens_per_month=capacity,
        output_tokens_per_s=tps,
        utilisation=utilisation,
        weights_bytes=weights,
        download_gbytes_per_s=bandwidth,
    )
    outcome(unit_economics, gpus, rate, tps if tps is not None else 1000, utilisation or 1, hours, days)
    outcome(weights_storage, weights if weights is not None else 10**12, rate, days)


@SETTINGS
@given(
    gpus=INTS,
    hours=MONEY,
    rate=MONEY,
    year=st.sampled_from((2026, 1, 9999, 0, 10000)),
    month=st.sampled_from((1, 7, 12, 0, 13)),
    utilisation=MONEY,
    day=st.sampled_from((date(2026, 7, 1), date(1, 1, 1), date(9999, 12, 31))),
)
def test_spend_and_quotes_extremes(gpus, hours, rate, year, month, utilisation, day):
    states = [ClusterState("c1", "team", "prov", "h100", day, gpus, hours)]
    share = DeploymentShare("d1", "c1", "m", 1, date(2026, 7, 1))
    outcome(
        spend_month, states, year, month, date(2026, 7, 15), lambda _s, _d: rate, None, [share], {"d1": utilisation}
    )
    try:
        quote = Quote("h100", "prov", rate, PRICING_KINDS[0], day)
    except EngineInputError as exc:
        assert exc.errors
        return
    assert_finite(quote.to_dict())
    for provider in ("prov", None):
        found = price_in_force([quote], day, sku="h100", provider=provider, kind=PRICING_KINDS[0])
        if found is not None:
            assert_finite(found.to_dict())


# --------------------------------------------------------------------------- config.json and startup logs


JUNK = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.sampled_from((0, -1, 1, 2**31, 2**63, 10**30, 10**400)),
        st.integers(),
        FLOATS,
        st.text(max_size=8),
        st.sampled_from(("64", "bf16", "float32", "NaN", "", "full_attention", "sliding_attention")),
    ),
    lambda children: st.one_of(
        st.lists(children, min_size=1, max_size=4),
        st.dictionaries(st.text(max_size=6), children, min_size=1, max_size=4),
    ),
    max_leaves=12,
)
CONFIG_KEYS = (
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "moe_intermediate_size",
    "vocab_size",
    "max_position_embeddings",
    "n_routed_experts",
    "num_experts",
    "num_experts_per_tok",
    "n_shared_experts",
    "first_k_dense_replace",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
    "sliding_window",
    "layer_types",
    "linear_num_key_heads",
    "linear_num_value_heads",
    "linear_key_head_dim",
    "linear_value_head_dim",
    "linear_conv_kernel_dim",
    "full_attention_interval",
    "tie_word_embeddings",
    "torch_dtype",
    "quantization_config",
    "text_config",
    "hybrid_override_pattern",
    "mamba_num_heads",
    "mamba_head_dim",
    "ssm_state_size",
    "n_groups",
    "linear_attn_config",
)
MODEL_TYPES = ("llama", "qwen3_moe", "gpt_oss", "gemma3_text", "deepseek_v3", "kimi_linear", "qwen3_next", "nemotron_h")


@settings(SETTINGS, max_examples=100)
@given(
    st.sampled_from(MODEL_TYPES),
    st.dictionaries(st.sampled_from(CONFIG_KEYS), JUNK, max_size=12),
    st.sampled_from((None, 1, 10**15, 10**15 + 1, 0, -1)),
    st.sampled_from((None, *WEIGHT_FORMATS, "junk")),
)
def test_hf_config_hostile_values(model_type, overrides, total, weight_format):
    base = {
        "model_type": model_type,
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "intermediate_size": 14336,
        "vocab_size": 128_256,
        "max_position_embeddings": 131_072,
    }
    config = {**base, **overrides}
    imported = outcome(
        model_record_from_config, config, name="hostile", total_params=total, weight_format=weight_format
    )
    if imported is not None:
        assert_finite(imported.record)
        m = outcome(ModelArch.from_record, imported.record)
        if m is not None:
            outcome(size, m, H100, gpus=8)


@SETTINGS
@given(JUNK)
def test_hf_config_not_even_a_mapping(junk):
    outcome(model_record_from_config, junk if isinstance(junk, dict) else {"model_type": "llama", "x": junk}, name="j")


LOG_LINES = st.sampled_from(
    (
        "INFO 01-01 00:00:00 [gpu_worker.py:1] Available KV cache memory: 1e400 GiB",
        "INFO [kv_cache_utils.py:1] GPU KV cache size: 99999999999999999999999999 tokens",
        "INFO [kv_cache_utils.py:1] Maximum concurrency for 0 tokens per request: inf",
        "INFO [kv_cache_utils.py:1] Maximum concurrency for 10000000 tokens per request: nan",
        "Initializing a V1 LLM engine (v0.11.0) with config: model='m', max_seq_len=0, tensor_parallel_size=0",
        "Setting attention block size to 0 tokens",
        "Padding mamba page size by nan% ",
        "KV Cache is allocated. #tokens: -1, K size: inf GB, V size: nan GB",
        "server_args=ServerArgs(model_path='m', tp_size=99999999999999999999, context_length=10000000)",
        "Memory pool end. avail mem=nan GB",
    )
)


@settings(SETTINGS, max_examples=60)
@given(st.lists(st.one_of(LOG_LINES, st.text(max_size=80)), max_size=8))
def test_startup_log_junk(lines):
    text = "\n".join(lines)
    log = outcome(parse_startup_log, text)
    if log is not None:
        assert_finite(log.to_dict())
    assert isinstance(redact_startup_log(text), str)


# --------------------------------------------------------------------------- the defects found, as regressions

#: Each raised something other than EngineInputError, answered NaN/inf or ran for minutes before the
#: input limits (planner/engine/limits.py, costs/money.py); the field each must now be refused on.
_H = {"name": "x", "hbm_gb": 80, "hbm_bandwidth_tbps": 3.35, "bf16_tflops": 989.0}
_WORKLOAD = {"requests_per_day": 1e5, "mean_prompt_tokens": 1000, "mean_output_tokens": 200, "p95_context_tokens": 4000}
_BE = {
    "gpus": 8,
    "usd_per_gpu_hour": "2.5",
    "input_cache_hit_usd_per_mtok": "0.1",
    "input_cache_miss_usd_per_mtok": "1",
    "output_usd_per_mtok": "2",
    "monthly_input_tokens": 10**9,
    "monthly_output_tokens": 10**8,
}
DEFECTS = {
    # OverflowError: round(1e300 x 1e9) in Accelerator.hbm_bytes
    "hbm_gb 1e300": (lambda: size(SMALL_MOE, Accelerator(**{**_H, "hbm_gb": 1e300})), "hbm_gb"),
    # ZeroDivisionError: 1e-12 GB rounds to 0 bytes, min_gpus_for_weights divides by it
    "hbm_gb 1e-12": (lambda: size(SMALL_MOE, Accelerator(**{**_H, "hbm_gb": 1e-12})), "hbm_gb"),
    "from_record hbm_gb 1e300": (lambda: Accelerator.from_record({**_H, "hbm_gb": 1e300}), "hbm_gb"),
    # OverflowError: gib_to_bytes(1e300)
    "runtime_reserve_gib 1e300": (lambda: size(SMALL_MOE, H100, runtime_reserve_gib=1e300), "runtime_reserve_gib"),
    # ZeroDivisionError: a denormal efficiency or network rate makes a rate of 0.0
    "memory_bandwidth_efficiency 5e-324": (
        lambda: estimate(SMALL_MOE, H100, options=ThroughputOptions(memory_bandwidth_efficiency=5e-324)),
        "memory_bandwidth_efficiency",
    ),
    "network_gbps 5e-324": (
        lambda: estimate(SMALL_MOE, H100, Layout(tp=8, dp=2, ep=16), options=ThroughputOptions(network_gbps=5e-324)),
        "network_gbps",
    ),
    # tpot NaN: 1e308 s overheads add up to inf
    "step_overhead_s 1e308": (
        lambda: estimate(SMALL_MOE, H100, options=ThroughputOptions(step_overhead_s=1e308)),
        "step_overhead_s",
    ),
    # usd_per_hour inf: float(Decimal("1e999"))
    "estimate price 1e999": (lambda: estimate(SMALL_MOE, H100, usd_per_gpu_hour="1e999"), "usd_per_gpu_hour"),
    "search price 1e999": (
        lambda: search(SMALL_MOE, Workload(**_WORKLOAD), [(H100, "1e999")], kv_cache_dtypes=("fp8",)),
        "usd_per_gpu_hour",
    ),
    # ZeroDivisionError: an SKU built directly with a denormal or unstated (0) bandwidth or TFLOPS
    "bandwidth 5e-324": (
        lambda: estimate(SMALL_MOE, Accelerator(**{**_H, "hbm_bandwidth_tbps": 5e-324})),
        "hbm_bandwidth_tbps",
    ),
    "bandwidth 0": (
        lambda: estimate(SMALL_MOE, Accelerator(**{**_H, "hbm_bandwidth_tbps": 0.0})),
        "hbm_bandwidth_tbps",
    ),
    "bf16_tflops 0": (lambda: estimate(SMALL_MOE, Accelerator(**{**_H, "bf16_tflops": 0.0})), "bf16_tflops"),
    "search bandwidth 0": (
        lambda: search(SMALL_MOE, Workload(**_WORKLOAD), [(Accelerator(**{**_H, "hbm_bandwidth_tbps": 0.0}), 2)]),
        "offers.0.hbm_bandwidth_tbps",
    ),
    # minutes of work: 10**6 nodes per SKU enumerated
    "search max_nodes 1e6": (
        lambda: search(SMALL_MOE, Workload(**_WORKLOAD), [(H100, 2)], max_nodes=10**6),
        "max_nodes",
    ),
    # OverflowError: math.ceil(inf) in design_concurrency
    "workload tpot_slo_ms 1e308": (
        lambda: search(SMALL_MOE, Workload(**{**_WORKLOAD, "tpot_slo_ms": 1e308}), [(H100, 2)]),
        "tpot_slo_ms",
    ),
    # ValueError (math domain error): 5e-324 / 1e308 underflows to 0.0 before the log
    "fit underflow": (
        lambda: _fit_one(SpeedSample(1, 5e-324, 1e308, predicted=_prediction(1e308, 5e-324))),
        None,
    ),
    # decode_factor inf: exp of the log of 1e308 / 1e-300
    "fit overflow": (lambda: _fit_one(SpeedSample(1, 1e308, 1e308, predicted=_prediction(1e-300, 1e-300))), None),
    # decimal.InvalidOperation (quantize past 28 digits) and decimal.Overflow (1e999999, 1 / 1e-999999)
    "breakeven rate 1e30": (lambda: breakeven(**{**_BE, "usd_per_gpu_hour": "1e30"}), "usd_per_gpu_hour"),
    "breakeven rate 1e999999": (lambda: breakeven(**{**_BE, "usd_per_gpu_hour": "1e999999"}), "usd_per_gpu_hour"),
    "breakeven output price 1e-999999": (
        lambda: breakeven(**{**_BE, "output_usd_per_mtok": "1e-999999"}),
        "output_usd_per_mtok",
    ),
    "breakeven tokens 10**400": (lambda: breakeven(**{**_BE, "monthly_input_tokens": 10**400}), "monthly_input_tokens"),
    "breakeven gpus 10**30": (lambda: breakeven(**{**_BE, "gpus": 10**30}), "gpus"),
    # minutes of work: int(Decimal("1e999999")) builds a million-digit number
    "breakeven tokens Decimal 1e999999": (
        lambda: breakeven(**{**_BE, "monthly_output_tokens": Decimal("1e999999")}),
        "monthly_output_tokens",
    ),
    # EngineInputError on memory_bandwidth_efficiency / step_overhead_s, fields the caller never gave: the band
    # moved a factor past the options' own limits (now clamped to them, as the upper end already was)
    "sensitivity spread 0.999999": (lambda: sensitivity(SMALL_MOE, H100, spread=0.999999), None),
    "sensitivity overhead at its limit": (
        lambda: sensitivity(SMALL_MOE, H100, options=ThroughputOptions(step_overhead_s=60.0)),
        None,
    ),
    # OverflowError: gb_to_bytes(1e308) / gb_to_bytes(inf) of the tier-2 runtime, and round(1e300 x 1e9) of an
    # Accelerator built directly (single_gpu_fit and min_gpus_for_weights did not check its memory)
    "single_gpu_fit runtime_gb 1e308": (lambda: single_gpu_fit(SMALL_MOE, H100, runtime_gb=1e308), "runtime_gb"),
    "single_gpu_fit runtime_gb inf": (lambda: single_gpu_fit(SMALL_MOE, H100, runtime_gb=INF), "runtime_gb"),
    "single_gpu_fit hbm_gb 1e300": (
        lambda: single_gpu_fit(SMALL_MOE, Accelerator(**{**_H, "hbm_gb": 1e300})),
        "hbm_gb",
    ),
    "min_gpus_for_weights hbm_gb 1e300": (
        lambda: min_gpus_for_weights(10**12, Accelerator(**{**_H, "hbm_gb": 1e300})),
        "hbm_gb",
    ),
    "unit_economics rate 1e300": (lambda: unit_economics(8, "1e300", 1000), "usd_per_gpu_hour"),
    "weights_storage 1e30": (lambda: weights_storage(10**12, "1e30"), "usd_per_gb_month"),
    "spend_month a signalling-NaN rate (TypeError: unhashable, in the rate memo)": (
        lambda: spend_month(
            [ClusterState("c", "t", "p", "h", date(2026, 7, 1), 8)],
            2026,
            7,
            date(2026, 8, 1),
            lambda _s, _d: Decimal("sNaN"),
        ),
        "rates.h",
    ),
    "spend_month gpus 10**30": (
        lambda: spend_month(
            [ClusterState("c", "t", "p", "h", date(2026, 7, 1), 10**30)], 2026, 7, date(2026, 8, 1), lambda _s, _d: "2"
        ),
        "states.0.gpus",
    ),
}


def _prediction(tpot_s: float, ttft_s: float) -> Any:
    from planner.engine import SpeedPrediction

    return SpeedPrediction(tpot_s, ttft_s, 0.0)


def _fit_one(sample: SpeedSample) -> Any:
    correction = fit_correction([sample])
    assert (correction.decode_samples, correction.prefill_samples) == (0, 0)  # beyond a factor of 1e6: ignored
    return correction


def test_found_defects_fail_clearly() -> None:
    """Each defect found above: a clear ``EngineInputError`` on its field (or, for polls, a finite fit)."""
    for name, (call, field) in DEFECTS.items():
        if field is None:
            assert outcome(call) is not None, name
            continue
        try:
            call()
        except EngineInputError as exc:
            assert field in exc.errors, (name, exc.errors)
        else:
            raise AssertionError(f"{name}: no EngineInputError")
