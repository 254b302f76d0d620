"""What ``estimate()``'s TTFT means (issue 25): its definition, the parts it adds, and the idle TTFT beside it.

These are consistency checks of the bookkeeping (the parts are the terms the model already computes, named);
the figures against published measurements, one per definition, are in test_throughput_published_anchors.py.
"""

import math

import pytest

from fleet.catalog import reference
from planner.engine.spec import Layout
from planner.engine.throughput import (
    IDLE_TTFT_DEFINITION,
    TTFT_DEFINITION,
    SpeedCorrection,
    apply_correction,
    disaggregated_ttft,
    disaggregated_ttft_parts,
    estimate,
    prefill,
)

K3 = reference.model("kimi-k3")
H200 = reference.accelerator("h200-141gb")
H100 = reference.accelerator("h100-sxm-80gb")


@pytest.mark.parametrize(
    ("layout", "prompt", "hit"),
    [(Layout(tp=8, pp=2), 2048, 0.0), (Layout(tp=8, dp=2, ep=16), 20_000, 0.5), (Layout(tp=8, pp=2), 9000, 0.0)],
)
def test_ttft_parts_sum_to_ttft_and_name_the_model_terms(layout, prompt, hit):
    r = estimate(K3, H200, layout, prompt_tokens=prompt, output_tokens=512, prefix_cache_hit_rate=hit)
    parts = r.ttft_parts
    assert parts.total_s == r.ttft_s  # exactly: the same terms in the same order
    assert parts.queue_s == r.queue_s
    assert parts.prefill_s == r.prefill.time_s
    assert parts.decode_sharing_s == pytest.approx(r.prefill.chunks * r.decode.time_s)
    assert parts.kv_transfer_s == 0.0  # aggregated: no transfer
    d = r.to_dict()
    assert sum(d["ttft_parts"].values()) == pytest.approx(d["ttft_ms"])
    assert d["ttft_definition"] == {"code": "mean_under_load", "text": TTFT_DEFINITION.text}
    assert d["idle_ttft_definition"]["code"] == "idle_single_request"
    assert any(a.startswith("TTFT (mean_under_load)") for a in r.assumptions)
    assert any(a.startswith("Idle TTFT (idle_single_request)") for a in r.assumptions)


def test_idle_ttft_is_the_prefill_of_one_prompt_at_dp_1():
    layout = Layout(tp=8, pp=2)
    r = estimate(K3, H200, layout, prompt_tokens=4096, output_tokens=256)
    alone = prefill(K3, H200, layout, 4096)
    assert r.idle_ttft_s == alone.time_s
    assert r.idle_ttft_s < r.ttft_s  # at the memory limit the queue and the decode sharing add to it
    assert r.to_dict()["idle_ttft_ms"] == pytest.approx(alone.time_s * 1e3)


def test_idle_ttft_with_data_parallel_ranks_prefills_on_one_rank():
    """With dp > 1 the loaded prefill has every rank's chunk in its step (the experts see dp x c tokens);
    one request alone occupies one rank, so its prefill is no slower than the loaded one."""
    layout = Layout(tp=8, dp=2, ep=16)
    r = estimate(K3, H200, layout, prompt_tokens=8192, output_tokens=256, batch=1)
    assert r.idle_ttft_s <= r.prefill.time_s
    assert r.idle_ttft_s < r.ttft_s


def test_batch_one_ttft_is_idle_plus_its_own_queue_and_one_decode_step():
    """At batch 1 the loaded TTFT still counts the M/M/1 wait at the rate one sequence implies and the decode
    step its chunk shares: the two definitions differ by those terms only (dp = 1)."""
    r = estimate(reference.model("llama-3.1-70b"), H100, Layout(tp=2), prompt_tokens=5000, output_tokens=500,
                 batch=1, weight_format="fp8")  # fmt: skip
    assert r.ttft_s - r.idle_ttft_s == pytest.approx(r.ttft_parts.queue_s + r.ttft_parts.decode_sharing_s)


def test_disaggregated_parts_are_queue_prefill_and_exposed_transfer():
    p = prefill(K3, H200, Layout(tp=8, pp=2), 8192)
    rate = 0.5 / p.busy_s_per_request
    parts = disaggregated_ttft_parts(rate, p)
    assert parts.total_s == disaggregated_ttft(rate, p)
    assert parts.decode_sharing_s == 0.0
    assert parts.kv_transfer_s == p.kv_transfer_exposed_s
    assert parts.queue_s == pytest.approx(p.busy_s_per_request)  # rho 0.5: rho / (1 - rho) x w = w
    assert math.isinf(disaggregated_ttft_parts(2 / p.busy_s_per_request, p).total_s)


def test_a_live_correction_scales_the_parts_and_idle_ttft():
    r = estimate(K3, H200, Layout(tp=8, pp=2), prompt_tokens=4096, output_tokens=256)
    c = SpeedCorrection(1.3, 1.8, 20, 20, 0.1, 0.1, None)
    corrected = apply_correction(r, c)
    assert corrected.ttft_parts.total_s == corrected.ttft_s
    assert corrected.ttft_s == pytest.approx(1.8 * (r.queue_s + r.prefill.time_s) + 1.3 * r.ttft_parts.decode_sharing_s)
    assert corrected.idle_ttft_s == pytest.approx(1.8 * r.idle_ttft_s)
    assert IDLE_TTFT_DEFINITION.code != TTFT_DEFINITION.code
