"""Monthly budgets and their alerts: a budget per team (or per cluster) in USD; each hour (beat,
``BUDGET_CHECK_S``) every budget's month end is projected from the month's spend so far (the spend
report's ``cost_usd``: actual through today plus projected at today's hardware and quotes,
``planner.spend``), and a projection over the budget is announced once per budget and month.

The announcement is a ``BudgetAlert`` row, written before anything is sent (one per budget and month: a
unique pair, so two checks at once write one), with each channel's delivery on it: an email through
Django's email backend and, when the budget has one, a webhook POST of a JSON body signed with
HMAC-SHA256 over ``"<timestamp>.<body>"`` (``X-Fleetcap-Signature: sha256=<hex>``,
``X-Fleetcap-Timestamp``), sent through the outbound guard (``fleet.polling.fetch``, with
``fleet.egress.webhook_guard_kwargs``) within ``BUDGET_WEBHOOK_TIMEOUT_S``. A channel that failed stays
``failed`` and is retried by the next check (at most ``BUDGET_ALERT_MAX_ATTEMPTS`` times), without
sending again a channel that was delivered. A check delivers an alert under a short lease
(``delivering_until``), so two checks never deliver the same alert at once.

The service takes plain inputs (``BudgetInput``) and raises ``InputError`` with field names, for the
API, the page form and the tests alike; saving a budget queues a check of it through the outbox.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from fleet import crypto, outbox
from fleet.egress import webhook_guard_kwargs
from fleet.errors import InputError
from fleet.inputs import control_character_message
from fleet.models import Cluster, ClusterState
from fleet.polling import UrlRefused, check_url, fetch
from planner.engine import calendar_month_label
from planner.models import Budget, BudgetAlert
from planner.spend import month_after, month_text, spend_report

log = logging.getLogger(__name__)

CHECK_TASK = "planner.check_budgets"
#: The most addresses a budget emails, and the longest address, URL and secret it stores.
MAX_EMAILS = 20
MAX_EMAIL_CHARS = 254
MAX_URL_CHARS = 500
MAX_SECRET_CHARS = 500
#: The largest budget (USD): 14 digits with 2 decimals.
MAX_AMOUNT = Decimal("999999999999.99")
CENT = Decimal("0.01")
#: Alerts of each budget the page and the API show (newest first).
SHOWN_ALERTS = 12
#: The most of a webhook's answer read (its body is never stored; only its status).
WEBHOOK_MAX_BYTES = 64 * 1024
SIGNATURE_HEADER = "X-Fleetcap-Signature"
TIMESTAMP_HEADER = "X-Fleetcap-Timestamp"
DELIVERY_HEADER = "X-Fleetcap-Delivery"
EVENT = "budget.projected_over"


# ------------------------------------------------------------------------------------------------
# Managing budgets
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BudgetInput:
    """A budget as a front door gives it. ``team`` or ``cluster`` (a slug), not both; ``emails`` a list
    (or text, comma, semicolon or newline separated); ``webhook_secret``: None keeps the stored one,
    ``""`` clears it."""

    amount_usd: Any
    team: str = ""
    cluster: str = ""
    emails: Iterable[str] | str = ()
    webhook_url: str = ""
    webhook_secret: str | None = None


def parse_emails(raw: Iterable[str] | str) -> list[str]:
    """Addresses from a list or from text separated by commas, semicolons, spaces or newlines, in
    order, without repeats (case-insensitively)."""
    items = raw.replace(";", ",").replace("\n", ",").replace(" ", ",").split(",") if isinstance(raw, str) else raw
    seen: dict[str, str] = {}
    for item in items:
        address = str(item).strip()
        if address and address.lower() not in seen:
            seen[address.lower()] = address
    return list(seen.values())


def _amount(raw: Any, errors: dict[str, list[str]]) -> Decimal | None:
    try:
        amount = Decimal(str(raw).strip()) if raw is not None and str(raw).strip() else None
    except (InvalidOperation, ValueError):
        amount = None
        errors["amount_usd"] = ["Give the budget in USD, e.g. 25000."]
        return None
    if amount is None:
        errors["amount_usd"] = ["Give the month's budget in USD."]
    elif not amount.is_finite() or amount <= 0 or amount > MAX_AMOUNT:
        errors["amount_usd"] = [f"Give a budget above 0 and at most {MAX_AMOUNT:,} USD."]
    else:
        return amount.quantize(CENT, rounding=ROUND_HALF_UP)
    return None


def _check_text(name: str, value: str, limit: int, errors: dict[str, list[str]]) -> None:
    if len(value) > limit:
        errors.setdefault(name, []).append(f"At most {limit} characters.")
    elif message := control_character_message(value):
        errors.setdefault(name, []).append(message)


def check_webhook_url(url: str) -> None:
    """``InputError`` on ``webhook_url`` when the outbound guard refuses it (``fleet.polling.check_url``
    with the webhook's settings: resolves the host); an empty URL passes."""
    if not url:
        return
    try:
        check_url(url, **webhook_guard_kwargs(), timeout_s=min(settings.BUDGET_WEBHOOK_TIMEOUT_S, 5.0))
    except UrlRefused as exc:
        raise InputError.single("webhook_url", f"fleetcap may not send to this address: {exc.reason}") from None


def save_budget(data: BudgetInput, budget: Budget | None = None) -> Budget:
    """Create (``budget`` None) or change a budget; ``InputError`` with field names. A check of it is
    queued through the outbox in the same transaction (so a budget already crossed is announced within
    seconds, not at the next hourly check)."""
    errors: dict[str, list[str]] = {}
    team = (data.team or "").strip()
    cluster_slug = (data.cluster or "").strip()
    _check_text("team", team, 100, errors)
    cluster = None
    if team and cluster_slug:
        errors["cluster"] = ["Give a team or a cluster, not both."]
    elif not team and not cluster_slug:
        errors["team"] = ["Give the team whose clusters count, or one cluster."]
    elif cluster_slug:
        cluster = Cluster.objects.filter(slug=cluster_slug[:200]).first()
        if cluster is None:
            errors["cluster"] = [f"No cluster {cluster_slug[:100]!r}."]
    elif "team" not in errors and not ClusterState.objects.filter(team=team).exists():
        errors["team"] = [f"No cluster has belonged to team {team!r}."]
    amount = _amount(data.amount_usd, errors)
    emails = parse_emails(data.emails)
    if len(emails) > MAX_EMAILS:
        errors["emails"] = [f"At most {MAX_EMAILS} addresses."]
    for address in emails[:MAX_EMAILS]:
        try:
            if len(address) > MAX_EMAIL_CHARS:
                raise ValidationError("too long")
            validate_email(address)
        except ValidationError:
            errors.setdefault("emails", []).append(f"Not an email address: {address[:60]!r}.")
    url = (data.webhook_url or "").strip()
    _check_text("webhook_url", url, MAX_URL_CHARS, errors)
    secret = data.webhook_secret.strip() if data.webhook_secret is not None else None
    if secret:
        _check_text("webhook_secret", secret, MAX_SECRET_CHARS, errors)
    has_secret = bool(secret) if secret is not None else bool(budget and budget.has_webhook_secret)
    if url and not has_secret:
        errors["webhook_secret"] = ["A webhook needs a signing secret: its receiver checks the signature with it."]
    if url and "webhook_url" not in errors:
        try:
            check_webhook_url(url)
        except InputError as exc:
            errors.update(exc.errors)
    if errors:
        raise InputError(errors)
    budget = budget or Budget()
    budget.team, budget.cluster, budget.amount_usd = ("", cluster, amount) if cluster else (team, None, amount)
    budget.emails, budget.webhook_url = emails, url
    if not url:
        budget.webhook_secret_encrypted = ""  # no webhook, no secret kept for it
    elif secret is not None:
        budget.set_webhook_secret(secret)
    taken = Budget.objects.exclude(pk=budget.pk).filter(
        Q(cluster=cluster) if cluster else Q(team=team, cluster__isnull=True)
    )
    if taken.exists():
        where = ("cluster", f"Cluster {cluster.slug}") if cluster else ("team", f"Team {team}")
        raise InputError.single(where[0], f"{where[1]} has a budget already: change that one.")
    try:
        with transaction.atomic():
            budget.save()
            message = outbox.record(CHECK_TASK, kwargs={"budget_ids": [budget.pk]})
    except IntegrityError:  # a budget for the same team or cluster saved meanwhile
        raise InputError.single("team" if not cluster else "cluster", "That budget exists already.") from None
    transaction.on_commit(lambda: outbox.send(message))
    return budget


# ------------------------------------------------------------------------------------------------
# Figures: spent and projected per budget, from the spend report
# ------------------------------------------------------------------------------------------------


def _usd(value: str | None) -> Decimal:
    return Decimal(value) if value is not None else Decimal(0)


@dataclass(frozen=True)
class BudgetFigures:
    """A budget against a month's spend report: ``spent`` (actual), ``projected`` (the month's end:
    actual + projected), ``unpriced_gpu_hours`` (in neither), ``over`` (projected above the budget)."""

    budget: Budget
    month: str
    spent_usd: Decimal
    projected_usd: Decimal
    unpriced_gpu_hours: Decimal
    status: str  # the report's: actual | partial | projected

    @property
    def amount_usd(self) -> Decimal:
        return self.budget.amount_usd

    @property
    def over(self) -> bool:
        return self.projected_usd > self.budget.amount_usd

    @property
    def used_fraction(self) -> Decimal:
        """Projected / budget (4 decimals)."""
        return (self.projected_usd / self.budget.amount_usd).quantize(Decimal("0.0001"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "month": self.month,
            "status": self.status,
            "spent_usd": str(self.spent_usd.quantize(CENT)),
            "projected_usd": str(self.projected_usd.quantize(CENT)),
            "budget_usd": str(self.budget.amount_usd.quantize(CENT)),
            "projected_fraction": str(self.used_fraction),
            "over": self.over,
            "unpriced_gpu_hours": str(self.unpriced_gpu_hours.quantize(CENT)),
        }


def figures_for(budget: Budget, report: dict[str, Any]) -> BudgetFigures:
    """``budget`` against a spend report (``planner.spend.spend_report``): its team's line
    (``by_team``) or its cluster's (``clusters``); nothing billed that month is 0."""
    if budget.cluster_id:
        # The spend page's report holds only its costliest clusters, and the budgeted ones apart.
        shown = report.get("budget_clusters")
        slug = budget.cluster.slug
        line = (
            shown.get(slug)
            if shown is not None
            else next((c for c in report["clusters"] if c["cluster"] == slug), None)
        )
    else:
        line = report["by_team"].get(budget.team)
    month = month_text(report["year"], report["month"])
    if line is None:
        zero = Decimal(0)
        return BudgetFigures(budget, month, zero, zero, zero, report["status"])
    return BudgetFigures(
        budget,
        month,
        spent_usd=_usd(line["actual_cost_usd"]),
        projected_usd=_usd(line["cost_usd"]),
        unpriced_gpu_hours=_usd(line["unpriced_gpu_hours"]),
        status=report["status"],
    )


@dataclass
class BudgetRow:
    """What the spend page and the API show of a budget: its figures for a month and its alerts."""

    figures: BudgetFigures
    alerts: list[BudgetAlert] = field(default_factory=list)

    @property
    def budget(self) -> Budget:
        return self.figures.budget


def budget_rows(report: dict[str, Any]) -> list[BudgetRow]:
    """Every budget with its figures for the report's month and its alerts of the ``SHOWN_ALERTS`` months
    up to it (two queries)."""
    budgets = list(Budget.objects.select_related("cluster"))
    alerts: dict[int, list[BudgetAlert]] = {b.pk: [] for b in budgets}
    # At most one alert a month: the SHOWN_ALERTS months up to the report's are all there is to read.
    since = date(*month_after(report["year"], report["month"], 1 - SHOWN_ALERTS), 1)
    until = date(report["year"], report["month"], 1)
    rows = BudgetAlert.objects.filter(budget__in=budgets, month__gte=since, month__lte=until)
    for alert in rows.order_by("budget_id", "-month", "-created"):
        if len(alerts[alert.budget_id]) < SHOWN_ALERTS:
            alerts[alert.budget_id].append(alert)
    return [BudgetRow(figures_for(b, report), alerts[b.pk]) for b in budgets]


def alert_dict(alert: BudgetAlert) -> dict[str, Any]:
    """An alert as the API shows it (each channel's state; never an address or a secret)."""
    return {
        "month": alert.month.strftime("%Y-%m"),
        "created": alert.created.isoformat(),
        "projected_usd": str(alert.projected_usd),
        "spent_usd": str(alert.spent_usd),
        "budget_usd": str(alert.budget_usd),
        "sent_at": alert.sent_at.isoformat() if alert.sent_at else None,
        "outcome": alert.outcome,
        "channels": {
            name: {k: v for k, v in state.items() if k in ("status", "attempts", "at", "error")}
            for name, state in alert.channels.items()
        },
    }


# ------------------------------------------------------------------------------------------------
# The check: project, record, deliver
# ------------------------------------------------------------------------------------------------


@dataclass
class CheckSummary:
    budgets: int = 0
    over: int = 0
    alerts_created: int = 0
    delivered: int = 0
    failed: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def check_budgets(today: date | None = None, budget_ids: Iterable[int] | None = None) -> CheckSummary:
    """Project every budget's month end (``budget_ids``: only those) from the month's spend so far; for
    each projection over its budget, record the month's alert once; then deliver every alert still to
    deliver (new ones, and failed channels again). Idempotent: a second run in the same month sends
    nothing that was delivered."""
    now = timezone.now()
    today = today or now.date()
    report = spend_report(None, today)
    first = date(today.year, today.month, 1)
    budgets = Budget.objects.select_related("cluster")
    if budget_ids is not None:
        budgets = budgets.filter(pk__in=list(budget_ids))
    summary = CheckSummary()
    for budget in budgets:
        summary.budgets += 1
        figures = figures_for(budget, report)
        if not figures.over:
            continue
        summary.over += 1
        _, created = BudgetAlert.objects.get_or_create(
            budget=budget,
            month=first,
            defaults={
                "projected_usd": figures.projected_usd.quantize(CENT),
                "spent_usd": figures.spent_usd.quantize(CENT),
                "budget_usd": budget.amount_usd,
                "channels": _channels(budget),
                "outcome": BudgetAlert.Outcome.PENDING,
            },
        )
        summary.alerts_created += created
    due = BudgetAlert.objects.filter(outcome=BudgetAlert.Outcome.PENDING)
    if budget_ids is not None:
        due = due.filter(budget_id__in=list(budget_ids))
    for alert_id in due.values_list("pk", flat=True):
        outcome = deliver(alert_id)
        if outcome == BudgetAlert.Outcome.SENT:
            summary.delivered += 1
        elif outcome is not None:
            summary.failed += 1
    return summary


def _channels(budget: Budget) -> dict[str, dict[str, Any]]:
    """The channels an alert of ``budget`` goes out on, each pending (none: the page shows it only)."""
    channels = {}
    if budget.emails:
        channels["email"] = {"status": "pending", "attempts": 0}
    if budget.webhook_url:
        channels["webhook"] = {"status": "pending", "attempts": 0}
    return channels


def _lease_s() -> float:
    """How long one delivery holds its alert: both channels' timeouts and a margin."""
    return settings.EMAIL_TIMEOUT + settings.BUDGET_WEBHOOK_TIMEOUT_S + 30


def deliver(alert_id: int) -> str | None:
    """Deliver what is still to deliver of one alert (its channels not yet sent, not given up), under a
    lease so that two checks never deliver it at once; record each attempt and the outcome. Returns the
    outcome, or None when another check holds the alert or nothing was left to deliver."""
    now = timezone.now()
    free = Q(delivering_until__isnull=True) | Q(delivering_until__lt=now)
    claimed = BudgetAlert.objects.filter(free, pk=alert_id, outcome=BudgetAlert.Outcome.PENDING).update(
        delivering_until=now + timedelta(seconds=_lease_s())
    )
    if not claimed:
        return None
    alert = BudgetAlert.objects.select_related("budget__cluster").get(pk=alert_id)
    channels = {name: dict(state) for name, state in alert.channels.items()}
    senders = {"email": _send_email, "webhook": _send_webhook}
    for name, state in channels.items():
        if state.get("status") in ("sent", "gave_up"):
            continue
        error = senders[name](alert)
        state["attempts"] = int(state.get("attempts", 0)) + 1
        state["at"] = timezone.now().isoformat()
        if error is None:
            state.update(status="sent", error="")
        else:
            gave_up = state["attempts"] >= settings.BUDGET_ALERT_MAX_ATTEMPTS
            state.update(status="gave_up" if gave_up else "failed", error=error[:300])
            log.warning("budget alert %s: %s not delivered (%s)", alert.pk, name, error[:300])
    statuses = {state["status"] for state in channels.values()}
    if statuses <= {"sent"}:
        outcome = BudgetAlert.Outcome.SENT
    elif statuses <= {"sent", "gave_up"}:
        outcome = BudgetAlert.Outcome.FAILED
    else:
        outcome = BudgetAlert.Outcome.PENDING
    sent_at = timezone.now() if outcome == BudgetAlert.Outcome.SENT else None
    BudgetAlert.objects.filter(pk=alert_id).update(
        channels=channels, outcome=outcome, sent_at=sent_at, delivering_until=None
    )
    return outcome


def alert_text(alert: BudgetAlert) -> tuple[str, str]:
    """An alert's email: subject and body."""
    budget = alert.budget
    label = calendar_month_label(alert.month.year, alert.month.month)
    subject = f"[fleetcap] {budget.scope_text}: {label} projected at {alert.projected_usd:,} USD, over its budget"
    body = (
        f"The GPU spend of {budget.scope_text} is projected to reach {alert.projected_usd:,} USD by the end of "
        f"{label}, over its budget of {alert.budget_usd:,} USD.\n\n"
        f"Spent so far: {alert.spent_usd:,} USD (as of {alert.created:%Y-%m-%d %H:%M} UTC). The projection is the "
        "spend so far plus the rest of the month at today's hardware and quotes (the spend page's figures).\n\n"
        "This alert is sent once for the month.\n"
    )
    return subject, body


def _send_email(alert: BudgetAlert) -> str | None:
    """Email the alert to the budget's addresses; None when the backend took it, else why not."""
    subject, body = alert_text(alert)
    try:
        send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, list(alert.budget.emails), fail_silently=False)
    except Exception as exc:  # SMTP, socket and backend errors alike: recorded, retried next check
        return f"{type(exc).__name__}: {exc}"
    return None


def webhook_body(alert: BudgetAlert) -> bytes:
    """The JSON a webhook receives (compact, keys sorted: the bytes signed are the bytes sent)."""
    budget = alert.budget
    payload = {
        "event": EVENT,
        "alert": alert.pk,
        "budget": {
            "id": budget.pk,
            "scope": budget.scope,
            "team": budget.team or None,
            "cluster": budget.cluster.slug if budget.cluster_id else None,
        },
        "month": alert.month.strftime("%Y-%m"),
        "projected_usd": str(alert.projected_usd),
        "spent_usd": str(alert.spent_usd),
        "budget_usd": str(alert.budget_usd),
        "crossed_at": alert.created.isoformat(),
    }
    return json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """``sha256=<hex>``: HMAC-SHA256 with ``secret`` over ``b"<timestamp>." + body``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"sha256={mac.hexdigest()}"


def verify(secret: str, timestamp: str, body: bytes, signature: str, now: float, tolerance_s: float = 300) -> bool:
    """What a receiver checks (docs/api.md): the signature matches and the timestamp is recent."""
    if not timestamp.isdigit() or abs(now - int(timestamp)) > tolerance_s:
        return False
    return hmac.compare_digest(sign(secret, int(timestamp), body), signature)


def _send_webhook(alert: BudgetAlert) -> str | None:
    """POST the signed alert through the outbound guard; None on a 2xx, else why not."""
    budget = alert.budget
    if not budget.webhook_url:
        return "the budget has no webhook URL any more"
    try:
        secret = budget.decrypted_webhook_secret()
    except crypto.UndecryptableSecret:
        return "the signing secret cannot be decrypted (its key was rotated away): set it again"
    if not secret:
        return "the budget has no signing secret: set one"
    body = webhook_body(alert)
    timestamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "fleetcap-budgets/1",
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: sign(secret, timestamp, body),
        DELIVERY_HEADER: str(alert.pk),
    }
    result = fetch(
        budget.webhook_url,
        method="POST",
        data=body,
        headers=headers,
        timeout_s=settings.BUDGET_WEBHOOK_TIMEOUT_S,
        max_bytes=WEBHOOK_MAX_BYTES,
        verify=settings.BUDGET_WEBHOOK_VERIFY_TLS,
        **webhook_guard_kwargs(),
    )
    if result.ok:
        return None
    if result.error is None:
        return f"HTTP {result.status} from {result.url}"
    return f"{result.error}: {result.message}"
