"""A month's spend report as the spend engine computed it, stored so pages and the API read what they show
instead of recomputing the whole fleet's month on every view (issue 30; ``planner.spend.stored_spend``).

``SpendSnapshot`` holds the report's totals, breakdowns (team, provider, model), warnings, trend,
reconciliation and assumptions; its clusters and deployment lines are ``SpendSnapshotLine`` rows, so a
page reads the costliest few with one ordered, limited query and the CSV and the API stream all of them.
``key`` names the records and the day the report was computed from; a report is used while its key is
the records' current one and it is younger than ``SPEND_STORED_S`` (the live state: polls' utilisation)."""

from __future__ import annotations

from django.db import models


class SpendSnapshot(models.Model):
    """The stored spend report of one month and pricing kind (``planner.spend.stored_spend``)."""

    month = models.CharField(max_length=7, help_text="YYYY-MM.")
    pricing_kind = models.CharField(max_length=20)
    key = models.CharField(max_length=64, help_text="SHA-256 of the records' version and the day it was made on.")
    computed_at = models.DateTimeField()
    summary = models.JSONField(help_text="The report without its cluster and deployment lines (planner.spend).")
    clusters = models.PositiveIntegerField(default=0, help_text="Cluster lines stored.")
    lines = models.PositiveIntegerField(default=0, help_text="Deployment and unassigned lines stored.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["month", "pricing_kind"], name="spend_snapshot_month_kind")]

    def __str__(self) -> str:
        return f"spend {self.month} ({self.pricing_kind}) at {self.computed_at:%Y-%m-%d %H:%M}"


class SpendSnapshotLine(models.Model):
    """One cluster or deployment line of a stored report, in the report's order (``position``)."""

    class Kind(models.TextChoices):
        CLUSTER = "cluster", "Cluster"
        DEPLOYMENT = "deployment", "Deployment"
        UNASSIGNED = "unassigned", "A cluster's unassigned GPUs"

    snapshot = models.ForeignKey(SpendSnapshot, on_delete=models.CASCADE, related_name="line_rows")
    position = models.PositiveIntegerField()
    kind = models.CharField(max_length=10, choices=Kind.choices)
    name = models.CharField(max_length=200)
    cost_usd = models.DecimalField(
        max_digits=16, decimal_places=2, null=True, help_text="Spent + projected; empty: unpriced."
    )
    line = models.JSONField(help_text="The line as the report writes it (planner.spend).")

    class Meta:
        indexes = [
            models.Index(fields=["snapshot", "kind", "position"], name="spend_line_order"),
            models.Index(fields=["snapshot", "kind", "name"], name="spend_line_name"),
            # the page's costliest priced lines (planner.spend._costliest): read in this order and stopped at the
            # limit, not all of a report's lines sorted per request
            models.Index(fields=["snapshot", "-cost_usd", "position"], name="spend_line_cost"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"
