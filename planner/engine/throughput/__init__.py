"""Speed: how fast a model serves on a parallel layout. Units: seconds inside, ms in ``to_dict()``.

Modules, one concept each (formulas and sources: docs/throughput.md):

- ``options``: the efficiency factors and fabric figures (``ThroughputOptions``), tensor-core rates;
- ``perf``: what a forward pass reads and computes per model (active/dense/expert parameters,
  attention FLOP coefficients, distinct experts);
- ``decode``: one decode step of a batch on one replica;
- ``prefill``: one prompt's prefill, and the KV transfer of disaggregated serving;
- ``estimate``: the serving estimate of one replica (``estimate()``), queueing and money;
- ``correction``: a deployment's observed speed against the model's (``fit_correction``, ``apply_correction``).
- ``sensitivity``: the band of an estimate when the efficiency factors move (``sensitivity()``).
"""

from .correction import (
    SpeedCorrection,
    SpeedPrediction,
    SpeedSample,
    apply_correction,
    batch_of,
    fit_correction,
    prediction_of,
)
from .decode import DecodeStep, decode_step
from .estimate import (
    IDLE_TTFT_DEFINITION,
    TTFT_DEFINITION,
    ThroughputResult,
    TtftDefinition,
    TtftParts,
    aggregated_latency,
    aggregated_ttft_parts,
    disaggregated_ttft,
    disaggregated_ttft_parts,
    estimate,
    parse_usd,
    queue_wait_s,
)
from .options import DEFAULT_OPTIONS, ThroughputOptions
from .prefill import PrefillEstimate, prefill
from .sensitivity import DEFAULT_SPREAD, Band, FactorSensitivity, SensitivityBand, efficiency_factors, sensitivity

__all__ = [
    "DEFAULT_OPTIONS",
    "DEFAULT_SPREAD",
    "IDLE_TTFT_DEFINITION",
    "TTFT_DEFINITION",
    "Band",
    "DecodeStep",
    "FactorSensitivity",
    "PrefillEstimate",
    "SensitivityBand",
    "SpeedCorrection",
    "SpeedPrediction",
    "SpeedSample",
    "ThroughputOptions",
    "ThroughputResult",
    "TtftDefinition",
    "TtftParts",
    "aggregated_latency",
    "aggregated_ttft_parts",
    "apply_correction",
    "batch_of",
    "decode_step",
    "disaggregated_ttft",
    "disaggregated_ttft_parts",
    "efficiency_factors",
    "estimate",
    "fit_correction",
    "parse_usd",
    "prediction_of",
    "prefill",
    "queue_wait_s",
    "sensitivity",
]
