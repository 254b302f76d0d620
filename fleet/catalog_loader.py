"""Load the reference catalogue (fleet/catalog/*.json) idempotently.

Re-running updates existing rows in place (matched by slug; quotes by SKU, provider, kind
and date) and never duplicates. Every row goes through ``full_clean`` so a bad figure in the
catalogue fails loudly with the file, the item and the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Model

from fleet.catalog.reference import model_row
from fleet.models import ApiPrice, GpuQuote, HardwareSku, ModelSpec, Provider

CATALOG_DIR = Path(__file__).resolve().parent / "catalog"


@dataclass
class LoadReport:
    created: dict[str, int] = field(default_factory=dict)
    updated: dict[str, int] = field(default_factory=dict)

    def count(self, kind: str, created: bool) -> None:
        bucket = self.created if created else self.updated
        bucket[kind] = bucket.get(kind, 0) + 1

    def summary(self) -> str:
        kinds = sorted(set(self.created) | set(self.updated))
        return ", ".join(f"{k}: {self.created.get(k, 0)} new, {self.updated.get(k, 0)} updated" for k in kinds)


class CatalogError(Exception):
    """A catalogue item failed validation."""


def _read(name: str, directory: Path) -> list[dict[str, Any]]:
    with (directory / name).open() as fh:
        return json.load(fh)


def _upsert(model: type[Model], lookup: dict[str, Any], values: dict[str, Any], where: str) -> bool:
    """Create or update one row after validating it; returns True when created."""
    instance = model.objects.filter(**lookup).first()
    created = instance is None
    if created:
        instance = model(**lookup)
    for key, value in values.items():
        setattr(instance, key, value)
    try:
        instance.full_clean()
    except ValidationError as exc:
        raise CatalogError(f"{where}: {exc.message_dict}") from None
    instance.save()
    return created


def _fields(model: type[Model], item: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in model._meta.get_fields() if getattr(f, "concrete", False)}
    unknown = set(item) - names
    if unknown:
        raise CatalogError(f"{model.__name__}: unknown keys {sorted(unknown)}")
    return dict(item)


@transaction.atomic
def load_catalog(directory: Path = CATALOG_DIR) -> LoadReport:
    """Load SKUs, model specs, GPU quotes and API prices; all or nothing."""
    report = LoadReport()
    for i, item in enumerate(_read("skus.json", directory)):
        values = _fields(HardwareSku, item)
        slug = values.pop("slug")
        report.count("skus", _upsert(HardwareSku, {"slug": slug}, values, f"skus.json[{i}] {slug}"))
    for i, item in enumerate(_read("models.json", directory)):
        try:
            item = model_row(item, directory)  # a row naming its config.json: figures derived from it
        except (ValueError, OSError) as exc:
            raise CatalogError(f"models.json[{i}]: {exc}") from None
        values = _fields(ModelSpec, item)
        slug = values.pop("slug")
        values["expert_weight_format"] = values.get("expert_weight_format") or ""
        report.count("models", _upsert(ModelSpec, {"slug": slug}, values, f"models.json[{i}] {slug}"))
    for i, item in enumerate(_read("providers.json", directory)):
        values = _fields(Provider, item)
        name = values.pop("name")
        found = Provider.objects.named(name)
        if found is None:
            report.count("providers", _upsert(Provider, {"name": name}, values, f"providers.json[{i}] {name}"))
        else:
            report.count("providers", _upsert(Provider, {"pk": found.pk}, values, f"providers.json[{i}] {name}"))
    skus = {s.slug: s for s in HardwareSku.objects.all()}
    for i, item in enumerate(_read("gpu_quotes.json", directory)):
        values = dict(item)
        sku_slug = values.pop("sku")
        if sku_slug not in skus:
            raise CatalogError(f"gpu_quotes.json[{i}]: unknown SKU {sku_slug!r}")
        provider_name = values.pop("provider")
        provider = None if provider_name is None else Provider.objects.named(provider_name)
        if provider_name is not None and provider is None:
            raise CatalogError(f"gpu_quotes.json[{i}]: provider {provider_name!r} is not in providers.json")
        lookup = {
            "sku": skus[sku_slug],
            "provider": provider,
            "pricing_kind": values.pop("pricing_kind"),
            "quoted_on": values.pop("quoted_on"),
        }
        report.count("gpu quotes", _upsert(GpuQuote, lookup, values, f"gpu_quotes.json[{i}] {sku_slug}"))
    models = {m.slug: m for m in ModelSpec.objects.all()}
    for i, item in enumerate(_read("api_prices.json", directory)):
        values = _fields(ApiPrice, item)
        slug = values.pop("slug")
        provider = Provider.objects.named(values.get("provider") or "")
        if provider is None:
            raise CatalogError(f"api_prices.json[{i}]: provider {values.get('provider')!r} is not in providers.json")
        values["provider"] = provider.name  # its providers.json spelling
        if (model_slug := values.get("model")) is not None:
            if model_slug not in models:
                raise CatalogError(f"api_prices.json[{i}]: unknown model {model_slug!r}")
            values["model"] = models[model_slug]
        report.count("api prices", _upsert(ApiPrice, {"slug": slug}, values, f"api_prices.json[{i}] {slug}"))
    return report
