"""parse_metrics() on real server output (sources in each fixture's first line) and on fixtures
built in the same shape (vLLM V1 with two engines, SGLang with two TP ranks, llama.cpp)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from fleet.polling import metrics
from fleet.polling.metrics import HistogramData, MetricsParseError, MetricsSnapshot, parse_metrics

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> str:
    text = (FIXTURES / name).read_text()
    assert text.startswith(("# source:", "# constructed")), f"{name} must say where it comes from"
    return text


def test_vllm_v1_sample_prefers_current_names_and_skips_created():
    """vLLM 0.10 (production-stack issue 617): kv_cache_usage_perc and prefix_cache_queries_total
    are current; the excerpt has only the deprecated hits counter; *_created gauges are ignored."""
    snap = parse_metrics(fixture("vllm-v1-metrics.txt"))
    assert snap.engine == "vllm"
    assert snap.kv_cache_usage == pytest.approx(9.75010481363281e-06)
    assert snap.sources["kv_cache_usage"] == "vllm:kv_cache_usage_perc"
    assert snap.prefix_cache_queries == 32.0
    assert snap.sources["prefix_cache_queries"] == "vllm:prefix_cache_queries_total"
    assert snap.prefix_cache_hits == 0.0
    assert snap.sources["prefix_cache_hits"] == "vllm:gpu_prefix_cache_hits_total"
    # vllm:gpu_prefix_cache_queries_created (1.75e9) must not be read as the queries counter
    assert all(not name.endswith("_created") for name in snap.sources.values())
    assert snap.shards == 1


def test_vllm_early_v1_sample_uses_deprecated_names():
    """vLLM ~0.7/0.8 (production-stack issue 318): no engine label, gpu_cache_usage_perc; the
    excerpt ends with a TYPE line without samples, which must not produce a value."""
    snap = parse_metrics(fixture("vllm-early-v1-metrics.txt"))
    assert snap.engine == "vllm"
    assert snap.requests_running == 0.0
    assert snap.requests_waiting == 0.0
    assert snap.kv_cache_usage == 0.0
    assert snap.sources["kv_cache_usage"] == "vllm:gpu_cache_usage_perc"
    assert snap.prefix_cache_queries is None
    assert snap.ttft is None and snap.itl is None


def test_sglang_sample():
    """SGLang (sglang issue 13485 and production-metrics docs): scheduler labels and bare model_name."""
    snap = parse_metrics(fixture("sglang-metrics.txt"))
    assert snap.engine == "sglang"
    assert snap.requests_running == 1.0
    assert snap.requests_waiting == 2826.0
    assert snap.kv_cache_usage == pytest.approx(0.28)
    assert snap.reported_prefix_hit_rate == pytest.approx(0.007507552643049313)
    assert snap.prefix_cache_hits is None  # no cached_tokens_total in the excerpt


def test_vllm_two_engines_sum_counts_and_average_usage():
    snap = parse_metrics(fixture("vllm-v1-dp2-metrics.txt"), scraped_at=1000.0)
    assert snap.scraped_at == 1000.0
    assert snap.shards == 2
    assert snap.requests_running == 8.0  # 3 + 5
    assert snap.requests_waiting == 1.0
    assert snap.kv_cache_usage == pytest.approx(0.3)  # mean of 0.2 and 0.4
    assert snap.kv_cache_usage_max == pytest.approx(0.4)
    # deprecated and current names carry the same numbers: counted once, not twice
    assert snap.prefix_cache_queries == 4000.0
    assert snap.prefix_cache_hits == 1600.0
    assert snap.prompt_tokens == 5000.0
    assert snap.generation_tokens == 1500.0
    assert snap.preemptions == 3.0
    # capacity: num_gpu_blocks x block_size per engine, summed: 2 x 2000 x 16
    assert snap.cache_capacity_tokens == 64_000
    assert snap.kv_cache_used_tokens == pytest.approx(0.3 * 64_000)
    assert snap.process_start_time_s == pytest.approx(1.7537953e9)


def test_vllm_histograms_are_summed_across_engines():
    snap = parse_metrics(fixture("vllm-v1-dp2-metrics.txt"))
    assert snap.sources["ttft"] == "vllm:time_to_first_token_seconds"
    assert snap.sources["itl"] == "vllm:inter_token_latency_seconds"
    ttft = dict(snap.ttft.buckets)
    assert ttft[0.06] == 3.0 and ttft[0.08] == 7.0 and ttft[0.1] == 14.0 and ttft[0.25] == 20.0
    assert ttft[math.inf] == 20.0 and snap.ttft.count == 20.0
    assert snap.ttft.sum == pytest.approx(2.0)
    assert len(snap.ttft.buckets) == 23  # vLLM's 22 TTFT bounds + Inf
    assert snap.itl.count == 1480.0 and snap.itl.sum == pytest.approx(52.5)


def test_sglang_tp_ranks_are_not_double_counted():
    """Two TP ranks repeat one scheduler's numbers: max across ranks, not sum."""
    snap = parse_metrics(fixture("sglang-tp2-metrics.txt"))
    assert snap.shards == 1
    assert snap.requests_running == 12.0
    assert snap.requests_waiting == 3.0
    assert snap.kv_cache_used_tokens == 33600.0
    assert snap.cache_capacity_tokens == 120_000
    assert snap.preemptions == 4.0
    # SGLang counts cached prompt tokens: queries are the prompt tokens
    assert snap.prefix_cache_queries == snap.prompt_tokens == 8_128_902.0
    assert snap.prefix_cache_hits == 2_032_225.0
    assert snap.ttft.count == 100.0


def test_sglang_data_parallel_ranks_are_summed():
    text = "\n".join(
        f'sglang:num_running_reqs{{dp_rank="{dp}",engine_type="unified",model_name="m",pp_rank="0",tp_rank="{tp}"}} {v}'
        for dp, v in ((0, 4.0), (1, 6.0))
        for tp in (0, 1)
    )
    snap = parse_metrics(text)
    assert snap.requests_running == 10.0
    assert snap.shards == 2


def test_llamacpp_names():
    snap = parse_metrics(fixture("llamacpp-metrics.txt"))
    assert snap.engine == "llamacpp"
    assert snap.requests_running == 2.0  # requests_processing
    assert snap.requests_waiting == 1.0  # requests_deferred
    assert snap.kv_cache_usage == 0.25
    assert snap.kv_cache_used_tokens == 4096.0
    assert snap.prompt_tokens == 1_234_570.0  # printed with 6 significant digits by llama.cpp
    assert snap.generation_tokens == 345_678.0
    assert snap.prefix_cache_queries is None and snap.ttft is None and snap.cache_capacity_tokens is None


def test_llamacpp_without_usage_ratio():
    """Newer llama.cpp builds dropped kv_cache_usage_ratio: usage is then unknown, not zero."""
    text = "# TYPE llamacpp:kv_cache_tokens gauge\nllamacpp:kv_cache_tokens 10\n"
    snap = parse_metrics(text)
    assert snap.kv_cache_usage is None and snap.kv_cache_used_tokens == 10.0


def test_cache_config_without_blocks_yet():
    text = 'vllm:cache_config_info{block_size="16",num_gpu_blocks="None",engine="0"} 1.0\n'
    assert parse_metrics(text).cache_capacity_tokens is None


@pytest.mark.parametrize(
    "text",
    ["<html><body>Welcome to nginx!</body></html>", "garbage {{{", '{"data": []}', b"\xff\xfe\x00bad"],
)
def test_garbage_raises(text):
    with pytest.raises(MetricsParseError):
        parse_metrics(text)


def test_empty_page_gives_empty_snapshot():
    snap = parse_metrics("")
    assert snap.engine is None and snap.requests_running is None and snap.shards == 0


def test_snapshot_round_trips_through_strict_json():
    snap = parse_metrics(fixture("vllm-v1-dp2-metrics.txt"), scraped_at=5.0)
    data = json.loads(json.dumps(snap.to_dict(), allow_nan=False))
    assert data["ttft"]["buckets"][-1][0] == "+Inf"
    again = MetricsSnapshot.from_dict(data)
    assert again == snap
    assert isinstance(again.ttft, HistogramData)
    assert MetricsSnapshot.from_dict(None) is None


def test_nan_gauge_is_ignored():
    snap = parse_metrics("vllm:num_requests_running NaN\n")
    assert snap.requests_running is None


# -- reading only what is used ------------------------------------------------------------------


METRICS_PAGES = sorted(p.name for p in FIXTURES.glob("*-metrics.txt"))


@pytest.mark.parametrize("name", METRICS_PAGES)
def test_the_fast_path_reads_what_the_full_parser_reads(name):
    """Only lines of read samples are read, each series head parsed by prometheus-client: the
    result equals prometheus-client's parse of the whole page, restricted to the read samples,
    with fresh heads and with heads remembered from an earlier page (and every fixture's heads)."""
    text = fixture(name)
    full = {k: v for k, v in metrics._parse(text).items() if k in metrics.READ_SAMPLES}
    assert full, "the fixture has read samples"
    heads = metrics.SeriesHeads()
    assert metrics._collect(text, heads) == full
    assert len(heads) > 0
    assert metrics._collect(text, heads) == full  # again, from the remembered heads
    shared = metrics.SeriesHeads()
    for other in METRICS_PAGES:
        metrics._collect(fixture(other), shared)
    assert metrics._collect(text, shared) == full
    assert parse_metrics(text, heads=shared) == parse_metrics(text)


def test_unread_families_are_not_parsed_but_read_ones_are():
    page = fixture("vllm-v1-metrics.txt")
    tolerated = page + 'vllm:some_future_metric{model_name="m" 1.0\n'  # broken, in a family nobody reads
    assert parse_metrics(tolerated).requests_running == parse_metrics(page).requests_running
    with pytest.raises(MetricsParseError):
        parse_metrics(page + 'vllm:num_requests_running{model_name="m" 1.0\n')
    with pytest.raises(MetricsParseError):
        parse_metrics(page + "vllm:num_requests_running 1_000\n")


def test_remembered_series_heads_are_bounded():
    heads = metrics.SeriesHeads(limit=50)
    for i in range(10):  # an endpoint inventing new label values on every scrape
        page = "".join(f'vllm:num_requests_running{{engine="{i}-{j}"}} {j}\n' for j in range(20))
        assert parse_metrics(page, heads=heads).requests_running == sum(range(20))
        assert len(heads) <= 50


def test_a_remembered_heads_labels_are_not_changed_by_their_users():
    heads = metrics.SeriesHeads()
    page = 'vllm:num_requests_running{engine="0",tp_rank="1"} 2\n'
    first = metrics._collect(page, heads)["vllm:num_requests_running"][0][0]
    first["engine"] = "changed"
    assert metrics._collect(page, heads)["vllm:num_requests_running"][0][0] == {"engine": "0", "tp_rank": "1"}
