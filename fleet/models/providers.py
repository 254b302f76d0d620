"""Who rents or runs the GPUs: a cluster's provider and who issued a GPU quote.

A provider is a record, picked from a list, so "CoreWeave" and "coreweave" are one provider and a
cluster's price in force (``planner.engine.price_in_force``) finds its provider's quotes. Names
are unique case-insensitively; ``Provider.objects.named`` finds one that way.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models.functions import Lower
from django.urls import reverse

from .base import TimeStamped


class ProviderQuerySet(models.QuerySet):
    def named(self, name: str) -> Provider | None:
        """The provider called ``name`` whatever its case (surrounding blanks ignored), or None."""
        return self.filter(name__iexact=name.strip()).first()


class ProviderManager(models.Manager.from_queryset(ProviderQuerySet)):
    def get_by_natural_key(self, name: str) -> Provider:
        return self.get(name__iexact=name)

    def ensure(self, name: str, kind: str | None = None) -> Provider:
        """The provider called ``name`` (any case), made with ``kind`` (default ``cloud``) when there is
        none: the catalogue loader's and the tests' way to name one."""
        found = self.named(name)
        if found is not None:
            return found
        return self.create(name=name.strip(), kind=kind or Provider.Kind.CLOUD)


class Provider(TimeStamped):
    """A company or site that rents or runs GPUs (its quotes and its clusters name it), or that sells a
    hosted model API by the token (its API prices name it)."""

    class Kind(models.TextChoices):
        CLOUD = "cloud", "Cloud"
        NEO_CLOUD = "neo-cloud", "Neo-cloud (GPU specialist)"
        OWN = "own", "Own data centre"
        MODEL_API = "model-api", "Hosted model API (per token)"

    name = models.CharField(max_length=100, help_text="Unique whatever the case: 'CoreWeave' and 'coreweave' are one.")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.CLOUD)
    source = models.TextField(blank=True, help_text="Where the provider and its kind were read (the catalogue's rows).")

    objects = ProviderManager()

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(Lower("name"), name="provider_name_unique_any_case")]

    def __str__(self) -> str:
        return self.name

    def natural_key(self) -> tuple[str]:
        return (self.name,)

    def get_absolute_url(self) -> str:
        return reverse("api:provider-detail", kwargs={"pk": self.pk})

    def validate_unique(self, exclude=None) -> None:
        super().validate_unique(exclude)
        if self.name and Provider.objects.filter(name__iexact=self.name.strip()).exclude(pk=self.pk).exists():
            raise ValidationError({"name": f"A provider called {self.name!r} exists already (names ignore case)."})
