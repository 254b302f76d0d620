"""``tokens/``: a user's own API tokens (list, create: the key once, revoke with DELETE).

Any logged-in user manages their own tokens, with no model permission; ``fleet.view_apitoken`` (the
admin role) lists everybody's (``?user=<username>``), ``fleet.delete_apitoken`` revokes anybody's.
Another user's token is a 404 to whoever may not see it. Creating needs a session or a ``write``
token: ``fleet.api.authentication`` refuses a ``read`` token's POST (403). The rules are
``fleet/tokens.py``; this module only types the request and the answer.
"""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from fleet import tokens
from fleet.models import ApiToken

STATES = tokens.STATES


class ApiTokenSerializer(serializers.ModelSerializer):
    user = serializers.CharField(source="user.username", read_only=True)
    state = serializers.ChoiceField(choices=STATES, read_only=True, help_text="active, expired or revoked.")
    revoked_by = serializers.CharField(source="revoked_by.username", read_only=True, allow_null=True, default=None)

    class Meta:
        model = ApiToken
        fields = ["id", "name", "scope", "user", "state", "created", "expires", "last_used", "revoked_at", "revoked_by"]
        read_only_fields = fields


class ApiTokenCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=tokens.NAME_MAX_CHARS)
    scope = serializers.ChoiceField(choices=ApiToken.Scope.choices, default=ApiToken.Scope.READ)
    expires_in_days = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=100_000,
        help_text="Days from now (30, 90 or 365 on the page); or give expires_on.",
    )
    expires_on = serializers.DateField(required=False, help_text="The last day the token works (the site's time zone).")


class NewApiTokenSerializer(ApiTokenSerializer):
    key = serializers.CharField(
        read_only=True, help_text="The key: shown this once, never again. Send it as `Authorization: Bearer <key>`."
    )

    class Meta(ApiTokenSerializer.Meta):
        fields = [*ApiTokenSerializer.Meta.fields, "key"]
        read_only_fields = fields


class ApiTokenViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet
):
    serializer_class = ApiTokenSerializer
    permission_classes = [IsAuthenticated]
    filter_backends: list = []
    queryset = ApiToken.objects.none()

    def get_queryset(self) -> QuerySet[ApiToken]:
        params = self.request.query_params
        state = params.get("state")
        return tokens.visible_tokens(
            self.request.user, owner=params.get("user") or None, state=state if state in STATES else None
        )

    @extend_schema(
        summary="Your API tokens (everybody's with fleet.view_apitoken)",
        parameters=[
            OpenApiParameter("user", str, description="Only this username's tokens (with fleet.view_apitoken)."),
            OpenApiParameter("state", str, enum=list(STATES)),
        ],
    )
    def list(self, request: Request, *args, **kwargs) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(
        summary="Create an API token: the key is in this answer only",
        request=ApiTokenCreateSerializer,
        responses={201: NewApiTokenSerializer},
    )
    def create(self, request: Request) -> Response:
        body = ApiTokenCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        new = tokens.create_token(
            request.user,
            name=data["name"],
            scope=data["scope"],
            days=data.get("expires_in_days"),
            expires_on=data.get("expires_on"),
        )
        new.token.key = new.key
        answer = NewApiTokenSerializer(new.token, context=self.get_serializer_context())
        # The key must not be kept by a cache or a browser's history.
        return Response(answer.data, status=status.HTTP_201_CREATED, headers={"Cache-Control": "no-store"})

    @extend_schema(summary="Revoke an API token (kept in the list, refused from now on)", responses={204: None})
    def destroy(self, request: Request, *args, **kwargs) -> Response:
        tokens.revoke_token(request.user, self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)
