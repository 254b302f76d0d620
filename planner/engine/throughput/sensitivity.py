"""How an estimate moves with the model's efficiency factors: a band, not a single number.

Pure Python, no Django. Units: seconds inside, milliseconds in ``to_dict()`` (``_ms``), tokens/s, USD.

``sensitivity(model, accelerator, layout, spread=0.2, **estimate_kwargs)`` runs ``estimate()`` once as
asked (the *central* estimate) and then again with each efficiency-like factor of
``ThroughputOptions`` moved down and up by ``spread`` (``x (1 - spread)`` and ``x (1 + spread)``), one
at a time, and at the two corners where every factor sits on the side that lowers TPOT (optimistic)
or raises it (pessimistic). For each figure (TPOT, TTFT, tokens/s per GPU, USD per million output
tokens when a price is given) ``low`` and ``high`` are the smallest and largest value over those runs
and the central one, so the band always contains the central value.

**Which factors.** Every field of ``ThroughputOptions`` whose name ends in ``_efficiency`` (a
fraction, clamped to at most 1 when moved up), ``_overhead_s`` or ``_launch_s`` (seconds, zero or
more) and holds a number (``EFFICIENCY_SUFFIXES``; a field set to ``None`` is left alone). Today
those are ``memory_bandwidth_efficiency``, ``compute_efficiency``, ``link_efficiency``,
``step_overhead_s``, ``kernel_launch_s`` (per kernel inside a CUDA graph) and
``eager_kernel_launch_s`` (per kernel launched eagerly); a factor added later under one of these
suffixes is moved too, without a change here. Fabric figures (bandwidths, latencies, domain sizes),
switches (``cuda_graphs``, ``overlap``) and kernel shapes (``gemm_tile_tokens``) are not efficiencies
and stay put.

**Why +-20% by default.** The defaults come from one simulator's per-kernel efficiencies (MooreThreads
SimuMax, docs/throughput.md "Efficiency factors"), whose own kernels spread about that much around
them (matmul 0.70, grouped MoE matmul 0.60, attention 0.72 around the 0.6 compute default), and the
published anchors in docs/throughput.md sit 10-40% from the model. It is a stated convention for
"how wrong could each factor be", not a fitted confidence interval; pass ``spread`` to change it.

**Elasticity.** ``d ln TPOT / d ln factor`` (and the same for TTFT), a central difference between the
factor's two moved values (one-sided when one side is clamped): -1 means "10% more of this factor
gives 10% less TPOT". ``most_influential`` is the factor with the largest absolute TPOT elasticity.

The batch is held at the central estimate's (``estimate()`` otherwise defaults it to a concurrency
limit that itself moves with the factors), so the band is about speed at one load, not about a
different load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

from ..errors import EngineInputError
from ..limits import MAX_STEP_SECONDS, MIN_EFFICIENCY
from ..spec import Accelerator, Layout, ModelArch
from .estimate import ThroughputResult, estimate
from .options import DEFAULT_OPTIONS, ThroughputOptions

#: Default relative move of each factor: x0.8 and x1.2 (see the module docstring for why).
DEFAULT_SPREAD: float = 0.2

#: Name endings of the ``ThroughputOptions`` fields the band moves, and the (lower, upper) bounds of each
#: kind: the options' own limits (``planner/engine/limits.py``), so a moved factor is always a valid option.
EFFICIENCY_SUFFIXES: dict[str, tuple[float, float]] = {
    "_efficiency": (MIN_EFFICIENCY, 1.0),
    "_overhead_s": (0.0, MAX_STEP_SECONDS),
    "_launch_s": (0.0, MAX_STEP_SECONDS),
}


def efficiency_factors(options: ThroughputOptions = DEFAULT_OPTIONS) -> tuple[str, ...]:
    """Names of the ``ThroughputOptions`` fields that are efficiency-like and set to a number."""
    names = []
    for f in fields(ThroughputOptions):
        value = getattr(options, f.name)
        numeric = isinstance(value, int | float) and not isinstance(value, bool)
        if numeric and any(f.name.endswith(suffix) for suffix in EFFICIENCY_SUFFIXES):
            names.append(f.name)
    return tuple(names)


def _bounds(name: str) -> tuple[float, float]:
    return next(bounds for suffix, bounds in EFFICIENCY_SUFFIXES.items() if name.endswith(suffix))


@dataclass(frozen=True, slots=True)
class Band:
    """Smallest, central and largest value of one figure over the sensitivity runs (``None``: not
    defined, e.g. no price, or a TTFT that is unbounded because the prefill queue never drains)."""

    low: float | None
    central: float | None
    high: float | None

    def scaled(self, factor: float) -> dict[str, float | None]:
        return {
            k: None if v is None else v * factor
            for k, v in (("low", self.low), ("central", self.central), ("high", self.high))
        }


@dataclass(frozen=True, slots=True)
class FactorSensitivity:
    """One factor moved on its own: its values, TPOT at each, and the elasticities."""

    name: str
    central: float
    low_value: float
    high_value: float
    tpot_at_low_s: float
    tpot_at_high_s: float
    elasticity_tpot: float | None
    elasticity_ttft: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "central": self.central,
            "low_value": self.low_value,
            "high_value": self.high_value,
            "tpot_at_low_ms": self.tpot_at_low_s * 1e3,
            "tpot_at_high_ms": self.tpot_at_high_s * 1e3,
            "elasticity_tpot": self.elasticity_tpot,
            "elasticity_ttft": self.elasticity_ttft,
        }


@dataclass(frozen=True, slots=True)
class SensitivityBand:
    """The band of one estimate (see the module docstring); ``central`` is ``estimate()`` as asked."""

    spread: float
    tpot_s: Band
    ttft_s: Band
    tokens_per_s_per_gpu: Band
    usd_per_mtok: Band | None
    factors: tuple[FactorSensitivity, ...]
    most_influential: str | None
    runs: int
    central: ThroughputResult
    assumptions: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "spread": self.spread,
            "tpot_ms": self.tpot_s.scaled(1e3),
            "ttft_ms": self.ttft_s.scaled(1e3),
            "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu.scaled(1.0),
            "usd_per_mtok": None if self.usd_per_mtok is None else self.usd_per_mtok.scaled(1.0),
            "factors": [f.to_dict() for f in self.factors],
            "most_influential": self.most_influential,
            "runs": self.runs,
            "assumptions": list(self.assumptions),
        }


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else value


def _band(values: list[float | None], central: float | None) -> Band:
    known = [v for v in (_finite(x) for x in values) if v is not None]
    central = _finite(central)
    if not known:
        return Band(None, central, None)
    return Band(min(known), central, max(known))


def _elasticity(points: list[tuple[float, float]]) -> float | None:
    """d ln y / d ln x across the widest span of ``(x, y)`` points with x, y > 0 (None if no span)."""
    usable = sorted({(x, y) for x, y in points if x > 0 and y > 0 and math.isfinite(y)})
    if len(usable) < 2 or usable[0][0] == usable[-1][0]:
        return None
    (x0, y0), (x1, y1) = usable[0], usable[-1]
    span = math.log(x1) - math.log(x0)
    return None if span == 0 else (math.log(y1) - math.log(y0)) / span


def sensitivity(
    model: ModelArch,
    accelerator: Accelerator,
    layout: Layout | None = None,
    *,
    spread: float = DEFAULT_SPREAD,
    **estimate_kwargs: Any,
) -> SensitivityBand:
    """The band of ``estimate(model, accelerator, layout, **estimate_kwargs)`` when each efficiency
    factor moves by ``spread`` (0 <= spread < 1). Raises ``EngineInputError`` as ``estimate()`` does,
    and for a bad ``spread``."""
    if isinstance(spread, bool) or not isinstance(spread, int | float) or not 0 <= spread < 1:
        raise EngineInputError.single("spread", "Must be a fraction from 0 up to (not including) 1.")
    base: ThroughputOptions = estimate_kwargs.pop("options", DEFAULT_OPTIONS)
    central = estimate(model, accelerator, layout, options=base, **estimate_kwargs)
    fixed = {**estimate_kwargs, "batch": central.batch}

    def run(options: ThroughputOptions) -> ThroughputResult:
        return estimate(model, accelerator, layout, options=options, **fixed)

    results: list[ThroughputResult] = [central]
    factors: list[FactorSensitivity] = []
    faster: dict[str, float] = {}
    slower: dict[str, float] = {}
    for name in efficiency_factors(base):
        value = float(getattr(base, name))
        low, high = _bounds(name)
        lo = max(value * (1 - spread), low)
        hi = min(value * (1 + spread), high)
        at_lo, at_hi = run(replace(base, **{name: lo})), run(replace(base, **{name: hi}))
        results += [at_lo, at_hi]
        pts = [(lo, at_lo), (value, central), (hi, at_hi)]
        factors.append(
            FactorSensitivity(
                name=name,
                central=value,
                low_value=lo,
                high_value=hi,
                tpot_at_low_s=at_lo.tpot_s,
                tpot_at_high_s=at_hi.tpot_s,
                elasticity_tpot=_elasticity([(x, r.tpot_s) for x, r in pts]),
                elasticity_ttft=_elasticity([(x, r.ttft_s) for x, r in pts]),
            )
        )
        # The side of this factor that lowers TPOT (ties: the central value), for the two corners.
        if at_hi.tpot_s < at_lo.tpot_s:
            faster[name], slower[name] = hi, lo
        elif at_lo.tpot_s < at_hi.tpot_s:
            faster[name], slower[name] = lo, hi
    if faster:
        results += [run(replace(base, **faster)), run(replace(base, **slower))]
    ranked = [f for f in factors if f.elasticity_tpot is not None and f.elasticity_tpot != 0]
    most = max(ranked, key=lambda f: abs(f.elasticity_tpot or 0)).name if ranked else None
    priced = central.usd_per_mtok is not None
    notes = (
        f"Sensitivity: {', '.join(f.name for f in factors) or 'no factor'} each moved x{1 - spread:g} and "
        f"x{1 + spread:g} (efficiencies capped at 1), one at a time and all together at the optimistic and "
        f"pessimistic corners; the band is the smallest and largest value over {len(results)} estimates.",
        f"Batch held at the central estimate's {central.batch} sequences per replica.",
        f"The default range (+-{DEFAULT_SPREAD:.0%}) is a convention (the simulator's own kernel efficiencies "
        "spread that much around the defaults; the published anchors sit 10-40% away), not a fitted confidence "
        "interval.",
    )
    return SensitivityBand(
        spread=float(spread),
        tpot_s=_band([r.tpot_s for r in results], central.tpot_s),
        ttft_s=_band([r.ttft_s for r in results], central.ttft_s),
        tokens_per_s_per_gpu=_band([r.tokens_per_s_per_gpu for r in results], central.tokens_per_s_per_gpu),
        usd_per_mtok=_band([r.usd_per_mtok for r in results], central.usd_per_mtok) if priced else None,
        factors=tuple(factors),
        most_influential=most,
        runs=len(results),
        central=central,
        assumptions=notes,
    )
