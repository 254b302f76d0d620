"""Monthly budgets (per team, or per cluster) and the alerts sent when a month's projection crosses one.

A budget's webhook signing secret is stored encrypted (``fleet.crypto``, as endpoint API keys are) and
never shown back: pages, the API and the audit trail say only whether one is set. Alerts are written by
the hourly check (``planner.budgets.check_budgets``) only, one per budget and month (a unique pair), so
a crossing is announced once; each channel's delivery is recorded on it (``channels``) and a failed one
is retried by the next run without sending again what was delivered."""

from __future__ import annotations

from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q

from fleet import crypto
from fleet.models import Cluster
from fleet.models.base import TimeStamped


class Budget(TimeStamped):
    """A month's spend limit in USD for a team's clusters (``team``) or for one cluster (``cluster``):
    exactly one of them. Spent and projected are the spend report's (``planner.spend``)."""

    team = models.CharField(
        max_length=100, blank=True, default="", help_text="The team whose clusters count (empty: one cluster)."
    )
    cluster = models.ForeignKey(
        Cluster,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="budgets",
        help_text="The one cluster that counts (empty: a team's budget).",
    )
    amount_usd = models.DecimalField(
        max_digits=14, decimal_places=2, validators=[MinValueValidator(0)], help_text="USD per calendar month."
    )
    emails = models.JSONField(default=list, blank=True, help_text="Addresses an alert is emailed to.")
    webhook_url = models.CharField(
        max_length=500, blank=True, default="", help_text="Where an alert is POSTed (JSON, signed), if anywhere."
    )
    webhook_secret_encrypted = models.TextField(blank=True, default="", editable=False)

    class Meta:
        ordering = ["team", "cluster__slug", "id"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(cluster__isnull=True) & ~Q(team="")) | (Q(cluster__isnull=False) & Q(team="")),
                name="budget_team_xor_cluster",
            ),
            models.UniqueConstraint(fields=["team"], condition=Q(cluster__isnull=True), name="budget_one_per_team"),
            models.UniqueConstraint(fields=["cluster"], name="budget_one_per_cluster"),
        ]

    def __str__(self) -> str:
        return f"{self.scope_text} budget"

    @property
    def scope(self) -> str:
        return "cluster" if self.cluster_id else "team"

    @property
    def scope_text(self) -> str:
        """``team ml`` or ``cluster pool-a``."""
        return f"cluster {self.cluster.slug}" if self.cluster_id else f"team {self.team}"

    # The secret is written here and read by the alert sender only: never by a page, the API or a log.
    def set_webhook_secret(self, plaintext: str) -> None:
        self.webhook_secret_encrypted = crypto.encrypt(plaintext)

    def decrypted_webhook_secret(self) -> str:
        """The secret (``""`` when none); raises ``crypto.UndecryptableSecret`` when no key opens it."""
        return crypto.decrypt(self.webhook_secret_encrypted)

    @property
    def has_webhook_secret(self) -> bool:
        return bool(self.webhook_secret_encrypted)


class BudgetAlert(models.Model):
    """A budget's month whose projection crossed it: the figures when it did, and each channel's
    delivery. ``channels``: per channel (``email``, ``webhook``) ``{"status": pending|sent|failed|gave_up,
    "attempts": n, "at": ISO time of the last attempt, "error": text}``; ``outcome``: ``sent`` (every
    channel delivered), ``pending`` (a channel is still to be delivered or retried), ``failed`` (a channel
    gave up after ``BUDGET_ALERT_MAX_ATTEMPTS``)."""

    class Outcome(models.TextChoices):
        PENDING = "pending"
        SENT = "sent"
        FAILED = "failed"

    budget = models.ForeignKey(Budget, on_delete=models.CASCADE, related_name="alerts")
    month = models.DateField(help_text="The month's first day.")
    created = models.DateTimeField(auto_now_add=True, help_text="When the check found the projection over budget.")
    projected_usd = models.DecimalField(max_digits=14, decimal_places=2, help_text="The month's end as projected.")
    spent_usd = models.DecimalField(max_digits=14, decimal_places=2, help_text="Spent so far, when it crossed.")
    budget_usd = models.DecimalField(max_digits=14, decimal_places=2, help_text="The budget when it crossed.")
    sent_at = models.DateTimeField(null=True, blank=True, help_text="When the last channel was delivered.")
    channels = models.JSONField(default=dict)
    outcome = models.CharField(max_length=10, choices=Outcome.choices, default=Outcome.PENDING)
    delivering_until = models.DateTimeField(
        null=True, blank=True, editable=False, help_text="A check delivering it holds it until then (a lease)."
    )

    class Meta:
        ordering = ["-month", "-created"]
        constraints = [models.UniqueConstraint(fields=["budget", "month"], name="budget_alert_once_a_month")]

    def __str__(self) -> str:
        return f"{self.budget} {self.month:%Y-%m}"
