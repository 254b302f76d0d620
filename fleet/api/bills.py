"""``/api/v1/bills/``: upload a FOCUS cost and usage CSV (multipart ``file``; answered 202 while a worker
imports it), follow its import, list its rows (``?unmatched=true``: those no cluster matched);
``/api/v1/exchange-rates/``: the dated rates a bill in another currency needs. The service is
``fleet.bills``; these only type the request and shape the answer."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from fleet import bills, outbox
from fleet.models import BillRow, CloudBill, ExchangeRate

from . import parsers
from .cleaning import ModelCleanMixin
from .history import HistoryMixin
from .permissions import require


class BillSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:cloudbill-detail")
    rows_url = serializers.HyperlinkedIdentityField(view_name="api:cloudbill-rows")
    uploaded_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    refusal = serializers.SerializerMethodField(
        help_text="Why the file was refused (row: header = 1; column), none of its rows stored; null otherwise."
    )

    class Meta:
        model = CloudBill
        fields = (
            "url",
            "id",
            "filename",
            "size_bytes",
            "sha256",
            "tag_key",
            "uploaded_by",
            "created",
            "status",
            "progress",
            "started_at",
            "finished_at",
            "rows_read",
            "rows_new",
            "rows_duplicate",
            "rows_matched",
            "rows_unmatched",
            "first_month",
            "last_month",
            "refusal",
            "rows_url",
        )
        read_only_fields = fields

    def get_refusal(self, bill: CloudBill) -> dict | None:
        if not bill.error:
            return None
        return {"row": bill.error_row, "column": bill.error_column or None, "message": bill.error}


class BillUploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="A FOCUS 1.0-1.2 CSV (UTF-8), at most FLEETCAP_BILL_MAX_BYTES.")
    tag_key = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=bills.MAX_TAG_KEY_CHARS,
        help_text="The tag whose value is a cluster's slug (default FLEETCAP_BILL_CLUSTER_TAG, fleetcap-cluster).",
    )


class BillQueuedSerializer(serializers.Serializer):
    bill = BillSerializer()
    dispatch = serializers.ChoiceField(
        choices=outbox.DISPATCH, help_text="broker_unreachable: stored; the import starts when the broker is back."
    )


class BillRowSerializer(serializers.ModelSerializer):
    cluster = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = BillRow
        fields = (
            "row_number",
            "month",
            "charge_period_start",
            "charge_period_end",
            "billing_period_start",
            "charge_category",
            "charge_class",
            "currency",
            "billed_cost",
            "effective_cost",
            "usd_per_unit",
            "billed_cost_usd",
            "effective_cost_usd",
            "resource_id",
            "tag_value",
            "cluster",
            "matched_by",
            "service_name",
            "charge_description",
        )
        read_only_fields = fields


class BillViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet):
    """Cloud bills: finance uploads (``fleet.add_cloudbill``) and deletes (its rows with it); every role reads."""

    queryset = CloudBill.objects.select_related("uploaded_by")
    serializer_class = BillSerializer
    parser_classes = [parsers.MultiPartParser]  # the one body: an upload
    filterset_fields = ["status"]
    ordering_fields = ["created"]

    @extend_schema(
        request={"multipart/form-data": BillUploadSerializer},
        responses={202: BillQueuedSerializer},
        description="Store the file and queue its import (202): follow `bill.url` until `status` is done, "
        "refused (with `refusal`: row, column, message; nothing stored) or failed. A header that is not FOCUS "
        "(a missing column) is a 400 at once.",
    )
    def create(self, request: Request) -> Response:
        body = BillUploadSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        submitted = bills.submit_bill(body.validated_data["file"], request.user, body.validated_data.get("tag_key"))
        bill = BillSerializer(submitted.bill, context=self.get_serializer_context()).data
        return Response(
            {"bill": bill, "dispatch": submitted.dispatch},
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": str(bill["url"])},
        )

    @extend_schema(
        parameters=[OpenApiParameter("unmatched", bool, description="Only the rows no cluster matched.")],
        responses={200: BillRowSerializer(many=True)},
        filters=False,
    )
    @action(
        detail=True,
        methods=["get"],
        filter_backends=[],
        permission_classes=[IsAuthenticated, require("fleet.view_billrow")],
    )
    def rows(self, request: Request, pk: str | None = None) -> Response:
        """The bill's stored rows in file order (paginated); ``unmatched=true``: only those no cluster matched."""
        bill = self.get_object()
        rows: QuerySet[BillRow] = bill.rows.select_related("cluster").order_by("row_number")
        if request.query_params.get("unmatched", "").lower() in ("1", "true", "yes"):
            rows = bills.unmatched_rows(bill).select_related("cluster")
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(BillRowSerializer(page, many=True).data)


class ExchangeRateSerializer(ModelCleanMixin, serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:exchangerate-detail")

    class Meta:
        model = ExchangeRate
        fields = ("url", "id", "currency", "on", "usd_per_unit", "source", "created", "updated")


class ExchangeRateViewSet(HistoryMixin, viewsets.ModelViewSet):
    """USD per unit of a currency on a date: a bill row in that currency uses the latest rate dated on or
    before its charge day, at most 31 days older (finance writes them)."""

    queryset = ExchangeRate.objects.all()
    serializer_class = ExchangeRateSerializer
    filterset_fields = ["currency"]
    ordering_fields = ["on"]
