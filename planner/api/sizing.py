"""``POST /api/v1/sizing/``: memory envelopes and admission capacity for one layout."""

from drf_spectacular.utils import extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from fleet.api.permissions import require
from planner.sizing import SizingRequestSerializer, SizingResponseSerializer, run_sizing


class SizingView(APIView):
    """Size a model on a cluster of one SKU. A computation (POST for its body): whoever may read
    models and SKUs may size them."""

    permission_classes = [IsAuthenticated, require("fleet.view_modelspec", "fleet.view_hardwaresku")]

    @extend_schema(request=SizingRequestSerializer, responses={200: SizingResponseSerializer})
    def post(self, request: Request) -> Response:
        serializer = SizingRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        # EngineInputError (layout not dividing heads, context beyond the maximum, ...) is
        # turned into a 400 with field errors by fleet.api.errors.exception_handler.
        return Response(run_sizing(serializer.validated_data).to_dict())
