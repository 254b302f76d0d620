"""``GET /metrics``: our figures in the Prometheus text format, for a Prometheus scrape job.

Authentication: ``Authorization: Bearer <token>`` (or ``Token <token>``: ``fleet.api.authentication``), an API token
(``fleet/tokens.py``; a ``read`` one does) of a user who holds the view permissions of every record the figures are
read from (``METRICS_PERMISSIONS``; every role does). 401 without a token or with a bad one, 403 without the
permissions. The figures are ``planner.metrics.fleet_figures``; the exposition ``planner.metrics.exposition``
(docs/grafana/README.md).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from prometheus_client import CONTENT_TYPE_LATEST
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from fleet.api.authentication import ApiTokenAuthentication
from fleet.api.permissions import require
from planner.metrics import exposition, fleet_figures

#: The records the figures come from: deployments, clusters and their history (spend), quotes (cost),
#: polls (headroom, cache checks), speed corrections and calibrations.
METRICS_PERMISSIONS = (
    "fleet.view_deployment",
    "fleet.view_cluster",
    "fleet.view_clusterstate",
    "fleet.view_gpuquote",
    "fleet.view_endpointpoll",
    "planner.view_speedcorrection",
    "planner.view_calibration",
)


class PrometheusRenderer(BaseRenderer):
    """The exposition as it is; an error (a dict from DRF) as one line of text."""

    media_type = "text/plain"
    format = "prometheus"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        if isinstance(data, bytes):
            return data
        detail = data.get("detail", data) if isinstance(data, dict) else data
        return f"# {detail}\n".encode()


class MetricsView(APIView):
    authentication_classes = [ApiTokenAuthentication]
    permission_classes = [require(*METRICS_PERMISSIONS)]
    renderer_classes = [PrometheusRenderer]

    @extend_schema(
        summary="Our figures in the Prometheus text format (Bearer token)",
        responses={
            (200, "text/plain"): OpenApiResponse(
                OpenApiTypes.STR, description="The Prometheus text format (prometheus-client CONTENT_TYPE_LATEST)."
            )
        },
    )
    def get(self, request: Request) -> Response:
        response = Response(exposition(fleet_figures()), content_type=CONTENT_TYPE_LATEST)
        response["Cache-Control"] = "no-store"
        return response
