"""Benchmark of the layout search: a full search for Kimi K3 over every SKU, layout and serving mode.

Run from the repository root (plain script, no pytest, no Django):

    python bench/bench_search.py              # or: .venv/bin/python bench/bench_search.py
    python bench/bench_search.py --repeats 10

It pins itself to one CPU where the OS allows, searches Kimi K3 (``presets.KIMI_K3``) on the four
preset SKUs (``presets.ACCELERATORS``, as they are: no interconnect stated, so the engine assumes
PCIe-class links) plus the eleven SKUs of the reference catalogue (``fleet/catalog/skus.json``,
mirrored inline below so the script needs no Django: H100, H200, B200, GB300 NVL72, A100, MI300X,
MI325X, MI355X, L40S, RTX 4090 and a 16 GB RTX 4080), each at the catalogue's 2.50 USD per
GPU-hour, both KV dtypes (bf16, fp8) and both serving modes, up to 8 nodes per SKU. It reports the
wall time of each run (best and median) and what the search enumerated, pruned and evaluated.

Target: under 2 s on one core (NVIDIA aiconfigurator's README example takes 6.5 s).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.engine import Accelerator, SkuOffer, Workload, search
from planner.engine.presets import ACCELERATORS, KIMI_K3

PRICE = "2.50"  # USD per GPU-hour: the seeds' assumption, as in fleet/catalog/gpu_quotes.json

# fleet/catalog/skus.json, mirrored: HBM GB (decimal), TB/s, dense BF16/FP8/FP4 TFLOPS,
# scale-up GB/s (bidirectional), GPUs per node.
CATALOGUE: tuple[Accelerator, ...] = (
    Accelerator("NVIDIA H100 SXM 80GB", 80, 3.35, 989.4, 1978.9, None, 900, 8),
    Accelerator("NVIDIA H200 SXM 141GB", 141, 4.8, 989.4, 1978.9, None, 900, 8),
    Accelerator("NVIDIA B200 192GB (HGX B200)", 192, 8.0, 2250, 4500, 9000, 1800, 8),
    Accelerator("NVIDIA GB300 288GB, NVL72", 288, 8.0, 2500, 5000, 15000, 1800, 4),
    Accelerator("NVIDIA A100 SXM 80GB", 80, 2.039, 312, None, None, 600, 8),
    Accelerator("AMD Instinct MI300X 192GB", 192, 5.3, 1307.4, 2614.9, None, 896, 8),
    Accelerator("AMD Instinct MI325X 256GB", 256, 6.0, 1307.4, 2614.9, None, 896, 8),
    Accelerator("AMD Instinct MI355X 288GB", 288, 8.0, 2516.6, 5033.2, 10066.3, 1075.2, 8),
    Accelerator("NVIDIA L40S 48GB (PCIe)", 48, 0.864, 362.05, 733, None, 64, 8),
    Accelerator("NVIDIA GeForce RTX 4090 24GB", 24, 1.008, 165.2, 330.3, None, 64, 1),
    Accelerator("NVIDIA GeForce RTX 4080 16GB", 16, 0.7168, 97.5, 194.9, None, 64, 1),
)

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
    """The preset SKUs as they are, then the catalogue (GB300 as one 72-GPU NVLink domain)."""
    out = [SkuOffer(acc, PRICE, name=f"preset {acc.name}") for acc in ACCELERATORS]
    for acc in CATALOGUE:
        out.append(SkuOffer(acc, PRICE, scaleup_domain_gpus=72 if "NVL72" in acc.name else None))
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
