"""Routing advisor: rank the destinations a gateway could send one request class to.

Pure Python, no Django. Plain dataclasses in (``RequestClass``, ``DeploymentCandidate``,
``ApiCandidate``), plain dataclasses out (``RouteResult`` with one ``Destination`` per candidate,
best first). Units: tokens (``int``), milliseconds (``_ms``), seconds (``_s``), USD (``usd_``,
``float``: these are estimates for ranking, not invoices; exact money lives in ``costs/``).

The four routing signals of the seed article ("moe-serving-coordination", section "O que essa
arquitetura muda para o roteamento de modelos?"), in the order they are applied:

1. **Eligibility.** A deployment is ineligible when it serves another model than the one asked
   for, its context window (``max_model_len``, else the model's maximum) is shorter than
   ``context_tokens``, its model lacks the modality, its last poll is not ``up``, its last poll is
   older than its staleness limit (or it was never polled), the weights do not fit (the sizing
   engine), or it has no room for one more sequence (headroom below 1). A hosted API is ineligible
   for another model, a context window shorter than ``context_tokens`` or not recorded, or a
   missing modality.
2. **Probable cache state.** The class reuses ``prefix = floor(prefix_reuse_fraction x
   prompt_tokens)`` tokens of a prefix already seen. A prefix is cached and matched in whole blocks
   of the destination's granularity (vLLM hashes full blocks only: ``hash_block_tokens`` over
   ``block_size`` tokens; SGLang's radix cache matches whole pages of ``page_size``), so
   ``reusable = floor(prefix / block) x block`` and the state is ``warm`` when ``reusable > 0``,
   else ``cold`` (a full prefill).
3. **Load.** ``headroom_sequences = min(C - running - waiting, floor((1 - kv_cache_usage) x C))``
   (at least 0), where ``C`` is the engine-faithful admission capacity of the whole deployment at
   ``context_tokens`` (``size()`` with the deployment's engine profile: its blocks, state slots and
   per-sequence state), ``running``/``waiting`` the requests the last poll saw, and
   ``kv_cache_usage`` the fraction of the engine's cache pool in use at the last poll (memory for
   new states and KV). A term whose poll figure is missing is left out (the reasons say so).
4. **Economy, within the latency contract.** TTFT and TPOT are the throughput model's
   (``estimate()``) for this request class at the load the request would join: ``batch = min(
   ceil((running + waiting) / replicas) + 1, memory limit)`` per replica, with the reusable prefix
   as the prefill cache hit rate, then the deployment's live speed correction applied where one
   exists (``apply_correction``). Cost per request (one request of this class, never a price per
   token alone):

   - deployment: ``usd_per_request = usd_per_hour / requests_per_hour`` with ``usd_per_hour = GPUs
     x USD per GPU-hour`` (the quote in force) and ``requests_per_hour = replicas x
     tokens_per_s_replica x 3600 / output_tokens``, where ``tokens_per_s_replica`` is the model's
     output rate for this class at its SLO-limited concurrency (``estimate(..., ttft_slo_ms,
     tpot_slo_ms)``; the prefill share of the replica's time is inside it), corrected like the
     latency (the batch is the model's SLO-limited one, not searched again with the corrected times as
     ``planner.corrections.correct`` does for a deployment's own workload: that search costs about a
     dozen estimates per deployment, too many per gateway request). This is a busy deployment's cost
     per request (the same convention as rent vs API's cost per million output tokens,
     docs/costs.md): idle GPUs bill the same and are not charged to the request.
   - hosted API: ``usd_per_request = (reusable x cache_hit + (prompt - reusable) x cache_miss +
     output x output_price) / 1e6`` with the prices in USD per million tokens.

**Ranking** (deterministic): eligible before ineligible; serving the model asked for before serving
another (so no destination of another model ever ranks above one of the asked model, eligible or
not; with no model asked for, any model counts as asked); among the eligible, meeting the SLO
(``ttft_ms <= ttft_slo_ms`` and ``tpot_ms <= tpot_slo_ms``; no SLO given counts as met) before an
unknown latency (a hosted API: nothing measures it) before missing it; then the lower
``usd_per_request`` (unknown cost last); then ``slug``, then ``kind``. Every destination carries its
reasons: why it is ineligible, or its cache state, headroom, latency against the SLO and cost,
and a last reason saying why it ranks below the one before it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from .errors import EngineInputError, is_number
from .limits import MAX_CONTEXT_TOKENS, MAX_SLO_MS
from .prefix_cache import prefix_granularity_tokens
from .sizing.served import Serving
from .throughput.correction import apply_correction
from .throughput.estimate import ThroughputResult, estimate
from .units import SECONDS_PER_HOUR, TOKENS_PER_MTOK

#: Modalities a request class may ask for (a model record lists those it takes as input).
MODALITIES: tuple[str, ...] = ("text", "image", "audio", "video")
#: Destination kinds.
KINDS: tuple[str, ...] = ("deployment", "api")
#: Cache states.
WARM, COLD = "warm", "cold"
#: The staleness limit's defaults: a deployment is stale when its last poll is older than
#: ``max(STALE_POLL_INTERVALS x poll_interval_s, STALE_MIN_S)`` (settings ``FLEETCAP_ROUTE_STALE_*``).
STALE_POLL_INTERVALS: float = 3.0
STALE_MIN_S: float = 120.0

#: SLO tiers, best first (the second key of the ranking).
MEETS, UNKNOWN, MISSES = 0, 1, 2
TIER_TEXT = {MEETS: "meets the latency SLO", UNKNOWN: "latency not known", MISSES: "misses the latency SLO"}


def stale_limit_s(
    poll_interval_s: float, intervals: float = STALE_POLL_INTERVALS, floor_s: float = STALE_MIN_S
) -> float:
    """Seconds after which a deployment's last poll is stale: ``max(intervals x poll_interval_s,
    floor_s)``. Three missed polls say the poller lost it; the floor keeps a deployment polled every
    5 s from flapping on a slow poll cycle (beat runs every 5 s, a cycle may take a few)."""
    return max(intervals * poll_interval_s, floor_s)


def reusable_prefix_tokens(prompt_tokens: int, prefix_reuse_fraction: float, block_tokens: int | None) -> int:
    """Tokens of the prompt a prefix cache of ``block_tokens`` granularity can serve:
    ``floor(floor(fraction x prompt) / block) x block``; 0 when the granularity is unknown (None).

    Source: vLLM's prefix caching hashes and matches full blocks only (docs.vllm.ai, "Automatic
    Prefix Caching": a block is cached once it is full); SGLang's radix cache with ``page_size`` > 1
    matches whole pages. A hybrid model's state can only be restored at such a boundary too."""
    if not block_tokens or block_tokens < 1:
        return 0
    prefix = math.floor(prompt_tokens * prefix_reuse_fraction + 1e-9)
    return (prefix // block_tokens) * block_tokens


@dataclass(frozen=True, slots=True)
class RequestClass:
    """One class of requests. ``context_tokens`` is the longest sequence it needs (prompt + output
    at most); ``prefix_reuse_fraction`` (0-1) the share of the prompt that repeats a prefix already
    sent; SLOs in ms (None: no contract on that side); ``model`` a model slug (None: any model);
    ``modality`` one of ``MODALITIES`` (None: text)."""

    context_tokens: int
    prompt_tokens: int
    output_tokens: int
    prefix_reuse_fraction: float = 0.0
    ttft_slo_ms: float | None = None
    tpot_slo_ms: float | None = None
    model: str | None = None
    modality: str | None = None

    def check(self) -> None:
        """Raise ``EngineInputError`` (field -> messages) for a class that cannot be routed."""
        errors: dict[str, list[str]] = {}
        for name in ("context_tokens", "prompt_tokens", "output_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_CONTEXT_TOKENS:
                errors[name] = [f"Must be a whole number of tokens from 1 to {MAX_CONTEXT_TOKENS:,}."]
        if not errors and self.prompt_tokens + self.output_tokens > self.context_tokens:
            errors["context_tokens"] = [
                f"Must be at least prompt + output tokens ({self.prompt_tokens + self.output_tokens}): "
                "a sequence grows to that length."
            ]
        if not is_number(self.prefix_reuse_fraction) or not 0 <= self.prefix_reuse_fraction <= 1:
            errors["prefix_reuse_fraction"] = ["Must be a fraction from 0 to 1."]
        for name in ("ttft_slo_ms", "tpot_slo_ms"):
            value = getattr(self, name)
            if value is not None and (not is_number(value) or not 0 < value <= MAX_SLO_MS):
                errors[name] = [f"Must be a number of milliseconds above 0 and at most {MAX_SLO_MS:,}."]
        if self.modality is not None and self.modality not in MODALITIES:
            errors["modality"] = [f"Use one of {', '.join(MODALITIES)}."]
        if errors:
            raise EngineInputError(errors)

    @property
    def wanted_modality(self) -> str:
        return self.modality or "text"


@dataclass(frozen=True, slots=True)
class DeploymentCandidate:
    """A deployment as the router sees it: what it serves, its live state and its price.

    ``context_window`` in tokens (``max_model_len``, else the model's maximum); ``last_poll_age_s``
    None when never polled; ``stale_after_s`` from ``stale_limit_s``; ``requests_running``,
    ``requests_waiting`` and ``kv_cache_usage`` (0-1) from the last poll (None: not published);
    ``usd_per_gpu_hour`` the quote in force (None: no quote); ``granularity_tokens`` overrides the
    prefix-cache granularity the engine profile's allocation gives (its ``block_size_tokens``)."""

    slug: str
    model: str
    context_window: int
    serving: Serving
    modalities: tuple[str, ...] = ("text",)
    status: str = "unknown"
    last_poll_age_s: float | None = None
    stale_after_s: float = STALE_MIN_S
    requests_running: float | None = None
    requests_waiting: float | None = None
    kv_cache_usage: float | None = None
    usd_per_gpu_hour: Decimal | None = None
    granularity_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class ApiCandidate:
    """A hosted API's price: model slug (None: not linked to a model record), context window in
    tokens (None: not recorded), prices in USD per million tokens, and its prefix-cache granularity
    in tokens (the provider's cache unit)."""

    slug: str
    model: str | None
    context_window: int | None
    input_cache_hit_usd_per_mtok: Decimal
    input_cache_miss_usd_per_mtok: Decimal
    output_usd_per_mtok: Decimal
    granularity_tokens: int
    modalities: tuple[str, ...] = ("text",)
    provider: str = ""
    model_name: str = ""


@dataclass(slots=True)
class Destination:
    """One ranked destination. ``ttft_ms``/``tpot_ms`` None when not estimated (an API, or an
    ineligible deployment); ``usd_per_request`` None when not priced (no quote, no throughput)."""

    kind: str
    slug: str
    model: str | None
    eligible: bool
    reasons: list[str]
    cache_state: str
    reusable_prefix_tokens: int
    granularity_tokens: int | None
    headroom_sequences: int | None
    ttft_ms: float | None
    tpot_ms: float | None
    usd_per_request: float | None
    slo: int = UNKNOWN
    calibrated: bool = False
    rank: int = 0

    @property
    def meets_slo(self) -> bool | None:
        """True/False against the SLO; None when the latency is not known."""
        return None if self.slo == UNKNOWN else self.slo == MEETS

    def serves_another(self, model: str | None) -> bool:
        """Whether it serves another model than ``model`` (None: any model is asked for, so never)."""
        return model is not None and self.model != model

    def sort_key(self, model: str | None = None) -> tuple[Any, ...]:
        """The ranking's order (module docstring, "Ranking") for a class asking for ``model``."""
        cost = self.usd_per_request
        return (
            not self.eligible,
            self.serves_another(model),
            self.slo,
            cost is None,
            cost if cost is not None else 0.0,
            self.slug,
            self.kind,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "kind": self.kind,
            "slug": self.slug,
            "model": self.model,
            "eligible": self.eligible,
            "meets_slo": self.meets_slo,
            "reasons": list(self.reasons),
            "cache_state": self.cache_state,
            "reusable_prefix_tokens": self.reusable_prefix_tokens,
            "granularity_tokens": self.granularity_tokens,
            "headroom_sequences": self.headroom_sequences,
            "ttft_ms": self.ttft_ms,
            "tpot_ms": self.tpot_ms,
            "usd_per_request": self.usd_per_request,
            "calibrated": self.calibrated,
        }


@dataclass(frozen=True, slots=True)
class RouteResult:
    """The ranking, best first, and the rules it was made by."""

    request: RequestClass
    destinations: tuple[Destination, ...]
    assumptions: tuple[str, ...] = field(default=())

    @property
    def best(self) -> Destination | None:
        """The first destination when it is eligible, else None (nothing can take the class)."""
        return self.destinations[0] if self.destinations and self.destinations[0].eligible else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "best": self.best.slug if self.best else None,
            "destinations": [d.to_dict() for d in self.destinations],
            "assumptions": list(self.assumptions),
        }


ASSUMPTIONS: tuple[str, ...] = (
    "Eligibility: model, context window, modality; deployments also their last poll (up, not stale), memory fit "
    "and room for one more sequence.",
    "Cache state: the reused prefix counts in whole blocks of the destination's granularity "
    "(reusable = floor(prefix / block) x block); a deployment's block is its engine profile's allocation "
    "(vLLM block_size, SGLang page_size).",
    "Headroom: engine-faithful capacity at the class's context less running and waiting requests, capped by the "
    "free share of the cache pool at the last poll.",
    "Latency: the throughput model at the load the request would join, with the live speed correction where one "
    "is fitted; hosted APIs' latency is not measured (ranked after known SLO hits, before known misses).",
    "Cost per request: a deployment's GPU-hours over the requests of this class it serves per hour at its "
    "SLO-limited concurrency (busy; idle GPUs bill the same); an API's cache-hit, cache-miss and output prices.",
    "Order: eligible, SLO met / unknown / missed, cost per request (unknown last), slug, kind.",
)


def _fmt_usd(value: float) -> str:
    """A cost per request as people read it: per 1,000 requests, in USD with cents (up to 4 decimals below a
    cent): ``0.0035808`` -> ``"3.58 USD per 1,000 requests"``."""
    thousand = value * 1000
    return f"{thousand:,.{2 if abs(thousand) >= 0.01 else 4}f} USD per 1,000 requests"


def _cache(request: RequestClass, block: int | None) -> tuple[str, int, str]:
    """``(state, reusable tokens, reason)`` of the class at a destination caching in ``block``-token units."""
    prefix = math.floor(request.prompt_tokens * request.prefix_reuse_fraction + 1e-9)
    if not prefix:
        return COLD, 0, "Cold prefill: the class reuses no prefix."
    if not block:
        return COLD, 0, f"Cold prefill: prefix caching granularity unknown, the {prefix}-token prefix is not counted."
    reusable = reusable_prefix_tokens(request.prompt_tokens, request.prefix_reuse_fraction, block)
    if not reusable:
        return COLD, 0, f"Cold prefill: the {prefix}-token prefix is shorter than one {block}-token block."
    return (
        WARM,
        reusable,
        f"Warm prefix: {reusable} of {request.prompt_tokens} prompt tokens reusable "
        f"(a {prefix}-token prefix in whole {block}-token blocks).",
    )


def _common(request: RequestClass, model: str | None, modalities: Sequence[str], window: int | None) -> list[str]:
    """Why a destination cannot take the class for model, modality or context window (empty: it can)."""
    why = []
    if request.model is not None and model != request.model:
        why.append(f"Serves model {model or '(none linked)'}, not {request.model}.")
    if request.wanted_modality not in modalities:
        why.append(f"Takes {', '.join(modalities) or 'no modality'}, not {request.wanted_modality}.")
    if window is None:
        why.append("Context window not recorded: a context of the class's length cannot be checked.")
    elif window < request.context_tokens:
        why.append(f"Context window {window:,} tokens < {request.context_tokens:,} needed.")
    return why


def _slo_tier(request: RequestClass, ttft_ms: float, tpot_ms: float) -> tuple[int, str]:
    parts, ok = [], True
    for name, value, limit in (("TTFT", ttft_ms, request.ttft_slo_ms), ("TPOT", tpot_ms, request.tpot_slo_ms)):
        if limit is None:
            parts.append(f"{name} {value:,.0f} ms (no SLO)" if name == "TTFT" else f"{name} {value:,.1f} ms (no SLO)")
            continue
        hit = value <= limit
        ok = ok and hit
        parts.append(f"{name} {value:,.1f} ms {'<=' if hit else '>'} {limit:,.0f} ms")
    tier = MEETS if ok else MISSES
    return tier, f"{TIER_TEXT[tier][0].upper()}{TIER_TEXT[tier][1:]}: {', '.join(parts)}."


def _headroom(d: DeploymentCandidate, capacity: int) -> tuple[int, str]:
    """``(headroom_sequences, reason)``: see the module docstring, "Load"."""
    terms, parts = [], []
    if d.requests_running is not None or d.requests_waiting is not None:
        busy = (d.requests_running or 0.0) + (d.requests_waiting or 0.0)
        terms.append(capacity - math.ceil(busy - 1e-9))
        parts.append(f"{busy:g} running or waiting")
    if d.kv_cache_usage is not None:
        usage = min(1.0, max(0.0, d.kv_cache_usage))
        terms.append(math.floor((1 - usage) * capacity + 1e-9))
        parts.append(f"cache pool {usage:.0%} used")
    if not terms:
        return capacity, f"Headroom {capacity} sequences: predicted capacity, the last poll published no load."
    free = max(0, min(terms))
    return free, f"Headroom {free} sequence(s): capacity {capacity} at this context, {', '.join(parts)}."


def _corrected(result: ThroughputResult, serving: Serving, request: RequestClass) -> ThroughputResult:
    if serving.correction is None:
        return result
    return apply_correction(
        result,
        serving.correction,
        age_s=serving.correction_age_s,
        ttft_slo_ms=request.ttft_slo_ms,
        tpot_slo_ms=request.tpot_slo_ms,
    )


def assess_deployment(request: RequestClass, d: DeploymentCandidate) -> Destination:
    """One deployment's destination (eligibility, cache state, headroom, latency, cost); unranked."""
    s = d.serving
    why = _common(request, d.model, d.modalities, d.context_window)
    if d.status != "up":
        why.append(f"Last poll status {d.status}, not up.")
    if d.last_poll_age_s is None:
        why.append("Never polled: no live state to route on.")
    elif d.last_poll_age_s > d.stale_after_s:
        why.append(f"Stale: last poll {d.last_poll_age_s:,.0f} s ago (limit {d.stale_after_s:,.0f} s).")
    granularity = d.granularity_tokens

    def out(eligible: bool, reasons: list[str], **figures: Any) -> Destination:
        state, reusable, cache_reason = _cache(request, granularity)
        reasons = reasons if not eligible else [cache_reason, *reasons]
        return Destination(
            kind="deployment",
            slug=d.slug,
            model=d.model,
            eligible=eligible,
            reasons=reasons,
            cache_state=state,
            reusable_prefix_tokens=reusable,
            granularity_tokens=granularity,
            headroom_sequences=figures.get("headroom"),
            ttft_ms=figures.get("ttft_ms"),
            tpot_ms=figures.get("tpot_ms"),
            usd_per_request=figures.get("usd"),
            slo=figures.get("slo", UNKNOWN),
            calibrated=figures.get("calibrated", False),
        )

    if why:
        return out(False, why)
    try:
        sizing = s.size(request.context_tokens)
    except EngineInputError as exc:
        return out(False, [f"The sizing engine cannot model it: {exc}"])
    if granularity is None and sizing.allocation is not None:
        # The token multiple a hit lands on (prefix_cache.py: the block for vLLM; for an SGLang hybrid
        # max(64, page) under extra_buffer, 1 under no_buffer).
        granularity = prefix_granularity_tokens(sizing.allocation)
    if not sizing.fits:
        return out(False, ["The weights do not fit its GPUs (the sizing engine)."])
    capacity = sizing.max_concurrent_sequences
    headroom, headroom_reason = _headroom(d, capacity)
    if headroom < 1:
        return out(False, [f"Full: {headroom_reason}"], headroom=headroom)
    _, reusable, _ = _cache(request, granularity)
    hit_rate = reusable / request.prompt_tokens
    busy = (d.requests_running or 0.0) + (d.requests_waiting or 0.0)
    per_replica = math.ceil(busy / s.replicas - 1e-9) + 1
    shape = {
        "prompt_tokens": request.prompt_tokens,
        "output_tokens": request.output_tokens,
        "context_tokens": request.context_tokens,
        "prefix_cache_hit_rate": hit_rate,
        "kv_cache_dtype": s.kv_cache_dtype,
        "gpu_memory_utilization": s.gpu_memory_utilization,
    }
    try:
        admission = s.engine_options()
        busy_speed = estimate(
            s.model, s.accelerator, s.layout, ttft_slo_ms=request.ttft_slo_ms, tpot_slo_ms=request.tpot_slo_ms,
            engine=admission, **shape,
        )  # fmt: skip
        batch = max(1, min(per_replica, busy_speed.memory_limit or 1))
        now = estimate(s.model, s.accelerator, s.layout, batch=batch, engine=admission, **shape)
    except EngineInputError as exc:
        return out(False, [f"The throughput engine cannot model it: {exc}"], headroom=headroom)
    now, busy_speed = _corrected(now, s, request), _corrected(busy_speed, s, request)
    ttft_ms = now.ttft_s * 1e3 if math.isfinite(now.ttft_s) else math.inf
    tpot_ms = now.tpot_s * 1e3
    slo, slo_reason = _slo_tier(request, ttft_ms, tpot_ms)
    joins = f"At batch {now.batch} per replica (the request joins the last poll's load)."
    reasons = [headroom_reason, f"{joins} {slo_reason}"]
    if s.correction is not None:
        reasons.append("Latency and throughput calibrated by the deployment's live speed correction.")
    usd = None
    if d.usd_per_gpu_hour is None:
        reasons.append("No GPU quote in force for its SKU: cost per request unknown.")
    elif busy_speed.tokens_per_s_replica <= 0:
        reasons.append("No throughput: cost per request unknown.")
    else:
        usd_per_hour = s.gpus * float(d.usd_per_gpu_hour)
        per_hour = s.replicas * busy_speed.tokens_per_s_replica * SECONDS_PER_HOUR / request.output_tokens
        usd = usd_per_hour / per_hour
        reasons.append(
            f"Cost {_fmt_usd(usd)}: {usd_per_hour:,.2f} USD/h over {per_hour:,.0f} requests/h of "
            f"this class (batch {busy_speed.batch} per replica, {s.replicas} replica(s))."
        )
    return out(
        True,
        reasons,
        headroom=headroom,
        ttft_ms=None if math.isinf(ttft_ms) else ttft_ms,
        tpot_ms=tpot_ms,
        usd=usd,
        slo=slo,
        calibrated=s.correction is not None,
    )


def assess_api(request: RequestClass, a: ApiCandidate) -> Destination:
    """One hosted API's destination: eligibility, cache state and cost per request; unranked."""
    why = _common(request, a.model, a.modalities, a.context_window)
    state, reusable, cache_reason = _cache(request, a.granularity_tokens)
    if why:
        return Destination(
            "api", a.slug, a.model, False, why, state, reusable, a.granularity_tokens, None, None, None, None
        )
    hit, miss, out = (
        float(a.input_cache_hit_usd_per_mtok),
        float(a.input_cache_miss_usd_per_mtok),
        float(a.output_usd_per_mtok),
    )
    missed = request.prompt_tokens - reusable
    usd = (reusable * hit + missed * miss + request.output_tokens * out) / TOKENS_PER_MTOK
    reasons = [
        cache_reason,
        "Latency not known: nothing measures a hosted API's TTFT and TPOT here (ranked after destinations known "
        "to meet the SLO).",
        f"Cost {_fmt_usd(usd)}: {reusable} cached x {hit:g} + {missed} uncached x {miss:g} + "
        f"{request.output_tokens} output x {out:g} USD per million tokens.",
    ]
    return Destination(
        "api", a.slug, a.model, True, reasons, state, reusable, a.granularity_tokens, None, None, None, usd
    )


def _why_below(d: Destination, above: Destination, model: str | None) -> str:
    if above.eligible and not d.eligible:
        return f"Ranked {d.rank}: ineligible, after every eligible destination."
    if d.serves_another(model) and not above.serves_another(model):
        return f"Ranked {d.rank}: serves another model, after every destination serving {model}."
    if not d.eligible:
        return f"Ranked {d.rank}: ineligible (ordered by slug)."
    if d.slo != above.slo:
        return f"Ranked {d.rank}: {TIER_TEXT[d.slo]}, after {above.slug} ({TIER_TEXT[above.slo]})."
    if d.usd_per_request is None:
        return f"Ranked {d.rank}: cost unknown, after {above.slug} whose cost is known."
    if above.usd_per_request is not None and d.usd_per_request > above.usd_per_request:
        more = d.usd_per_request - above.usd_per_request
        return f"Ranked {d.rank}: {_fmt_usd(more)} more than {above.slug}."
    return f"Ranked {d.rank}: ties with {above.slug} on SLO and cost; ordered by slug."


def rank(
    request: RequestClass, deployments: Iterable[DeploymentCandidate] = (), apis: Iterable[ApiCandidate] = ()
) -> RouteResult:
    """Rank every deployment and API for ``request`` (see the module docstring); ``EngineInputError``
    for a request class that cannot be routed."""
    request.check()
    found = [assess_deployment(request, d) for d in deployments] + [assess_api(request, a) for a in apis]
    found.sort(key=lambda d: d.sort_key(request.model))
    for i, d in enumerate(found, start=1):
        d.rank = i
        if i == 1:
            d.reasons.append(
                "Ranked 1: the best eligible destination."
                if d.eligible
                else "Ranked 1: but no destination is eligible."
            )
        else:
            d.reasons.append(_why_below(d, found[i - 2], request.model))
    return RouteResult(request=request, destinations=tuple(found), assumptions=ASSUMPTIONS)
