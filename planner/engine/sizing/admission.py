"""Admission: how many sequences fit beside the weights and the runtime reserve.

Units: bytes (``int``), all **per GPU**; sequence counts are per tensor/pipeline group (one
data-parallel attention rank), which ``size()`` scales by dp and by replicas.

    usable = nominal HBM x gpu_memory_utilization        (vLLM gpu_memory_utilization,
                                                          SGLang mem_fraction_static)
    cache budget = usable - weights - runtime reserve

Two ways to spend the cache budget on sequences holding ``context_tokens`` tokens:

* **unified** pool (vLLM's hybrid allocator): state and KV share one budget,
  ``n = floor(budget / (state + kv(context)))``.
* **split** pool (SGLang's hybrid linear-attention models): the state pool gets
  ``budget x r / (1 + r)`` and the KV pool the rest, with ``r = mamba_full_memory_ratio``
  (default 0.9; SGLang ``model_runner_kv_cache_mixin.handle_max_mamba_cache`` solves
  ``state + kv = rest`` and ``state / kv = r``). ``n = min(floor(state pool / state),
  floor(KV pool / kv(context)))``; the pool that is not the bottleneck keeps idle bytes,
  reported as ``stranded_bytes`` (always the split pool's figure, whichever pool is chosen,
  so the two can be shown side by side). Models without linear layers (or without KV layers) have a
  single pool, so both modes agree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

POOLS: tuple[str, ...] = ("unified", "split")
DEFAULT_STATE_POOL_RATIO: float = 0.9


def usable_bytes(hbm_bytes: int, gpu_memory_utilization: float) -> int:
    """Bytes the engine may use: the GPU's memory (``spec.gpu_memory_bytes``, the driver's figure) x
    utilisation, rounded down."""
    return int(hbm_bytes * gpu_memory_utilization)


def pool_capacities(
    cache_bytes: int,
    state_bytes: int,
    kv_bytes: int,
    pool: str = "unified",
    ratio: float = DEFAULT_STATE_POOL_RATIO,
) -> tuple[int, int, int, int, int]:
    """``(chosen, unified, split, stranded_bytes, deficit_bytes)`` for a cache budget of ``cache_bytes``.

    Each sequence needs ``state_bytes + kv_bytes``. ``unified``: sequences in one shared pool; ``split``:
    sequences in SGLang's split pool with state : KV = ``ratio``, and the idle bytes of its non-bottleneck
    pool (``stranded_bytes``); ``chosen`` is ``pool``'s figure. ``deficit_bytes`` is 0 when the chosen pool
    admits a sequence, else what that one sequence still lacks (at least 1). The one home of the rule:
    ``unified_capacity``, ``split_capacity``, ``admit()`` and ``size()`` all use it.
    """
    if cache_bytes <= 0:
        unified = split = stranded = 0
    else:
        unified = cache_bytes // max(1, state_bytes + kv_bytes)
        if state_bytes == 0 or kv_bytes == 0:  # one kind of cache: one pool
            split, stranded = unified, 0
        else:
            state_budget = int(cache_bytes * ratio / (1 + ratio))
            kv_budget = cache_bytes - state_budget
            by_state = state_budget // state_bytes
            by_kv = kv_budget // kv_bytes
            if by_state <= by_kv:
                split, stranded = by_state, kv_budget - by_state * kv_bytes
            else:
                split, stranded = by_kv, state_budget - by_kv * state_bytes
    chosen = split if pool == "split" else unified
    if chosen >= 1:
        return chosen, unified, split, stranded, 0
    required = split_required_bytes(state_bytes, kv_bytes, ratio) if pool == "split" else state_bytes + kv_bytes
    return chosen, unified, split, stranded, max(1, required - cache_bytes)


def unified_capacity(cache_bytes: int, state_bytes: int, kv_bytes: int) -> int:
    """Sequences fitting in one shared pool of ``cache_bytes`` (each needing state + kv bytes)."""
    return pool_capacities(cache_bytes, state_bytes, kv_bytes)[1]


def split_capacity(cache_bytes: int, state_bytes: int, kv_bytes: int, ratio: float) -> tuple[int, int]:
    """``(sequences, stranded_bytes)`` for SGLang's split pool with state : KV = ``ratio``."""
    _, _, split, stranded, _ = pool_capacities(cache_bytes, state_bytes, kv_bytes, "split", ratio)
    return split, stranded


def split_required_bytes(state_bytes: int, kv_bytes: int, ratio: float) -> int:
    """Smallest cache budget for which a split pool holds one sequence."""
    if state_bytes == 0 or kv_bytes == 0:
        return state_bytes + kv_bytes
    return max(math.ceil(state_bytes * (1 + ratio) / ratio), math.ceil(kv_bytes * (1 + ratio)))


@dataclass(frozen=True, slots=True)
class Admission:
    """Per-GPU memory budget and the sequences it admits (per data-parallel attention rank)."""

    hbm_bytes: int
    usable_bytes: int
    weights_bytes: int
    runtime_bytes: int
    cache_bytes: int
    state_bytes_per_sequence: int
    kv_bytes_per_sequence: int
    pool: str
    state_pool_ratio: float
    max_sequences_unified: int
    max_sequences_split: int
    stranded_bytes: int
    fits: bool
    deficit_bytes: int

    @property
    def max_sequences(self) -> int:
        """Sequences admitted by the chosen pool."""
        return self.max_sequences_split if self.pool == "split" else self.max_sequences_unified

    def to_dict(self) -> dict[str, Any]:
        return {
            "hbm_bytes": self.hbm_bytes,
            "usable_bytes": self.usable_bytes,
            "weights_bytes": self.weights_bytes,
            "runtime_bytes": self.runtime_bytes,
            "cache_bytes": self.cache_bytes,
            "state_bytes_per_sequence": self.state_bytes_per_sequence,
            "kv_bytes_per_sequence": self.kv_bytes_per_sequence,
            "pool": self.pool,
            "state_pool_ratio": self.state_pool_ratio,
            "max_sequences": self.max_sequences,
            "max_sequences_unified": self.max_sequences_unified,
            "max_sequences_split": self.max_sequences_split,
            "stranded_bytes": self.stranded_bytes,
            "fits": self.fits,
            "deficit_bytes": self.deficit_bytes,
        }


def admit(
    hbm_bytes: int,
    gpu_memory_utilization: float,
    weights_bytes: int,
    runtime_bytes: int,
    state_bytes: int,
    kv_bytes: int,
    pool: str = "unified",
    state_pool_ratio: float = DEFAULT_STATE_POOL_RATIO,
) -> Admission:
    """Admission on one GPU. All byte inputs are that GPU's share (weights, runtime, per sequence).

    ``fits`` is true when the chosen pool admits at least one sequence; otherwise
    ``deficit_bytes`` is how many more bytes per GPU that one sequence would need (the whole
    shortfall when weights and runtime alone exceed the usable memory).
    """
    usable = usable_bytes(hbm_bytes, gpu_memory_utilization)
    cache = usable - weights_bytes - runtime_bytes
    chosen, unified, split, stranded, deficit = pool_capacities(cache, state_bytes, kv_bytes, pool, state_pool_ratio)
    return Admission(
        hbm_bytes=hbm_bytes,
        usable_bytes=usable,
        weights_bytes=weights_bytes,
        runtime_bytes=runtime_bytes,
        cache_bytes=cache,
        state_bytes_per_sequence=state_bytes,
        kv_bytes_per_sequence=kv_bytes,
        pool=pool,
        state_pool_ratio=state_pool_ratio,
        max_sequences_unified=unified,
        max_sequences_split=split,
        stranded_bytes=stranded,
        fits=chosen >= 1,
        deficit_bytes=deficit,
    )
