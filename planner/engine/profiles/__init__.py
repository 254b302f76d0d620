"""Engine profiles: what a named serving engine will really allocate for a model (docs/sizing.md,
"Engine profiles").

- ``common``: ``EngineAllocation`` and ``CacheGroup``, the one result shape;
- ``vllm``: vLLM V1's allocator by release (block size, hybrid groups, page padding, logged figures);
- ``sglang``: SGLang's token pool and hybrid state pool.

``generic`` is not a module: it is the engine-neutral arithmetic of ``sizing/capacity.py``. Which
serving engine is sized with which profile, and ``allocate()`` (a profile by name), are the serving-engine
registry's (``serving_engines.py``).
"""

from .common import CacheGroup, EngineAllocation, parse_version
from .sglang import NEWEST_SGLANG, SGLANG_RELEASES, sglang_allocation, sglang_release
from .vllm import NEWEST_VLLM, VLLM_RELEASES, vllm_allocation, vllm_release

__all__ = [
    "NEWEST_SGLANG",
    "NEWEST_VLLM",
    "SGLANG_RELEASES",
    "VLLM_RELEASES",
    "CacheGroup",
    "EngineAllocation",
    "parse_version",
    "sglang_allocation",
    "sglang_release",
    "vllm_allocation",
    "vllm_release",
]
