"""Result dataclasses of ``size()`` and ``capacity_curve()`` (``sizing/capacity.py``). Units: bytes (``int``).

``SizingResult.to_dict()`` is the REST API's response body for a sizing request; the keys are
the API field names (docs/sizing.md lists each with its formula).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..profiles import EngineAllocation
from ..spec import Layout

#: The engine-profile fields of a generic result (``SizingResult.engine_dict``).
_NO_ENGINE: dict[str, Any] = {
    "engine_version": None,
    "engine_block_size_tokens": None,
    "engine_num_blocks": None,
    "engine_kv_cache_tokens": None,
    "engine_max_concurrency": None,
    "state_page_bytes": None,
    "page_padding_fraction": None,
    "kv_cache_groups": [],
    "engine_state_slots": None,
    "engine_state_dtype": None,
    "engine_conv_dtype": None,
}


@dataclass(slots=True)
class SizingResult:
    """Memory and admission of one model on a cluster of one SKU under one layout.

    Treat it as read-only. (It is not ``frozen`` because a frozen dataclass of 50 fields takes
    twice as long to build, and ``size()`` must run tens of thousands of times a second.)

    Byte figures named ``*_per_gpu`` are one GPU's share (the busiest pipeline stage);
    unsuffixed ones are logical (one model copy, or one sequence across all layers).
    ``max_concurrent_sequences*`` count the whole cluster: every replica and every
    data-parallel attention rank. ``stranded_bytes`` and ``deficit_bytes`` are per GPU.
    """

    # inputs, echoed after defaults were applied
    model: str
    accelerator: str
    layout: Layout
    gpus: int
    replicas: int
    weight_format: str
    expert_weight_format: str
    include_scale_overhead: bool
    kv_cache_dtype: str
    context_tokens: int
    gpu_memory_utilization: float
    runtime_reserve_gib: float | None
    pool: str
    state_pool_ratio: float
    state_slots_per_sequence: int
    batch_tokens: int
    # weights
    weights_bytes: int
    weights_expert_bytes: int
    weights_other_bytes: int
    weights_bytes_per_gpu: int
    min_gpus_for_weights: int
    # cache and state
    kv_bytes_per_token: int
    kv_bytes_per_token_per_gpu: int
    kv_bytes_per_sequence: int
    kv_bytes_per_sequence_per_gpu: int
    state_bytes_per_sequence: int
    state_bytes_per_sequence_per_gpu: int
    # per-GPU budget
    hbm_bytes: int
    usable_bytes: int
    runtime_bytes: int
    runtime_framework_bytes: int
    runtime_cuda_graph_bytes: int
    runtime_nccl_bytes: int
    runtime_activation_bytes: int
    cache_bytes: int
    # admission
    max_concurrent_sequences: int
    max_concurrent_sequences_unified: int
    max_concurrent_sequences_split: int
    max_concurrent_sequences_per_replica: int
    stranded_bytes: int
    fits: bool
    deficit_bytes: int
    aggregate_hbm_bytes: int
    assumptions: tuple[str, ...]
    # the serving engine whose allocator was reproduced (profiles/), and what it decides
    hbm_bytes_reported: int | None = None
    engine: str = "generic"
    engine_version: str | None = None
    max_model_len: int = 0
    available_kv_cache_bytes: int = 0
    allocation: EngineAllocation | None = None

    @property
    def gpu_memory_bytes(self) -> int:
        """The GPU's memory (bytes) this result was sized in: the driver's figure, else the nominal
        ``hbm_bytes`` (``spec.gpu_memory_bytes``); ``usable_bytes`` is ``gpu_memory_utilization`` x it."""
        return self.hbm_bytes_reported or self.hbm_bytes

    @property
    def engine_block_size_tokens(self) -> int | None:
        """Attention block size the engine uses (tokens), after any hybrid adjustment."""
        return self.allocation.block_size_tokens if self.allocation else None

    @property
    def engine_num_blocks(self) -> int | None:
        """Blocks in the engine's pool per GPU (vLLM ``num_gpu_blocks``)."""
        return self.allocation.num_blocks if self.allocation else None

    @property
    def engine_kv_cache_tokens(self) -> int | None:
        """The token figure the engine logs ("GPU KV cache size"; SGLang ``max_total_num_tokens``)."""
        return self.allocation.kv_cache_tokens if self.allocation else None

    @property
    def engine_max_concurrency(self) -> float | None:
        """Requests of ``max_model_len`` tokens held at once, per data-parallel rank (float, as logged)."""
        return self.allocation.max_concurrency if self.allocation else None

    @property
    def state_page_bytes(self) -> int | None:
        """One linear layer's state page for one sequence before padding (engine profiles only)."""
        return self.allocation.state_page_bytes if self.allocation else None

    @property
    def page_padding_fraction(self) -> float | None:
        """Padding added to the state page to match the attention page (0.0149 = 1.49%)."""
        return self.allocation.page_padding_fraction if self.allocation else None

    @property
    def kv_cache_groups(self) -> tuple[dict[str, Any], ...]:
        """The engine's KV cache groups (kind, layer slots, block size, page bytes, ...)."""
        return tuple(g.to_dict() for g in self.allocation.groups) if self.allocation else ()

    def engine_dict(self) -> dict[str, Any]:
        """The engine-profile fields of the API response (None for the generic profile)."""
        alloc = self.allocation
        if alloc is None:
            return {
                **_NO_ENGINE,
                "engine": self.engine,
                "max_model_len": self.max_model_len,
                "available_kv_cache_bytes": self.available_kv_cache_bytes,
            }
        return {
            "engine": self.engine,
            "engine_version": self.engine_version,
            "max_model_len": self.max_model_len,
            "available_kv_cache_bytes": self.available_kv_cache_bytes,
            "engine_block_size_tokens": self.engine_block_size_tokens,
            "engine_num_blocks": self.engine_num_blocks,
            "engine_kv_cache_tokens": self.engine_kv_cache_tokens,
            "engine_max_concurrency": round(alloc.max_concurrency, 4) if alloc else None,
            "state_page_bytes": self.state_page_bytes,
            "page_padding_fraction": round(alloc.page_padding_fraction, 6) if alloc else None,
            "kv_cache_groups": list(self.kv_cache_groups),
            "engine_state_slots": alloc.state_slots if alloc else None,
            "engine_state_dtype": alloc.state_dtype if alloc else None,
            "engine_conv_dtype": alloc.conv_dtype if alloc else None,
        }

    def to_dict(self) -> dict[str, Any]:
        """The API response body (JSON-ready; bytes are ints)."""
        layout = self.layout.as_dict()
        return {
            **self.engine_dict(),
            "weights_bytes": self.weights_bytes,
            "weights_bytes_per_gpu": self.weights_bytes_per_gpu,
            "min_gpus_for_weights": self.min_gpus_for_weights,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "kv_bytes_per_token_per_gpu": self.kv_bytes_per_token_per_gpu,
            "state_bytes_per_sequence": self.state_bytes_per_sequence,
            "state_bytes_per_sequence_per_gpu": self.state_bytes_per_sequence_per_gpu,
            "kv_bytes_per_sequence": self.kv_bytes_per_sequence,
            "kv_bytes_per_sequence_per_gpu": self.kv_bytes_per_sequence_per_gpu,
            "per_gpu": {
                "hbm_bytes": self.hbm_bytes,
                "hbm_bytes_reported": self.hbm_bytes_reported,
                "usable_bytes": self.usable_bytes,
                "weights_bytes": self.weights_bytes_per_gpu,
                "runtime_bytes": self.runtime_bytes,
                "cache_bytes": self.cache_bytes,
            },
            "max_concurrent_sequences": self.max_concurrent_sequences,
            "max_concurrent_sequences_unified": self.max_concurrent_sequences_unified,
            "max_concurrent_sequences_split": self.max_concurrent_sequences_split,
            "max_concurrent_sequences_per_replica": self.max_concurrent_sequences_per_replica,
            "stranded_bytes": self.stranded_bytes,
            "fits": self.fits,
            "deficit_bytes": self.deficit_bytes,
            "aggregate_hbm_bytes": self.aggregate_hbm_bytes,
            "replicas": self.replicas,
            "layout": layout,
            "weights": {
                "expert_bytes": self.weights_expert_bytes,
                "other_bytes": self.weights_other_bytes,
                "expert_format": self.expert_weight_format,
                "other_format": self.weight_format,
            },
            "runtime": {
                "framework_bytes": self.runtime_framework_bytes,
                "cuda_graph_bytes": self.runtime_cuda_graph_bytes,
                "nccl_bytes": self.runtime_nccl_bytes,
                "activation_bytes": self.runtime_activation_bytes,
                "batch_tokens": self.batch_tokens,
                "total_bytes": self.runtime_bytes,
            },
            "inputs": {
                "model": self.model,
                "accelerator": self.accelerator,
                "gpus": self.gpus,
                "layout": dict(layout),
                "weight_format": self.weight_format,
                "expert_weight_format": self.expert_weight_format,
                "include_scale_overhead": self.include_scale_overhead,
                "kv_cache_dtype": self.kv_cache_dtype,
                "context_tokens": self.context_tokens,
                "gpu_memory_utilization": self.gpu_memory_utilization,
                "runtime_reserve_gib": self.runtime_reserve_gib,
                "pool": self.pool,
                "state_pool_ratio": self.state_pool_ratio,
                "state_slots_per_sequence": self.state_slots_per_sequence,
                "batch_tokens": self.batch_tokens,
            },
            "assumptions": list(self.assumptions),
        }


@dataclass(frozen=True, slots=True)
class CapacityPoint:
    """Concurrent sequences (whole cluster) at one context length, for the capacity chart."""

    context_tokens: int
    kv_bytes_per_sequence: int
    kv_bytes_per_sequence_per_gpu: int
    max_concurrent_sequences: int
    max_concurrent_sequences_unified: int
    max_concurrent_sequences_split: int
    stranded_bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "context_tokens": self.context_tokens,
            "kv_bytes_per_sequence": self.kv_bytes_per_sequence,
            "kv_bytes_per_sequence_per_gpu": self.kv_bytes_per_sequence_per_gpu,
            "max_concurrent_sequences": self.max_concurrent_sequences,
            "max_concurrent_sequences_unified": self.max_concurrent_sequences_unified,
            "max_concurrent_sequences_split": self.max_concurrent_sequences_split,
            "stranded_bytes": self.stranded_bytes,
        }
