"""Plan runs: a layout search for a model and workload over candidate SKUs, run by Celery."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.urls import reverse

from fleet.models import ModelSpec, Workload

#: Which prices a plan ranks by: each SKU's price in force (``planner.engine.price_in_force``: the
#: cheapest provider's quote to the fleet, else the cheapest public list price; assumptions never),
#: or the cheapest public list price in force per SKU (the catalogue's dated provider price lists;
#: fleet/catalog/README.md). SKUs without one are skipped and named.
PRICE_BASES: dict[str, str] = {
    "fleet": "each SKU's price in force (a provider's quote to the fleet, else the cheapest public list price)",
    "list": "the cheapest public list price in force (providers' published on-demand prices)",
}
#: Each price basis by name, as lists, a plan's header and the compare page show it.
PRICE_BASIS_NAMES: dict[str, str] = {"fleet": "Fleet prices in force", "list": "Public list prices"}


class PlanQuerySet(models.QuerySet):
    def listed(self) -> PlanQuerySet:
        """Plans as a list reads them: everything but the result and the progress log (tens of KB a
        plan; a list shows ``summary``, the result's headline, and the result is on the plan itself)."""
        return self.defer("result", "progress_log")


class Plan(models.Model):
    """One search request and its outcome. The id doubles as the Celery task id. A run holds a
    lease (``lease_token`` until ``lease_expires``, beating ``lease_heartbeat``), so a task
    delivered twice (``acks_late``) finds the plan claimed or finished and does nothing, a plan
    whose run died is taken over once its heartbeat goes silent (seconds) or its lease expires,
    and only the run holding the lease writes the result."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    FINISHED = (Status.DONE, Status.FAILED, Status.CANCELLED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    model = models.ForeignKey(ModelSpec, on_delete=models.PROTECT, related_name="plans")
    workload = models.ForeignKey(Workload, on_delete=models.PROTECT, related_name="plans")
    skus = models.ManyToManyField("fleet.HardwareSku", related_name="plans")
    options = models.JSONField(default=dict, help_text="Search options and the GPU prices (with dates) used.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    progress = models.PositiveSmallIntegerField(default=0, help_text="0..100")
    progress_log = models.JSONField(default=list, help_text="Progress as the worker reported it: [{at, progress}].")
    candidates_evaluated = models.PositiveIntegerField(default=0)
    cancel_requested = models.BooleanField(default=False)
    result = models.JSONField(null=True, blank=True)
    summary = models.JSONField(
        null=True,
        blank=True,
        help_text="The result's headline for lists (planner.plans.plan_summary), written with the result.",
    )
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    # The lease of the run holding the plan (planner.plans.claim): renewed while the search reports
    # progress, beaten every few seconds by the run's own thread while its process lives; once it
    # expires or the beats stop the plan is taken over (planner.plans.recover_plans).
    lease_expires = models.DateTimeField(null=True, blank=True, db_index=True)
    lease_token = models.CharField(max_length=32, blank=True, help_text="Which run holds the lease.")
    lease_heartbeat = models.DateTimeField(
        null=True, blank=True, help_text="The last beat of the run holding the lease (its process is alive)."
    )
    lease_owner = models.CharField(
        max_length=200, blank=True, help_text="Where the run holding the lease runs: host and process id."
    )
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Runs started (1 unless a worker died).")

    objects = PlanQuerySet.as_manager()

    class Meta:
        ordering = ["-created"]
        # change_plan lets a user cancel the plans they started; this lets them cancel anyone's.
        permissions = [("cancel_any_plan", "Can cancel plans started by others")]

    def __str__(self) -> str:
        return f"Plan {self.id} ({self.model} / {self.workload}: {self.status})"

    def get_absolute_url(self) -> str:
        return reverse("api:plan-detail", kwargs={"pk": self.pk})

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED

    @property
    def price_basis(self) -> str:
        """Which prices the plan ranked by (``PRICE_BASES``; plans from before the
        choice existed ranked by the fleet's)."""
        return (self.options or {}).get("price_basis") or "fleet"

    @property
    def price_basis_name(self) -> str:
        """The price basis by name (``PRICE_BASIS_NAMES``)."""
        return PRICE_BASIS_NAMES.get(self.price_basis, self.price_basis)

    @property
    def price_basis_text(self) -> str:
        """What the price basis means (``PRICE_BASES``)."""
        return PRICE_BASES.get(self.price_basis, "")
