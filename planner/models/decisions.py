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

    #: What each tier means (the glossary page, ``planner.views.glossary``; the design's tiers, with buying).
    TIER_MEANINGS: dict[int, str] = {
        Tier.RENT: "Rent a cluster by the hour: the only tier that runs the big model. Its GPUs bill the same "
        "busy or idle, so it wins only while it stays busy enough (the breakeven volume of rent vs API).",
        Tier.SMALL_MODEL: "A smaller model on one accelerator: its parameters times bytes per parameter, plus "
        "the KV cache, plus about 2 GB of runtime, must fit in that one GPU's memory (16 GB: a 7B model at "
        "4-bit; 24 GB: 14B; 48 GB: 32B; 80 GB: 70B at 4-bit or a 30B-class MoE at 8-bit).",
        Tier.API: "A hosted API behind a gateway of our own (keys, logs, retries, rate limits, budgets): "
        "paid per token, nothing idle to pay for.",
        Tier.BUY: "Buy (own) the GPUs: the purchase depreciated over its useful life, plus power, "
        "colocation, support and staff, whether busy or idle.",
    }

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

    @property
    def deployment_slug(self) -> str:
        """The deployment the comparison priced ("" when it priced none), as frozen in its inputs."""
        inputs = self.inputs or {}
        frozen = (inputs.get("deployment") or {}).get("slug")
        return str(frozen or (inputs.get("request") or {}).get("deployment") or "")

    @property
    def sku_name(self) -> str:
        """The SKU the comparison rented ("" when unknown), as frozen in its inputs."""
        inputs = self.inputs or {}
        return str((inputs.get("sku") or {}).get("name") or (inputs.get("request") or {}).get("sku") or "")

    @property
    def review_state(self) -> str:
        """What the reviews say of it: ``superseded``, ``not reviewed yet``,
        ``holds``, ``no longer holds`` or ``not checked`` (its comparison could not be recomputed), with
        ``, being reviewed again`` when an input changed since."""
        if not self.is_current:
            return "superseded"
        review = getattr(self, "review", None)
        if review is None or review.checked_at is None:
            return "not reviewed yet"
        state = {True: "holds", False: "no longer holds"}.get(review.still_holds, "not checked")
        return f"{state}, being reviewed again" if review.stale_since is not None else state

    @classmethod
    def record(cls, *, workload: Workload, tier: int, note: str, figures: dict, inputs: dict, user: Any) -> Decision:
        """Record a new decision (superseding the workload's current one)."""
        decision = cls(workload=workload, tier=tier, note=note, figures=figures, inputs=inputs, decided_by=user)
        decision.save()
        return decision
