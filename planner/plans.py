"""Plan service: check a search request (``PlanRequest``), price the SKUs with the quotes in
force, run the search with progress and cancellation, and store the result in one transaction.

``create_plan`` is called by the API, the plans page and ``manage.py plan``; ``execute_plan`` by
the Celery task and the command. Errors are ``fleet.errors.InputError`` with field names.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError, close_old_connections, connection, transaction
from django.db.models import F, Q, QuerySet, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from fleet import outbox
from fleet.errors import InputError
from fleet.models import HardwareSku, ModelSpec, OutboxMessage, Workload
from fleet.models.base import find_by_slug
from fleet.prices import PriceBook
from planner.engine import (
    BEST,
    DEFAULT_PRICING_KIND,
    MODES,
    REJECTIONS,
    EngineInputError,
    SearchCancelled,
    SkuOffer,
    outcome_label,
    price_in_force,
    search,
)
from planner.engine import Workload as SearchWorkload
from planner.models import Plan
from planner.models.plans import PRICE_BASES

log = logging.getLogger(__name__)

#: Store progress in the database at most this often (percentage points).
PROGRESS_STEP = 5
MAX_PROGRESS_LOG = 40


#: KV cache dtypes and serving modes a plan may search.
PLAN_KV_CACHE_DTYPES: tuple[str, ...] = ("bf16", "fp8")
#: Nodes per SKU a plan may search up to (the search's cost grows with it; docs/layouts.md).
MAX_NODES_LIMIT = 32


@dataclass(frozen=True)
class PlanRequest:
    """A layout search to run: records by slug; ``skus`` empty means every SKU with an on-demand
    quote in force on ``on`` (default: today)."""

    model: str
    workload: str
    skus: tuple[str, ...] = ()
    max_nodes: int = 8
    kv_cache_dtypes: tuple[str, ...] = PLAN_KV_CACHE_DTYPES
    modes: tuple[str, ...] = MODES
    on: date | None = None
    price_basis: str = "fleet"

    def errors(self) -> dict[str, list[str]]:
        """Problems with the values themselves (records are checked by ``create_plan``)."""
        errors: dict[str, list[str]] = {}
        if self.price_basis not in PRICE_BASES:
            errors["price_basis"] = [f"Unknown price basis {self.price_basis!r}; use {', '.join(PRICE_BASES)}."]
        if not isinstance(self.max_nodes, int) or not 1 <= self.max_nodes <= MAX_NODES_LIMIT:
            errors["max_nodes"] = [f"Give a whole number of nodes from 1 to {MAX_NODES_LIMIT}."]
        for name, allowed in (("kv_cache_dtypes", PLAN_KV_CACHE_DTYPES), ("modes", MODES)):
            values = getattr(self, name)
            if not values:
                errors[name] = [f"Pick at least one of {', '.join(allowed)}."]
            elif unknown := [v for v in values if v not in allowed]:
                errors[name] = [f"Unknown {', '.join(map(str, unknown))}; use {', '.join(allowed)}."]
        return errors


def price_offers(
    skus: list[HardwareSku], on: date, basis: str = "fleet"
) -> tuple[list[HardwareSku], dict[str, dict[str, Any]], list[str]]:
    """The on-demand quote in force for each SKU on ``on`` on the price ``basis`` (``PRICE_BASES``);
    SKUs without one are returned apart."""
    priced, prices, missing = [], {}, []
    book = PriceBook.load([s.pk for s in skus], until=on, kind=DEFAULT_PRICING_KIND)
    for sku in skus:
        if basis == "list":
            listed = [q for q in book.of_sku(sku.slug) if q.list_price]
            price = price_in_force(listed, on, sku=sku.slug, kind=DEFAULT_PRICING_KIND)
        else:
            price = book.for_sku(sku.slug, on, DEFAULT_PRICING_KIND)
        if price is None:
            missing.append(sku.slug)
            continue
        priced.append(sku)
        prices[sku.slug] = {**price.quote.to_dict(), "basis": price.basis}
    return priced, prices, missing


def create_plan(request: PlanRequest, user: Any) -> Plan:
    """Record a queued plan with its priced SKUs (InputError with field names when it cannot run);
    ``submit_plan`` records it with its task, which is how the API and the pages start one."""
    errors = request.errors()
    model = find_by_slug(ModelSpec.objects, request.model, "model", errors)
    workload = find_by_slug(Workload.objects, request.workload, "workload", errors)
    skus = list(HardwareSku.objects.filter(slug__in=request.skus)) if request.skus else list(HardwareSku.objects.all())
    if unknown := sorted(set(request.skus) - {s.slug for s in skus}):
        errors["skus"] = [f"No SKU {', '.join(unknown)}."]
    if errors:
        raise InputError(errors)
    on = request.on or timezone.now().date()
    priced, prices, missing = price_offers(skus, on, request.price_basis)
    kind = "public on-demand list price" if request.price_basis == "list" else "on-demand price"
    if request.skus and missing:
        raise InputError.single("skus", f"No {kind} in force on {on.isoformat()} for: {', '.join(missing)}.")
    if not priced:
        raise InputError.single("skus", f"No candidate SKU has a {kind} in force.")
    options = {
        "max_nodes": request.max_nodes,
        "kv_cache_dtypes": list(request.kv_cache_dtypes),
        "modes": list(request.modes),
        "on": on.isoformat(),
        "price_basis": request.price_basis,
        "prices": prices,
        "skipped_without_quote": missing,
    }
    plan = Plan.objects.create(
        model=model,
        workload=workload,
        options=options,
        requested_by=user if getattr(user, "is_authenticated", False) else None,
    )
    plan.skus.set(priced)
    return plan


RUN_PLAN_TASK = "planner.run_plan"


@dataclass(frozen=True)
class Submission:
    """A recorded plan and whether its task reached the broker (``sent``); when not, the outbox
    sweeper sends it once the broker is back (nothing is lost either way)."""

    plan: Plan
    sent: bool

    @property
    def dispatch(self) -> str:
        """``sent`` or ``broker_unreachable``."""
        return "sent" if self.sent else "broker_unreachable"

    @property
    def detail(self) -> str:
        if self.sent:
            return "Queued: a worker will run it."
        return "Queued, broker unreachable: the plan is stored and is sent to a worker when the broker is back."


def submit_plan(request: PlanRequest, user: Any) -> Submission:
    """Record a plan and its task in one transaction (the outbox), then publish the task. The plan
    is never lost: a broker that is down leaves the task in the outbox for ``fleet.send_outbox``."""
    with transaction.atomic():
        plan = create_plan(request, user)
        message = outbox.record(RUN_PLAN_TASK, args=[str(plan.pk)], task_id=str(plan.pk))
    return Submission(plan=plan, sent=outbox.send(message))


def _workload(w: Workload) -> SearchWorkload:
    return SearchWorkload(
        requests_per_day=w.requests_per_day,
        mean_prompt_tokens=w.mean_prompt_tokens,
        mean_output_tokens=w.mean_output_tokens,
        p95_context_tokens=w.p95_context_tokens,
        prefix_cache_hit_rate=w.prefix_cache_hit_rate,
        peak_concurrency=w.peak_concurrency,
        ttft_slo_ms=w.ttft_slo_ms,
        tpot_slo_ms=w.tpot_slo_ms,
    )


#: A plan "running" without a lease (started before leases existed) for longer than this lost its
#: worker (the task's hard time limit is 11 minutes).
STALE_AFTER = timedelta(minutes=15)
#: Runs a plan may start before it is failed instead of taken over again: a plan that kills its
#: worker each time (out of memory, say) must not take every worker down in turn.
MAX_ATTEMPTS = 3
#: Beats a run may miss before its plan is taken over (its process died: killed, out of memory).
SILENT_BEATS = 5
#: What a database that dropped the connection or is restarting raises: the run stops and its task's
#: retry takes the plan back (``RunInterrupted``), never a stored failure.
DATABASE_ERRORS = (OperationalError, InterfaceError)


def lease_length() -> timedelta:
    """How long a claim holds a plan without renewal (``FLEETCAP_PLAN_LEASE_S``, default 60 s)."""
    return timedelta(seconds=settings.PLAN_LEASE_S)


def silent_after() -> timedelta:
    """A run whose last beat is older than this died with its process (five beats of
    ``FLEETCAP_PLAN_HEARTBEAT_S``, default 1 s: 5 s)."""
    return timedelta(seconds=SILENT_BEATS * settings.PLAN_HEARTBEAT_S)


def _abandoned(now: datetime) -> Q:
    """Running plans whose run stopped: its heartbeat went silent (the process died), or it stopped
    renewing its lease (the search is stuck), or it predates leases and is long past its time limit."""
    return Q(status=Plan.Status.RUNNING) & (
        Q(lease_heartbeat__lt=now - silent_after())
        | Q(lease_expires__lt=now)
        | Q(lease_expires__isnull=True, started__lt=now - STALE_AFTER)
    )


def lease_owner() -> str:
    """This process as a lease records it: ``host pid N``."""
    return f"{socket.gethostname()} pid {os.getpid()}"[:200]


def claim(plan_id: str, token: str | None = None) -> str | None:
    """Move a queued plan, or a running one whose run stopped (heartbeat silent, lease expired), to
    running under a new lease: its token, or None when the plan finished, was cancelled, ran
    ``MAX_ATTEMPTS`` times, or a live run holds it (one conditional UPDATE: two deliveries never
    both win). ``token``: the lease of a run that a database error stopped (``RunInterrupted``),
    taken back at once under a fresh token without counting a run; that works once per token."""
    now = timezone.now()
    fresh = uuid.uuid4().hex
    lease = {"lease_expires": now + lease_length(), "lease_heartbeat": now, "lease_owner": lease_owner()}
    if token and Plan.objects.filter(pk=plan_id, lease_token=token, status=Plan.Status.RUNNING).update(
        lease_token=fresh, **lease
    ):
        return fresh
    claimable = Q(status=Plan.Status.QUEUED) | (_abandoned(now) & Q(cancel_requested=False))
    won = Plan.objects.filter(claimable, pk=plan_id, attempts__lt=MAX_ATTEMPTS).update(
        status=Plan.Status.RUNNING,
        started=Coalesce(F("started"), Value(now)),
        lease_token=fresh,
        attempts=F("attempts") + 1,
        **lease,
    )
    return fresh if won == 1 else None


class LeaseLost(Exception):
    """This run no longer holds the plan's lease (another run took the plan over)."""


class RunInterrupted(Exception):
    """A database error stopped this run; ``token`` (its lease) lets the retry take the plan back at
    once (``claim(plan_id, token)``) instead of waiting for the run to be found silent."""

    def __init__(self, plan_id: str, token: str):
        super().__init__(f"plan {plan_id}: the run was stopped by a database error")
        self.plan_id, self.token = plan_id, token


@contextlib.contextmanager
def heartbeat(plan_id: str, token: str) -> Iterator[None]:
    """Beat the run's lease (``lease_heartbeat``) every ``FLEETCAP_PLAN_HEARTBEAT_S`` from a thread
    with its own connection while the block runs, however long the search goes between progress
    reports: the beats stop only when the run ends or its process dies, which is how a dead run is
    told from a slow one in seconds. None inside a transaction (nobody else could see the claim)."""
    if transaction.get_connection().in_atomic_block:
        yield
        return
    stop = threading.Event()
    mine = Plan.objects.filter(pk=plan_id, lease_token=token, status=Plan.Status.RUNNING)

    def beat() -> None:
        try:
            while not stop.wait(settings.PLAN_HEARTBEAT_S):
                try:
                    close_old_connections()  # one connection for the run, replaced if it broke
                    if not mine.update(lease_heartbeat=timezone.now()):
                        return  # finished, or taken over: nothing of this run's to keep alive
                except DATABASE_ERRORS as exc:  # a blip: the next beat may work (the run decides)
                    log.warning("plan %s: heartbeat not recorded: %s", plan_id, type(exc).__name__)
        finally:
            connection.close()

    thread = threading.Thread(target=beat, name=f"plan-heartbeat-{plan_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=settings.PLAN_HEARTBEAT_S + 5)


def execute_plan(
    plan_id: str, on_progress: Callable[[int, int], None] | None = None, token: str | None = None
) -> Plan | None:
    """Run a queued plan to completion under a lease, beaten by a thread and renewed as the search
    reports progress (idempotent: a plan finished, cancelled or held by a live run is returned
    untouched; a run that lost its lease stops and writes nothing, so the outcome is written exactly
    once). None when no such plan exists (deleted after its task was sent). A database error raises
    ``RunInterrupted`` with the lease's token for the retry (``token`` here) to take the plan back."""
    token = claim(plan_id, token)
    if token is None:
        return Plan.objects.filter(pk=plan_id).first()
    try:
        with heartbeat(plan_id, token):
            _run(plan_id, token, on_progress)
    except DATABASE_ERRORS as exc:
        log.warning("plan %s: database error (%s); the run stops, its retry takes the plan back", plan_id, exc)
        raise RunInterrupted(plan_id, token) from exc
    return Plan.objects.get(pk=plan_id)


def _run(plan_id: str, token: str, on_progress: Callable[[int, int], None] | None) -> None:
    """The search under lease ``token``, its outcome written if the lease still holds."""
    mine = Plan.objects.filter(pk=plan_id, lease_token=token, status=Plan.Status.RUNNING)
    plan = Plan.objects.select_related("model", "workload").get(pk=plan_id)
    options = plan.options
    offers = [
        SkuOffer(sku.to_engine(), options["prices"][sku.slug]["usd_per_gpu_hour"], name=sku.slug)
        for sku in plan.skus.all()
    ]
    state: dict[str, Any] = {"stored": 0, "log": list(plan.progress_log or []), "renewed": time.monotonic()}
    renew_every = settings.PLAN_LEASE_S / 3

    def progress(done: int, total: int) -> bool:
        pct = min(99, int(done * 100 / total)) if total else 0
        if on_progress:
            on_progress(done, total)
        store = pct - state["stored"] >= PROGRESS_STEP
        if not store and time.monotonic() - state["renewed"] < renew_every:
            return True
        now = timezone.now()
        values: dict[str, Any] = {"lease_expires": now + lease_length(), "lease_heartbeat": now}
        if store:
            state["stored"] = pct
            state["log"] = [*state["log"], {"at": now.isoformat(), "progress": pct}][-MAX_PROGRESS_LOG:]
            values |= {"progress": pct, "candidates_evaluated": done, "progress_log": state["log"]}
        if not mine.update(**values):
            raise LeaseLost(plan_id)
        state["renewed"] = time.monotonic()
        return not Plan.objects.filter(pk=plan_id, cancel_requested=True).exists()

    try:
        result = search(
            plan.model.to_engine(),
            _workload(plan.workload),
            offers,
            max_nodes=options["max_nodes"],
            kv_cache_dtypes=options["kv_cache_dtypes"],
            modes=options["modes"],
            progress=progress,
        )
    except LeaseLost:
        log.warning("plan %s: lease lost to another run; this run stops and writes nothing", plan_id)
    except SearchCancelled:
        _finish(mine, Plan.Status.CANCELLED, state["log"], error="Cancelled on request.")
    except EngineInputError as exc:
        _finish(mine, Plan.Status.FAILED, state["log"], error=f"The search could not run: {exc}")
    except DATABASE_ERRORS:
        raise  # the database, not the search: never stored as the plan's failure
    except Exception as exc:  # stored for the person who asked; the traceback goes to the worker log
        log.exception("plan %s failed", plan_id)
        _finish(mine, Plan.Status.FAILED, state["log"], error=f"Unexpected error: {type(exc).__name__}: {exc}")
    else:
        body = result.to_dict()
        _finish(
            mine, Plan.Status.DONE, state["log"], result=body, evaluated=body.get("candidates_evaluated", 0),
            prices=options["prices"],
        )  # fmt: skip


def _finish(
    mine: QuerySet[Plan],
    status: str,
    progress_log: list,
    *,
    result=None,
    error: str = "",
    evaluated=None,
    prices: dict[str, Any] | None = None,
):
    """Write the outcome if this run still holds the lease (one conditional UPDATE: exactly once),
    the result with its summary (``plan_summary``: what lists show)."""
    values: dict[str, Any] = {
        "status": status,
        "finished": timezone.now(),
        "error": error,
        "result": result,
        "summary": plan_summary(result, prices),
        "lease_expires": None,
        "lease_heartbeat": None,
    }
    if status == Plan.Status.DONE:
        values |= {
            "progress": 100,
            "progress_log": [*progress_log, {"at": timezone.now().isoformat(), "progress": 100}],
        }
    if evaluated is not None:
        values["candidates_evaluated"] = evaluated
    if not mine.update(**values):
        log.warning("plan: outcome %s not written, this run lost its lease", status)


def may_cancel(plan: Plan, user: Any) -> bool:
    """Whoever asked for the plan may cancel it; anyone else needs ``planner.cancel_any_plan``."""
    if plan.requested_by_id is not None and plan.requested_by_id == getattr(user, "pk", None):
        return True
    return bool(user.has_perm("planner.cancel_any_plan"))


def cancel(plan: Plan) -> Plan:
    """Cancel a queued plan at once, or ask a running one to stop at its next progress report (a
    running plan whose worker died is cancelled by ``recover_plans``)."""
    if plan.status == Plan.Status.QUEUED:
        Plan.objects.filter(pk=plan.pk, status=Plan.Status.QUEUED).update(
            status=Plan.Status.CANCELLED, cancel_requested=True, finished=timezone.now(), error="Cancelled on request."
        )
    elif plan.status == Plan.Status.RUNNING:
        Plan.objects.filter(pk=plan.pk).update(cancel_requested=True)
    return Plan.objects.get(pk=plan.pk)


#: A queued plan whose task was sent this long ago and never started is sent again (a broker that
#: restarted without persistence loses its queue; the task is idempotent, so a duplicate is harmless).
RESEND_QUEUED_AFTER = timedelta(minutes=10)


@dataclass(frozen=True)
class Recovery:
    resent: list[str]
    failed: list[str]
    cancelled: list[str]

    def as_dict(self) -> dict[str, list[str]]:
        return {"resent": self.resent, "failed": self.failed, "cancelled": self.cancelled}


def recover_plans(now: datetime | None = None) -> Recovery:
    """Take over plans whose run died (task ``planner.recover_plans``, beat, every 5 s): a running
    plan whose run went silent or let its lease expire is sent again through the outbox (the next run
    claims it), failed after ``MAX_ATTEMPTS`` runs, or marked cancelled if cancellation was asked; a
    queued plan whose task was sent ``RESEND_QUEUED_AFTER`` ago and never started is sent again.
    Idempotent: a plan with an unsent message, or one recorded since its run was last heard from, is
    left to that message."""
    now = now or timezone.now()
    resent, failed, cancelled = [], [], []
    fields = ("pk", "attempts", "cancel_requested", "lease_expires", "lease_heartbeat", "lease_owner", "started")
    for plan in Plan.objects.filter(_abandoned(now)).only(*fields):
        pk = str(plan.pk)
        if plan.cancel_requested:
            if Plan.objects.filter(_abandoned(now), pk=pk).update(
                status=Plan.Status.CANCELLED,
                finished=now,
                lease_expires=None,
                lease_heartbeat=None,
                error="Cancelled on request.",
            ):
                cancelled.append(pk)
        elif plan.attempts >= MAX_ATTEMPTS:
            error = (
                f"The worker running this plan stopped {plan.attempts} times (killed, or out of memory); "
                "it is not run again. Try fewer nodes or SKUs."
            )
            if Plan.objects.filter(_abandoned(now), pk=pk).update(
                status=Plan.Status.FAILED, finished=now, lease_expires=None, lease_heartbeat=None, error=error
            ):
                failed.append(pk)
        # A message recorded after the run was last heard from is a takeover not yet run.
        elif _resend(pk, since=_last_heard(plan)):
            log.warning("plan %s: its run (%s) stopped; sent again", pk, plan.lease_owner or "owner unknown")
            resent.append(pk)
    stale = Plan.objects.filter(status=Plan.Status.QUEUED, created__lt=now - RESEND_QUEUED_AFTER).only("pk")
    for plan in stale:
        if _resend(str(plan.pk), since=now - RESEND_QUEUED_AFTER):
            resent.append(str(plan.pk))
    return Recovery(resent=resent, failed=failed, cancelled=cancelled)


def _last_heard(plan: Plan) -> datetime:
    """When the plan's run last gave a sign of life: its last beat (every renewal beats too), else
    its last renewal, else its start."""
    if plan.lease_heartbeat:
        return plan.lease_heartbeat
    return plan.lease_expires - lease_length() if plan.lease_expires else plan.started


def _resend(plan_id: str, since: datetime) -> bool:
    """Send the plan's task again unless a message for it is unsent or was created after ``since``."""
    pending = OutboxMessage.objects.filter(task=RUN_PLAN_TASK, task_id=plan_id).filter(
        Q(sent_at__isnull=True) | Q(created__gte=since)
    )
    if pending.exists():
        return False
    with transaction.atomic():
        message = outbox.record(RUN_PLAN_TASK, args=[plan_id], task_id=plan_id)
    outbox.send(message)
    return True


def layout_text(pool: dict | None) -> str:
    """A pool's layout as the ranking shows it: ``2 x tp 4 · dp 2 · ep 8`` (replicas x sizes above 1)."""
    if not pool:
        return ""
    layout = pool.get("layout") or {}
    parts = [f"{name} {layout[name]}" for name in ("tp", "pp", "dp", "ep", "etp") if (layout.get(name) or 1) > 1]
    sizes = " · ".join(parts) or "1 GPU"
    replicas = pool.get("replicas") or 1
    return f"{replicas} x {sizes}" if replicas > 1 else sizes


def configuration_row(candidate: dict, names: dict[str, str]) -> dict[str, Any]:
    """A ranked configuration with its SKU's name, its layout (decode and prefill pools apart for
    disaggregated serving; ``layout`` is both in one text) and its outcome: ``outcome`` the code (``best``
    or the ``reason``), ``label`` its sentence (``planner.engine.OUTCOMES``)."""
    decode, prefill = layout_text(candidate.get("decode")), layout_text(candidate.get("prefill"))
    layout = f"decode {decode}; prefill {prefill}" if prefill else decode
    row = {
        **candidate,
        "sku_name": names.get(candidate["sku"], candidate["sku"]),
        "decode_layout": decode,
        "prefill_layout": prefill,
        "layout": layout,
        "outcome": candidate.get("reason") or BEST,
        "label": outcome_label(candidate.get("reason")),
    }
    return row | {"why": why_text(row, layout)}


def why_text(candidate: dict[str, Any], layout: str) -> str:
    """A ranked configuration in one line: its outcome's sentence, what it costs and how fast it is, rounded
    to their precision (USD/Mtok to the cent, TPOT to 0.1 ms, TTFT to the ms), and the search's ``detail``."""
    figures = []
    if candidate.get("usd_per_mtok") is not None:
        figures.append(f"{candidate['usd_per_mtok']:,.2f} USD/Mtok")
    if candidate.get("tpot_ms") is not None:
        figures.append(f"TPOT {candidate['tpot_ms']:,.1f} ms")
    if candidate.get("ttft_ms") is not None:
        figures.append(f"TTFT {candidate['ttft_ms']:,.0f} ms")
    sku, lead = candidate.get("sku_name") or candidate.get("sku"), outcome_label(candidate.get("reason"))
    detail = "" if candidate.get("detail") in (None, lead) else candidate["detail"]
    text = f"{lead}: {layout} on {candidate.get('gpus')} x {sku}, " + ", ".join(figures)
    return text + (f" ({detail})." if detail else ".")


def labelled(candidate: dict[str, Any], names: dict[str, str] | None = None) -> dict[str, Any]:
    """A stored configuration with the sentence beside each outcome code: ``label`` its ``reason``'s (the
    best's: ``best``), ``status_label`` its ``status``'s; with ``names``, its SKU's ``sku_name`` too."""
    row = candidate | {"label": outcome_label(candidate.get("reason"))}
    if candidate.get("status"):
        row["status_label"] = outcome_label(candidate["status"])
    if names is not None and candidate.get("sku"):
        row["sku_name"] = names.get(candidate["sku"], candidate["sku"])
    return row


def labelled_result(result: dict[str, Any] | None, names: dict[str, str] | None = None) -> dict[str, Any] | None:
    """A stored search result with every outcome code in words beside it (``labelled``): each configuration
    of ``best``, ``frontier``, ``top`` and ``near_misses``, and each ``rejected`` reason (its ``label``, its
    examples). Read, never stored: the vocabulary is the engine's (``OUTCOMES``), plans of any age get it."""
    if result is None:
        return None
    out = dict(result)
    if result.get("best"):
        out["best"] = labelled(result["best"], names)
    for key in ("frontier", "top", "near_misses"):
        out[key] = [labelled(c, names) for c in result.get(key) or []]
    out["rejected"] = {
        reason: info
        | {"label": outcome_label(reason), "examples": [labelled(e, names) for e in info.get("examples") or []]}
        for reason, info in (result.get("rejected") or {}).items()
    }
    return out


def plan_chart(result: dict[str, Any]) -> dict[str, Any]:
    """A done plan's cost-against-TPOT chart: its feasible configurations as ``[tpot_ms, usd_per_mtok]``
    (``points``: the search's, all or thinned with the whole frontier kept; a plan from before they were
    kept has only its ranking and frontier), the Pareto frontier, and a ``caption`` saying how many of
    how many feasible configurations are drawn."""
    frontier = [[c["tpot_ms"], c["usd_per_mtok"]] for c in result.get("frontier") or []]
    feasible = result.get("feasible") or 0
    if "points" in result:
        points = [list(p) for p in result["points"]]
        how = "" if len(points) >= feasible else ": every one on the Pareto frontier, the others chosen evenly by cost"
    else:
        seen: dict[tuple, None] = {}
        for c in [*(result.get("top") or []), *(result.get("frontier") or [])]:
            seen.setdefault((c["tpot_ms"], c["usd_per_mtok"]), None)
        points = [list(p) for p in seen]
        how = ": the ranking and the Pareto frontier (this plan ran before every point was kept)"
    drawn = min(len(points), feasible)
    caption = (
        f"All {feasible:,} feasible configurations drawn."
        if drawn >= feasible
        else f"{drawn:,} of {feasible:,} feasible configurations drawn{how}."
    )
    return {"points": points, "frontier": frontier, "drawn": drawn, "feasible": feasible, "caption": caption}


def plan_counts(result: dict[str, Any]) -> tuple[int, int]:
    """The configurations a done plan considered, and of those the ones rejected (``REJECTIONS``)."""
    rejected = result.get("rejected") or {}
    count = sum((rejected.get(r) or {}).get("count", 0) for r in REJECTIONS)
    return (result.get("feasible") or 0) + count, count


def plan_prices(plan: Plan) -> list[dict[str, Any]]:
    """Each SKU's price a plan used, by SKU name: ``name``, ``slug``, ``provider``, ``usd_per_gpu_hour``, ``basis``."""
    names = {s.slug: s.name for s in plan.skus.all()}
    return [
        {
            "name": names.get(slug, slug),
            "slug": slug,
            **{k: q.get(k) for k in ("provider", "usd_per_gpu_hour", "basis")},
        }
        for slug, q in sorted((plan.options or {}).get("prices", {}).items(), key=lambda i: names.get(i[0], i[0]))
    ]


def plan_skipped(plan: Plan) -> list[dict[str, str]]:
    """The SKUs a plan skipped for want of a price (``options["skipped_without_quote"]``): ``name``, ``slug``."""
    slugs = (plan.options or {}).get("skipped_without_quote") or []
    names = dict(HardwareSku.objects.filter(slug__in=slugs).values_list("slug", "name")) if slugs else {}
    return sorted(({"name": names.get(s, s), "slug": s} for s in slugs), key=lambda sku: sku["name"])


#: The best configuration's figures a plan's summary keeps, with its ``layout`` as text.
SUMMARY_FIGURES = (
    "sku",
    "mode",
    "kv_cache_dtype",
    "gpus",
    "nodes",
    "usd_per_gpu_hour",
    "usd_per_hour",
    "usd_per_mtok",
    "tpot_ms",
    "ttft_ms",
    "tokens_per_s_per_gpu",
)


def plan_summary(result: dict[str, Any] | None, prices: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """A result's headline, stored beside it (``Plan.summary``) so that lists never read the result
    (tens of KB): the configurations found feasible, and the best one's figures (``best``: None
    when none meets the SLOs), with its layout as text, ``why`` and the ``price_basis`` of its SKU's
    price (``prices``: the plan's ``options["prices"]``; None when not given). None without a result
    (a plan not done). The configurations evaluated are the plan's own column (``candidates_evaluated``)."""
    if result is None:
        return None
    best = result.get("best")
    if best:
        row = configuration_row(best, {})
        price = (prices or {}).get(best.get("sku")) or {}
        best = {key: best.get(key) for key in SUMMARY_FIGURES} | {
            "layout": row["layout"],
            "why": row["why"],
            "price_basis": price.get("basis"),
        }
    return {"feasible": result.get("feasible", 0), "best": best or None}


def plan_ranking(plan: Plan) -> list[dict[str, Any]]:
    """A finished plan's ranked configurations, best first (empty before it is done)."""
    names = {s.slug: s.name for s in plan.skus.all()}
    return [configuration_row(c, names) for c in (plan.result or {}).get("top", [])]


#: Columns of a plan's ranking CSV: (header, key of ``plan_ranking``'s rows).
RANKING_CSV = (
    ("rank", None),
    ("sku", "sku"),
    ("sku_name", "sku_name"),
    ("mode", "mode"),
    ("layout", "layout"),
    ("gpus", "gpus"),
    ("nodes", "nodes"),
    ("kv_cache_dtype", "kv_cache_dtype"),
    ("tpot_ms", "tpot_ms"),
    ("ttft_ms", "ttft_ms"),
    ("tokens_per_s_per_gpu", "tokens_per_s_per_gpu"),
    ("usd_per_gpu_hour", "usd_per_gpu_hour"),
    ("usd_per_hour", "usd_per_hour"),
    ("usd_per_mtok", "usd_per_mtok"),
    ("outcome", "outcome"),
    ("outcome_label", "label"),
)


def ranking_csv_rows(plan: Plan) -> tuple[list[str], list[list[Any]]]:
    """A plan's ranking as CSV header and rows (``fleet.tables.csv_response`` writes them)."""
    rows = []
    for rank, row in enumerate(plan_ranking(plan), start=1):
        values = [row.get(key) for _, key in RANKING_CSV]
        values[0] = rank
        rows.append(values)
    return [h for h, _ in RANKING_CSV], rows


#: What the compare page puts side by side from each plan's best configuration: (label, key, how
#: to print it, key of its hover text or ""). A row whose two values differ is highlighted.
COMPARED = (
    ("SKU", "sku_name", "text", "sku"),
    ("Serving", "mode", "text", ""),
    ("Layout", "layout", "text", ""),
    ("GPUs", "gpus", "int", ""),
    ("Nodes", "nodes", "int", ""),
    ("KV cache", "kv_cache_dtype", "text", ""),
    ("USD per million output tokens", "usd_per_mtok", "2", ""),
    ("USD per hour", "usd_per_hour", "2", ""),
    ("USD per GPU-hour", "usd_per_gpu_hour", "text", ""),
    ("TTFT (ms)", "ttft_ms", "0", ""),
    ("TPOT (ms)", "tpot_ms", "1", ""),
    ("Output tokens/s per GPU", "tokens_per_s_per_gpu", "0", ""),
)


@dataclass(frozen=True)
class ComparedFigure:
    """One line of the comparison: the label, each plan's value (``hint_*``: its slug or meaning, on hover),
    and whether they differ."""

    label: str
    a: Any
    b: Any
    style: str
    hint_a: str = ""
    hint_b: str = ""

    @property
    def differs(self) -> bool:
        return self.a != self.b


def compare_plans(a: Plan, b: Plan) -> dict[str, Any]:
    """Two plans side by side: what each searched (model, workload, SKUs, prices of), and each
    one's best configuration figure by figure (None where a plan has no best: not done, or none
    meets the SLOs)."""
    bests = []
    for plan in (a, b):
        names = {s.slug: s.name for s in plan.skus.all()}
        best = (plan.result or {}).get("best")
        bests.append(configuration_row(best, names) if best else None)
    searched = [
        ComparedFigure("Model", a.model.name, b.model.name, "text", a.model.slug, b.model.slug),
        ComparedFigure("Workload", a.workload.name, b.workload.name, "text", a.workload.slug, b.workload.slug),
        ComparedFigure("Status", a.status, b.status, "text"),
        ComparedFigure(
            "SKUs searched",
            ", ".join(sorted(s.name for s in a.skus.all())),
            ", ".join(sorted(s.name for s in b.skus.all())),
            "text",
            ", ".join(sorted(s.slug for s in a.skus.all())),
            ", ".join(sorted(s.slug for s in b.skus.all())),
        ),
        ComparedFigure("Up to nodes per SKU", a.options.get("max_nodes"), b.options.get("max_nodes"), "int"),
        ComparedFigure(
            "Price basis", a.price_basis_name, b.price_basis_name, "text", a.price_basis_text, b.price_basis_text
        ),
        ComparedFigure("Prices of", a.options.get("on"), b.options.get("on"), "text"),
        ComparedFigure(
            "Feasible configurations", (a.result or {}).get("feasible"), (b.result or {}).get("feasible"), "int"
        ),
    ]
    best_a, best_b = bests
    a_, b_ = best_a or {}, best_b or {}
    figures = [
        ComparedFigure(
            label, a_.get(key), b_.get(key), style, a_.get(hint, "") if hint else "", b_.get(hint, "") if hint else ""
        )
        for label, key, style, hint in COMPARED
    ]
    return {"searched": searched, "figures": figures, "best_a": best_a, "best_b": best_b}
