"""Run the model's own validation (``full_clean``) from DRF serializers.

DRF does not call ``Model.clean()``; this mixin does, so the API, the admin and the pages
share one set of rules and one set of messages.
"""

from __future__ import annotations

import copy
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from fleet.limits import MAX_FIGURE


class ModelCleanMixin:
    """Validate attrs by applying them to a copy of the instance and calling ``full_clean``.
    Float fields without a stated maximum get ``fleet.limits.MAX_FIGURE`` (the schema shows it)."""

    def build_standard_field(self, field_name: str, model_field: Any) -> tuple[type, dict[str, Any]]:
        field_class, kwargs = super().build_standard_field(field_name, model_field)  # type: ignore[misc]
        if issubclass(field_class, serializers.FloatField) and "max_value" not in kwargs:
            kwargs["max_value"] = MAX_FIGURE
        return field_class, kwargs

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = super().validate(attrs)  # type: ignore[misc]
        model = self.Meta.model  # type: ignore[attr-defined]
        instance = copy.copy(self.instance) if self.instance is not None else model()  # type: ignore[attr-defined]
        for name, value in attrs.items():
            setattr(instance, name, value)
        try:
            instance.full_clean(validate_unique=False)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from None
        return attrs
