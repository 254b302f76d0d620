"""The layout search: the cheapest serving configurations of a model for a workload, over SKUs and layouts.

Modules, one concept each (what is enumerated and how: docs/throughput.md, "The layout search"):

- ``types``: the workload, SKU offers, candidates, pools and the result (``Workload``, ``SkuOffer``,
  ``Candidate``, ``PoolPlan``, ``SearchResult``, ``SearchCancelled``, ``MODES``, ``REASONS``, ``OUTCOMES`` and
  ``outcome_label``: every outcome in words);
- ``space``: the GPU counts and replica layouts enumerated;
- ``evaluation``: the inputs checked and priced, and each configuration evaluated (``SearchRun``);
- ``report``: ranking, the Pareto frontier, near misses and rejections (``build_result``);
- ``run``: ``search()`` itself.
"""

from .run import search
from .space import replica_layouts
from .types import (
    BEST,
    FEASIBLE,
    MODES,
    OUTCOMES,
    REASONS,
    REJECTIONS,
    Candidate,
    PoolPlan,
    ProgressCallback,
    SearchCancelled,
    SearchResult,
    SkuOffer,
    Workload,
    design_concurrency,
    outcome_label,
)

__all__ = [
    "BEST",
    "FEASIBLE",
    "MODES",
    "OUTCOMES",
    "REASONS",
    "REJECTIONS",
    "Candidate",
    "PoolPlan",
    "ProgressCallback",
    "SearchCancelled",
    "SearchResult",
    "SkuOffer",
    "Workload",
    "design_concurrency",
    "outcome_label",
    "replica_layouts",
    "search",
]
