"""Plan runs: a layout search for a model and workload over candidate SKUs, run by Celery."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.urls import reverse

from fleet.models import ModelSpec, Workload


class Plan(models.Model):
    """One search request and its outcome. The id doubles as the Celery task id, so a task
    delivered twice (``acks_late``) finds the plan already claimed or finished and does nothing."""

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
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"Plan {self.id} ({self.model} / {self.workload}: {self.status})"

    def get_absolute_url(self) -> str:
        return reverse("api:plan-detail", kwargs={"pk": self.pk})

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED
