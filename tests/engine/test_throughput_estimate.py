"""Serving estimate: outputs, concurrency limit, money, and disaggregated vs aggregated TTFT."""

import json
from decimal import Decimal

import pytest

from fleet.catalog import reference
from planner.engine.errors import EngineInputError
from planner.engine.sizing import size
from planner.engine.spec import Layout
from planner.engine.throughput import (
    aggregated_latency,
    disaggregated_ttft,
    estimate,
    parse_usd,
    queue_wait_s,
)
from planner.engine.throughput.decode import DecodeModel
from planner.engine.throughput.prefill import PrefillModel, prefill

DEEPSEEK_V3 = reference.model("deepseek-v3")
KIMI_K3 = reference.model("kimi-k3")
LLAMA_31_70B = reference.model("llama-3.1-70b")
H100 = reference.accelerator("h100-sxm-80gb")
B200 = reference.accelerator("b200-192gb")


def test_outputs_are_consistent():
    r = estimate(LLAMA_31_70B, H100, Layout(tp=4), prompt_tokens=2000, output_tokens=500, batch=32)
    assert r.batch == 32
    assert r.tokens_per_s_replica == pytest.approx(32 / r.tpot_s)
    assert r.tokens_per_s_per_gpu == pytest.approx(r.tokens_per_s_replica / 4)
    assert r.tokens_per_s_per_user == pytest.approx(1 / r.tpot_s)
    assert r.tpot_s > r.decode.time_s  # prefill shares the GPUs in aggregated serving
    assert r.tpot_s == pytest.approx(r.decode.time_s / (1 - r.prefill_share))
    assert r.ttft_s == pytest.approx(r.queue_s + r.prefill.time_s + r.prefill.chunks * r.decode.time_s)
    d = r.to_dict()
    json.dumps(d)
    assert d["concurrency"]["limit"] == d["concurrency"]["memory_limit"]  # no SLO given


def test_concurrency_limit_is_min_of_memory_and_slo():
    kwargs = {"prompt_tokens": 2000, "output_tokens": 500}
    mem_only = estimate(LLAMA_31_70B, H100, Layout(tp=4), **kwargs)
    admitted = size(LLAMA_31_70B, H100, layout=Layout(tp=4), context_tokens=2500).max_concurrent_sequences_per_replica
    assert mem_only.memory_limit == admitted == mem_only.concurrency_limit == mem_only.batch
    assert mem_only.fits
    assert not estimate(LLAMA_31_70B, H100, Layout(tp=4), batch=admitted + 1, **kwargs).fits
    tight = estimate(LLAMA_31_70B, H100, Layout(tp=4), tpot_slo_ms=40, ttft_slo_ms=1000, **kwargs)
    assert tight.slo_limit is not None and 1 <= tight.slo_limit < admitted
    assert tight.concurrency_limit == min(admitted, tight.slo_limit) == tight.batch
    assert tight.meets_tpot and tight.meets_ttft
    over = estimate(LLAMA_31_70B, H100, Layout(tp=4), tpot_slo_ms=40, batch=tight.slo_limit + 1, **kwargs)
    assert not over.meets_tpot or over.tpot_s * 1e3 > 40
    loose = estimate(LLAMA_31_70B, H100, Layout(tp=4), tpot_slo_ms=10_000, **kwargs)
    assert loose.concurrency_limit == admitted  # memory runs out first
    impossible = estimate(LLAMA_31_70B, H100, Layout(tp=4), tpot_slo_ms=1, **kwargs)
    assert impossible.slo_limit == 0 and impossible.batch == 1 and impossible.meets_tpot is False


def test_money_accepts_decimal_float_int_and_str():
    base = {"prompt_tokens": 1000, "output_tokens": 200, "batch": 16}
    a = estimate(LLAMA_31_70B, H100, Layout(tp=4), usd_per_gpu_hour=Decimal("2.50"), **base)
    b = estimate(LLAMA_31_70B, H100, Layout(tp=4), usd_per_gpu_hour=2.5, **base)
    c = estimate(LLAMA_31_70B, H100, Layout(tp=4), usd_per_gpu_hour="2.50", **base)
    assert a.usd_per_hour == b.usd_per_hour == c.usd_per_hour == 10.0
    assert a.usd_per_mtok == pytest.approx(10.0 / (a.tokens_per_s_replica * 3600) * 1e6)
    assert a.tokens_per_usd == pytest.approx(a.tokens_per_s_replica * 3600 / 10.0)
    assert a.to_dict()["usd_per_gpu_hour"] == "2.50"
    assert estimate(LLAMA_31_70B, H100, Layout(tp=4), **base).usd_per_mtok is None
    free = estimate(LLAMA_31_70B, H100, Layout(tp=4), usd_per_gpu_hour=0, **base)
    assert free.usd_per_mtok == 0 and free.tokens_per_usd is None
    for bad in (-1, "abc", float("nan"), True):
        with pytest.raises(EngineInputError):
            parse_usd(bad)


def test_estimate_validation():
    with pytest.raises(EngineInputError) as e:
        estimate(LLAMA_31_70B, H100, Layout(tp=4), prompt_tokens=0, prefix_cache_hit_rate=1.0, tpot_slo_ms=-1)
    assert {"prompt_tokens", "prefix_cache_hit_rate", "tpot_slo_ms"} <= set(e.value.errors)


def test_queue_wait():
    assert queue_wait_s(0, 1.0) == 0
    assert queue_wait_s(0.5, 1.0) == pytest.approx(1.0)  # rho 0.5: wait = service
    assert queue_wait_s(1.0, 1.0) == float("inf")


CASES = [
    (LLAMA_31_70B, H100, Layout(tp=4), "bf16", 2000),
    (LLAMA_31_70B, H100, Layout(tp=8), "fp8", 8000),
    (DEEPSEEK_V3, H100, Layout(tp=8, dp=2, ep=16), "bf16", 4000),
    (KIMI_K3, B200, Layout(tp=8, dp=2, ep=16), "fp8", 2000),
    (KIMI_K3, B200, Layout(tp=16, ep=16), "bf16", 30_000),
]


@pytest.mark.parametrize(("model", "acc", "layout", "kv", "prompt"), CASES)
@pytest.mark.parametrize("batch", [1, 8, 64, 256])
def test_disaggregation_never_loses_on_ttft_when_prefill_has_its_own_pool(model, acc, layout, kv, prompt, batch):
    """Same layout, same arrival rate: a dedicated prefill replica keeps TTFT at or below the aggregated one.

    The aggregated replica runs ``batch`` sequences of 500 output tokens, so requests arrive at
    ``batch / (500 x TPOT)``; in the disaggregated case the same stream goes to a prefill replica of the
    same layout that does nothing else. Queueing is the same (same work at the same rate), but the
    aggregated prompt also shares every chunk's step with the decode batch, while the disaggregated one
    only pays the part of the KV transfer that is not hidden behind its own prefill.
    """
    dm = DecodeModel(model, acc, layout, kv)
    pm = PrefillModel(dm)
    pre = pm.parts(prompt, 0)
    t_d = dm.time(batch, prompt + 250)
    tpot, ttft_agg, queue, _share = aggregated_latency(t_d, batch, 500, pre.time_s, pre.busy_s, pre.chunks)
    rate = batch / (500 * tpot)
    est = prefill(model, acc, layout, prompt, kv_cache_dtype=kv)
    ttft_dis = disaggregated_ttft(rate, est)
    assert ttft_dis <= ttft_agg
    assert queue_wait_s(rate, est.busy_s_per_request) == pytest.approx(queue)
    assert tpot >= t_d  # and decode never loses on TPOT either
