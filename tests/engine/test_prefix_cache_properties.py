"""Properties of the prefix-cache replay and the entry point's behaviour on extreme input (Hypothesis):
no retention reuses more than every block kept, nor every block more than a token-level cache; a block
that divides another reuses at least as much; extreme or junk input is an ``EngineInputError`` naming a
field, or an answer of finite numbers."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleet.catalog import reference
from planner.engine import EngineInputError, Layout, TraceRequest, parse_trace_csv
from planner.engine import prefix_cache as analyse
from planner.engine.prefix_cache import replay_trace

H200 = reference.accelerator("h200-141gb")
QWEN3_NEXT = reference.model("qwen3-next-80b-a3b")
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def traces(draw) -> list[TraceRequest]:
    rows = []
    for i in range(draw(st.integers(1, 25))):
        prompt = draw(st.integers(1, 20_000))
        shared = draw(st.integers(0, prompt))
        prefix = draw(st.sampled_from(["", "a", "b", "c"]))
        rows.append(TraceRequest(f"r{i}", float(draw(st.integers(0, 50))), prompt, prefix, shared if prefix else 0))
    return sorted(rows, key=lambda r: r.arrival_s)


@SETTINGS
@given(traces(), st.sampled_from([1, 16, 64, 128, 544, 1024]), st.integers(1, 8))
def test_retention_never_beats_dense_nor_dense_the_ideal(trace, g, k):
    ideal = replay_trace(trace, 1, "ideal").hits
    dense = replay_trace(trace, g, "dense").hits
    coarser = replay_trace(trace, g * k, "dense").hits
    assert all(d <= i for d, i in zip(dense, ideal, strict=True))
    assert all(c <= d for c, d in zip(coarser, dense, strict=True))  # g divides g x k
    for policy, kwargs in (("semantic", {}), ("step", {"chunk": 8_192}), ("interval", {"interval": g * k})):
        hits = replay_trace(trace, g, policy, **kwargs).hits
        assert all(h <= d and h % g == 0 for h, d in zip(hits, dense, strict=True)), policy
    assert all(h == 0 for h in replay_trace(trace, g, "none").hits)


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(_finite(v) for v in value)
    return True


junk_numbers = st.one_of(
    st.integers(-5, 5), st.integers(10**8, 10**12), st.floats(allow_nan=True, allow_infinity=True), st.none()
)


@SETTINGS
@given(
    engine=st.sampled_from(["vllm", "sglang", "generic"]),
    version=st.sampled_from([None, "0.15.0", "0.29.1", "0.33.0", "0.5.9", "0.5.23", "x"]),
    mode=st.sampled_from([None, "none", "align", "all", "no_buffer", "extra_buffer", "bogus"]),
    context=st.one_of(st.none(), st.integers(-1, 10**9)),
    interval=st.integers(-1, 10**6),
    concurrency=st.one_of(st.none(), st.integers(-1, 10**7)),
    ratio=junk_numbers,
    kv_gib=junk_numbers,
    granularities=st.one_of(st.none(), st.lists(st.integers(-2, 10**9), max_size=20)),
)
def test_extreme_input_is_a_field_error_or_finite(
    engine, version, mode, context, interval, concurrency, ratio, kv_gib, granularities
):
    try:
        result = analyse(
            QWEN3_NEXT, H200, Layout(tp=2), engine=engine, engine_version=version, cache_mode=mode,
            context_tokens=context, checkpoint_interval_tokens=interval, concurrency=concurrency,
            state_pool_ratio=0.9 if ratio is None else ratio, available_kv_cache_gib=kv_gib,
            granularities=granularities, trace=[TraceRequest("a", 0.0, 3_000, "p", 2_000)],
        )  # fmt: skip
    except EngineInputError as exc:
        assert exc.errors and all(isinstance(k, str) and v for k, v in exc.errors.items())
        return
    assert _finite(result.to_dict())


@SETTINGS
@given(st.text(max_size=300))
def test_junk_csv_is_a_trace_error(text):
    try:
        rows = parse_trace_csv(text)
    except EngineInputError as exc:
        assert list(exc.errors) == ["trace"]
    else:
        assert rows and all(r.prompt_tokens >= 1 for r in rows)
