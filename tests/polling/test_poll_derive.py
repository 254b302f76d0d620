"""derive(): rates, hit rate, percentiles from bucket differences, counter resets (hand-computed)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from fleet.polling.metrics import HistogramData, MetricsSnapshot, derive, histogram_quantile, parse_metrics

INF = math.inf


def hist(*pairs: tuple[float, float], total_sum: float = 0.0) -> HistogramData:
    buckets = tuple(pairs)
    return HistogramData(buckets=buckets, sum=total_sum, count=buckets[-1][1])


def snap(**kw) -> MetricsSnapshot:
    kw.setdefault("engine", "vllm")
    return MetricsSnapshot(**kw)


def test_quantile_interpolates_linearly_within_the_bucket():
    buckets = [(0.1, 10), (0.5, 60), (1.0, 100), (INF, 100)]
    # p50: rank 50 lies in (0.1, 0.5] which holds 50 observations, 40 of them up to the rank
    assert histogram_quantile(0.5, buckets) == pytest.approx(0.1 + 0.4 * 40 / 50)  # 0.42
    # p95: rank 95 in (0.5, 1.0] holding 40, 35 up to the rank
    assert histogram_quantile(0.95, buckets) == pytest.approx(0.5 + 0.5 * 35 / 40)  # 0.9375
    # the first bucket starts at zero
    assert histogram_quantile(0.05, buckets) == pytest.approx(0.1 * 5 / 10)


def test_quantile_in_the_inf_bucket_gives_the_highest_finite_bound():
    assert histogram_quantile(0.95, [(0.1, 1), (0.5, 2), (INF, 10)]) == 0.5


def test_quantile_without_observations_is_none():
    assert histogram_quantile(0.5, [(0.1, 0), (INF, 0)]) is None
    assert histogram_quantile(0.5, []) is None


def test_rates_hit_rate_and_percentiles_from_differences():
    prev = snap(
        scraped_at=100.0,
        prompt_tokens=1000.0,
        generation_tokens=500.0,
        prefix_cache_queries=1000.0,
        prefix_cache_hits=100.0,
        preemptions=2.0,
        ttft=hist((0.1, 5), (0.5, 10), (1.0, 10), (INF, 10), total_sum=2.0),
    )
    cur = snap(
        scraped_at=110.0,
        prompt_tokens=1600.0,
        generation_tokens=800.0,
        prefix_cache_queries=1600.0,
        prefix_cache_hits=400.0,
        preemptions=5.0,
        requests_running=4.0,
        ttft=hist((0.1, 15), (0.5, 70), (1.0, 110), (INF, 110), total_sum=40.0),
    )
    d = derive(prev, cur)
    assert d.interval_s == 10.0 and not d.first_scrape and not d.counter_reset
    assert d.prompt_tokens_per_s == pytest.approx(60.0)
    assert d.generation_tokens_per_s == pytest.approx(30.0)
    assert d.prefix_cache_hit_rate == pytest.approx(300 / 600)
    assert d.preemptions == 3.0
    assert d.requests_running == 4.0
    # bucket differences: (0.1: 10), (0.5: 60), (1.0: 100), (Inf: 100): same as the test above
    assert d.requests_started == 100.0
    assert d.ttft_p50_s == pytest.approx(0.42)
    assert d.ttft_p95_s == pytest.approx(0.9375)
    assert d.ttft_mean_s == pytest.approx(38.0 / 100)


def test_explicit_interval_wins():
    prev = snap(prompt_tokens=0.0, scraped_at=0.0)
    cur = snap(prompt_tokens=100.0, scraped_at=1.0)
    assert derive(prev, cur, interval_s=4.0).prompt_tokens_per_s == 25.0


def test_counter_reset_is_reported_and_never_negative():
    """Engine restart: counters drop. Like Prometheus rate(), the current values are the delta."""
    prev = snap(
        scraped_at=0.0,
        prompt_tokens=50_000.0,
        generation_tokens=9_000.0,
        prefix_cache_queries=50_000.0,
        prefix_cache_hits=20_000.0,
        preemptions=7.0,
        ttft=hist((0.1, 500), (INF, 600), total_sum=90.0),
    )
    cur = snap(
        scraped_at=10.0,
        prompt_tokens=200.0,
        generation_tokens=100.0,
        prefix_cache_queries=200.0,
        prefix_cache_hits=50.0,
        preemptions=0.0,
        ttft=hist((0.1, 2), (INF, 2), total_sum=0.1),
    )
    d = derive(prev, cur)
    assert d.counter_reset is True
    assert d.prompt_tokens_per_s == pytest.approx(20.0)
    assert d.generation_tokens_per_s == pytest.approx(10.0)
    assert d.prefix_cache_hit_rate == pytest.approx(0.25)
    assert d.preemptions == 0.0
    assert d.requests_started == 2.0
    values = [v for v in d.to_dict().values() if isinstance(v, float)]
    assert all(v >= 0 for v in values)


def test_process_restart_detected_even_when_counters_grew_past_the_old_values():
    prev = snap(scraped_at=0.0, prompt_tokens=100.0, process_start_time_s=1000.0)
    cur = snap(scraped_at=60.0, prompt_tokens=600.0, process_start_time_s=1050.0)
    d = derive(prev, cur)
    assert d.counter_reset is True
    assert d.prompt_tokens_per_s == pytest.approx(10.0)  # 600 since the restart, not 500


def test_first_scrape_has_gauges_and_lifetime_percentiles_only():
    cur = snap(requests_running=3.0, prompt_tokens=10.0, ttft=hist((0.1, 10), (0.5, 60), (1.0, 100), (INF, 100)))
    d = derive(None, cur)
    assert d.first_scrape and d.prompt_tokens_per_s is None and d.interval_s is None
    assert d.requests_running == 3.0
    assert d.ttft_p50_s == pytest.approx(0.42)


def test_no_traffic_gives_none_not_zero_division():
    a = snap(scraped_at=0.0, prefix_cache_queries=10.0, prefix_cache_hits=5.0, ttft=hist((0.1, 3), (INF, 3)))
    b = snap(scraped_at=5.0, prefix_cache_queries=10.0, prefix_cache_hits=5.0, ttft=hist((0.1, 3), (INF, 3)))
    d = derive(a, b)
    assert d.prefix_cache_hit_rate is None and d.ttft_p50_s is None and d.requests_started == 0.0


def test_changed_bucket_layout_gives_no_percentile():
    a = snap(scraped_at=0.0, ttft=hist((0.1, 3), (INF, 3)))
    b = snap(scraped_at=5.0, ttft=hist((0.2, 5), (INF, 5)))
    assert derive(a, b).ttft_p50_s is None


def test_non_positive_interval_gives_no_rates():
    a = snap(scraped_at=10.0, prompt_tokens=1.0)
    b = snap(scraped_at=10.0, prompt_tokens=5.0)
    assert derive(a, b).prompt_tokens_per_s is None


def test_engine_change_starts_over():
    a = snap(engine="sglang", scraped_at=0.0, prompt_tokens=10.0)
    b = snap(engine="vllm", scraped_at=5.0, prompt_tokens=1.0)
    d = derive(a, b)
    assert d.first_scrape and not d.counter_reset


def test_lifetime_percentile_of_the_two_engine_fixture():
    text = (Path(__file__).parent / "fixtures" / "vllm-v1-dp2-metrics.txt").read_text()
    d = derive(None, parse_metrics(text))
    # summed buckets: 0.06: 3, 0.08: 7, 0.1: 14, 0.25: 20; rank 10 in (0.08, 0.1] holding 7, 3 up to the rank
    assert d.ttft_p50_s == pytest.approx(0.08 + 0.02 * 3 / 7)
    # rank 19 in (0.1, 0.25] holding 6, 5 up to the rank
    assert d.ttft_p95_s == pytest.approx(0.1 + 0.15 * 5 / 6)
