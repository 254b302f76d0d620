"""Serving estimate of one replica: TPOT, TTFT, tokens/s per replica, GPU, user and dollar.

Pure Python, no Django. Units: seconds internally, milliseconds in ``to_dict()`` (``_ms``), tokens/s,
USD. Formulas and defaults: docs/throughput.md. Building blocks: ``decode.decode_step`` (one decode
step), ``prefill.prefill`` (one prompt), ``sizing.size`` (memory admission).

Aggregated serving (prefill and decode on the same GPUs, chunked prefill): a replica running ``B``
sequences that each produce ``out`` tokens admits new requests at ``lambda = B / (out x TPOT)``; each
request keeps it busy ``w`` seconds prefilling (``PrefillEstimate.busy_s_per_request``), so with
``x = B x w / (out x T_decode)`` the prefill share of the replica's time is ``rho = x / (1 + x)`` and

    TPOT = T_decode(B) / (1 - rho) = T_decode(B) + B x w / out
    TTFT = queueing + prefill = rho / (1 - rho) x w  +  prefill time + chunks x T_decode(B)

(M/M/1 queueing on the prefill work; each prefill chunk shares its step with the running decode
batch). Disaggregated serving: decode runs alone (TPOT = T_decode), the prefill pool queues on its
own and adds the exposed KV transfer: TTFT = rho_p / (1 - rho_p) x w + prefill time + exposed transfer.

What TTFT means here (docs/throughput.md, "What TTFT means here"): ``ttft_s`` is ``TTFT_DEFINITION``,
the *mean* time from a request reaching a replica that serves ``batch`` sequences at the offered load
to its first token, and ``TtftParts`` names the terms it adds (queueing, decode sharing, prefill, KV
transfer). ``idle_ttft_s`` is ``IDLE_TTFT_DEFINITION``: the same prompt prefilled alone on an idle
replica (``PrefillModel.parts(..., ranks=1)``: no queue, no decode batch in its steps, no transfer),
what a benchmark at concurrency 1 measures. Neither is a percentile: benchmarks (vLLM ``vllm bench
serve``, SGLang ``bench_serving``) report the mean, median and p99 of per-request TTFTs measured at the
client, so a p99 under load is longer than either.

Money: ``usd_per_gpu_hour`` may be a ``Decimal``, ``int``, ``float`` or numeric ``str``; it is echoed
exactly (as a string) and converted to ``float`` for the derived figures, which are estimates
(``tokens_per_usd``, ``usd_per_mtok``), not invoices: exact money (rent, breakeven) lives in
``planner.engine.costs``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from ..costs.money import MAX_PRICE_USD, MIN_NONZERO
from ..errors import EngineInputError, is_number
from ..formats import DEFAULT_KV_CACHE_DTYPE
from ..limits import MAX_BATCH, MAX_CONTEXT_TOKENS, MAX_SLO_MS, int_error
from ..sizing.capacity import DEFAULT_GPU_MEMORY_UTILIZATION, GENERIC, EngineOptions, size
from ..sizing.memo import model_constants
from ..spec import Accelerator, Layout, ModelArch, accelerator_errors
from ..units import SECONDS_PER_HOUR, TOKENS_PER_MTOK
from .decode import DecodeModel, DecodeStep, check_layout, check_step, step_of
from .options import DEFAULT_OPTIONS, ThroughputOptions
from .prefill import PrefillEstimate, PrefillParts, prefill_model, prefill_of


def parse_usd(value: Any, field: str = "usd_per_gpu_hour") -> Decimal:
    """A USD amount from 0 to ``MAX_PRICE_USD`` as ``Decimal`` (floats via their shortest repr); a non-zero
    amount below ``MIN_NONZERO`` is refused, as the cost modules do (its per-dollar figures would overflow)."""
    if isinstance(value, bool):
        raise EngineInputError.single(field, "Must be a number of USD.")
    try:
        amount = value if isinstance(value, Decimal) else Decimal(str(value))
    except (InvalidOperation, ValueError, TypeError):
        raise EngineInputError.single(field, "Must be a number of USD.") from None
    if not amount.is_finite() or amount < 0:
        raise EngineInputError.single(field, "Must be a finite number of USD, zero or more.")
    if amount > MAX_PRICE_USD:
        raise EngineInputError.single(field, f"Must be at most {MAX_PRICE_USD:,} USD.")
    if amount and amount < MIN_NONZERO:
        raise EngineInputError.single(field, f"Must be 0 or at least {MIN_NONZERO} USD.")
    return amount


def queue_wait_s(arrival_rate_per_s: float, busy_s_per_request: float) -> float:
    """M/M/1 mean wait ``rho / (1 - rho) x service`` with ``rho = rate x service``; ``inf`` when ``rho >= 1``."""
    rho = arrival_rate_per_s * busy_s_per_request
    if rho >= 1:
        return math.inf
    return rho / (1 - rho) * busy_s_per_request


@dataclass(frozen=True, slots=True)
class TtftDefinition:
    """What a TTFT figure means: a short stable ``code`` (API clients may switch on it) and a sentence."""

    code: str
    text: str

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "text": self.text}


#: ``ThroughputResult.ttft_s`` (and the layout search's ``ttft_ms``): the mean under load, with its parts.
TTFT_DEFINITION = TtftDefinition(
    "mean_under_load",
    "Mean time from a request reaching one replica that serves `batch` sequences at the arrival rate they "
    "imply to its first token: M/M/1 queueing on the prefill work + the decode steps sharing each prefill "
    "chunk's step (aggregated) + the prompt's prefill + the KV transfer not hidden behind it "
    "(disaggregated). A mean, not a percentile; no network or tokenisation time.",
)
#: ``ThroughputResult.idle_ttft_s``: one request alone (what a benchmark at concurrency 1 measures).
IDLE_TTFT_DEFINITION = TtftDefinition(
    "idle_single_request",
    "Time to first token of one request on an idle replica: the prompt's prefill alone (one data-parallel "
    "rank), with no queue, no decode batch sharing its steps and no KV transfer.",
)


@dataclass(frozen=True, slots=True)
class TtftParts:
    """The terms ``ttft_s`` adds (seconds); ``total_s`` is their sum, in the order the TTFT is computed.

    * ``queue_s``: M/M/1 wait on the replica's prefill work at the offered load, ``rho / (1 - rho) x w``
      (``aggregated_latency``'s queue; ``queue_wait_s`` for a prefill pool);
    * ``prefill_s``: the prompt's chunked prefill, ``PrefillEstimate.time_s`` (docs/throughput.md, "Prefill");
    * ``decode_sharing_s``: ``chunks x T_decode(B)``, the running decode batch's step that each prefill
      chunk shares (aggregated, chunked prefill; 0 disaggregated);
    * ``kv_transfer_s``: the exposed KV transfer, ``PrefillEstimate.kv_transfer_exposed_s``
      (disaggregated; 0 aggregated).
    """

    queue_s: float
    prefill_s: float
    decode_sharing_s: float
    kv_transfer_s: float

    @property
    def total_s(self) -> float:
        return self.queue_s + self.prefill_s + self.decode_sharing_s + self.kv_transfer_s

    def scaled(self, prefill_factor: float, decode_factor: float) -> TtftParts:
        """The parts with a live correction: queueing and prefill x ``prefill_factor`` (the queue is the
        prefill work waiting), decode sharing x ``decode_factor``, the transfer unchanged."""
        return TtftParts(
            self.queue_s * prefill_factor,
            self.prefill_s * prefill_factor,
            self.decode_sharing_s * decode_factor,
            self.kv_transfer_s,
        )

    def to_dict(self) -> dict[str, float | None]:
        return {
            "queue_ms": _ms(self.queue_s),
            "decode_sharing_ms": _ms(self.decode_sharing_s),
            "prefill_ms": _ms(self.prefill_s),
            "kv_transfer_ms": _ms(self.kv_transfer_s),
        }


def aggregated_ttft_parts(decode_s: float, queue_s: float, prefill_s: float, chunks: int) -> TtftParts:
    """The parts of ``aggregated_latency``'s TTFT (its ``queue_s``, the prompt's ``prefill_s`` and ``chunks``)."""
    return TtftParts(queue_s, prefill_s, chunks * decode_s, 0.0)


def disaggregated_ttft_parts(arrival_rate_per_replica: float, prefill_est: PrefillEstimate) -> TtftParts:
    """The parts of ``disaggregated_ttft``: queueing on the prefill replica, prefill, exposed KV transfer."""
    wait = queue_wait_s(arrival_rate_per_replica, prefill_est.busy_s_per_request)
    return TtftParts(wait, prefill_est.time_s, 0.0, prefill_est.kv_transfer_exposed_s)


def aggregated_latency(
    decode_s: float, batch: float, output_tokens: int, prefill_s: float, busy_s: float, chunks: int
) -> tuple[float, float, float, float]:
    """``(tpot_s, ttft_s, queue_s, prefill_share)`` of an aggregated replica running ``batch`` sequences.

    ``decode_s`` is the decode step alone at that batch; ``prefill_s``/``busy_s``/``chunks`` describe one
    prompt (``PrefillEstimate.time_s``, ``busy_s_per_request``, ``chunks``). See the module docstring.
    """
    x = batch * busy_s / (output_tokens * decode_s)
    queue = x * busy_s
    return decode_s * (1 + x), queue + prefill_s + chunks * decode_s, queue, x / (1 + x)


def disaggregated_ttft(arrival_rate_per_replica: float, prefill_est: PrefillEstimate) -> float:
    """TTFT on a dedicated prefill replica: queueing + prefill + the KV transfer not hidden behind it
    (``TTFT_DEFINITION``; the parts: ``disaggregated_ttft_parts``)."""
    return disaggregated_ttft_parts(arrival_rate_per_replica, prefill_est).total_s


@dataclass(frozen=True, slots=True)
class ThroughputResult:
    """Aggregated serving of one replica at ``batch`` sequences (see the module docstring).

    ``concurrency_limit = min(memory_limit, slo_limit)``: sequences per replica that both fit in
    memory at ``context_tokens`` (``size()``) and keep TPOT and TTFT within the SLOs given. ``fits`` is
    false when ``batch`` exceeds what memory admits (the times are still computed).

    ``ttft_s`` is ``TTFT_DEFINITION`` (the mean under load; ``ttft_parts`` its terms), ``idle_ttft_s``
    ``IDLE_TTFT_DEFINITION`` (one request on an idle replica); ``to_dict()`` states both definitions.
    """

    model: str
    accelerator: str
    layout: Layout
    gpus: int
    kv_cache_dtype: str
    prompt_tokens: int
    output_tokens: int
    context_tokens: int
    prefix_cache_hit_rate: float
    batch: int
    tpot_s: float
    ttft_s: float
    queue_s: float
    prefill_share: float
    tokens_per_s_replica: float
    tokens_per_s_per_gpu: float
    tokens_per_s_per_user: float
    memory_limit: int
    slo_limit: int | None
    concurrency_limit: int
    fits: bool
    meets_tpot: bool | None
    meets_ttft: bool | None
    usd_per_gpu_hour: Decimal | None
    usd_per_hour: float | None
    tokens_per_usd: float | None
    usd_per_mtok: float | None
    decode: DecodeStep
    prefill: PrefillEstimate
    #: What ``ttft_s`` adds (``total_s`` is ``ttft_s``); its meaning is ``TTFT_DEFINITION``.
    ttft_parts: TtftParts
    #: ``IDLE_TTFT_DEFINITION``: the prompt's prefill alone on an idle replica (one data-parallel rank).
    idle_ttft_s: float
    assumptions: tuple[str, ...]
    #: The serving engine profile memory admission was sized with (``estimate(engine=)``).
    engine: EngineOptions = GENERIC

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "accelerator": self.accelerator,
            "layout": self.layout.as_dict(),
            "gpus": self.gpus,
            "kv_cache_dtype": self.kv_cache_dtype,
            "prompt_tokens": self.prompt_tokens,
            "output_tokens": self.output_tokens,
            "context_tokens": self.context_tokens,
            "prefix_cache_hit_rate": self.prefix_cache_hit_rate,
            "batch": self.batch,
            "tpot_ms": self.tpot_s * 1e3,
            "ttft_ms": _ms(self.ttft_s),
            "ttft_definition": TTFT_DEFINITION.to_dict(),
            "ttft_parts": self.ttft_parts.to_dict(),
            "idle_ttft_ms": _ms(self.idle_ttft_s),
            "idle_ttft_definition": IDLE_TTFT_DEFINITION.to_dict(),
            "queue_ms": _ms(self.queue_s),
            "prefill_share": self.prefill_share,
            "tokens_per_s_replica": self.tokens_per_s_replica,
            "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu,
            "tokens_per_s_per_user": self.tokens_per_s_per_user,
            "concurrency": {
                "memory_limit": self.memory_limit,
                "slo_limit": self.slo_limit,
                "limit": self.concurrency_limit,
            },
            "fits": self.fits,
            "meets_tpot": self.meets_tpot,
            "meets_ttft": self.meets_ttft,
            "usd_per_gpu_hour": None if self.usd_per_gpu_hour is None else str(self.usd_per_gpu_hour),
            "usd_per_hour": self.usd_per_hour,
            "tokens_per_usd": self.tokens_per_usd,
            "usd_per_mtok": self.usd_per_mtok,
            "decode": self.decode.to_dict(),
            "prefill": self.prefill.to_dict(),
            "assumptions": list(self.assumptions),
        }


def _ms(seconds: float) -> float | None:
    """Milliseconds, or ``None`` for an unbounded time (JSON has no infinity)."""
    return None if math.isinf(seconds) else seconds * 1e3


def _slo_limit(
    dm: DecodeModel, pre: PrefillParts, limit: int, context: int, out: int, tpot: float | None, ttft: float | None
) -> int:
    """Largest batch <= ``limit`` meeting both SLOs (0 if none); TPOT and TTFT only grow with batch."""

    def ok(b: int) -> bool:
        t_pot, t_tft, _, _ = aggregated_latency(dm.time(b, context), b, out, pre.time_s, pre.busy_s, pre.chunks)
        return (tpot is None or t_pot <= tpot) and (ttft is None or t_tft <= ttft)

    if limit < 1 or not ok(1):
        return 0
    lo, hi = 1, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def estimate(
    model: ModelArch,
    accelerator: Accelerator,
    layout: Layout | None = None,
    *,
    prompt_tokens: int = 2048,
    output_tokens: int = 256,
    context_tokens: int | None = None,
    batch: int | None = None,
    prefix_cache_hit_rate: float = 0.0,
    ttft_slo_ms: float | None = None,
    tpot_slo_ms: float | None = None,
    usd_per_gpu_hour: Decimal | float | int | str | None = None,
    kv_cache_dtype: str = DEFAULT_KV_CACHE_DTYPE,
    weight_format: str | None = None,
    include_scale_overhead: bool = True,
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION,
    options: ThroughputOptions = DEFAULT_OPTIONS,
    engine: EngineOptions = GENERIC,
) -> ThroughputResult:
    """Aggregated serving estimate of one replica of ``model`` on ``accelerator`` laid out as ``layout``.

    ``context_tokens`` (default prompt + output) sizes memory admission; TPOT is evaluated at the mean
    context of a running sequence, ``prompt + output / 2``. ``batch`` defaults to the concurrency
    limit (at least 1, so a configuration that admits nothing still gets timed); memory admission is the
    serving ``engine`` profile's (``EngineOptions``: a deployment's own engine, release, block size and
    max_model_len; the generic arithmetic by default), so a deployment's speed is quoted at the concurrency
    its engine admits. ``usd_per_gpu_hour``
    (``Decimal``, ``float``, ``int`` or ``str``) adds the per-dollar figures. Raises ``EngineInputError``.

    Memoised per model on every other input with its type, like ``size()`` (the result is frozen);
    a deployment page times the same batches at every view.
    """
    inputs = (
        accelerator, layout, prompt_tokens, output_tokens, context_tokens, batch, prefix_cache_hit_rate,
        ttft_slo_ms, tpot_slo_ms, usd_per_gpu_hour, kv_cache_dtype, weight_format, include_scale_overhead,
        gpu_memory_utilization, options, engine,
    )  # fmt: skip
    key = (tuple(map(type, inputs)), inputs)  # 1, 1.0 and True are equal keys: their types tell them apart
    return model_constants(model).result("estimate", key, lambda: _estimate(model, *inputs))


def _estimate(
    model: ModelArch,
    accelerator: Accelerator,
    layout: Layout | None,
    prompt_tokens: int,
    output_tokens: int,
    context_tokens: int | None,
    batch: int | None,
    prefix_cache_hit_rate: float,
    ttft_slo_ms: float | None,
    tpot_slo_ms: float | None,
    usd_per_gpu_hour: Decimal | float | int | str | None,
    kv_cache_dtype: str,
    weight_format: str | None,
    include_scale_overhead: bool,
    gpu_memory_utilization: float,
    options: ThroughputOptions,
    engine: EngineOptions,
) -> ThroughputResult:
    layout = layout or Layout()
    errors = {**options.errors(), **accelerator_errors(accelerator, speed=True)}
    for name, value in (("prompt_tokens", prompt_tokens), ("output_tokens", output_tokens)):
        message = int_error(value, 1, MAX_CONTEXT_TOKENS, "of tokens")
        if message:
            errors[name] = [message]
    hit = prefix_cache_hit_rate
    if isinstance(hit, bool) or not isinstance(hit, int | float) or not 0 <= hit < 1:
        errors["prefix_cache_hit_rate"] = ["Must be a fraction from 0 up to (not including) 1."]
    for name, value in (("ttft_slo_ms", ttft_slo_ms), ("tpot_slo_ms", tpot_slo_ms)):
        if value is not None and (not is_number(value) or not 0 < value <= MAX_SLO_MS):
            errors[name] = [f"Must be a positive number of milliseconds, at most {MAX_SLO_MS:,g}."]
    if batch is not None:
        message = int_error(batch, 1, MAX_BATCH, "of sequences")
        if message:
            errors["batch"] = [message]
    if errors:
        raise EngineInputError(errors)
    price = None if usd_per_gpu_hour is None else parse_usd(usd_per_gpu_hour)
    context = context_tokens if context_tokens is not None else prompt_tokens + output_tokens
    mean_context = prompt_tokens + output_tokens // 2
    check_step(1, context, kv_cache_dtype, options)
    check_layout(model, layout)
    formats = {"weight_format": weight_format, "include_scale_overhead": include_scale_overhead}
    sized = size(
        model,
        accelerator,
        layout=layout,
        context_tokens=context,
        kv_cache_dtype=kv_cache_dtype,
        gpu_memory_utilization=gpu_memory_utilization,
        **formats,
        **engine.size_kwargs(),
    )
    pm = prefill_model(model, accelerator, layout, kv_cache_dtype, options, weight_format, include_scale_overhead)
    dm = pm.dm
    cached = min(prompt_tokens - 1, int(prompt_tokens * hit))
    pre = pm.parts(prompt_tokens, cached)
    memory_limit = sized.max_concurrent_sequences_per_replica
    tpot_slo = None if tpot_slo_ms is None else tpot_slo_ms / 1e3
    ttft_slo = None if ttft_slo_ms is None else ttft_slo_ms / 1e3
    slo_limit = None
    if tpot_slo is not None or ttft_slo is not None:
        slo_limit = _slo_limit(dm, pre, memory_limit, mean_context, output_tokens, tpot_slo, ttft_slo)
    limit = memory_limit if slo_limit is None else min(memory_limit, slo_limit)
    b = batch if batch is not None else max(1, limit)
    check_step(b, mean_context, kv_cache_dtype, options)
    step = step_of(dm, b, mean_context)
    tpot, ttft, queue, share = aggregated_latency(step.time_s, b, output_tokens, pre.time_s, pre.busy_s, pre.chunks)
    parts = aggregated_ttft_parts(step.time_s, queue, pre.time_s, pre.chunks)
    # One prompt alone: with dp > 1 the other ranks are idle, so the experts see one chunk's tokens.
    idle = pre.time_s if layout.dp == 1 else pm.parts(prompt_tokens, cached, ranks=1).time_s
    pre_est = prefill_of(pm, prompt_tokens, cached, pre)
    gpus = layout.gpus
    per_replica = b / tpot
    usd_hour = tok_usd = usd_mtok = None
    if price is not None:
        usd_hour = float(price) * gpus
        tok_usd = per_replica * SECONDS_PER_HOUR / usd_hour if usd_hour else None
        usd_mtok = usd_hour / (per_replica * SECONDS_PER_HOUR) * TOKENS_PER_MTOK
    admission = "generic profile" if engine == GENERIC else f"the {engine.engine} profile's own limits"
    notes = (
        f"Aggregated serving on one replica of {gpus} GPU(s) at {b} sequences: TPOT = decode step / (1 - prefill "
        "share); TTFT = M/M/1 queueing on prefill work + prefill + one decode step per prefill chunk.",
        f"TTFT ({TTFT_DEFINITION.code}) is the mean at the arrival rate {b} sequences imply: queueing "
        f"{parts.queue_s * 1e3:.4g} ms + decode sharing {parts.decode_sharing_s * 1e3:.4g} ms ({pre.chunks} "
        f"chunk(s) x one decode step) + prefill {parts.prefill_s * 1e3:.4g} ms; no KV transfer (aggregated), "
        "network or tokenisation. Benchmarks report per-request percentiles: a p99 is longer.",
        f"Idle TTFT ({IDLE_TTFT_DEFINITION.code}) {idle * 1e3:.4g} ms: the same prompt prefilled alone on "
        + ("an idle replica." if layout.dp == 1 else f"one of the {layout.dp} data-parallel ranks of an idle replica."),
        f"TPOT at the mean context of a running sequence (prompt + output / 2 = {mean_context} tokens); memory "
        f"admission at {context} tokens: {memory_limit} sequence(s) per replica (size(), {admission}).",
        *((f"Prefix cache: {cached} of {prompt_tokens} prompt tokens reused (hit rate {hit:g}).",) if cached else ()),
        *(
            (f"Money: {price} USD per GPU-hour x {gpus} GPUs; per-token figures are float estimates.",)
            if price is not None
            else ()
        ),
        *step.assumptions,
        *pre_est.assumptions[:2],
    )
    return ThroughputResult(
        model=model.name,
        accelerator=accelerator.name,
        layout=layout,
        gpus=gpus,
        kv_cache_dtype=kv_cache_dtype,
        prompt_tokens=prompt_tokens,
        output_tokens=output_tokens,
        context_tokens=context,
        prefix_cache_hit_rate=float(hit),
        batch=b,
        tpot_s=tpot,
        ttft_s=ttft,
        queue_s=queue,
        prefill_share=share,
        tokens_per_s_replica=per_replica,
        tokens_per_s_per_gpu=per_replica / gpus,
        tokens_per_s_per_user=1 / tpot,
        memory_limit=memory_limit,
        slo_limit=slo_limit,
        concurrency_limit=limit,
        fits=b <= memory_limit,
        meets_tpot=None if tpot_slo is None else tpot <= tpot_slo,
        meets_ttft=None if ttft_slo is None else ttft <= ttft_slo,
        usd_per_gpu_hour=price,
        usd_per_hour=usd_hour,
        tokens_per_usd=tok_usd,
        usd_per_mtok=usd_mtok,
        decode=step,
        prefill=pre_est,
        ttft_parts=parts,
        idle_ttft_s=idle,
        assumptions=notes,
        engine=engine,
    )
