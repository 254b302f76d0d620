"""``/api/v1/calibrations/``: calibrate the engine from a serving engine's startup log; list and read.

The serializer only types the body; the calibration service (``planner.calibrations``) parses the
log, resolves the records, predicts and stores. Its domain errors become 400s with field names
(``fleet.api.errors.exception_handler``). Creating needs ``fleet.change_deployment`` (whoever may
change a deployment's settings may calibrate it); reading needs ``planner.view_calibration``.
"""

from __future__ import annotations

import re
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from fleet.api.fields import SlugReference
from fleet.api.history import HistoryMixin
from fleet.api.permissions import ModelPermissions, require
from planner.calibrations import CalibrationRequest, calibrate
from planner.engine import MAX_LOG_BYTES
from planner.filters import CalibrationFilter
from planner.models import Calibration

_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _no_surrogates(value: str) -> None:
    """DRF's check, as one regex search (the API's parsers refuse lone surrogates first anyway)."""
    if found := _SURROGATE.search(value):
        check = ProhibitSurrogateCharactersValidator
        raise serializers.ValidationError(check.message.format(code_point=ord(found.group())), code=check.code)


class LogField(serializers.CharField):
    """A CharField for megabytes of text: DRF's own surrogate check walks the text a character at a
    time in Python (0.2 s of CPU for a 5 MiB log); this field checks the same with one regex search."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        kept = [v for v in self.validators if not isinstance(v, ProhibitSurrogateCharactersValidator)]
        self.validators = [*kept, _no_surrogates]


class CalibrationRequestSerializer(serializers.Serializer):
    """``POST /api/v1/calibrations/`` request body."""

    log = LogField(
        max_length=MAX_LOG_BYTES, trim_whitespace=False, help_text="The server's startup log as text (up to 5 MiB)."
    )
    deployment = SlugReference(
        required=False, help_text="Deployment slug: gives the model, the SKU and missing settings."
    )
    model = SlugReference(required=False, help_text="Model slug (default: the deployment's, else the logged model's).")
    sku = SlugReference(required=False, help_text="SKU slug; required without a deployment.")
    engine_version = serializers.CharField(
        required=False, max_length=40, help_text="The engine's release when the log does not print it (SGLang)."
    )
    measured_on = serializers.DateField(required=False, help_text="When the log was taken (default: today).")

    def to_request(self) -> CalibrationRequest:
        data = self.validated_data
        return CalibrationRequest(
            log=data["log"],
            deployment_slug=data.get("deployment"),
            model_slug=data.get("model"),
            sku_slug=data.get("sku"),
            engine_version=data.get("engine_version"),
            measured_on=data.get("measured_on"),
        )


class FigureSerializer(serializers.Serializer):
    """One logged figure beside the engine's prediction (``ratio`` = predicted / logged)."""

    name = serializers.CharField()
    label = serializers.CharField()
    unit = serializers.CharField()
    logged = serializers.FloatField()
    predicted = serializers.FloatField(allow_null=True)
    ratio = serializers.FloatField(allow_null=True)
    basis = serializers.ChoiceField(
        choices=["logged_memory", "hardware"],
        help_text="logged_memory: predicted given the KV memory the engine logged; hardware: from the SKU's memory.",
    )


class CalibrationSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:calibration-detail")
    deployment = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    model = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    sku = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    figures = FigureSerializer(many=True, read_only=True)
    parsed = serializers.DictField(read_only=True, help_text="Everything the parser read from the log.")
    prediction = serializers.DictField(read_only=True, help_text="The engine's inputs and outputs, with notes.")
    unsupported_message = serializers.CharField(read_only=True, allow_null=True)

    class Meta:
        model = Calibration
        fields = (
            "url",
            "id",
            "deployment",
            "model",
            "sku",
            "engine",
            "engine_version",
            "logged_model",
            "measured_on",
            "created",
            "created_by",
            "figures",
            "unsupported_architecture",
            "unsupported_message",
            "parsed",
            "prediction",
            "log_truncated",
        )
        read_only_fields = fields


class CalibrationViewSet(
    HistoryMixin, mixins.CreateModelMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Calibrations are written by the service and never changed (PUT, PATCH and DELETE: 405);
    ``history``: who recorded it, when."""

    queryset = Calibration.objects.select_related("deployment", "model", "sku", "created_by")
    serializer_class = CalibrationSerializer
    filterset_class = CalibrationFilter
    ordering_fields = ["created", "measured_on"]
    #: Creating counts against the user's calibration limit (fleet.rate_limits; with the page form's).
    throttle_scope = "calibration"

    def limited(self, request: Request) -> bool:
        return self.action == "create"

    def get_permissions(self):
        if self.action == "create":
            return [IsAuthenticated(), require("fleet.change_deployment")()]
        return [IsAuthenticated(), ModelPermissions()]

    @extend_schema(request=CalibrationRequestSerializer, responses={201: CalibrationSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        incoming = CalibrationRequestSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        calibration = calibrate(incoming.to_request(), request.user)
        body = CalibrationSerializer(calibration, context=self.get_serializer_context()).data
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": str(body["url"])})
