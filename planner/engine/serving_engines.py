"""The serving engines fleetcap knows, in one registry: every list of engines is derived from it.

Each :class:`ServingEngine` says, for one engine a deployment may be registered with:

* ``name`` (stored on ``Deployment.engine``) and ``label`` (what pages show);
* ``profile``: the allocator profile it is sized with (:class:`AllocatorProfile`: its name, newest
  modelled release and allocation function), or None: the ``generic`` arithmetic of
  ``sizing/capacity.py``;
* ``poll``: what the poller asks it and how the answers read (:class:`PollRoutes`: health route,
  whether a 503 there means loading, the metrics route, whether a missing one deserves a warning,
  the ``owned_by`` values of ``/v1/models`` that name it);
* ``metric_family``: the family of ``/metrics`` names it exports (``fleet.polling.metrics`` reads the
  ``vllm``, ``sglang`` and ``llamacpp`` families; None: no metrics);
* ``startup_log``: the dialect ``parse_startup_log`` reads its startup log in (None: not parsed);
* ``prefix_cache``: whether the prefix-cache analysis models it;
* ``launch``: the builder of its launch command (``launch.launch_vllm``, ``launch.launch_sglang``), or None:
  the app writes no launch command for it.

Adding an engine is one entry here (plus its profile, when it has its own allocator). Nothing else
lists engines: ``Deployment.engine``'s choices (``engine_choices``), the page forms and API
serializers (``engine_names``, ``profile_names``, ``prefix_cache_engines``), the sizing engine's
check and dispatch (``profile_names``, ``allocate``), the poller's routes (``poll_routes``) and the
calibration service (``startup_log_engines``) all read it when they run. ``fleet.polling`` may not
import ``planner`` (pyproject.toml's contracts), so the Django poller (``fleet/poller.py``) hands it
``poll_routes()`` with every poll; the metric names of each family stay in ``fleet.polling.metrics``
(parsing them is code), and a test checks every family named here is one it reads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .errors import EngineInputError
from .formats import DEFAULT_KV_CACHE_DTYPE
from .launch import Builder, LaunchCommand, LaunchRequest, launch_sglang, launch_vllm
from .profiles.common import EngineAllocation
from .profiles.sglang import (
    DEFAULT_MAMBA_FULL_MEMORY_RATIO,
    NEWEST_SGLANG,
    default_max_running_requests,
    sglang_allocation,
)
from .profiles.vllm import NEWEST_VLLM, default_max_num_seqs, vllm_allocation
from .spec import Accelerator, Layout, ModelArch

#: The profile of engines without a modelled allocator: the app's engine-neutral arithmetic.
GENERIC: str = "generic"
#: The engine a new deployment is registered with unless it says otherwise.
DEFAULT_ENGINE: str = "vllm"

#: The signature every profile's ``allocate`` takes (``allocate()`` below passes all of it).
Allocate = Callable[..., EngineAllocation]
#: A profile's cap on running requests per data-parallel rank: ``(allocation, accelerator) -> (cap, why)``.
RunningLimit = Callable[[EngineAllocation, Accelerator], tuple[int, str]]


@dataclass(frozen=True)
class AllocatorProfile:
    """An engine's allocator as the sizing engine reproduces it (``profiles/``).

    ``allocate(model, layout, *, available_bytes, max_model_len, kv_cache_dtype, block_size_tokens,
    version, batch_tokens, prefix_caching, state_pool_ratio, device_name)`` returns its ``EngineAllocation``;
    ``newest`` is the newest release whose rules were read; ``running_limit`` the scheduler's own cap on
    running requests per data-parallel rank (None: the cache is the only limit)."""

    name: str
    newest: str
    allocate: Allocate
    running_limit: RunningLimit | None = None


@dataclass(frozen=True)
class PollRoutes:
    """What the poller asks an engine beyond ``/v1/models`` (``fleet.polling.client``).

    ``health``: its health route (None: none to ask); ``health_503_means_loading``: a 503 there means
    it is still loading (else the engine died); ``metrics``: its metrics route (None: it serves none);
    ``metrics_expected``: it always serves metrics, so a 404 or 501 there is worth a warning;
    ``owned_by``: the ``owned_by`` values of ``/v1/models`` that name this engine."""

    health: str | None = None
    health_503_means_loading: bool = False
    metrics: str | None = None
    metrics_expected: bool = False
    owned_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class ServingEngine:
    """One serving engine (see the module docstring)."""

    name: str
    label: str
    profile: AllocatorProfile | None = None
    poll: PollRoutes = PollRoutes()
    metric_family: str | None = None
    startup_log: str | None = None
    prefix_cache: bool = False
    launch: Builder | None = None


def _vllm(
    model: ModelArch,
    layout: Layout,
    *,
    available_bytes: int,
    max_model_len: int,
    kv_cache_dtype: str,
    block_size_tokens: int | None,
    version: str | None,
    batch_tokens: int,
    prefix_caching: bool | None,
    state_pool_ratio: float,
    device_name: str | None = None,
) -> EngineAllocation:
    del state_pool_ratio  # SGLang's only
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
        device_name=device_name,
    )


def _sglang(
    model: ModelArch,
    layout: Layout,
    *,
    available_bytes: int,
    max_model_len: int,
    kv_cache_dtype: str,
    block_size_tokens: int | None,
    version: str | None,
    batch_tokens: int,
    prefix_caching: bool | None,
    state_pool_ratio: float,
    device_name: str | None = None,
) -> EngineAllocation:
    del (
        batch_tokens,
        prefix_caching,
        device_name,
    )  # vLLM's only (the page size does not follow the GPU here) (SGLang's radix cache stays on, its default)
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


def _vllm_running(allocation: EngineAllocation, accelerator: Accelerator) -> tuple[int, str]:
    return default_max_num_seqs(accelerator.name, accelerator.driver_hbm_bytes)


def _sglang_running(allocation: EngineAllocation, accelerator: Accelerator) -> tuple[int, str]:
    del accelerator  # the request pool follows the token pool, not the device
    return default_max_running_requests(allocation.kv_cache_tokens, allocation.max_model_len)


VLLM_PROFILE = AllocatorProfile("vllm", NEWEST_VLLM, _vllm, _vllm_running)
SGLANG_PROFILE = AllocatorProfile("sglang", NEWEST_SGLANG, _sglang, _sglang_running)

#: The registry, in the order pages list the engines.
SERVING_ENGINES: tuple[ServingEngine, ...] = (
    ServingEngine(
        "vllm",
        "vLLM",
        profile=VLLM_PROFILE,
        # /health answers 503 when the engine died (EngineDeadError); /metrics is always served.
        poll=PollRoutes(health="/health", metrics="/metrics", metrics_expected=True, owned_by=("vllm",)),
        metric_family="vllm",
        startup_log="vllm",
        prefix_cache=True,
        launch=launch_vllm,
    ),
    ServingEngine(
        "sglang",
        "SGLang",
        profile=SGLANG_PROFILE,
        # /health_generate answers 503 while starting; /metrics with --enable-metrics (404 without).
        poll=PollRoutes(
            health="/health_generate", health_503_means_loading=True, metrics="/metrics", owned_by=("sglang",)
        ),
        metric_family="sglang",
        startup_log="sglang",
        prefix_cache=True,
        launch=launch_sglang,
    ),
    ServingEngine(
        "llamacpp",
        "llama.cpp",
        # /health answers 503 while loading the model; /metrics with --metrics (501 without).
        poll=PollRoutes(health="/health", health_503_means_loading=True, metrics="/metrics", owned_by=("llamacpp",)),
        metric_family="llamacpp",
    ),
    # Any other OpenAI-compatible server: /v1/models only.
    ServingEngine("openai", "OpenAI-compatible"),
)


def registered_engines() -> tuple[ServingEngine, ...]:
    """Every registered engine, in the registry's order."""
    return SERVING_ENGINES


def serving_engine(name: str) -> ServingEngine | None:
    """The engine registered as ``name``; None for a name not registered."""
    return next((e for e in SERVING_ENGINES if e.name == name), None)


def engine_names() -> tuple[str, ...]:
    """The names a deployment's engine may take."""
    return tuple(e.name for e in SERVING_ENGINES)


def engine_choices() -> list[tuple[str, str]]:
    """``(name, label)`` of every engine: ``Deployment.engine``'s choices."""
    return [(e.name, e.label) for e in SERVING_ENGINES]


def profiles() -> tuple[AllocatorProfile, ...]:
    """Every allocator profile the registry's engines are sized with (each once, in order)."""
    seen: dict[str, AllocatorProfile] = {}
    for e in SERVING_ENGINES:
        if e.profile is not None:
            seen.setdefault(e.profile.name, e.profile)
    return tuple(seen.values())


def profile_names() -> tuple[str, ...]:
    """The profiles ``size(engine=...)`` takes: ``generic`` first, then every engine's allocator."""
    return (GENERIC, *(p.name for p in profiles()))


def profile_of(engine: str) -> str:
    """The profile a deployment registered with ``engine`` is sized with (``generic`` without one)."""
    found = serving_engine(engine)
    return found.profile.name if found is not None and found.profile is not None else GENERIC


def allocator(profile: str) -> AllocatorProfile | None:
    """The allocator profile named ``profile``; None for ``generic`` or an unknown name."""
    return next((p for p in profiles() if p.name == profile), None)


def limit_running(allocation: EngineAllocation, accelerator: Accelerator) -> EngineAllocation:
    """``allocation`` with its profile's cap on running requests on ``accelerator`` (``max_running_requests``,
    said in its assumptions); unchanged for a profile without one."""
    profile = allocator(allocation.engine)
    if profile is None or profile.running_limit is None:
        return allocation
    cap, why = profile.running_limit(allocation, accelerator)
    return dataclasses.replace(allocation, max_running_requests=cap, assumptions=(*allocation.assumptions, why))


def allocate(
    engine: str,
    model: ModelArch,
    layout: Layout,
    *,
    available_bytes: int,
    max_model_len: int,
    kv_cache_dtype: str = DEFAULT_KV_CACHE_DTYPE,
    block_size_tokens: int | None = None,
    version: str | None = None,
    batch_tokens: int = 8192,
    prefix_caching: bool | None = None,
    state_pool_ratio: float = DEFAULT_MAMBA_FULL_MEMORY_RATIO,
    device_name: str | None = None,
) -> EngineAllocation:
    """The allocation of ``available_bytes`` of KV cache memory per GPU by the profile ``engine``.

    For ``sglang``, ``available_bytes`` is SGLang's rest memory, ``block_size_tokens`` its
    ``--page-size`` and ``state_pool_ratio`` its ``--mamba-full-memory-ratio``; ``batch_tokens``,
    ``prefix_caching`` and ``device_name`` (the GPU's name: its generation picks vLLM's MLA backend) are
    vLLM's only (SGLang's radix cache stays on, its default).
    """
    profile = allocator(engine)
    if profile is None:
        names = ", ".join(profile_names())
        raise EngineInputError.single("engine", f"No allocator profile for {engine!r}; use {names}.")
    return profile.allocate(
        model,
        layout,
        available_bytes=available_bytes,
        max_model_len=max_model_len,
        kv_cache_dtype=kv_cache_dtype,
        block_size_tokens=block_size_tokens,
        version=version,
        batch_tokens=batch_tokens,
        prefix_caching=prefix_caching,
        state_pool_ratio=state_pool_ratio,
        device_name=device_name,
    )


def poll_routes() -> dict[str, PollRoutes]:
    """Each engine's :class:`PollRoutes` by name: what ``fleet.polling.poll_endpoint`` dispatches on."""
    return {e.name: e.poll for e in SERVING_ENGINES}


def metric_families() -> dict[str, str]:
    """Engine name -> the ``/metrics`` family it exports, for the engines that export one."""
    return {e.name: e.metric_family for e in SERVING_ENGINES if e.metric_family is not None}


def startup_log_engines() -> tuple[str, ...]:
    """The engines whose startup log ``parse_startup_log`` reads (calibrations)."""
    return tuple(e.name for e in SERVING_ENGINES if e.startup_log is not None)


def launch_engines() -> tuple[str, ...]:
    """The engines the app writes a launch command for."""
    return tuple(e.name for e in SERVING_ENGINES if e.launch is not None)


def launch_command(engine: str, request: LaunchRequest) -> LaunchCommand:
    """The launch command of one replica of ``request`` on ``engine``; ``EngineInputError`` for an engine
    without one."""
    found = serving_engine(engine)
    if found is None or found.launch is None:
        names = ", ".join(launch_engines())
        raise EngineInputError.single("engine", f"No launch command is written for {engine!r}; only for {names}.")
    return found.launch(request)


def prefix_cache_engines() -> tuple[str, ...]:
    """The engines the prefix-cache analysis models."""
    return tuple(e.name for e in SERVING_ENGINES if e.prefix_cache)


class Names:
    """A list of names read from the registry each time it is iterated: choices for API serializers
    (DRF reads its choices when a serializer is made), so a registered engine appears without a
    restart of any list. ``Names(profile_names)`` iterates as ``profile_names()`` does now."""

    def __init__(self, source: Callable[[], tuple[str, ...]]) -> None:
        self.source = source

    def __iter__(self) -> Iterator[str]:
        return iter(self.source())

    def __len__(self) -> int:
        return len(self.source())

    def __contains__(self, item: object) -> bool:
        return item in self.source()

    def __repr__(self) -> str:
        return f"Names({self.source.__name__})"

    def __deepcopy__(self, memo: dict[int, object]) -> Names:
        return self  # the list is the registry's: nothing to copy


__all__ = [
    "DEFAULT_ENGINE",
    "GENERIC",
    "SERVING_ENGINES",
    "AllocatorProfile",
    "Names",
    "PollRoutes",
    "ServingEngine",
    "allocate",
    "allocator",
    "engine_choices",
    "engine_names",
    "metric_families",
    "poll_routes",
    "prefix_cache_engines",
    "profile_names",
    "profile_of",
    "profiles",
    "registered_engines",
    "serving_engine",
    "startup_log_engines",
]
