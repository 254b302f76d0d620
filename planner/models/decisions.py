"""Rent-versus-API decisions: append-only, each with a frozen snapshot of what it was based on."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.urls import reverse

from fleet.errors import ConflictError
from fleet.models import Workload


class ImmutableRecordError(ConflictError):
    """A recorded decision cannot be changed or deleted; record a new one that supersedes it."""


class Decision(models.Model):
    """A dated choice of serving tier for a workload, with the figures and inputs behind it.

    Append-only: ``save()`` refuses to update a stored decision and ``delete()`` refuses to
    remove one. A new decision for the same workload supersedes the previous one.
    """

    class Tier(models.IntegerChoices):
        RENT = 1, "Rent a cluster by the hour"
        SMALL_MODEL = 2, "A smaller model on one accelerator"
        API = 3, "Hosted API with our own gateway"
        BUY = 4, "Buy (own) the GPUs"

    workload = models.ForeignKey(Workload, on_delete=models.PROTECT, related_name="decisions")
    tier = models.PositiveSmallIntegerField(choices=Tier.choices)
    figures = models.JSONField(help_text="The computed figures (breakeven result) the decision was made on.")
    inputs = models.JSONField(
        help_text="Frozen snapshot of every input: quotes with their dates, API prices, workload, model and SKU."
    )
    note = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="decisions"
    )
    decided_by_name = models.CharField(max_length=150, help_text="Kept if the user account is removed.")
    decided_at = models.DateTimeField(auto_now_add=True)
    supersedes = models.OneToOneField(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="superseded_by"
    )

    class Meta:
        ordering = ["-decided_at", "-id"]
        indexes = [models.Index(fields=["workload", "decided_at"])]

    def __str__(self) -> str:
        return f"{self.workload} → {self.get_tier_display()} ({self.decided_at:%Y-%m-%d})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None:
            raise ImmutableRecordError("A recorded decision cannot be changed; record a new one instead.")
        with transaction.atomic():
            # Lock the workload's row so two simultaneous decisions for it cannot both supersede the same one.
            Workload.objects.select_for_update().filter(pk=self.workload_id).first()
            previous = (
                Decision.objects.filter(workload_id=self.workload_id, superseded_by__isnull=True)
                .order_by("-decided_at", "-id")
                .first()
            )
            self.supersedes = previous
            if self.decided_by is not None and not self.decided_by_name:
                self.decided_by_name = self.decided_by.get_username()
            super().save(*args, **kwargs)

    def get_absolute_url(self) -> str:
        return reverse("api:decision-detail", kwargs={"pk": self.pk})

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise ImmutableRecordError("A recorded decision cannot be deleted.")

    @property
    def is_current(self) -> bool:
        return not hasattr(self, "superseded_by")

    @classmethod
    def record(cls, *, workload: Workload, tier: int, note: str, figures: dict, inputs: dict, user: Any) -> Decision:
        """Record a new decision (superseding the workload's current one)."""
        decision = cls(workload=workload, tier=tier, note=note, figures=figures, inputs=inputs, decided_by=user)
        decision.save()
        return decision
