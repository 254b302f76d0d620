"""fleetcap's pure-Python capacity and cost engine. No Django imports, ever (CI enforces it).

This module is the engine's public API: code outside ``planner/engine`` imports from here only.
Inputs are frozen dataclasses (``ModelArch``, ``Accelerator``, ``Layout``, ``Workload``,
``SkuOffer``, ``Quote``, ``ClusterState``); every calculator returns a dataclass with a
``to_dict()`` and the assumptions behind its numbers, and raises ``EngineInputError`` (with
field names) for input it cannot model. ``ModelArch.from_record`` / ``Accelerator.from_record``
build the inputs from a catalogue row or a Django record's field values.

Layout, by concept (each package's ``__init__`` lists its modules):

- shared inputs: ``spec`` (``ModelArch``, ``LayerGroup``, ``Accelerator``, ``Layout``, layout rules),
  ``formats`` (bits per weight, bytes per cached element), ``units`` (bytes, time, tokens),
  ``errors`` (``EngineInputError``);
- ``sizing/`` (memory): ``size``, ``capacity_curve``, ``weights_bytes``, ``kv_bytes_per_token``,
  ``state_bytes_per_sequence``, ``min_gpus_for_weights``, ``single_gpu_fit``;
- ``throughput/`` (speed of one layout): ``estimate``; live correction: ``fit_correction``,
  ``apply_correction``, ``SpeedSample``, ``SpeedCorrection``, ``prediction_of``, ``batch_of``;
- ``layout_search/`` (layouts over SKUs): ``search``, ``Workload``, ``SkuOffer``;
- ``profiles/`` (what a named serving engine allocates): ``ENGINES``, ``EngineAllocation``, ``NEWEST_VLLM``,
  ``NEWEST_SGLANG``; ``size(engine=...)``;
- ``prefix_cache`` (prefix-cache granularity of hybrid models): ``prefix_cache``, ``TraceRequest``,
  ``parse_trace_csv``, ``prefix_granularity_tokens`` (the token multiple a hit lands on, for routers);
- ``routing`` (the routing advisor): ``rank`` over ``RequestClass``, ``DeploymentCandidate``
  (with its ``Serving``), ``ApiCandidate`` -> ``RouteResult`` of ``Destination``; ``stale_limit_s``,
  ``reusable_prefix_tokens``, ``MODALITIES``;
- ``costs/`` (money): ``breakeven``, ``unit_economics``, ``weights_storage``, ``spend_month``,
  ``quotes_in_force``, ``quote_in_force``, ``next_quote_change``, ``rate_from_quotes``; observed volumes:
  ``observed_volume`` over ``RateSample``s, ``hour_coverage_s``;
- ``hf_config/`` (a Hugging Face ``config.json`` -> a model record): ``model_record_from_config``,
  ``ImportedModel``;
- ``startup_log`` (calibration input): ``parse_startup_log`` reads a vLLM or SGLang startup log into
  a ``StartupLog`` (the settings it ran with and the KV-cache figures it logged);
  ``redact_startup_log`` masks the secrets a log can carry.
"""

from planner.engine.costs import (
    MAX_PRICE_USD,
    PRICING_KINDS,
    UNASSIGNED,
    BreakevenResult,
    ClusterState,
    DeploymentShare,
    MonthSpend,
    ObservedVolume,
    Quote,
    Rate,
    RateSample,
    SpendLine,
    SpendWarning,
    blended_input_usd_per_mtok,
    breakeven,
    hour_coverage_s,
    next_quote_change,
    observed_volume,
    quote_in_force,
    quotes_in_force,
    rate_from_quotes,
    spend_month,
    unit_economics,
    utilisation_from_polls,
    weights_storage,
)
from planner.engine.errors import EngineInputError
from planner.engine.formats import CACHE_DTYPES, KV_CACHE_DTYPES, WEIGHT_FORMATS
from planner.engine.hf_config import ImportedModel, model_record_from_config
from planner.engine.layout_search import MODES, REASONS, SearchCancelled, SearchResult, SkuOffer, Workload, search
from planner.engine.limits import MAX_TRACE_BYTES, MAX_TRACE_ROWS
from planner.engine.prefix_cache import (
    CACHE_MODES,
    DEFAULT_GRANULARITIES,
    PREFIX_ENGINES,
    RETENTIONS,
    TRACE_COLUMNS,
    PrefixCacheResult,
    TraceRequest,
    parse_trace_csv,
    prefix_cache,
    prefix_granularity_tokens,
)
from planner.engine.profiles import ENGINES, NEWEST_SGLANG, NEWEST_VLLM, EngineAllocation
from planner.engine.routing import (
    KINDS,
    MODALITIES,
    ApiCandidate,
    DeploymentCandidate,
    Destination,
    RequestClass,
    RouteResult,
    Serving,
    rank,
    reusable_prefix_tokens,
    stale_limit_s,
)
from planner.engine.sizing import (
    CapacityPoint,
    SizingResult,
    capacity_curve,
    kv_bytes_per_token,
    min_gpus_for_weights,
    single_gpu_fit,
    size,
    state_bytes_per_sequence,
    usable_bytes,
    weights_bytes,
)
from planner.engine.spec import (
    ACCELERATOR_RECORD_FIELDS,
    MODEL_RECORD_FIELDS,
    Accelerator,
    LayerGroup,
    Layout,
    ModelArch,
    gpu_memory_bytes,
    layout_errors,
    parse_layer_groups,
)
from planner.engine.startup_log import MAX_LOG_BYTES, StartupLog, parse_startup_log, redact_startup_log
from planner.engine.throughput import (
    SensitivityBand,
    SpeedCorrection,
    SpeedPrediction,
    SpeedSample,
    ThroughputOptions,
    ThroughputResult,
    apply_correction,
    batch_of,
    estimate,
    fit_correction,
    prediction_of,
    sensitivity,
)
from planner.engine.units import GB, GIB, HOURS_PER_DAY, KIB, MIB, SECONDS_PER_DAY, SECONDS_PER_HOUR, TB

__all__ = [
    "ACCELERATOR_RECORD_FIELDS",
    "CACHE_DTYPES",
    "CACHE_MODES",
    "DEFAULT_GRANULARITIES",
    "ENGINES",
    "GB",
    "GIB",
    "HOURS_PER_DAY",
    "KIB",
    "KINDS",
    "KV_CACHE_DTYPES",
    "MAX_LOG_BYTES",
    "MAX_PRICE_USD",
    "MAX_TRACE_BYTES",
    "MAX_TRACE_ROWS",
    "MIB",
    "MODALITIES",
    "MODEL_RECORD_FIELDS",
    "MODES",
    "NEWEST_SGLANG",
    "NEWEST_VLLM",
    "PREFIX_ENGINES",
    "PRICING_KINDS",
    "REASONS",
    "RETENTIONS",
    "SECONDS_PER_DAY",
    "SECONDS_PER_HOUR",
    "TB",
    "TRACE_COLUMNS",
    "UNASSIGNED",
    "WEIGHT_FORMATS",
    "Accelerator",
    "ApiCandidate",
    "BreakevenResult",
    "CapacityPoint",
    "ClusterState",
    "DeploymentCandidate",
    "DeploymentShare",
    "Destination",
    "EngineAllocation",
    "EngineInputError",
    "ImportedModel",
    "LayerGroup",
    "Layout",
    "ModelArch",
    "MonthSpend",
    "ObservedVolume",
    "PrefixCacheResult",
    "Quote",
    "Rate",
    "RateSample",
    "RequestClass",
    "RouteResult",
    "SearchCancelled",
    "SearchResult",
    "SensitivityBand",
    "Serving",
    "SizingResult",
    "SkuOffer",
    "SpeedCorrection",
    "SpeedPrediction",
    "SpeedSample",
    "SpendLine",
    "SpendWarning",
    "StartupLog",
    "ThroughputOptions",
    "ThroughputResult",
    "TraceRequest",
    "Workload",
    "apply_correction",
    "batch_of",
    "blended_input_usd_per_mtok",
    "breakeven",
    "capacity_curve",
    "estimate",
    "fit_correction",
    "gpu_memory_bytes",
    "hour_coverage_s",
    "kv_bytes_per_token",
    "layout_errors",
    "min_gpus_for_weights",
    "model_record_from_config",
    "next_quote_change",
    "observed_volume",
    "parse_layer_groups",
    "parse_startup_log",
    "parse_trace_csv",
    "prediction_of",
    "prefix_cache",
    "prefix_granularity_tokens",
    "quote_in_force",
    "quotes_in_force",
    "rank",
    "rate_from_quotes",
    "redact_startup_log",
    "reusable_prefix_tokens",
    "search",
    "sensitivity",
    "single_gpu_fit",
    "size",
    "spend_month",
    "stale_limit_s",
    "state_bytes_per_sequence",
    "unit_economics",
    "usable_bytes",
    "utilisation_from_polls",
    "weights_bytes",
    "weights_storage",
]
