"""Serializer fields the API's serializers share, each bounded before it parses or looks anything up
(``fleet.inputs`` says how far): a record's slug, a related record's, and JSON."""

from __future__ import annotations

import json
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from fleet import inputs
from fleet.models.base import SLUG_MAX_CHARS


class SlugReference(serializers.CharField):
    """A record named by its slug, which a service looks up: at most ``SLUG_MAX_CHARS`` characters."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", SLUG_MAX_CHARS)
        super().__init__(**kwargs)


@extend_schema_field({"type": "string", "maxLength": SLUG_MAX_CHARS})
class SlugRelation(serializers.SlugRelatedField):
    """A related record given by its slug: a value longer than any slug is no such record, refused
    without a query (DRF's own message)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("slug_field", "slug")
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, str) and len(data) > SLUG_MAX_CHARS:
            self.fail("does_not_exist", slug_name=self.slug_field, value=f"{data[:SLUG_MAX_CHARS]}...")
        return super().to_internal_value(data)


class BoundedJSONField(serializers.JSONField):
    """DRF's JSONField with at most ``max_chars`` characters of JSON. A JSON body was parsed by
    ``fleet.api.parsers.JSONParser`` (depth and digits capped); a form or multipart body's value is
    JSON text DRF parses itself, so its size, depth and numbers' digits are checked first (Python's
    parser recurses: 100,000 brackets were a RecursionError, a 500). ``allow_non_finite``: JSON's
    ``Infinity`` and ``NaN`` are taken (a model import's config; the engine decides what they mean),
    else refused as DRF refuses them."""

    default_error_messages = {
        "too_large": inputs.JSON_SIZE_MESSAGE,
        "too_deep": inputs.DEPTH_MESSAGE,
        "too_many_digits": inputs.DIGITS_MESSAGE,
    }

    def __init__(
        self, *, max_chars: int = inputs.MAX_JSON_FIELD_CHARS, allow_non_finite: bool = False, **kwargs: Any
    ) -> None:
        self.max_chars = max_chars
        self.allow_non_finite = allow_non_finite
        super().__init__(**kwargs)
        if max_chars != inputs.MAX_JSON_FIELD_CHARS:
            self.error_messages["too_large"] = f"More than {max_chars:,} characters of JSON."

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, (str, bytes)) and (self.binary or getattr(data, "is_json_string", False)):
            text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
            if inputs.json_depth(text) > inputs.MAX_JSON_DEPTH:
                self.fail("too_deep")
            if inputs.has_long_number(text):
                self.fail("too_many_digits")
            if len(text) > self.max_chars:
                self.fail("too_large")
        value = self._non_finite_value(data) if self.allow_non_finite else super().to_internal_value(data)
        if len(json.dumps(value, cls=self.encoder)) > self.max_chars:
            self.fail("too_large")
        return value

    def _non_finite_value(self, data: Any) -> Any:
        """The value, JSON's non-finite constants taken (DRF's own parse and check refuse them)."""
        if isinstance(data, (str, bytes)) and (self.binary or getattr(data, "is_json_string", False)):
            try:
                return json.loads(data)
            except ValueError:
                self.fail("invalid")
        return data
