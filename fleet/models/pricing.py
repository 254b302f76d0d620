"""Dated prices: GPU rental quotes and hosted-API token prices."""

from __future__ import annotations

from datetime import date

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Exists, OuterRef, Q
from django.urls import reverse

from fleet.validators import non_negative, positive
from planner.engine import Quote

from .base import SlugField, TimeStamped
from .inventory import HardwareSku
from .specs import ModelSpec


class GpuQuoteQuerySet(models.QuerySet):
    """Quotes in force, filtered in SQL with the rules of ``planner.engine.costs.quotes``.

    A quote is in force on a day when it was quoted on or before it and its ``valid_until``
    (inclusive) has not passed. Per SKU, provider, pricing kind and ``list_price`` the latest such
    quote wins (same day: the cheaper, then the larger id); across providers the cheapest of the
    fleet's own quotes (then the latest quote, then the provider name): a public list price is shown
    beside them and never taken as the SKU's price (``cheapest``). ``tests/test_quotes_in_force.py``
    checks it against the engine.
    """

    def valid_on(self, on: date) -> GpuQuoteQuerySet:
        """Quotes quoted on or before ``on`` that have not expired by then."""
        return self.filter(Q(valid_until__isnull=True) | Q(valid_until__gte=on), quoted_on__lte=on)

    def in_force_on(self, on: date) -> GpuQuoteQuerySet:
        """The quotes of every SKU in force on ``on``: per SKU, provider, pricing kind and
        ``list_price``, the latest (the pages mark them; pricing asks ``in_force`` per SKU)."""
        superseding = (
            GpuQuote.objects.filter(
                sku=OuterRef("sku"),
                provider=OuterRef("provider"),
                pricing_kind=OuterRef("pricing_kind"),
                list_price=OuterRef("list_price"),
            )
            .valid_on(on)
            .filter(
                Q(quoted_on__gt=OuterRef("quoted_on"))
                | Q(quoted_on=OuterRef("quoted_on"), usd_per_gpu_hour__lt=OuterRef("usd_per_gpu_hour"))
                | Q(
                    quoted_on=OuterRef("quoted_on"),
                    usd_per_gpu_hour=OuterRef("usd_per_gpu_hour"),
                    pk__gt=OuterRef("pk"),
                )
            )
        )
        return self.valid_on(on).exclude(Exists(superseding))

    def in_force(self, sku: HardwareSku, on: date) -> GpuQuoteQuerySet:
        """The quotes of ``sku`` in force on ``on``: one per provider and pricing kind (the latest),
        and apart from those, one public list price per provider and kind (the latest)."""
        return self.filter(sku=sku).in_force_on(on)

    def cheapest(self, kind: str = "on-demand") -> Quote | None:
        """The cheapest quote of ``kind`` among these, public list prices left out (after
        ``in_force``: the price in force), as the engine's ``Quote`` (what pricing, plans and decision
        snapshots use); None when none."""
        row = self.cheapest_row(kind)
        return None if row is None else Quote.from_record(row, sku=row.sku.slug)

    def cheapest_row(self, kind: str = "on-demand") -> GpuQuote | None:
        """The row ``cheapest`` converts (the pages mark it as the price in force)."""
        return (
            self.filter(pricing_kind=kind, list_price=False)
            .select_related("sku")
            .order_by("usd_per_gpu_hour", "-quoted_on", "provider")
            .first()
        )


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
    list_price = models.BooleanField(
        "public list price",
        default=False,
        help_text="A provider's published price list, kept for comparison: it prices a cluster at this provider "
        "(spend), but is never taken as the SKU's price for plans, what-if, rent vs API or /metrics.",
    )

    objects = GpuQuoteQuerySet.as_manager()

    class Meta:
        ordering = ["sku", "-quoted_on", "usd_per_gpu_hour"]
        indexes = [models.Index(fields=["sku", "quoted_on"])]
        verbose_name = "GPU quote"

    def __str__(self) -> str:
        return f"{self.sku} @ {self.usd_per_gpu_hour} USD/h ({self.provider}, {self.quoted_on})"

    def get_absolute_url(self) -> str:
        return reverse("api:gpuquote-detail", kwargs={"pk": self.pk})

    def clean(self) -> None:
        if self.valid_until and self.quoted_on and self.valid_until < self.quoted_on:
            raise ValidationError({"valid_until": "A quote cannot expire before the date it was quoted."})


class ApiPrice(TimeStamped):
    """A hosted API's per-million-token prices, as published on a date."""

    #: Its three prices, USD per million tokens (the breakeven service, the API and the admin).
    PRICES = ("input_cache_hit_usd_per_mtok", "input_cache_miss_usd_per_mtok", "output_usd_per_mtok")

    slug = SlugField()
    provider = models.CharField(max_length=100)
    model_name = models.CharField(max_length=100, help_text="The provider's name for the model, as its API takes it.")
    model = models.ForeignKey(
        ModelSpec,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="api_prices",
        help_text="The model spec this price is for: rent vs API compares it with the model the GPUs serve.",
    )
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
