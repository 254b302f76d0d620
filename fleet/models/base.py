"""Abstract bases and fields shared by every record."""

from typing import Any

from django.core.validators import RegexValidator
from django.db import models

#: Slugs may contain dots, so model names like ``llama-3.1-70b`` keep their version.
validate_slug = RegexValidator(
    r"^[a-z0-9](?:[a-z0-9._-]*[a-z0-9])?\Z",
    "Use lowercase letters, digits, dots, hyphens or underscores (starting and ending with a letter or digit).",
    "invalid",
)


#: The longest slug a record has (the API's and the pages' references to a record are as long at most).
SLUG_MAX_CHARS = 64


class SlugField(models.CharField):
    """A URL-safe identifier that, unlike Django's SlugField, allows dots."""

    default_validators = [validate_slug]

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("max_length", SLUG_MAX_CHARS)
        kwargs.setdefault("unique", True)
        super().__init__(*args, **kwargs)


class TimeStamped(models.Model):
    """Created/updated timestamps (UTC)."""

    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class Sourced(models.Model):
    """Where a figure comes from and what was assumed to get it."""

    source = models.TextField(blank=True, help_text="Where these figures come from (datasheet, config, quote).")
    assumptions = models.JSONField(
        default=list, blank=True, help_text="Figures not published by the source, as a list of sentences."
    )

    class Meta:
        abstract = True


#: How a service's message names a record ("No model 'x'."); otherwise the model's verbose name.
RECORD_NOUNS = {"modelspec": "model", "hardwaresku": "SKU", "apiprice": "API price"}


def find_by_slug(queryset: models.QuerySet, slug: str | None, field: str, errors: dict[str, list[str]]) -> Any:
    """The record of ``queryset`` with ``slug`` (None when ``slug`` is None); when there is none,
    ``errors[field]`` says so (``No model 'x'.``) and None is returned. Services collect every
    such problem and raise them together as one ``InputError``."""
    if slug is None:
        return None
    found = queryset.filter(slug=slug).first()
    if found is None:
        meta = queryset.model._meta
        errors[field] = [f"No {RECORD_NOUNS.get(meta.model_name, meta.verbose_name)} {slug!r}."]
    return found
