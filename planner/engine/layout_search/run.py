"""Layout search: the cheapest serving configurations of a model for a workload, over SKUs and layouts.

Pure Python, no Django. Units: seconds internally, ms in ``to_dict()``, USD (float estimates; the
quoted price is echoed as a string), tokens. What is enumerated and how: docs/throughput.md, "The layout search".

For each SKU offer (accelerator + price per GPU-hour), KV dtype and replica layout
(``space.replica_layouts``), and each whole-node GPU count ``G`` (``space.gpu_counts``):

* **aggregated**: ``G / gpus-per-replica`` replicas share the workload's design concurrency ``C``;
  each runs ``B = ceil(C / replicas)`` sequences, which must fit in memory at the p95 context
  (``sizing.size``), and must meet the TTFT and TPOT SLOs (``throughput.aggregated_latency``);
* **disaggregated**: a decode pool (``G_d`` GPUs, its own layout) runs ``C`` sequences with no
  prefill interference and must fit and meet TPOT; it admits ``lambda = C / (output x TPOT)``
  requests per second, which a prefill pool (``G_p`` GPUs, its own layout, same SKU and KV dtype)
  must prefill within the TTFT SLO, KV transfer included (``throughput.disaggregated_ttft``);
  ``G_p + G_d`` must stay within the GPU cap. For each decode pool the cheapest sufficient prefill
  pool is found by bisection over the prefill pools' sustainable rates, so every (prefill, decode)
  pair within the cap is covered without being evaluated one by one.

Pruning: a layout whose weights alone exceed a GPU's usable memory is rejected (``does_not_fit``)
for every GPU count without evaluating throughput; it is counted in ``pruned_by_weights``, not in
``candidates_evaluated``.

Ranking: cost per million output tokens at the workload's volume (fleet USD per day / output tokens
per day), then TPOT. The result holds the Pareto frontier of cost vs TPOT, the top configurations
(the best, then the others with ``costs_more``), the near misses cheaper than the best with the reason
each lost (``does_not_fit``, ``misses_ttft``, ``misses_tpot``), and every rejection counted by reason
with examples.

``progress(done, total)`` is called at the start, every ``progress_every`` units of work (one unit =
one SKU x KV dtype x layout, over all GPU counts, plus one pairing unit per SKU x KV dtype) and at the
end; returning ``False`` raises ``SearchCancelled``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from decimal import Decimal

from ..sizing.capacity import DEFAULT_GPU_MEMORY_UTILIZATION
from ..spec import Accelerator, ModelArch
from ..throughput.options import DEFAULT_OPTIONS, ThroughputOptions
from .evaluation import PricedOffer, SearchRun, check_search_inputs, coerce_offers
from .report import build_result
from .space import DEFAULT_MAX_NODES
from .types import MODES, ProgressCallback, SearchResult, SkuOffer, Workload


def search(
    model: ModelArch,
    workload: Workload,
    offers: Iterable[SkuOffer | tuple[Accelerator, Decimal | float | int | str]],
    *,
    max_nodes: int = DEFAULT_MAX_NODES,
    max_gpus: int | None = None,
    kv_cache_dtypes: Sequence[str] = ("bf16", "fp8"),
    modes: Sequence[str] = MODES,
    top_n: int = 10,
    examples_per_reason: int = 3,
    weight_format: str | None = None,
    include_scale_overhead: bool = True,
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION,
    options: ThroughputOptions = DEFAULT_OPTIONS,
    progress: ProgressCallback | None = None,
    progress_every: int = 100,
) -> SearchResult:
    """Search SKUs x GPU counts x layouts x KV dtypes x serving modes for ``workload`` (module docstring).

    ``offers`` are ``SkuOffer``s or ``(Accelerator, usd_per_gpu_hour)`` pairs (price as ``Decimal``,
    ``float``, ``int`` or ``str``). GPU counts are whole nodes, ``1 .. max_nodes`` per SKU, capped at
    ``max_gpus``. ``progress(done, total)`` is called at the start, every ``progress_every`` units and
    at the end; returning ``False`` cancels (``SearchCancelled``). Raises ``EngineInputError`` for bad input.
    """
    started = time.perf_counter()
    modes, kv_dtypes = tuple(modes), tuple(kv_cache_dtypes)
    check_search_inputs(model, workload, modes, kv_dtypes, options, max_nodes, max_gpus, top_n, examples_per_reason)
    prepared = [PricedOffer(o, options, max_nodes, max_gpus, model) for o in coerce_offers(offers)]
    run = SearchRun(
        model,
        workload,
        prepared,
        modes,
        kv_dtypes,
        weight_format,
        include_scale_overhead,
        gpu_memory_utilization,
        progress,
        progress_every,
    )
    run.run()
    return build_result(run, top_n, examples_per_reason, options, started)
