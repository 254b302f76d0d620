"""Dated prices: GPU rental quotes and hosted-API token prices."""

from __future__ import annotations

from datetime import date

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.urls import reverse

from fleet.validators import non_negative, positive
from planner.engine import Quote, basis_of

from .base import SlugField, TimeStamped
from .inventory import HardwareSku
from .specs import ModelSpec


class GpuQuoteQuerySet(models.QuerySet):
    """SQL prefilters only: which quote is in force is decided by one engine rule,
    ``planner.engine.price_in_force``, asked through ``fleet.prices.PriceBook``."""

    def valid_on(self, on: date) -> GpuQuoteQuerySet:
        """Quotes quoted on or before ``on`` that have not expired by then (a prefilter: a valid quote
        may still be superseded by a later one of its provider)."""
        return self.filter(Q(valid_until__isnull=True) | Q(valid_until__gte=on), quoted_on__lte=on)

    def as_quotes(self) -> list[Quote]:
        """These rows as the engine's ``Quote`` (SKU slug, provider name), in one query."""
        rows = self.values(
            "id",
            "sku__slug",
            "provider__name",
            "usd_per_gpu_hour",
            "pricing_kind",
            "quoted_on",
            "valid_until",
            "list_price",
        )
        return [
            Quote(
                sku=r["sku__slug"],
                provider=r["provider__name"] or "",
                usd_per_gpu_hour=r["usd_per_gpu_hour"],
                pricing_kind=r["pricing_kind"],
                quoted_on=r["quoted_on"],
                valid_until=r["valid_until"],
                id=r["id"],
                list_price=r["list_price"],
                assumption=r["provider__name"] is None,
            )
            for r in rows
        ]


class GpuQuote(TimeStamped):
    """A provider's price for one GPU-hour of a SKU, as quoted on a date."""

    class Kind(models.TextChoices):
        ON_DEMAND = "on-demand", "On-demand"
        RESERVED = "reserved", "Reserved"
        SPOT = "spot", "Spot"

    sku = models.ForeignKey(HardwareSku, on_delete=models.PROTECT, related_name="quotes")
    provider = models.ForeignKey(
        "fleet.Provider",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="quotes",
        help_text="Who quoted it. Blank: an assumption no provider issued (never in force; a comparison may pick it).",
    )
    usd_per_gpu_hour = models.DecimalField("USD per GPU-hour", max_digits=10, decimal_places=4, validators=[positive])
    pricing_kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.ON_DEMAND)
    quoted_on = models.DateField()
    valid_until = models.DateField(null=True, blank=True)
    source = models.TextField(blank=True)
    list_price = models.BooleanField(
        "public list price",
        default=False,
        help_text="A provider's published price list: it prices a cluster at this provider when the fleet holds "
        "no quote of its own from it, and a SKU when no provider quoted the fleet.",
    )

    objects = GpuQuoteQuerySet.as_manager()

    class Meta:
        ordering = ["sku", "-quoted_on", "usd_per_gpu_hour"]
        indexes = [models.Index(fields=["sku", "quoted_on"])]
        verbose_name = "GPU quote"

    def __str__(self) -> str:
        return f"{self.sku} @ {self.usd_per_gpu_hour} USD/h ({self.provider or 'assumption'}, {self.quoted_on})"

    @property
    def basis(self) -> str:
        """``own``, ``list`` or ``assumption`` (the engine's ``basis_of``)."""
        return basis_of(list_price=self.list_price, assumption=self.provider_id is None)

    def get_absolute_url(self) -> str:
        return reverse("api:gpuquote-detail", kwargs={"pk": self.pk})

    def clean(self) -> None:
        if self.valid_until and self.quoted_on and self.valid_until < self.quoted_on:
            raise ValidationError({"valid_until": "A quote cannot expire before the date it was quoted."})
        if self.provider_id is None and self.list_price:
            raise ValidationError({"provider": "A public list price is a provider's: name the provider."})


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
