"""Benchmark of the sizing engine: size() evaluations per second on one core.

Run from the repository root:

    python bench/bench_sizing.py            # or: .venv/bin/python bench/bench_sizing.py
    python bench/bench_sizing.py --seconds 5

Plain script (no pytest, no database). It pins itself to one CPU where the OS allows, builds a
grid of varied, valid inputs (6 catalogue models x the seeds' 4 SKUs, read from
fleet/catalog/*.json through ``fleet.catalog.reference``, x several layouts, contexts, KV dtypes
and pools, as the HTMX form produces them), warms the per-model memo, and reports:

* warm:   size() over the grid, per-model constants memoised (the steady state of a server);
* dict:   size() followed by to_dict() (what the REST API does per request);
* cold:   size() on a fresh copy of the model every call (memo miss, worst case);
* curve:  capacity_curve() points per second (64 context lengths per call).

Target: at least 50,000 warm size() evaluations per second on one core.
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import statistics
import sys
import time
from dataclasses import fields
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fleet.catalog import reference
from planner.engine import EngineInputError, Layout, ModelArch, capacity_curve, size

#: Catalogue slugs: six architectures (hybrid KDA/MLA, MLA, GQA, sliding + full, gated DeltaNet) and the
#: seeds' four SKUs.
MODEL_SLUGS = ("kimi-k3", "deepseek-v3", "llama-3.1-70b", "gpt-oss-120b", "qwen3-next-80b-a3b", "kimi-linear-48b-a3b")
SKU_SLUGS = ("h100-sxm-80gb", "h200-141gb", "b200-192gb", "gb300-288gb")
MODELS = tuple(reference.model(slug) for slug in MODEL_SLUGS)
ACCELERATORS = tuple(reference.accelerator(slug) for slug in SKU_SLUGS)

LAYOUTS = (
    Layout(),
    Layout(tp=2),
    Layout(tp=4),
    Layout(tp=8),
    Layout(tp=8, pp=2),
    Layout(tp=8, pp=4),
    Layout(tp=4, dp=2, ep=8),
    Layout(tp=8, dp=4, ep=32),
    Layout(tp=16, pp=2),
    Layout(tp=32),
)
CONTEXTS = (4096, 32_768, 131_072)
KV_DTYPES = ("bf16", "fp8")
POOLS = ("unified", "split")


def build_grid() -> list[tuple[ModelArch, object, dict]]:
    """Every valid combination of the axes above (invalid layouts for a model are skipped)."""
    grid = []
    for model, acc, layout, context, kv, pool in itertools.product(
        MODELS, ACCELERATORS, LAYOUTS, CONTEXTS, KV_DTYPES, POOLS
    ):
        kwargs = {"layout": layout, "context_tokens": context, "kv_cache_dtype": kv, "pool": pool}
        try:
            size(model, acc, **kwargs)
        except EngineInputError:
            continue
        grid.append((model, acc, kwargs))
    return grid


def rate(fn, seconds: float, repeats: int = 5) -> tuple[float, float]:
    """(best, median) calls per second of ``fn(i)`` over ``repeats`` timed runs."""
    calls = 1000
    while True:  # calibrate the batch size to about seconds / repeats per run
        start = time.perf_counter()
        for i in range(calls):
            fn(i)
        elapsed = time.perf_counter() - start
        if elapsed >= seconds / repeats / 4:
            break
        calls *= 2
    calls = max(calls, int(calls * (seconds / repeats) / max(elapsed, 1e-9)))
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        for i in range(calls):
            fn(i)
        rates.append(calls / (time.perf_counter() - start))
    return max(rates), statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="timed seconds per measurement")
    args = parser.parse_args()
    pinned = "no"
    if hasattr(os, "sched_setaffinity"):
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        pinned = f"yes (CPU {cpu})"

    grid = build_grid()
    n = len(grid)
    contexts = [2048 * (k + 1) for k in range(64)]  # 2k .. 128k tokens

    def warm(i: int) -> None:
        model, acc, kwargs = grid[i % n]
        size(model, acc, **kwargs)

    def as_dict(i: int) -> None:
        model, acc, kwargs = grid[i % n]
        size(model, acc, **kwargs).to_dict()

    def cold(i: int) -> None:
        model, acc, kwargs = grid[i % n]
        fresh = ModelArch(**{f.name: getattr(model, f.name) for f in fields(model)})
        size(fresh, acc, **kwargs)

    def curve(i: int) -> None:
        model, acc, kwargs = grid[i % n]
        options = {k: v for k, v in kwargs.items() if k != "context_tokens"}
        capacity_curve(model, acc, contexts, **options)

    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, pinned: {pinned}")
    print(f"grid: {n} valid input combinations ({len(MODELS)} models x {len(ACCELERATORS)} SKUs x ...)")
    for label, fn, unit in (
        ("warm  size()", warm, "evaluations/s"),
        ("dict  size().to_dict()", as_dict, "evaluations/s"),
        ("cold  size() (memo miss)", cold, "evaluations/s"),
        ("curve capacity_curve(64 contexts)", curve, "curves/s"),
    ):
        best, median = rate(fn, args.seconds)
        extra = f"  (= {best * len(contexts):,.0f} points/s)" if fn is curve else ""
        print(f"{label:<36} best {best:>10,.0f}  median {median:>10,.0f} {unit}{extra}")


if __name__ == "__main__":
    main()
