"""A deployment as the sizing engine serves it, and its admitted concurrency: the one rule every page,
the API, ``/metrics``, the router and the stored capacity snapshot read. Units: tokens, sequences.

``Serving`` holds how a deployment serves (model, accelerator, layout, replicas, KV cache dtype, memory
utilisation, and its engine profile with release, block size and ``max_model_len``). ``Serving.size``
sizes it at a context (``size()`` with exactly those options) and ``Serving.admitted`` gives the
sequences it admits there: the engine profile's count, which applies the engine's own limits (the cache's
blocks, SGLang's state pool, the scheduler's cap on running requests: ``EngineAllocation.sequences``).
``Serving.admitted_curve`` is the same figure at each context the capacity chart is drawn at, never past
``context_window`` (``max_model_len``, else the model's maximum context): the engine refuses longer requests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..formats import DEFAULT_KV_CACHE_DTYPE
from ..serving_engines import GENERIC
from ..spec import Accelerator, Layout, ModelArch
from ..throughput.correction import SpeedCorrection
from .capacity import (
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_GPU_MEMORY_UTILIZATION,
    GENERIC_OPTIONS,
    EngineOptions,
    capacity_curve,
    size,
)
from .result import CapacityPoint, SizingResult

#: Context lengths the capacity curve is drawn at (tokens), up to the deployment's context window, which
#: is always drawn too.
CURVE_CONTEXTS: tuple[int, ...] = (
    1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576,
)  # fmt: skip


def context_window(max_model_len: int | None, model_max_context_tokens: int | None) -> int:
    """The longest request a deployment serves (tokens): its ``max_model_len``, else the model's maximum
    context, else ``DEFAULT_CONTEXT_TOKENS``; the context its capacity is quoted at."""
    return max_model_len or model_max_context_tokens or DEFAULT_CONTEXT_TOKENS


def curve_contexts(window: int) -> list[int]:
    """The contexts a capacity curve up to ``window`` tokens is drawn at: ``CURVE_CONTEXTS`` below it, then
    ``window`` itself (the point every page quotes)."""
    return [c for c in CURVE_CONTEXTS if c < window] + [window]


@dataclass(frozen=True, slots=True)
class Serving:
    """How a deployment serves, for the sizing and throughput engines (``size()``, ``estimate()``).

    ``engine`` is the profile (``generic``, ``vllm``, ``sglang``); ``correction`` the deployment's
    live speed correction (None: uncorrected) and ``correction_age_s`` its age."""

    model: ModelArch
    accelerator: Accelerator
    layout: Layout
    replicas: int
    kv_cache_dtype: str = DEFAULT_KV_CACHE_DTYPE
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION
    engine: str = GENERIC
    engine_version: str | None = None
    block_size_tokens: int | None = None
    max_model_len: int | None = None
    #: ``--enable-prefix-caching`` as served (None: the engine release's default).
    prefix_caching: bool | None = None
    correction: SpeedCorrection | None = None
    correction_age_s: float | None = None

    @property
    def gpus(self) -> int:
        return self.replicas * self.layout.gpus

    @property
    def context_window(self) -> int:
        """The longest request it serves (tokens): ``max_model_len``, else the model's maximum context."""
        return context_window(self.max_model_len, self.model.max_context_tokens)

    def engine_options(self) -> EngineOptions:
        """Its engine profile as ``size()`` and ``estimate()`` take it (``EngineOptions``)."""
        if self.engine == GENERIC:
            return GENERIC_OPTIONS
        return EngineOptions(
            self.engine, self.engine_version, self.max_model_len, self.block_size_tokens,
            prefix_caching=self.prefix_caching,
        )  # fmt: skip

    def sizing_options(self) -> dict[str, Any]:
        """Its keyword arguments to ``size()`` and ``capacity_curve()`` (all but the context)."""
        return {
            "gpus": self.gpus,
            "layout": self.layout,
            "kv_cache_dtype": self.kv_cache_dtype,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            **self.engine_options().size_kwargs(),
        }

    def size(self, context_tokens: int | None = None) -> SizingResult:
        """``size()`` of this deployment at ``context_tokens`` (default: its context window). Raises the
        engine's ``EngineInputError`` (``context_tokens`` past ``max_model_len`` included)."""
        return size(self.model, self.accelerator, context_tokens=context_tokens or self.context_window,
                    **self.sizing_options())  # fmt: skip

    def admitted(self, context_tokens: int | None = None) -> int:
        """Sequences of ``context_tokens`` tokens (default: its context window) it admits at once, whole
        deployment (``SizingResult.max_concurrent_sequences``)."""
        return self.size(context_tokens).max_concurrent_sequences

    def admitted_curve(self, contexts: list[int] | None = None) -> list[CapacityPoint]:
        """Admitted sequences at each of ``contexts`` (default ``curve_contexts(context_window)``), the
        contexts past the context window left out."""
        window = self.context_window
        wanted = [c for c in (contexts if contexts is not None else curve_contexts(window)) if c <= window]
        return capacity_curve(self.model, self.accelerator, wanted or [window], **self.sizing_options())
