"""Engine profiles: what a named serving engine will really allocate for a model (docs/sizing.md,
"Engine profiles").

- ``common``: ``EngineAllocation`` and ``CacheGroup``, the one result shape, and ``ENGINES``;
- ``vllm``: vLLM V1's allocator by release (block size, hybrid groups, page padding, logged figures);
- ``sglang``: SGLang's token pool and hybrid state pool.

``generic`` is not a module: it is the engine-neutral arithmetic of ``sizing/capacity.py``.
"""

from ..errors import EngineInputError
from ..spec import Layout, ModelArch
from .common import ENGINES, CacheGroup, EngineAllocation, parse_version
from .sglang import NEWEST_SGLANG, SGLANG_RELEASES, sglang_allocation, sglang_release
from .vllm import NEWEST_VLLM, VLLM_RELEASES, vllm_allocation, vllm_release


def allocate(
    engine: str,
    model: ModelArch,
    layout: Layout,
    *,
    available_bytes: int,
    max_model_len: int,
    kv_cache_dtype: str = "bf16",
    block_size_tokens: int | None = None,
    version: str | None = None,
    batch_tokens: int = 8192,
    prefix_caching: bool = False,
    state_pool_ratio: float = 0.9,
) -> EngineAllocation:
    """``engine``'s allocation of ``available_bytes`` of KV cache memory per GPU (``vllm`` or ``sglang``).

    For ``sglang``, ``available_bytes`` is SGLang's rest memory, ``block_size_tokens`` its
    ``--page-size`` and ``state_pool_ratio`` its ``--mamba-full-memory-ratio``; ``batch_tokens`` and
    ``prefix_caching`` are vLLM's only (SGLang's radix cache stays on, its default).
    """
    if engine == "vllm":
        return vllm_allocation(
            model,
            layout,
            available_bytes=available_bytes,
            max_model_len=max_model_len,
            kv_cache_dtype=kv_cache_dtype,
            block_size_tokens=block_size_tokens,
            version=version,
            batch_tokens=batch_tokens,
            prefix_caching=prefix_caching,
        )
    if engine == "sglang":
        return sglang_allocation(
            model,
            layout,
            available_bytes=available_bytes,
            max_model_len=max_model_len,
            kv_cache_dtype=kv_cache_dtype,
            page_size=block_size_tokens,
            version=version,
            mamba_full_memory_ratio=state_pool_ratio,
        )
    raise EngineInputError.single("engine", f"No allocator profile for {engine!r}; use vllm, sglang or generic.")


__all__ = [
    "ENGINES",
    "NEWEST_SGLANG",
    "NEWEST_VLLM",
    "SGLANG_RELEASES",
    "VLLM_RELEASES",
    "CacheGroup",
    "EngineAllocation",
    "allocate",
    "parse_version",
    "sglang_allocation",
    "sglang_release",
    "vllm_allocation",
    "vllm_release",
]
