"""Benchmark of the layout search: a full search for Kimi K3 over every SKU, layout and serving mode.

Run from the repository root (plain script, no pytest, no database):

    python bench/bench_search.py              # or: .venv/bin/python bench/bench_search.py
    python bench/bench_search.py --repeats 10

It pins itself to one CPU where the OS allows, searches Kimi K3 as published (``fleet/catalog/models.json``
``kimi-k3``: bf16 with MXFP4 routed experts) over 15 SKU offers at the catalogue's 2.50 USD per GPU-hour:
the eleven SKUs of the reference catalogue (``fleet/catalog/skus.json``: H100, H200, B200, GB300 NVL72
as one 72-GPU domain, A100, MI300X, MI325X, MI355X, L40S, RTX 4090 and a 16 GB RTX 4080), plus the
seeds' four (H100, H200, B200, GB300) again as what-ifs with no scale-up link stated, so the engine
assumes PCIe-class links. Both KV dtypes (bf16, fp8) and both serving modes, up to 8 nodes per SKU.
Every figure is read from the catalogue through ``fleet.catalog.reference`` (no database). It reports
the wall time of each run (best and median) and what the search enumerated, pruned and evaluated.

Target: under 2 s on one core (NVIDIA aiconfigurator's README example takes 6.5 s).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fleet.catalog import reference
from planner.engine import SkuOffer, Workload, search

KIMI_K3 = reference.model("kimi-k3")
SKU_SLUGS = tuple(row["slug"] for row in reference.sku_records())
SEED_SKUS = ("h100-sxm-80gb", "h200-141gb", "b200-192gb", "gb300-288gb")
PRICE = "2.50"  # USD per GPU-hour: the seeds' assumption, the rate every row of fleet/catalog/gpu_quotes.json carries

WORKLOAD = Workload(
    requests_per_day=500_000,
    mean_prompt_tokens=4000,
    mean_output_tokens=600,
    p95_context_tokens=32_768,
    prefix_cache_hit_rate=0.5,
    peak_concurrency=512,
    ttft_slo_ms=2000,
    tpot_slo_ms=50,
)


def offers() -> list[SkuOffer]:
    """The seeds' SKUs with no scale-up link stated (what-ifs), then the catalogue (GB300 as one NVL72 domain)."""
    out = []
    for slug in SEED_SKUS:
        acc = dataclasses.replace(reference.accelerator(slug), interconnect_gbps=0, scaleup_domain_gpus=None)
        out.append(SkuOffer(acc, PRICE, name=f"{acc.name}, no link stated"))
    for slug in SKU_SLUGS:
        out.append(SkuOffer(reference.accelerator(slug), PRICE))  # GB300's 72-GPU domain is the catalogue's
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="timed runs (default 7)")
    args = parser.parse_args()
    pinned = "no"
    if hasattr(os, "sched_setaffinity"):
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        pinned = f"yes (CPU {cpu})"
    sku_offers = offers()
    start = time.perf_counter()
    search(KIMI_K3, WORKLOAD, sku_offers)  # the first call also fills the per-model memos
    cold = time.perf_counter() - start
    times, result = [], None
    for _ in range(args.repeats):
        start = time.perf_counter()
        result = search(KIMI_K3, WORKLOAD, sku_offers)
        times.append(time.perf_counter() - start)
    assert result is not None
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, pinned: {pinned}")
    modes, kvs = ", ".join(result.modes), ", ".join(result.kv_cache_dtypes)
    print(f"model {result.model}; {len(sku_offers)} SKU offers; modes {modes}; KV dtypes {kvs}")
    print(f"design concurrency {result.design_concurrency} sequences")
    print(f"candidates enumerated   {result.candidates_enumerated:>8,}")
    print(f"  pruned (weights)      {result.pruned_by_weights:>8,}")
    print(f"  evaluated             {result.candidates_evaluated:>8,}")
    print(f"    decode-step evals   {result.decode_evaluations:>8,}")
    print(f"    prefill evals       {result.prefill_evaluations:>8,}")
    print(f"disaggregated pairs     {result.disaggregated_pairs_covered:>8,} (covered by bisection)")
    print(f"feasible                {result.feasible:>8,}")
    for reason, (count, _) in result.rejected.items():
        print(f"  {reason:<21} {count:>8,}")
    print(f"wall time: first run {cold:.3f} s; then best {min(times):.3f} s, median {statistics.median(times):.3f} s")
    if result.best is not None:
        b = result.best
        print(
            f"best: {b.sku}, {b.mode}, KV {b.kv_cache_dtype}, {b.gpus} GPUs, {b.decode.layout.as_dict()}, "
            f"{b.usd_per_mtok:.2f} USD/Mtok, TPOT {b.tpot_ms:.1f} ms, TTFT {b.ttft_ms:.0f} ms"
        )
    print(f"frontier: {len(result.frontier)} configurations")


if __name__ == "__main__":
    main()
