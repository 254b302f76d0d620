"""Dated prices: GPU rental quotes and hosted-API token prices."""

from __future__ import annotations

from datetime import date

from django.core.exceptions import ValidationError
from django.db import models
from django.urls import reverse

from fleet.validators import non_negative, positive
from planner.engine import Quote, quotes_in_force

from .base import SlugField, TimeStamped
from .inventory import HardwareSku


class GpuQuote(TimeStamped):
    """A provider's price for one GPU-hour of a SKU, as quoted on a date."""

    class Kind(models.TextChoices):
        ON_DEMAND = "on-demand", "On-demand"
        RESERVED = "reserved", "Reserved"
        SPOT = "spot", "Spot"

    sku = models.ForeignKey(HardwareSku, on_delete=models.PROTECT, related_name="quotes")
    provider = models.CharField(max_length=100)
    usd_per_gpu_hour = models.DecimalField("USD per GPU-hour", max_digits=10, decimal_places=4, validators=[positive])
    pricing_kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.ON_DEMAND)
    quoted_on = models.DateField()
    valid_until = models.DateField(null=True, blank=True)
    source = models.TextField(blank=True)

    class Meta:
        ordering = ["sku", "-quoted_on", "usd_per_gpu_hour"]
        indexes = [models.Index(fields=["sku", "quoted_on"])]
        verbose_name = "GPU quote"

    def __str__(self) -> str:
        return f"{self.sku} @ {self.usd_per_gpu_hour} USD/h ({self.provider}, {self.quoted_on})"

    def get_absolute_url(self) -> str:
        return reverse("api:gpuquote-detail", kwargs={"pk": self.pk})

    @classmethod
    def in_force(cls, sku: HardwareSku, on: date, kind: str = "on-demand") -> Quote | None:
        """The quote of ``kind`` in force for ``sku`` on ``on``: the latest quoted on or before it that
        has not expired, the cheapest across providers (``planner.engine.costs.quotes``)."""
        quotes = [Quote.from_record(q, sku=sku.slug) for q in cls.objects.filter(sku=sku, quoted_on__lte=on)]
        return quotes_in_force(quotes, on, sku=sku.slug).get(kind)

    def clean(self) -> None:
        if self.valid_until and self.quoted_on and self.valid_until < self.quoted_on:
            raise ValidationError({"valid_until": "A quote cannot expire before the date it was quoted."})


class ApiPrice(TimeStamped):
    """A hosted API's per-million-token prices, as published on a date."""

    slug = SlugField()
    provider = models.CharField(max_length=100)
    model_name = models.CharField(max_length=100)
    input_cache_hit_usd_per_mtok = models.DecimalField(
        "input, cache hit (USD / M tokens)", max_digits=10, decimal_places=4, validators=[non_negative]
    )
    input_cache_miss_usd_per_mtok = models.DecimalField(
        "input, cache miss (USD / M tokens)", max_digits=10, decimal_places=4, validators=[non_negative]
    )
    output_usd_per_mtok = models.DecimalField(
        "output (USD / M tokens)", max_digits=10, decimal_places=4, validators=[positive]
    )
    context_window = models.PositiveIntegerField(null=True, blank=True, validators=[positive])
    quoted_on = models.DateField()
    source = models.TextField(blank=True)

    class Meta:
        ordering = ["provider", "model_name", "-quoted_on"]
        verbose_name = "API price"

    def __str__(self) -> str:
        return f"{self.provider} {self.model_name} ({self.quoted_on})"

    def get_absolute_url(self) -> str:
        return reverse("api:apiprice-detail", kwargs={"slug": self.slug})
