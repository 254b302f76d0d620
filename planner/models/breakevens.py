"""Stored answers about a workload, kept current by the workers: its rent-vs-API breakeven, and the
review of its current decision against today's inputs (``planner.reviews`` computes and writes both;
pages and the API only read them).

A record's state is decided here, from what it records, so every reader says the same (the same rules
as ``fleet.CapacitySnapshot``): ``current`` (computed, nothing it rests on changed since, younger than
``SNAPSHOT_MAX_AGE_S``), ``stale`` (an input changed after it was computed: ``stale_since``; or the
last recomputation failed and the figures are the previous ones; or it is too old), ``failed`` (the
only recomputation raised: no figures), ``pending`` (never computed).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import models

from fleet.models.snapshots import StoredAnswer, answer_state


def favoured(figures: dict[str, Any]) -> str | None:
    """The side a comparison's figures favour: of three (``cheapest``) when it costed buying, else rent or
    API (``cheaper``); None: no recommendation."""
    return figures.get("cheapest") if figures.get("buy") else figures.get("cheaper")


class WorkloadBreakeven(StoredAnswer):
    """A workload's rent-vs-API comparison at its declared volume and at the volume its deployments'
    polls observed over the last 30 days, computed by a worker (one row per workload, replaced by each
    recomputation; a failed one keeps the previous figures, with the error)."""

    workload = models.OneToOneField(
        "fleet.Workload", on_delete=models.CASCADE, related_name="breakeven", primary_key=True
    )
    computed_at = models.DateTimeField(null=True, blank=True, help_text="When the figures were computed.")
    figures = models.JSONField(
        default=dict,
        help_text="declared and observed: the breakeven service's figures at each volume (cheaper: rent/api); "
        "observed_volume: the polls' coverage; deployments, api_price, assumptions.",
    )
    inputs = models.JSONField(
        default=dict, help_text="What the figures rest on: the deployment, API price and GPU quotes (ids, slugs)."
    )
    unavailable = models.CharField(
        max_length=300, blank=True, default="", help_text="Why no comparison can be made (no deployment, no price)."
    )
    declared_monthly_output_tokens = models.BigIntegerField(null=True, blank=True)
    observed_monthly_output_tokens = models.BigIntegerField(
        null=True, blank=True, help_text="Output tokens a 30-day month at the observed rate (None: no polls)."
    )
    failed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["workload_id"]

    def __str__(self) -> str:
        return f"breakeven of workload {self.workload_id} @ {self.computed_at or 'never'}"

    def state(self, now: datetime | None = None) -> str:
        """``current``, ``stale``, ``failed`` or ``pending`` (module docstring)."""
        return self.answer_state(now)


class DecisionReview(StoredAnswer):
    """A current decision's comparison recomputed on today's inputs: whether it still holds, why, and
    which figures moved (one row per decision, replaced by each review)."""

    ANSWERED_AT = "checked_at"

    decision = models.OneToOneField(
        "planner.Decision", on_delete=models.CASCADE, related_name="review", primary_key=True
    )
    checked_at = models.DateTimeField(null=True, blank=True)
    still_holds = models.BooleanField(null=True, help_text="None: the comparison could not be recomputed.")
    reason = models.TextField(blank=True, default="", help_text="One sentence: what flipped, or that it holds.")
    moved = models.JSONField(default=list, help_text="Each figure that moved: {name, was, now}.")
    figures = models.JSONField(default=dict, help_text="The recomputed comparison (the breakeven service's figures).")

    class Meta:
        ordering = ["decision_id"]

    def __str__(self) -> str:
        return f"review of decision {self.decision_id} @ {self.checked_at or 'never'}"

    @property
    def favours(self) -> str | None:
        """``rent``, ``api`` or ``buy``: what the recomputed comparison finds cheapest (None: no
        recommendation; of three when the decision costed buying, ``planner.reviews.favoured``)."""
        return favoured(self.figures or {})

    def state(self, now: datetime | None = None) -> str:
        """``current``, ``stale`` (an input changed since), ``pending``; a review that could not recompute
        the comparison is current with ``still_holds`` None (its reason says why)."""
        return answer_state(computed_at=self.checked_at, error="", stale_since=self.stale_since, now=now)
