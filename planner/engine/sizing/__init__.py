"""Memory: does a model fit a cluster, and how many sequences fit beside it. Units: bytes (``int``).

Modules, one concept each (formulas and sources: docs/sizing.md):

- ``weights``: one copy of the weights per component and format, and each GPU's share;
- ``kv_cache``: per-token attention cache by layer group, and each GPU's share;
- ``state``: the fixed per-sequence state of linear-attention layers;
- ``runtime``: the runtime reserve per GPU (framework, CUDA graphs, NCCL, activations);
- ``admission``: the cache budget and how unified and split pools spend it;
- ``floors``: the weights-only GPU floor and the single-accelerator tier;
- ``memo``: per-model constants memoised for fast repeated sizing;
- ``capacity``: ``size()`` and ``capacity_curve()`` with their input checks;
- ``result``: ``SizingResult`` and ``CapacityPoint``.
"""

from .admission import POOLS, usable_bytes
from .capacity import DEFAULT_CONTEXT_TOKENS, DEFAULT_GPU_MEMORY_UTILIZATION, capacity_curve, size
from .floors import SingleGpuFit, min_gpus_for_weights, single_gpu_fit
from .kv_cache import kv_bytes_per_sequence, kv_bytes_per_token
from .result import CapacityPoint, SizingResult
from .runtime import RuntimeReserve, runtime_reserve
from .state import state_bytes_per_sequence
from .weights import WeightBreakdown, weight_breakdown, weights_bytes

__all__ = [
    "DEFAULT_CONTEXT_TOKENS",
    "DEFAULT_GPU_MEMORY_UTILIZATION",
    "POOLS",
    "CapacityPoint",
    "RuntimeReserve",
    "SingleGpuFit",
    "SizingResult",
    "WeightBreakdown",
    "capacity_curve",
    "kv_bytes_per_sequence",
    "kv_bytes_per_token",
    "min_gpus_for_weights",
    "runtime_reserve",
    "single_gpu_fit",
    "size",
    "state_bytes_per_sequence",
    "usable_bytes",
    "weight_breakdown",
    "weights_bytes",
]
