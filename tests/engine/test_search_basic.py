"""Layout search: ranking, Pareto frontier, reasons, caps, disaggregated pools, validation, JSON shape."""

import dataclasses
import itertools
import json
from decimal import Decimal

import pytest

from fleet.catalog import reference
from planner.engine.errors import EngineInputError
from planner.engine.layout_search import REASONS, SkuOffer, Workload, design_concurrency, search
from planner.engine.layout_search.report import pareto_front
from planner.engine.layout_search.space import gpu_counts, replica_layouts

KIMI_K3 = reference.model("kimi-k3")
LLAMA_31_70B = reference.model("llama-3.1-70b")
H100 = reference.accelerator("h100-sxm-80gb")
H200 = reference.accelerator("h200-141gb")
B200 = reference.accelerator("b200-192gb")
RTX4080 = reference.accelerator("rtx-4080-16gb")

CHAT = Workload(
    requests_per_day=100_000,
    mean_prompt_tokens=1500,
    mean_output_tokens=300,
    p95_context_tokens=8192,
    prefix_cache_hit_rate=0.2,
    peak_concurrency=64,
    ttft_slo_ms=1500,
    tpot_slo_ms=60,
)
OFFERS = [SkuOffer(H100, "2.50"), SkuOffer(H200, Decimal("3.20")), (B200, 5.0), SkuOffer(RTX4080, 0.4)]


@pytest.fixture(scope="module")
def llama():
    return search(LLAMA_31_70B, CHAT, OFFERS, max_nodes=4)


def test_best_is_the_cheapest_feasible_and_top_explains_the_rest(llama):
    assert llama.best is not None and llama.feasible > 0
    best = llama.best
    assert best.status == "feasible" and best.reason is None
    assert best.tpot_ms <= CHAT.tpot_slo_ms and best.ttft_ms <= CHAT.ttft_slo_ms
    assert best.decode.batch_per_replica <= best.decode.memory_limit_per_replica
    costs = [c.usd_per_mtok for c in llama.top]
    assert costs == sorted(costs)
    assert all(c.reason in ("costs_more", "same_cost") and c.status == "feasible" for c in llama.top[1:])
    for c in llama.top[1:]:  # a tie on cost is called one, never "costs more"
        assert (c.reason == "same_cost") == (c.usd_per_hour == best.usd_per_hour), c
    assert all(c.usd_per_mtok >= best.usd_per_mtok for c in llama.frontier)
    # cost per Mtok at the workload's volume: fleet USD/h x 24 / output Mtok per day
    assert best.usd_per_mtok == pytest.approx(best.usd_per_hour * 24 / (100_000 * 300 / 1e6))
    assert best.usd_per_hour == pytest.approx(best.gpus * float(best.usd_per_gpu_hour))


def test_frontier_is_pareto_optimal(llama):
    front = llama.frontier
    assert front and front[0].usd_per_mtok == llama.best.usd_per_mtok
    for a, b in itertools.pairwise(front):
        assert a.usd_per_mtok <= b.usd_per_mtok and a.tpot_ms > b.tpot_ms
    for c in llama.top:  # nothing in the top list beats a frontier point on both axes
        assert not any(c.usd_per_mtok < f.usd_per_mtok and c.tpot_ms < f.tpot_ms for f in front)


def test_rejections_are_counted_by_reason_with_examples(llama):
    assert set(llama.rejected) == set(REASONS)
    dnf_count, dnf_examples = llama.rejected["does_not_fit"]
    assert dnf_count > 0 and dnf_examples
    assert all(e.status == "does_not_fit" and e.reason == "does_not_fit" and e.detail for e in dnf_examples)
    # 16 GB desktop cards never hold 141 GB of bf16 weights within 4 nodes (4 GPUs)
    assert any("RTX 4080" in e.sku for e in dnf_examples) or llama.pruned_by_weights > 0
    total = llama.feasible + sum(n for r, (n, _) in llama.rejected.items() if r not in ("costs_more", "same_cost"))
    per_mode = len(llama.modes)
    assert total * (per_mode + 1) / per_mode == llama.candidates_enumerated  # + one prefill-pool role each
    assert llama.candidates_evaluated + llama.pruned_by_weights == llama.candidates_enumerated
    assert llama.rejected["costs_more"][0] + llama.rejected["same_cost"][0] == llama.feasible - 1
    for near in llama.near_misses:
        assert near.status in ("does_not_fit", "misses_ttft", "misses_tpot")
        assert near.usd_per_mtok < llama.best.usd_per_mtok


def test_gpu_counts_are_whole_nodes_within_the_cap():
    r = search(LLAMA_31_70B, CHAT, [SkuOffer(H100, "2.50")], max_nodes=8, max_gpus=24)
    assert r.max_gpus == {H100.name: 24}
    for c in (*r.top, *r.frontier, *r.near_misses):
        assert c.gpus <= 24 and c.gpus % 8 == 0
    assert gpu_counts(8, 8, 24) == [8, 16, 24] and gpu_counts(4, 3) == [4, 8, 12]


def test_disaggregated_candidates_have_their_own_prefill_pool():
    prefill_heavy = dataclasses.replace(CHAT, mean_prompt_tokens=16_000, p95_context_tokens=20_000, tpot_slo_ms=80)
    r = search(LLAMA_31_70B, prefill_heavy, [SkuOffer(H100, "2.50")], modes=("disaggregated",), max_nodes=6)
    assert r.best is not None and r.best.mode == "disaggregated"
    for c in r.top:
        assert c.prefill is not None and c.prefill.gpus >= 8
        assert c.gpus == c.decode.gpus + c.prefill.gpus <= 48
        assert c.kv_transfer_ms is not None and c.kv_transfer_ms >= 0
        assert c.ttft_ms <= prefill_heavy.ttft_slo_ms
    assert r.disaggregated_pairs_covered > 0
    assert all(m == "disaggregated" for m in r.modes)


def test_k3_full_search_finds_multi_node_configurations():
    """Kimi K3 (1.60 TB as published: bf16 + MXFP4 experts) on the seeds' SKUs: never fewer GPUs than the
    seeds' weights-only floor (18 H100, 10 H200, 8 B200)."""
    w = Workload(50_000, 4000, 500, 32_768, 0.5, 256, 3000, 80)
    r = search(KIMI_K3, w, [SkuOffer(H100, "2.50"), SkuOffer(H200, "3.50"), SkuOffer(B200, "5.00")])
    assert r.best is not None
    floors = {H100.name: 18, H200.name: 10, B200.name: 8}
    for c in (*r.top, *r.frontier):
        assert c.gpus >= floors[c.sku]
    assert r.wall_time_s < 5
    json.dumps(r.to_dict())


def test_impossible_slo_has_no_best_but_explains_why():
    strict = dataclasses.replace(CHAT, tpot_slo_ms=1)
    r = search(LLAMA_31_70B, strict, [SkuOffer(H100, "2.50")], max_nodes=2)
    assert r.best is None and r.top == () and r.frontier == ()
    assert r.rejected["misses_tpot"][0] > 0
    assert r.near_misses and all(c.status != "feasible" for c in r.near_misses)
    d = r.to_dict()
    json.dumps(d)
    assert d["best"] is None


def test_design_concurrency_covers_daily_volume():
    busy = dataclasses.replace(CHAT, requests_per_day=8_640_000, peak_concurrency=10)
    # 100 requests/s x (300 x 0.06 s + 1.5 s) = 1,950 sequences at once
    assert design_concurrency(busy) == 1950
    assert design_concurrency(CHAT) == 64


def test_search_space_layouts_are_valid_and_dense_models_skip_dp():
    lay = replica_layouts(LLAMA_31_70B, 16)
    assert all(x.dp == 1 and x.ep == 1 for x in lay)
    assert {(x.tp, x.pp) for x in lay} >= {(1, 1), (8, 1), (8, 2), (16, 1)}
    k3 = replica_layouts(KIMI_K3, 64)
    assert all(896 % x.ep == 0 and (x.tp * x.dp) % x.ep == 0 and 96 % x.tp == 0 for x in k3)
    assert any(x.ep == x.tp * x.dp > 1 for x in k3) and any(x.ep == 1 and x.dp > 1 for x in k3)


def test_the_search_tries_every_power_of_two_ep_up_to_tp_x_dp():
    """docs/throughput.md, "The layout search": each MoE (tp, pp, dp) with ep 1, 2, 4, ... tp x dp, etp
    left to its default (tp x dp / ep), no redundant experts."""
    by_shape: dict[tuple[int, int, int], list[int]] = {}
    for x in replica_layouts(KIMI_K3, 64):
        assert x.etp is None and x.redundant_experts == 0 and x.expert_tp * x.ep == x.tp * x.dp
        by_shape.setdefault((x.tp, x.pp, x.dp), []).append(x.ep)
    assert by_shape[(4, 1, 2)] == [1, 2, 4, 8]
    assert by_shape[(8, 1, 4)] == [1, 2, 4, 8, 16, 32]
    assert all(eps == [2**n for n in range(len(eps))] and eps[-1] == tp * dp for (tp, _, dp), eps in by_shape.items())


def test_pareto_front_helper():
    pts = [(1, 9), (2, 5), (2, 4), (3, 6), (4, 1), (5, 1)]
    assert pareto_front(pts, lambda p: p[0], lambda p: p[1]) == [(1, 9), (2, 4), (4, 1)]
    assert pareto_front([], lambda p: p, lambda p: p) == []


def test_validation_reports_fields():
    bad = Workload(0, 0, 10, 2_000_000, 1.5, 0, -1, 0)
    with pytest.raises(EngineInputError) as e:
        search(LLAMA_31_70B, bad, OFFERS)
    assert {
        "requests_per_day",
        "mean_prompt_tokens",
        "prefix_cache_hit_rate",
        "peak_concurrency",
        "ttft_slo_ms",
        "tpot_slo_ms",
    } <= set(e.value.errors)
    with pytest.raises(EngineInputError) as e:
        search(LLAMA_31_70B, dataclasses.replace(CHAT, p95_context_tokens=200_000), OFFERS)
    assert "p95_context_tokens" in e.value.errors
    with pytest.raises(EngineInputError) as e:
        search(LLAMA_31_70B, CHAT, [], modes=("both",), kv_cache_dtypes=("fp6",), max_nodes=0)
    assert {"modes", "kv_cache_dtypes", "max_nodes"} <= set(e.value.errors)
    with pytest.raises(EngineInputError) as e:
        search(LLAMA_31_70B, CHAT, OFFERS, top_n=0, examples_per_reason=-1, max_gpus=0)
    assert {"top_n", "examples_per_reason", "max_gpus"} <= set(e.value.errors)
    with pytest.raises(EngineInputError) as e:
        search(LLAMA_31_70B, CHAT, [])
    assert "offers" in e.value.errors
    quiet = search(LLAMA_31_70B, CHAT, OFFERS[:1], max_nodes=2, examples_per_reason=0)
    assert all(examples == () for _, examples in quiet.rejected.values())
    with pytest.raises(EngineInputError) as e:
        search(LLAMA_31_70B, CHAT, [SkuOffer(H100, "-1")])
    assert "usd_per_gpu_hour" in e.value.errors


def test_result_json_shape(llama):
    d = llama.to_dict()
    json.dumps(d)
    for key in (
        "candidates_enumerated",
        "candidates_evaluated",
        "pruned_by_weights",
        "feasible",
        "frontier",
        "top",
        "near_misses",
        "rejected",
        "assumptions",
        "wall_time_s",
        "design_concurrency",
    ):
        assert key in d
    assert set(d["rejected"]) == set(REASONS)
    assert all({"count", "examples"} == set(v) for v in d["rejected"].values())
    top = d["top"][0]
    assert top["decode"]["layout"] and top["usd_per_gpu_hour"] in ("2.50", "3.20", "5.0", "0.4")
    assert top["assumptions"]


def test_a_tie_on_cost_is_labelled_a_tie(llama):
    """Issue 15: configurations costing exactly what the best costs were labelled "costs_more"."""
    ties = [c for c in llama.top[1:] if c.usd_per_hour == llama.best.usd_per_hour]
    assert ties, "the fixture has layouts of the same GPUs at the same price"
    assert all(c.reason == "same_cost" and c.detail.startswith("same cost as the best") for c in ties)
    assert llama.rejected["same_cost"][0] >= len(ties)
