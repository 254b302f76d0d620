"""The routing advisor's engine (``planner.engine.rank``): hand-derived figures and a property test over
random fleets. No database."""

from __future__ import annotations

import math
from dataclasses import replace
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleet.catalog.reference import accelerator, model
from planner.engine import (
    ApiCandidate,
    DeploymentCandidate,
    EngineInputError,
    Layout,
    RequestClass,
    Serving,
    SpeedCorrection,
    estimate,
    rank,
    reusable_prefix_tokens,
    size,
    stale_limit_s,
)

LLAMA = model("llama-3.1-70b")
H100 = accelerator("h100-sxm-80gb")
SERVING = Serving(model=LLAMA, accelerator=H100, layout=Layout(tp=4), replicas=2, engine="vllm")
CLASS = RequestClass(
    context_tokens=8192, prompt_tokens=4000, output_tokens=300, prefix_reuse_fraction=0.8, ttft_slo_ms=2000,
    tpot_slo_ms=50,
)  # fmt: skip


def deployment(slug: str = "llama-a", **changes) -> DeploymentCandidate:
    base = DeploymentCandidate(
        slug=slug,
        model="llama-3.1-70b",
        context_window=32768,
        serving=SERVING,
        status="up",
        last_poll_age_s=5.0,
        requests_running=10.0,
        requests_waiting=2.0,
        kv_cache_usage=0.5,
        usd_per_gpu_hour=Decimal("2.50"),
    )
    return replace(base, **changes)


def api(slug: str, hit: str, miss: str, out: str, block: int, **changes) -> ApiCandidate:
    base = ApiCandidate(
        slug=slug,
        model="llama-3.1-70b",
        context_window=131072,
        input_cache_hit_usd_per_mtok=Decimal(hit),
        input_cache_miss_usd_per_mtok=Decimal(miss),
        output_usd_per_mtok=Decimal(out),
        granularity_tokens=block,
    )
    return replace(base, **changes)


# ------------------------------------------------------------------------------------------------
# Hand-derived figures
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prompt", "fraction", "block", "reusable"),
    [
        (1000, 0.5, 16, 496),  # 500 // 16 = 31 blocks
        (1000, 0.9, 1024, 0),  # a 900-token prefix is less than one 1,024-token block
        (1000, 0.9, 64, 896),  # 14 x 64
        (4000, 0.8, 16, 3200),  # exactly 200 blocks
        (4000, 0.8, 1, 3200),  # token-level (SGLang page size 1)
        (4000, 0.0, 16, 0),
        (4000, 0.8, None, 0),  # granularity unknown: not counted
        (2176, 1.0, 544, 2176),  # Qwen3-Next's 544-token block at tp 2, four whole blocks
        (2175, 1.0, 544, 1632),  # one token short: three blocks
    ],
)
def test_reusable_prefix_is_whole_blocks(prompt, fraction, block, reusable):
    assert reusable_prefix_tokens(prompt, fraction, block) == reusable


def test_stale_limit_is_three_polls_at_least_two_minutes():
    assert stale_limit_s(15) == 120  # 3 x 15 = 45 < 120
    assert stale_limit_s(60) == 180
    assert stale_limit_s(5, intervals=3, floor_s=10) == 15


def test_an_api_cheaper_per_token_that_loses_the_prefix_costs_more_per_request():
    """Per token, ``coarse`` is cheaper on every price (hit 0.2 < 0.3, miss 2.0 < 3.0, output 10 < 15 USD/Mtok),
    but it caches in 1,024-token units and the class's 900-token prefix is shorter than one:

    coarse: 1000 x 2.0 + 200 x 10 = 4,000 USD per Mtok-request -> 0.004 USD per request
    fine:   896 x 0.3 + 104 x 3.0 + 200 x 15 = 268.8 + 312 + 3,000 = 3,580.8 -> 0.0035808 USD
    """
    request = RequestClass(context_tokens=2000, prompt_tokens=1000, output_tokens=200, prefix_reuse_fraction=0.9)
    coarse = api("coarse", "0.2", "2.0", "10", 1024)
    fine = api("fine", "0.3", "3.0", "15", 64)
    result = rank(request, apis=[coarse, fine])
    first, second = result.destinations
    assert (first.slug, first.cache_state, first.reusable_prefix_tokens) == ("fine", "warm", 896)
    assert first.usd_per_request == pytest.approx(0.0035808)
    assert (second.slug, second.cache_state, second.reusable_prefix_tokens) == ("coarse", "cold", 0)
    assert second.usd_per_request == pytest.approx(0.004)
    assert "shorter than one 1024-token block" in second.reasons[0]
    assert "0.42 USD per 1,000 requests more than fine" in second.reasons[-1]  # 0.004 - 0.0035808


def test_deployment_cost_is_its_gpu_hours_over_the_requests_it_serves_per_hour():
    d = deployment()
    (dest,) = rank(CLASS, [d]).destinations
    busy = estimate(
        LLAMA, H100, Layout(tp=4), prompt_tokens=4000, output_tokens=300, context_tokens=8192,
        prefix_cache_hit_rate=3200 / 4000, ttft_slo_ms=2000, tpot_slo_ms=50,
    )  # fmt: skip
    requests_per_hour = 2 * busy.tokens_per_s_replica * 3600 / 300
    assert dest.usd_per_request == pytest.approx(8 * 2.5 / requests_per_hour)
    assert dest.cache_state == "warm" and dest.granularity_tokens == 16 and dest.reusable_prefix_tokens == 3200


def test_headroom_is_the_smaller_of_free_slots_and_free_cache():
    capacity = size(
        LLAMA, H100, gpus=8, layout=Layout(tp=4), context_tokens=8192, engine="vllm"
    ).max_concurrent_sequences
    (dest,) = rank(CLASS, [deployment()]).destinations
    assert dest.headroom_sequences == min(capacity - 12, math.floor(0.5 * capacity))
    (busy,) = rank(CLASS, [deployment(kv_cache_usage=0.999)]).destinations
    assert not busy.eligible and busy.headroom_sequences == 0 and busy.reasons[0].startswith("Full")


def test_latency_is_timed_at_the_load_the_request_joins():
    """12 running or waiting over 2 replicas: 6 per replica, the request makes 7."""
    (dest,) = rank(CLASS, [deployment()]).destinations
    at = estimate(
        LLAMA, H100, Layout(tp=4), prompt_tokens=4000, output_tokens=300, context_tokens=8192,
        prefix_cache_hit_rate=0.8, batch=7,
    )  # fmt: skip
    assert dest.tpot_ms == pytest.approx(at.tpot_s * 1e3)
    assert dest.ttft_ms == pytest.approx(at.ttft_s * 1e3)


def test_a_live_correction_calibrates_the_latency():
    fit = SpeedCorrection(1.5, 2.0, 20, 20, 0.05, 0.05, None)
    plain = rank(CLASS, [deployment()]).destinations[0]
    corrected = rank(CLASS, [deployment(serving=replace(SERVING, correction=fit, correction_age_s=60))]).destinations[0]
    assert corrected.calibrated and not plain.calibrated
    assert corrected.tpot_ms == pytest.approx(plain.tpot_ms * 1.5)
    assert corrected.usd_per_request == pytest.approx(plain.usd_per_request * 1.5)


def test_missing_the_slo_ranks_after_an_api_of_unknown_latency_even_when_cheaper():
    request = replace(CLASS, tpot_slo_ms=1.0)  # no deployment makes 1 ms per token
    result = rank(request, [deployment()], [api("pricey", "3", "30", "150", 128)])
    first, second = result.destinations
    assert first.slug == "pricey" and first.meets_slo is None
    assert second.slug == "llama-a" and second.eligible and second.meets_slo is False
    assert second.usd_per_request < first.usd_per_request
    assert "misses the latency SLO, after pricey (latency not known)" in second.reasons[-1]


def test_meeting_the_slo_beats_an_unknown_latency():
    result = rank(CLASS, [deployment()], [api("cheap", "0.01", "0.01", "0.01", 128)])
    assert [d.slug for d in result.destinations] == ["llama-a", "cheap"]


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"status": "down"}, "Last poll status down"),
        ({"last_poll_age_s": None}, "Never polled"),
        ({"last_poll_age_s": 121.0}, "Stale: last poll 121 s ago (limit 120 s)"),
        ({"context_window": 4096}, "Context window 4,096 tokens < 8,192 needed"),
        ({"model": "qwen3-32b"}, "Serves model qwen3-32b, not llama-3.1-70b"),
    ],
)
def test_ineligible_deployments_say_why(changes, why):
    request = replace(CLASS, model="llama-3.1-70b")
    fresh, bad = rank(request, [deployment("z-fresh"), deployment("a-bad", **changes)]).destinations
    assert fresh.slug == "z-fresh" and fresh.eligible
    assert bad.slug == "a-bad" and not bad.eligible
    assert any(why in reason for reason in bad.reasons), bad.reasons


def test_modality_and_unknown_api_window_are_ineligible():
    request = replace(CLASS, modality="image")
    (a, d) = rank(request, [deployment()], [api("img", "1", "1", "1", 128, modalities=("text", "image"))]).destinations
    assert a.slug == "img" and a.eligible
    assert not d.eligible and "Takes text, not image." in d.reasons
    (blind,) = rank(CLASS, apis=[api("blind", "1", "1", "1", 128, context_window=None)]).destinations
    assert not blind.eligible and "Context window not recorded" in blind.reasons[0]


def test_no_quote_means_cost_unknown_and_ranked_after_priced():
    result = rank(CLASS, [deployment("a-unpriced", usd_per_gpu_hour=None), deployment("b-priced")])
    assert [d.slug for d in result.destinations] == ["b-priced", "a-unpriced"]
    assert result.destinations[1].usd_per_request is None
    assert any("No GPU quote" in r for r in result.destinations[1].reasons)


def test_ties_break_by_slug():
    result = rank(CLASS, [deployment("b"), deployment("a")])
    assert [d.slug for d in result.destinations] == ["a", "b"]
    assert "ties with a" in result.destinations[1].reasons[-1]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"prompt_tokens": 8000}, "context_tokens"),
        ({"prefix_reuse_fraction": -0.1}, "prefix_reuse_fraction"),
        ({"ttft_slo_ms": 0}, "ttft_slo_ms"),
        ({"modality": "smell"}, "modality"),
        ({"output_tokens": 0}, "output_tokens"),
    ],
)
def test_bad_request_classes_are_refused_by_field(changes, field):
    with pytest.raises(EngineInputError) as caught:
        rank(replace(CLASS, **changes))
    assert field in caught.value.errors


# ------------------------------------------------------------------------------------------------
# Property: over random fleets, never an ineligible or stale destination first when one is eligible
# ------------------------------------------------------------------------------------------------

QWEN = model("qwen3-32b")
HYBRID = model("kimi-linear-48b-a3b")
H200 = accelerator("h200-141gb")
SERVINGS = {
    "llama-3.1-70b": [SERVING, Serving(model=LLAMA, accelerator=H200, layout=Layout(tp=2), replicas=1)],
    "qwen3-32b": [
        Serving(model=QWEN, accelerator=H100, layout=Layout(tp=1), replicas=4, engine="vllm"),
        Serving(model=QWEN, accelerator=H100, layout=Layout(tp=2), replicas=1, engine="sglang"),
    ],
    "kimi-linear-48b-a3b": [Serving(model=HYBRID, accelerator=H200, layout=Layout(tp=1), replicas=2, engine="vllm")],
}
MODELS = sorted(SERVINGS)


@st.composite
def deployments(draw, i: int) -> DeploymentCandidate:
    name = draw(st.sampled_from(MODELS))
    return DeploymentCandidate(
        slug=f"d{i:02d}-{name}",
        model=name,
        context_window=draw(st.sampled_from([4096, 32768, 131072])),
        serving=draw(st.sampled_from(SERVINGS[name])),
        modalities=draw(st.sampled_from([("text",), ("text", "image")])),
        status=draw(st.sampled_from(["up", "up", "up", "down", "loading", "misconfigured"])),
        last_poll_age_s=draw(st.one_of(st.none(), st.floats(0, 1000))),
        stale_after_s=draw(st.sampled_from([120.0, 45.0, 600.0])),
        requests_running=draw(st.one_of(st.none(), st.floats(0, 300))),
        requests_waiting=draw(st.one_of(st.none(), st.floats(0, 20))),
        kv_cache_usage=draw(st.one_of(st.none(), st.floats(0, 1))),
        usd_per_gpu_hour=draw(st.one_of(st.none(), st.decimals("0.5", "12", places=2))),
    )


@st.composite
def apis(draw, i: int) -> ApiCandidate:
    prices = st.decimals("0.01", "60", places=2)
    return ApiCandidate(
        slug=f"a{i:02d}",
        model=draw(st.one_of(st.none(), st.sampled_from(MODELS))),
        context_window=draw(st.one_of(st.none(), st.sampled_from([8192, 131072, 1048576]))),
        input_cache_hit_usd_per_mtok=draw(prices),
        input_cache_miss_usd_per_mtok=draw(prices),
        output_usd_per_mtok=draw(prices),
        granularity_tokens=draw(st.sampled_from([1, 64, 128, 1024])),
        modalities=draw(st.sampled_from([("text",), ("text", "image")])),
    )


@st.composite
def fleets(draw):
    n, m = draw(st.integers(0, 8)), draw(st.integers(0, 3))
    return [draw(deployments(i)) for i in range(n)], [draw(apis(i)) for i in range(m)]


@st.composite
def request_classes(draw) -> RequestClass:
    prompt = draw(st.integers(1, 30000))
    output = draw(st.integers(1, 4000))
    return RequestClass(
        context_tokens=prompt + output + draw(st.integers(0, 100000)),
        prompt_tokens=prompt,
        output_tokens=output,
        prefix_reuse_fraction=draw(st.floats(0, 1)),
        ttft_slo_ms=draw(st.one_of(st.none(), st.floats(50, 20000))),
        tpot_slo_ms=draw(st.one_of(st.none(), st.floats(5, 200))),
        model=draw(st.one_of(st.none(), st.sampled_from(MODELS))),
        modality=draw(st.one_of(st.none(), st.sampled_from(["text", "image"]))),
    )


@settings(max_examples=150, deadline=None)
@given(fleet=fleets(), request=request_classes())
def test_never_an_ineligible_or_stale_destination_first(fleet, request):
    deployments_, apis_ = fleet
    result = rank(request, deployments_, apis_)
    found = result.destinations
    assert len(found) == len(deployments_) + len(apis_)
    by_slug = {d.slug: d for d in deployments_}
    if any(d.eligible for d in found):
        assert found[0].eligible and result.best is found[0]
    else:
        assert result.best is None
    for dest in found:
        assert dest.reasons and all(isinstance(r, str) and r for r in dest.reasons)
        if dest.kind == "deployment" and dest.eligible:
            source = by_slug[dest.slug]
            assert source.status == "up"
            assert source.last_poll_age_s is not None and source.last_poll_age_s <= source.stale_after_s
            assert source.context_window >= request.context_tokens
            assert dest.headroom_sequences is not None and dest.headroom_sequences >= 1
        if dest.eligible and request.model is not None:
            assert dest.model == request.model
        assert dest.reusable_prefix_tokens <= request.prompt_tokens
        if dest.reusable_prefix_tokens and dest.granularity_tokens:
            assert dest.reusable_prefix_tokens % dest.granularity_tokens == 0
    keys = [d.sort_key(request.model) for d in found]
    assert keys == sorted(keys)
    others = [d.serves_another(request.model) for d in found]
    assert others == sorted(others)  # no destination of another model above one of the asked model
    assert [d.rank for d in found] == list(range(1, len(found) + 1))
    again = rank(request, deployments_, apis_)
    assert [d.to_dict() for d in again.destinations] == [d.to_dict() for d in found]


def test_a_hybrid_deployment_reuses_the_prefix_in_its_raised_attention_blocks():
    """Qwen3-Next at tp 2 under vLLM: the attention block is raised to 544 tokens (vLLM's log, "Setting
    attention block size to 544 tokens"), so a 1,000-token shared prefix is reusable only up to one block:
    floor(1000 / 544) x 544 = 544 tokens, not the 992 a 16-token block would give."""
    qwen = model("qwen3-next-80b-a3b")
    h200 = accelerator("h200-141gb")
    hybrid = Serving(model=qwen, accelerator=h200, layout=Layout(tp=2), replicas=1, engine="vllm")
    request = RequestClass(context_tokens=4096, prompt_tokens=2000, output_tokens=100, prefix_reuse_fraction=0.5)
    d = deployment("qwen-next", model="qwen3-next-80b-a3b", serving=hybrid, requests_running=0.0,
                   requests_waiting=0.0, kv_cache_usage=0.0)  # fmt: skip
    (dest,) = rank(request, deployments=[d]).destinations
    assert (dest.granularity_tokens, dest.cache_state, dest.reusable_prefix_tokens) == (544, "warm", 544)
