"""Run the model's own validation (``full_clean``) from DRF serializers.

DRF does not call ``Model.clean()``; this mixin does, so the API, the admin and the pages
share one set of rules and one set of messages.
"""

from __future__ import annotations

import copy
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers


class ModelCleanMixin:
    """Validate attrs by applying them to a copy of the instance and calling ``full_clean``."""

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
