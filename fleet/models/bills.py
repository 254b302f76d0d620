"""Cloud bills: FOCUS cost and usage files as imported (``fleet.bills``), their charge rows, and the
dated exchange rates that let a bill in another currency count in the fleet's USD."""

from __future__ import annotations

import uuid
from datetime import date, timedelta
from decimal import Decimal

from django.conf import settings
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models
from django.urls import reverse

from .base import TimeStamped
from .inventory import Cluster

#: The fleet's currency: every figure of the model is USD.
FLEET_CURRENCY = "USD"
#: A rate older than this (days before the charge) is not used: a bill's month needs its own rate.
RATE_MAX_AGE_DAYS = 31


class ExchangeRate(TimeStamped):
    """What one unit of ``currency`` was worth in USD on ``on`` (finance records it; a bill row in
    that currency uses the latest rate dated on or before its charge day, at most
    ``RATE_MAX_AGE_DAYS`` older)."""

    currency = models.CharField(
        max_length=3, validators=[RegexValidator(r"^[A-Z]{3}\Z", "An ISO 4217 code: three capital letters.")]
    )
    on = models.DateField(help_text="The day the rate is quoted for.")
    usd_per_unit = models.DecimalField(
        max_digits=18, decimal_places=8, validators=[MinValueValidator(Decimal("0.00000001"))]
    )
    source = models.TextField(blank=True, help_text="Where the rate comes from (a central bank's reference rate).")

    class Meta:
        ordering = ["currency", "-on"]
        constraints = [models.UniqueConstraint(fields=["currency", "on"], name="exchange_rate_once_a_day")]

    def __str__(self) -> str:
        return f"1 {self.currency} = {self.usd_per_unit} USD on {self.on}"


class CloudBill(models.Model):
    """One uploaded FOCUS file and its import: the file waits under ``BILL_DIR`` until a worker reads
    it (then it is deleted); the import's state, progress and counts; the first problem that refused it
    (row, column, message), in which case none of its rows is stored."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        READING = "reading", "reading (checking every row)"
        WRITING = "writing", "writing rows"
        DONE = "done"
        REFUSED = "refused"
        FAILED = "failed"

    FINISHED = (Status.DONE, Status.REFUSED, Status.FAILED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    created = models.DateTimeField(auto_now_add=True)
    filename = models.CharField(max_length=255)
    stored_path = models.CharField(max_length=500, blank=True, help_text="The upload until it is imported.")
    size_bytes = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    tag_key = models.CharField(max_length=128, help_text="The tag whose value names a row's cluster.")
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    progress = models.PositiveSmallIntegerField(default=0, help_text="0..100")
    lease_until = models.DateTimeField(null=True, blank=True)
    lease_token = models.CharField(max_length=32, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    rows_read = models.PositiveIntegerField(default=0)
    rows_new = models.PositiveIntegerField(default=0)
    rows_duplicate = models.PositiveIntegerField(default=0)
    rows_matched = models.PositiveIntegerField(default=0)
    rows_unmatched = models.PositiveIntegerField(default=0)
    first_month = models.DateField(null=True, blank=True)
    last_month = models.DateField(null=True, blank=True)
    error_row = models.PositiveIntegerField(null=True, blank=True, help_text="Spreadsheet numbering: header = 1.")
    error_column = models.CharField(max_length=128, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.filename} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("bill", args=[self.pk])

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED

    @property
    def refusal(self) -> str:
        """The refusal as a sentence: ``row 7, column BillingCurrency: ...``."""
        if not self.error:
            return ""
        where = f"row {self.error_row}" if self.error_row else ""
        if self.error_column:
            where += f", column {self.error_column}" if where else f"column {self.error_column}"
        return f"{where}: {self.error}" if where else self.error


class BillRow(models.Model):
    """A charge row of a bill, as the import stored it (costs in the row's currency and in USD). A row
    is stored once whatever file brings it again: ``row_key`` is the hash of its cells with how many
    identical rows came before it in its file. ``month`` is its charge period's (a correction's is the
    period it corrects, not the billing period it arrived in)."""

    class MatchedBy(models.TextChoices):
        RESOURCE = "resource_id", "ResourceId"
        TAG = "tag", "tag"
        NONE = "", "unmatched"

    bill = models.ForeignKey(CloudBill, on_delete=models.CASCADE, related_name="rows")
    row_number = models.PositiveIntegerField(help_text="In its file, header = 1.")
    row_key = models.CharField(max_length=64, unique=True)
    month = models.DateField(help_text="The first day of the charge period's month (UTC).")
    charge_period_start = models.DateTimeField()
    charge_period_end = models.DateTimeField()
    billing_period_start = models.DateTimeField()
    charge_category = models.CharField(max_length=16)
    charge_class = models.CharField(max_length=16, blank=True)
    currency = models.CharField(max_length=3)
    billed_cost = models.DecimalField(max_digits=24, decimal_places=10)
    effective_cost = models.DecimalField(max_digits=24, decimal_places=10)
    usd_per_unit = models.DecimalField(max_digits=18, decimal_places=8, default=Decimal(1))
    billed_cost_usd = models.DecimalField(max_digits=28, decimal_places=10)
    effective_cost_usd = models.DecimalField(max_digits=28, decimal_places=10)
    resource_id = models.CharField(max_length=512, blank=True)
    tag_value = models.CharField(max_length=200, blank=True, help_text="The bill's tag key's value, if any.")
    cluster = models.ForeignKey(Cluster, null=True, blank=True, on_delete=models.SET_NULL, related_name="bill_rows")
    matched_by = models.CharField(max_length=16, choices=MatchedBy.choices, blank=True)
    service_name = models.CharField(max_length=200, blank=True)
    charge_description = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["bill", "row_number"]
        indexes = [models.Index(fields=["month", "cluster"], name="billrow_month_cluster")]

    def __str__(self) -> str:
        return f"row {self.row_number} of {self.bill_id}"


def rate_window(on: date) -> tuple[date, date]:
    """The dates a rate for a charge on ``on`` may carry (``RATE_MAX_AGE_DAYS`` before it, or that day)."""
    return on - timedelta(days=RATE_MAX_AGE_DAYS), on
