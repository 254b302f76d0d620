"""fleetcap's pure-Python capacity and cost engine. No Django imports, ever (CI enforces it).

This module is the engine's public API: code outside ``planner/engine`` imports from here only.
Inputs are frozen dataclasses (``ModelArch``, ``Accelerator``, ``Layout``, ``Workload``,
``SkuOffer``, ``Quote``, ``ClusterState``); every calculator returns a dataclass with a
``to_dict()`` and the assumptions behind its numbers, and raises ``EngineInputError`` (with
field names) for input it cannot model.

- memory: ``size``, ``capacity_curve``, ``weights_bytes``, ``kv_bytes_per_token``,
  ``state_bytes_per_sequence``, ``min_gpus_for_weights``, ``single_gpu_fit``
- speed: ``estimate`` (one layout's throughput and latency), ``search`` (layouts over SKUs)
- money: ``breakeven``, ``unit_economics``, ``weights_storage``, ``monthly_spend``,
  ``quotes_in_force``, ``rate_from_quotes``
"""

from planner.engine.cache import kv_bytes_per_token
from planner.engine.costs import (
    BreakevenResult,
    blended_input_usd_per_mtok,
    breakeven,
    unit_economics,
    weights_storage,
)
from planner.engine.errors import EngineInputError
from planner.engine.floors import min_gpus_for_weights, single_gpu_fit
from planner.engine.formats import CACHE_DTYPES, KV_CACHE_DTYPES, WEIGHT_FORMATS
from planner.engine.quotes import PRICING_KINDS, Quote, quote_in_force, quotes_in_force, rate_from_quotes
from planner.engine.result import CapacityPoint, SizingResult
from planner.engine.search import search
from planner.engine.search_types import MODES, REASONS, SearchCancelled, SearchResult, SkuOffer, Workload
from planner.engine.sizing import capacity_curve, size
from planner.engine.spec import Accelerator, LayerGroup, Layout, ModelArch, layout_errors, parse_layer_groups
from planner.engine.spend import ClusterState, SpendResult, monthly_spend
from planner.engine.state import state_bytes_per_sequence
from planner.engine.throughput import ThroughputResult, estimate
from planner.engine.weights import weights_bytes

__all__ = [
    "CACHE_DTYPES",
    "KV_CACHE_DTYPES",
    "MODES",
    "PRICING_KINDS",
    "REASONS",
    "WEIGHT_FORMATS",
    "Accelerator",
    "BreakevenResult",
    "CapacityPoint",
    "ClusterState",
    "EngineInputError",
    "LayerGroup",
    "Layout",
    "ModelArch",
    "Quote",
    "SearchCancelled",
    "SearchResult",
    "SizingResult",
    "SkuOffer",
    "SpendResult",
    "ThroughputResult",
    "Workload",
    "blended_input_usd_per_mtok",
    "breakeven",
    "capacity_curve",
    "estimate",
    "kv_bytes_per_token",
    "layout_errors",
    "min_gpus_for_weights",
    "monthly_spend",
    "parse_layer_groups",
    "quote_in_force",
    "quotes_in_force",
    "rate_from_quotes",
    "search",
    "single_gpu_fit",
    "size",
    "state_bytes_per_sequence",
    "unit_economics",
    "weights_bytes",
    "weights_storage",
]
