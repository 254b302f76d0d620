"""``POST /api/v1/sizing/``: memory envelopes and admission capacity for one layout."""

from drf_spectacular.utils import extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from planner.sizing import SizingRequestSerializer, SizingResponseSerializer, run_sizing


class SizingView(APIView):
    """Size a model on a cluster of one SKU. A computation, so any logged-in role may call it."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=SizingRequestSerializer, responses={200: SizingResponseSerializer})
    def post(self, request: Request) -> Response:
        serializer = SizingRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        # EngineInputError (layout not dividing heads, context beyond the maximum, ...) is
        # turned into a 400 with field errors by fleet.api.errors.exception_handler.
        return Response(run_sizing(serializer.validated_data).to_dict())
