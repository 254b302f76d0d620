"""Run the model's own validation (``full_clean``) from DRF serializers.

DRF does not call ``Model.clean()``; this mixin does, so the API, the admin and the pages
share one set of rules and one set of messages.
"""

from __future__ import annotations

import copy
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from fleet import inputs
from fleet.limits import record_bound

from .fields import BoundedJSONField

NUMBERS = (serializers.IntegerField, serializers.FloatField, serializers.DecimalField)


class ModelCleanMixin:
    """Validate attrs by applying them to a copy of the instance and calling ``full_clean``. Every
    record field is bounded as the page forms bound it (``fleet.forms.bounded_formfield``; the schema
    shows the bounds): numbers by ``fleet.limits.record_bound`` (its negative below, unless the field
    says more), JSON by ``BoundedJSONField``, free text by ``fleet.inputs.MAX_TEXT_CHARS``."""

    def build_standard_field(self, field_name: str, model_field: Any) -> tuple[type, dict[str, Any]]:
        field_class, kwargs = super().build_standard_field(field_name, model_field)  # type: ignore[misc]
        if issubclass(field_class, NUMBERS):
            high = record_bound(field_name, money=issubclass(field_class, serializers.DecimalField))
            if issubclass(field_class, serializers.IntegerField):
                high = int(high)
            if kwargs.get("max_value") is None or kwargs["max_value"] > high:
                kwargs["max_value"] = high
            if kwargs.get("min_value") is None or kwargs["min_value"] < -high:
                kwargs["min_value"] = -high
        elif field_class is serializers.JSONField:
            field_class = BoundedJSONField
        elif issubclass(field_class, serializers.CharField) and kwargs.get("max_length") is None:
            kwargs["max_length"] = inputs.MAX_TEXT_CHARS
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
