"""Answers about workloads kept current by the workers: each workload's rent-vs-API breakeven at its
declared and observed volume (``WorkloadBreakeven``), and the review of each current decision against
today's inputs (``DecisionReview``).

``refresh_breakevens`` compares, per workload, with the breakeven service (``planner.breakeven.compare``):
the workload's deployment (the first enabled one serving it, by slug), the GPU quote in force today for
the deployment's SKU, the cheapest current API price of the deployment's model for the workload's
declared volume (current: per provider and model name, the latest quoted on or before today, as the
price book marks it, ``fleet.prices.api_price_rows``), and the deployment's capacity (with its live
speed correction). Once at the declared volume (requests/day x mean tokens x 30 days) and once at the
volume the polls observed over the last 30 days (``observed_volumes``: the engine's
``observed_volume`` over the daily token counters the poller keeps for the workload's deployments).

``review_decisions`` recomputes each current decision's comparison from its frozen request on today's
inputs: ``on`` dropped; a picked GPU quote dropped (today's price in force: the deployment's cluster's
provider, ``planner.engine.price_in_force``); the recorded API price replaced by today's cheapest
current API price of the same model for the workload (``today_request``: a new, cheaper price from any
provider counts); with a deployment, the GPUs, SKU and model it filled in are left for today's
deployment to fill. The decision still holds when the cheaper option is unchanged and the observed
volume (when the polls saw one) is on the same side of the new breakeven; the review names the prices
that moved ("API output price 15.00 -> 2.50 USD/M tokens (acme llama-70b, 2026-12-01)").

Both are batched (the workloads or decisions of a batch in one query, plus a fixed few, and one
transaction per batch), idempotent, and keep a stale mark made after a batch started (a newer change's
recomputation is on its way). The Celery task ``planner.refresh_answers`` calls them; ``mark_stale`` is
called by ``planner.snapshots.request_refresh`` in the transaction of the change.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, fields, replace
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, get_args, get_type_hints

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from fleet.errors import FIELD_ERRORS, InputError
from fleet.models import ApiPrice, DailyPollCount, Deployment, Workload
from fleet.models.polls import left_out_text
from fleet.poll_rollups import left_out_totals
from planner.breakeven import BreakevenRequest, Preloaded, compare
from planner.engine import (
    DEFAULT_DAYS_PER_MONTH,
    SECONDS_PER_DAY,
    RateSample,
    blended_input_usd_per_mtok,
    observed_volume,
)
from planner.models import Decision, DecisionReview, WorkloadBreakeven
from planner.models.breakevens import favoured

log = logging.getLogger(__name__)

#: How far back the polls are read for the observed volume (days).
OBSERVED_DAYS = 30
#: The month rent vs API prices (days), the declared volume's month too: the seeds' 30-day month.
MONTH_DAYS = DEFAULT_DAYS_PER_MONTH


def _chunks(ids: Sequence[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(ids), size):
        yield list(ids[start : start + size])


def _ids(ids: Iterable[int] | None, everything: QuerySet) -> list[int]:
    return sorted(set(ids)) if ids is not None else list(everything.order_by("pk").values_list("pk", flat=True))


# --- observed volume --------------------------------------------------------------------------------


def observed_volumes(deployment_ids: Sequence[int], now: datetime) -> dict[int, dict[str, Any]]:
    """Per deployment id, the tokens its trusted polls observed over the ``OBSERVED_DAYS`` days up to
    ``now`` (today included; ``ObservedVolume.to_dict()``), from the daily counters the poller keeps
    (``DailyPollCount``: each trusted poll's rate x the interval it covers, summed per day, with the
    seconds covered): one query for all of them, whatever the poll rate (a week of raw polls of 200
    deployments polled every 15 s is 8 million rows; docs/benchmarks.md, "Stored answers"), and one for
    the untrusted polls left out (``fleet.models.polls.poll_distrust``), which each deployment's
    ``left_out_polls`` (per reason) and ``assumptions`` name."""
    first = (now - timedelta(days=OBSERVED_DAYS - 1)).date()
    samples: dict[int, list[RateSample]] = {d: [] for d in deployment_ids}
    rows = DailyPollCount.objects.filter(deployment_id__in=list(deployment_ids), day__gte=first, day__lte=now.date())
    for deployment_id, out_tokens, out_s, in_tokens, in_s in rows.values_list(
        "deployment_id", "output_tokens", "output_seconds", "prompt_tokens", "prompt_seconds"
    ):
        if out_s > 0:
            samples[deployment_id].append(RateSample(out_s, out_tokens / out_s, None))
        if in_s > 0:
            samples[deployment_id].append(RateSample(in_s, None, in_tokens / in_s))
    left_out = left_out_totals(first, now.date() + timedelta(days=1), list(deployment_ids))
    window_s = OBSERVED_DAYS * SECONDS_PER_DAY
    month_s = MONTH_DAYS * SECONDS_PER_DAY
    volumes = {}
    for d, found in samples.items():
        volume = observed_volume(found, window_s=window_s, month_s=month_s).to_dict()
        counts = left_out.get(d, {})
        volume["left_out_polls"] = dict(counts)
        if counts:
            volume["assumptions"].append(f"{left_out_text(counts)}: not in the observed volume.")
        volumes[d] = volume
    return volumes


def _workload_observed(deployments: list[Deployment], volumes: dict[int, dict[str, Any]]) -> dict[str, Any] | None:
    """A workload's observed monthly volume: the sum over the deployments serving it of each one's month at
    its observed rate (None when none of them has an observed output rate)."""
    seen = [(d, volumes[d.pk]) for d in deployments if volumes.get(d.pk, {}).get("monthly_output_tokens") is not None]
    if not seen:
        return None
    inputs = [v["monthly_input_tokens"] for _, v in seen]
    return {
        "monthly_output_tokens": sum(v["monthly_output_tokens"] for _, v in seen),
        # Unknown (None) when a deployment's prompt rate was never observed: 0 would understate the API's bill.
        "monthly_input_tokens": None if any(i is None for i in inputs) else sum(inputs),
        "deployments": {d.slug: v for d, v in seen},
        "assumptions": [a for d, v in seen for a in (f"{d.slug}: {x}" for x in v["assumptions"])],
    }


def _left_out_notes(deployments: list[Deployment], volumes: dict[int, dict[str, Any]]) -> list[str]:
    """What the observed volume left out, per deployment serving the workload (untrusted polls)."""
    notes = []
    for d in deployments:
        counts = volumes.get(d.pk, {}).get("left_out_polls")
        if counts:
            notes.append(f"{d.slug}: {left_out_text(counts)}: not in the observed volume.")
    return notes


def observed_request(request: BreakevenRequest, observed: dict[str, Any], declared: dict[str, Any]) -> BreakevenRequest:
    """``request`` at the observed monthly volume. Without an observed prompt rate (hours rolled up before
    the rollups kept it) the prompt tokens keep the declared comparison's (``declared``: its snapshot)
    prompt:output ratio, and ``observed["assumptions"]`` says so."""
    output = observed["monthly_output_tokens"]
    prompt = observed["monthly_input_tokens"]
    if prompt is None:
        declared_output = declared["monthly_output_tokens"] or 0
        ratio = declared["monthly_input_tokens"] / declared_output if declared_output else 0
        prompt = round(output * ratio)
        note = f"No prompt rate was observed: the observed prompt volume keeps the declared ratio ({ratio:,.2f}:1)."
        if note not in observed["assumptions"]:
            observed["assumptions"].append(note)
    return replace(request, monthly_output_tokens=output, monthly_input_tokens=prompt)


# --- breakevens -------------------------------------------------------------------------------------


def current_api_prices(model_ids: Iterable[int], on: date) -> dict[int, list[ApiPrice]]:
    """Per model id, its current API prices on ``on``: per provider and model name, the latest quoted on
    or before ``on`` (then the larger id), as the price book marks them. One query."""
    latest: dict[tuple[int, str, str], ApiPrice] = {}
    for p in ApiPrice.objects.filter(model_id__in=set(model_ids), quoted_on__lte=on).order_by("quoted_on", "pk"):
        latest[(p.model_id, p.provider, p.model_name)] = p
    out: dict[int, list[ApiPrice]] = {}
    for p in latest.values():
        out.setdefault(p.model_id, []).append(p)
    return out


def cheapest_price(prices: list[ApiPrice], workload: Workload) -> ApiPrice:
    """The price with the lowest monthly bill for ``workload``'s declared volume: (input tokens x the input
    price blended at its cache hit rate + output tokens x the output price) / 1e6 USD (a tie: the slug first)."""

    def bill(p: ApiPrice) -> tuple[Decimal, str]:
        blended = blended_input_usd_per_mtok(
            workload.prefix_cache_hit_rate, p.input_cache_hit_usd_per_mtok, p.input_cache_miss_usd_per_mtok
        )
        usd = (workload.monthly_input_tokens * blended + workload.monthly_output_tokens * p.output_usd_per_mtok) / 10**6
        return usd, p.slug

    return min(prices, key=bill)


@dataclass
class Computed:
    """One workload's recomputation: figures and inputs, an unavailable reason, or an error."""

    workload_id: int
    figures: dict[str, Any]
    inputs: dict[str, Any]
    unavailable: str = ""
    error: str | None = None
    declared: int | None = None
    observed: int | None = None


def _summary(figures: dict[str, Any]) -> dict[str, Any]:
    return {
        "cheaper": figures["cheaper"],
        "monthly_rent_usd": figures["monthly_rent_usd"],
        "monthly_api_usd": figures["monthly_api_usd"],
        "breakeven_output_tokens_per_month": breakeven_volume(figures),
    }


def breakeven_volume(figures: dict[str, Any]) -> int:
    """Output tokens a month at which renting and the API cost the same, for the comparison's input mix
    when it has one (as the rent-vs-API chart draws it)."""
    return figures.get("breakeven_output_tokens_per_month_mix") or figures["breakeven_output_tokens_per_month"]


def _compute_breakeven(
    workload: Workload,
    deployments: list[Deployment],
    prices: dict[int, list[ApiPrice]],
    volumes: dict[int, dict[str, Any]],
    preloaded: Preloaded | None = None,
) -> Computed:
    declared = workload.monthly_output_tokens
    if not deployments:
        reason = f"No enabled deployment serves {workload.name}: register one with this workload to compare."
        return Computed(workload.pk, {}, {}, unavailable=reason, declared=declared)
    deployment = deployments[0]
    candidates = prices.get(deployment.model_id, [])
    inputs: dict[str, Any] = {
        "deployment": deployment.slug,
        "deployment_id": deployment.pk,
        "model": deployment.model.slug,
        "workload_updated": workload.updated.isoformat(),
        "deployment_updated": deployment.updated.isoformat(),
    }
    if not candidates:
        reason = f"No current API price is linked to {deployment.model.name} (the model {deployment.slug} serves)."
        return Computed(workload.pk, {}, inputs, unavailable=reason, declared=declared)
    price = cheapest_price(candidates, workload)
    inputs.update(api_price=price.slug, api_price_id=price.pk, api_prices_considered=sorted(p.slug for p in candidates))
    request = BreakevenRequest(deployment=deployment.slug, workload=workload.slug, api_price=price.slug)
    assumptions = []
    if len(deployments) > 1:
        others = ", ".join(d.slug for d in deployments[1:])
        assumptions.append(
            f"Compared on {deployment.slug}, the first by slug of the deployments serving it ({others})."
        )
    if len(candidates) > 1:
        assumptions.append(
            f"The cheapest of {len(candidates)} current API prices for the declared volume: {price.slug}."
        )
    try:
        declared_result = compare(request, preloaded)
        observed = _workload_observed(deployments, volumes)
        observed_figures = None
        if observed is not None:
            again = observed_request(request, observed, declared_result.snapshot)
            observed_figures = compare(again, preloaded).figures
    except FIELD_ERRORS as exc:
        return Computed(workload.pk, {}, inputs, error=str(exc)[:2000], declared=declared)
    inputs["quotes"] = [q["id"] for q in declared_result.snapshot["quotes_used"]]
    if observed is None:
        assumptions.append(f"No polls of its deployments observed a volume in the last {OBSERVED_DAYS} days.")
        assumptions.extend(_left_out_notes(deployments, volumes))
    figures = {
        "declared": declared_result.figures,
        "observed": observed_figures,
        "declared_side": _summary(declared_result.figures) | {"monthly_output_tokens": declared},
        "observed_side": None
        if observed_figures is None
        else _summary(observed_figures) | {"monthly_output_tokens": observed["monthly_output_tokens"]},
        "observed_volume": observed,
        "deployment": deployment.slug,
        "other_deployments": [d.slug for d in deployments[1:]],
        "api_price": price.slug,
        "assumptions": assumptions,
    }
    return Computed(
        workload.pk,
        figures,
        inputs,
        declared=declared,
        observed=observed["monthly_output_tokens"] if observed else None,
    )


def _serving(workload_ids: list[int]) -> dict[int, list[Deployment]]:
    """The enabled deployments serving each workload, by slug (one query)."""
    serving: dict[int, list[Deployment]] = {w: [] for w in workload_ids}
    rows = (
        Deployment.objects.filter(workload_id__in=workload_ids, enabled=True)
        .select_related("model")
        .defer("api_key_encrypted", "model__source", "model__assumptions")
        .order_by("slug")
    )
    for d in rows:
        serving[d.workload_id].append(d)
    return serving


def refresh_breakevens(
    workload_ids: Iterable[int] | None = None, *, now: datetime | None = None, batch: int | None = None
) -> dict[str, int]:
    """Recompute and store the breakevens of ``workload_ids`` (None: every workload), in batches of
    ``batch`` (default ``SNAPSHOT_BATCH``): per batch one query for the workloads, one for the deployments
    serving them, one for the API prices, two for the polls (plus the breakeven service's own per
    workload) and one transaction. Returns ``computed``, ``unavailable``, ``failed`` and ``batches``."""
    ids = _ids(workload_ids, Workload.objects)
    summary = {"computed": 0, "unavailable": 0, "failed": 0, "batches": 0}
    for chunk in _chunks(ids, batch or settings.SNAPSHOT_BATCH):
        started = timezone.now()
        at = now or started
        workloads = list(Workload.objects.filter(pk__in=chunk).order_by("pk"))
        if not workloads:
            continue
        serving = _serving([w.pk for w in workloads])
        chosen = [ds[0] for ds in serving.values() if ds]
        prices = current_api_prices({d.model_id for d in chosen}, at.date())
        volumes = observed_volumes([d.pk for ds in serving.values() for d in ds], at)
        preloaded = Preloaded.load(
            deployments=[d.slug for d in chosen],
            api_prices=[p.slug for ps in prices.values() for p in ps],
            workloads=[w.slug for w in workloads],
        )
        computed = [_compute_breakeven(w, serving[w.pk], prices, volumes, preloaded) for w in workloads]
        _store_breakevens(computed, started, at)
        summary["batches"] += 1
        for c in computed:
            key = "failed" if c.error is not None else "unavailable" if c.unavailable else "computed"
            summary[key] += 1
    return summary


def _fill_breakeven(row: WorkloadBreakeven, c: Computed, now: datetime) -> None:
    if c.error is None:
        row.figures, row.inputs, row.unavailable, row.computed_at = c.figures, c.inputs, c.unavailable, now
        row.declared_monthly_output_tokens, row.observed_monthly_output_tokens = c.declared, c.observed
        row.error, row.failed_at = "", None
    else:
        row.error, row.failed_at = c.error, now


#: The columns a breakeven's recomputation writes (beside its stale mark).
BREAKEVEN_FIELDS = [
    "figures", "inputs", "unavailable", "computed_at", "declared_monthly_output_tokens",
    "observed_monthly_output_tokens", "error", "failed_at",
]  # fmt: skip


def _store_breakevens(computed: list[Computed], started: datetime, now: datetime) -> None:
    """One batch in one transaction (``StoredAnswer.store``); a stale mark made after ``started`` is kept, a
    failure keeps the previous figures (with the error)."""
    WorkloadBreakeven.store(computed, _fill_breakeven, BREAKEVEN_FIELDS, started=started, now=now)


def mark_stale(workload_ids: Sequence[int], reason: str, now: datetime) -> None:
    """Mark the stored breakevens of ``workload_ids`` and the reviews of their current decisions stale
    (``reason``: what changed, at ``now``). Two UPDATEs; call it in the transaction of the change."""
    ids = sorted(set(workload_ids))
    if not ids:
        return
    WorkloadBreakeven.mark_stale(WorkloadBreakeven.objects.filter(workload_id__in=ids), reason, now)
    current = DecisionReview.objects.filter(decision__workload_id__in=ids, decision__superseded_by__isnull=True)
    DecisionReview.mark_stale(current, reason, now)


# --- decision reviews --------------------------------------------------------------------------------

_HINTS = get_type_hints(BreakevenRequest)
#: What a deployment fills in (``planner.breakeven.resolve``) and a review leaves to today's deployment.
FILLED_BY_DEPLOYMENT = ("gpus", "sku", "model")


def _typed(name: str, value: Any) -> Any:
    kinds = get_args(_HINTS[name]) or (_HINTS[name],)
    if value is None:
        return None
    if Decimal in kinds:
        return Decimal(str(value))
    if date in kinds:
        return date.fromisoformat(value) if isinstance(value, str) else value
    if int in kinds:
        return int(value)
    if float in kinds:
        return float(value)
    return value


def request_of(decision: Decision) -> BreakevenRequest:
    """The comparison a decision was made on, as a ``BreakevenRequest`` for today: its frozen request
    (``inputs["request"]``) typed back from JSON, without ``on`` (today's prices) and, when it names a
    deployment, without the GPUs, SKU and model the deployment filled in (today's deployment fills them).
    Raises InputError when the decision froze no request."""
    frozen = dict((decision.inputs or {}).get("request") or {})
    if not frozen:
        raise InputError.single("decision", f"Decision {decision.pk} froze no comparison request.")
    frozen.pop("on", None)
    if frozen.get("deployment"):
        for name in FILLED_BY_DEPLOYMENT:
            frozen.pop(name, None)
    known = {f.name for f in fields(BreakevenRequest)}
    return BreakevenRequest(**{k: _typed(k, v) for k, v in frozen.items() if k in known and v is not None})


def today_request(
    request: BreakevenRequest, workload: Workload, recorded: ApiPrice | None, current: dict[int, list[ApiPrice]]
) -> BreakevenRequest:
    """``request`` (a decision's frozen comparison) on today's inputs: no picked GPU quote (today's price in
    force), and the recorded API price replaced by today's cheapest current price of the same model for
    ``workload`` (``current``: ``current_api_prices``); a recorded price naming no model keeps its own row."""
    request = replace(request, gpu_quote=None)
    if recorded is not None and recorded.model_id is not None and current.get(recorded.model_id):
        request = replace(request, api_price=cheapest_price(current[recorded.model_id], workload).slug)
    return request


#: The recorded API price's fields a review compares with today's, and their names in sentences.
API_PRICE_NAMES = {
    "input_cache_hit_usd_per_mtok": "input (cache hit)",
    "input_cache_miss_usd_per_mtok": "input (cache miss)",
    "output_usd_per_mtok": "output",
}


def price_moves(was_inputs: dict[str, Any], now_snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    """The prices that moved between a decision's frozen inputs and today's comparison, each with a
    sentence: the GPU-hour rate (with whose quote it is today) and each API token price (with the
    provider, model name and date of today's price)."""
    out: list[dict[str, Any]] = []
    was_quotes, now_quotes = was_inputs.get("quotes_used") or [], now_snapshot.get("quotes_used") or []
    was_rate = Decimal(str(was_quotes[0]["usd_per_gpu_hour"] if was_quotes else was_inputs.get("usd_per_gpu_hour")))
    now_rate = Decimal(str(now_snapshot["usd_per_gpu_hour"]))
    if was_rate != now_rate:
        whose = "inline"
        if now_quotes:
            q = now_quotes[0]
            kind = {"list": "public list price", "assumption": "assumption"}.get(q.get("basis"), "quote")
            whose = f"{q.get('provider') or 'no provider'} {kind} of {q['quoted_on']}"
        text = f"GPU price {_money(was_rate)} -> {_money(now_rate)} USD/GPU-hour ({whose})"
        out.append({"name": "usd_per_gpu_hour", "was": str(was_rate), "now": str(now_rate), "text": text})
    was_api, now_api = was_inputs.get("api_price") or {}, now_snapshot.get("api_price") or {}
    for name, label in API_PRICE_NAMES.items():
        if name not in was_api or name not in now_api:
            continue
        before, after = Decimal(str(was_api[name])), Decimal(str(now_api[name]))
        if before != after:
            where = f"{now_api.get('provider')} {now_api.get('model_name') or ''}".strip()
            on = now_api.get("quoted_on")
            text = f"API {label} price {_money(before)} -> {_money(after)} USD/M tokens ({where}, {on})"
            out.append({"name": f"api_{name}", "was": str(before), "now": str(after), "text": text})
    return out


def _money(value: Decimal) -> str:
    """A price for sentences: 2 decimals at least, more when it has them (2.50, 0.275)."""
    cents = value.quantize(Decimal("0.01"))
    return f"{cents:,.2f}" if cents == value else f"{value.normalize():f}"


def _tokens(value: float) -> str:
    """A monthly token volume in words: 1.2 B, 340.0 M, 12,000."""
    if value >= 1e9:
        return f"{value / 1e9:,.1f} B"
    if value >= 1e6:
        return f"{value / 1e6:,.1f} M"
    return f"{value:,.0f}"


def _usd(value: Any) -> str:
    return f"{Decimal(str(value)):,.2f}"


_SIDES = {"rent": "renting", "api": "the API", "buy": "buying", None: "neither (no recommendation)"}
_NOW_CHEAPER = {
    "rent": "Renting is now cheaper",
    "api": "API is now cheaper",
    "buy": "Buying is now cheapest",
    None: "No recommendation any more",
}


def _buy_moved(was: dict[str, Any], now: dict[str, Any]) -> str:
    if not (was.get("buy") or now.get("buy")):
        return ""
    before = (was.get("buy") or {}).get("monthly_usd")
    after = (now.get("buy") or {}).get("monthly_usd")
    return f", buying {_usd(before) if before else 'not costed'} -> {_usd(after) if after else 'not costed'} USD/month"


@dataclass
class Reviewed:
    decision_id: int
    still_holds: bool | None
    reason: str
    moved: list[dict[str, Any]]
    figures: dict[str, Any]
    error: str = ""


def _moved(was: dict[str, Any], now: dict[str, Any], observed: int | None, declared: int | None) -> list[dict]:
    out = []
    for name in ("cheaper", "cheapest", "monthly_rent_usd", "monthly_api_usd", "breakeven_output_tokens_per_month"):
        before = breakeven_volume(was) if name.startswith("breakeven") and was else was.get(name)
        after = breakeven_volume(now) if name.startswith("breakeven") else now.get(name)
        if before != after:
            out.append({"name": name, "was": before, "now": after})
    if observed is not None and observed != declared:
        out.append({"name": "monthly_output_tokens", "was": declared, "now": observed, "observed": True})
    return out


def review_one(
    decision: Decision,
    observed: dict[str, Any] | None,
    preloaded: Preloaded | None = None,
    left_out: list[str] | None = None,
    request: BreakevenRequest | None = None,
) -> Reviewed:
    """Recompute ``decision``'s comparison on today's inputs and say whether it still holds (module
    docstring); ``preloaded``: the records its batch read (``planner.breakeven.Preloaded``); ``left_out``:
    what the observed volume left out (untrusted polls, ``_left_out_notes``), kept in the figures."""
    was = decision.figures or {}
    try:
        if request is None:  # alone: today's inputs read here (a batch passes its own, ``today_request``)
            request = request_of(decision)
            recorded = ApiPrice.objects.filter(slug=request.api_price).first() if request.api_price else None
            current = (
                current_api_prices([recorded.model_id], timezone.now().date()) if recorded and recorded.model_id else {}
            )
            request = today_request(request, decision.workload, recorded, current)
        result = compare(request, preloaded)
        observed_figures = None
        if observed is not None:
            observed_figures = compare(observed_request(request, observed, result.snapshot), preloaded).figures
    except FIELD_ERRORS as exc:
        reason = f"The comparison cannot be recomputed on today's inputs: {exc}"
        return Reviewed(decision.pk, None, reason, [], {}, error=str(exc)[:2000])
    now = result.figures
    declared = (decision.inputs or {}).get("monthly_output_tokens")
    observed_volume_now = observed["monthly_output_tokens"] if observed else None
    prices_moved = price_moves(decision.inputs or {}, result.snapshot)
    moved = prices_moved + _moved(was, now, observed_volume_now, declared)
    because = (" Prices moved: " + "; ".join(m["text"] for m in prices_moved) + ".") if prices_moved else ""
    figures = {**now, "observed": observed_figures, "observed_volume": observed, "observed_left_out": left_out or []}
    concluded = favoured(was)
    if favoured(now) != concluded:
        lead = _NOW_CHEAPER[favoured(now)]
        reason = (
            f"{lead}: rent {_usd(was.get('monthly_rent_usd', 0))} -> {_usd(now['monthly_rent_usd'])} USD/month, "
            f"API {_usd(was.get('monthly_api_usd', 0))} -> {_usd(now['monthly_api_usd'])} USD/month"
            + _buy_moved(was, now)
            + "."
            + because
        )
        return Reviewed(decision.pk, False, reason, moved, figures)
    if observed_figures is not None and favoured(observed_figures) != concluded:
        reason = (
            f"The observed volume {_tokens(observed_volume_now)} output tokens/month crossed the breakeven "
            f"{_tokens(breakeven_volume(observed_figures))}: at it {_SIDES[favoured(observed_figures)]} is cheaper, "
            f"not {_SIDES[concluded]}." + because
        )
        return Reviewed(decision.pk, False, reason, moved, figures)
    reason = (
        f"Still holds: {_SIDES[concluded]} is cheaper (rent {_usd(now['monthly_rent_usd'])} against API "
        f"{_usd(now['monthly_api_usd'])} USD/month"
        + (f", buying {_usd(now['buy']['monthly_usd'])}" if now.get("buy") else "")
        + (f"; observed {_tokens(observed_volume_now)} output tokens/month" if observed_volume_now is not None else "")
        + ")."
        + because
    )
    return Reviewed(decision.pk, True, reason, moved, figures)


def current_decisions() -> QuerySet[Decision]:
    """Decisions not superseded by a later one."""
    return Decision.objects.filter(superseded_by__isnull=True)


def review_decisions(
    workload_ids: Iterable[int] | None = None, *, now: datetime | None = None, batch: int | None = None
) -> dict[str, int]:
    """Review the current decisions of ``workload_ids`` (None: every workload) against today's inputs and
    store each ``DecisionReview``, in batches (one query for the decisions, one for the deployments
    serving their workloads, two for the polls, plus the breakeven service's own; one transaction each).
    Returns ``holds``, ``flipped``, ``unchecked`` (could not recompute) and ``batches``."""
    decisions = current_decisions()
    if workload_ids is not None:
        decisions = decisions.filter(workload_id__in=sorted(set(workload_ids)))
    ids = list(decisions.order_by("pk").values_list("pk", flat=True))
    summary = {"holds": 0, "flipped": 0, "unchecked": 0, "batches": 0}
    for chunk in _chunks(ids, batch or settings.SNAPSHOT_BATCH):
        started = timezone.now()
        at = now or started
        rows = list(Decision.objects.filter(pk__in=chunk).select_related("workload").order_by("pk"))
        serving = _serving(sorted({d.workload_id for d in rows}))
        volumes = observed_volumes([d.pk for ds in serving.values() for d in ds], at)
        frozen = {}
        for d in rows:
            try:
                frozen[d.pk] = request_of(d)
            except FIELD_ERRORS:
                continue  # review_one says why
        recorded = {
            p.slug: p for p in ApiPrice.objects.filter(slug__in={r.api_price for r in frozen.values() if r.api_price})
        }
        current = current_api_prices({p.model_id for p in recorded.values() if p.model_id}, at.date())
        requests = {
            d.pk: today_request(frozen[d.pk], d.workload, recorded.get(frozen[d.pk].api_price), current)
            for d in rows
            if d.pk in frozen
        }
        given = list(requests.values())
        preloaded = Preloaded.load(
            deployments=[r.deployment for r in given if r.deployment],
            api_prices=[r.api_price for r in given if r.api_price],
            workloads=[r.workload for r in given if r.workload],
            skus=[r.sku for r in given if r.sku],
            models=[r.model for r in given if r.model],
        )
        reviewed = [
            review_one(
                d,
                _workload_observed(serving[d.workload_id], volumes),
                preloaded,
                _left_out_notes(serving[d.workload_id], volumes),
                requests.get(d.pk),
            )
            for d in rows
        ]
        _store_reviews(reviewed, started, at)
        summary["batches"] += 1
        for r in reviewed:
            summary["holds" if r.still_holds else "unchecked" if r.still_holds is None else "flipped"] += 1
    return summary


def _fill_review(row: DecisionReview, r: Reviewed, now: datetime) -> None:
    row.checked_at, row.still_holds, row.reason = now, r.still_holds, r.reason
    row.moved, row.figures, row.error = r.moved, r.figures, r.error


def _store_reviews(reviewed: list[Reviewed], started: datetime, now: datetime) -> None:
    """One batch in one transaction (``StoredAnswer.store``)."""
    DecisionReview.store(
        reviewed, _fill_review, ["checked_at", "still_holds", "reason", "moved", "figures", "error"],
        started=started, now=now,
    )  # fmt: skip


def flipped_decisions() -> QuerySet[Decision]:
    """Current decisions whose latest review says they no longer hold (for the fleet page's banner),
    newest first, with their workload and review."""
    return current_decisions().filter(review__still_holds=False).select_related("workload", "review")


#: The tier a recomputed comparison favours.
TIER_OF = {"rent": Decision.Tier.RENT, "api": Decision.Tier.API, "buy": Decision.Tier.BUY}


def supersede_after_review(decision_id: int, *, user: Any = None, favours: str | None = None) -> Decision:
    """Record a new decision for a flipped decision's workload, with the tier its review's recomputed
    comparison favours, on the comparison rebuilt from its request (``planner.decisions.record_decision``).
    Raises InputError when the decision is superseded already, has no review saying it no longer holds,
    the review favours neither side, or (``favours`` given: what the person saw) favours another side now."""
    from planner.decisions import record_decision

    decision = Decision.objects.select_related("workload", "review", "superseded_by").filter(pk=decision_id).first()
    if decision is None:
        raise InputError.single("decision", f"No decision {decision_id}.")
    if not decision.is_current:
        raise InputError.single("decision", "This decision is superseded already.")
    review = getattr(decision, "review", None)
    if review is None or review.still_holds is not False:
        raise InputError.single("decision", "Its review does not say it no longer holds: nothing to supersede.")
    tier = TIER_OF.get(review.favours)
    if tier is None:
        raise InputError.single("decision", "The recomputed comparison favours none of renting, buying or the API.")
    if favours is not None and favours != review.favours:
        raise InputError.single("favours", f"The review changed since the page was shown: it favours {review.favours}.")
    return record_decision(
        workload=decision.workload.slug,
        tier=int(tier),
        comparison=request_of(decision),
        note=f"Superseded after review: {review.reason}"[:5000],
        user=user,
    )
