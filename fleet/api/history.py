"""``GET /api/v1/<records>/<key>/history/``: a record's audit trail (fleet/audit.py), newest first.

Readable by whoever may read the record: the action is on the record's own viewset, so its
``view_<model>`` permission (``ModelPermissions``) and lookup apply.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from fleet import audit


class AuditEntrySerializer(serializers.Serializer):
    """One create, update or delete of the record."""

    id = serializers.IntegerField()
    timestamp = serializers.DateTimeField()
    action = serializers.ChoiceField(choices=sorted(audit.ACTIONS.values()))
    actor = serializers.CharField(allow_null=True, help_text="The user's username; null for a command or the system.")
    via = serializers.CharField(
        allow_null=True, help_text="pages, api, admin, or the command (manage.py load_catalog); null: unknown."
    )
    changes = serializers.DictField(
        child=serializers.ListField(child=serializers.JSONField(allow_null=True), min_length=2, max_length=2),
        help_text="Field -> [before, after] (before null on create, after null on delete). "
        "api_key says only (set) or (none), never the key.",
    )


# Adds the ``history`` action to a record's viewset. No docstring: drf-spectacular would describe
# every operation of those viewsets with it.
class HistoryMixin:
    @extend_schema(responses={200: AuditEntrySerializer(many=True)}, filters=False)
    @action(detail=True, methods=["get"], filter_backends=[])
    def history(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Who created, changed or deleted this record, when, and each field before and after; newest
        first, paginated (``page``, ``page_size``)."""
        record = self.get_object()  # type: ignore[attr-defined]
        page = self.paginate_queryset(audit.history_of(record))  # type: ignore[attr-defined]
        data = AuditEntrySerializer(audit.entries(page), many=True).data
        return self.get_paginated_response(data)  # type: ignore[attr-defined]
