"""``/api/v1/budgets/``: monthly budgets per team or cluster, with this month's figures and their alerts.

The request serializer only types the body; ``planner.budgets.save_budget`` checks it (a known team or
cluster, the webhook URL through the outbound guard, a signing secret with a webhook) and stores it,
its domain errors becoming 400s with field names. Model permissions: reading needs
``planner.view_budget`` (every role), writing ``add``/``change``/``delete_budget`` (finance, admin).
The signing secret is write-only: answers say ``has_webhook_secret``, never the secret.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from fleet.api.history import HistoryMixin
from planner.budgets import (
    MAX_AMOUNT,
    MAX_EMAIL_CHARS,
    MAX_EMAILS,
    MAX_SECRET_CHARS,
    MAX_URL_CHARS,
    SHOWN_ALERTS,
    BudgetInput,
    alert_dict,
    figures_for,
    save_budget,
)
from planner.filters import BudgetFilter
from planner.models import Budget, BudgetAlert
from planner.spend import spend_report


class BudgetRequestSerializer(serializers.Serializer):
    """``POST``/``PUT``/``PATCH /api/v1/budgets/`` body: a team or a cluster, not both."""

    team = serializers.CharField(
        required=False, allow_blank=True, max_length=100, help_text="The team whose clusters count."
    )
    cluster = serializers.CharField(
        required=False, allow_blank=True, max_length=200, help_text="Or one cluster, by slug."
    )
    amount_usd = serializers.DecimalField(
        max_digits=14,
        decimal_places=2,
        min_value=Decimal("0.01"),
        max_value=MAX_AMOUNT,
        help_text="USD per calendar month.",
    )
    emails = serializers.ListField(
        child=serializers.CharField(max_length=MAX_EMAIL_CHARS),
        required=False,
        max_length=MAX_EMAILS,
        help_text="Addresses an alert is emailed to.",
    )
    webhook_url = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=MAX_URL_CHARS,
        help_text="Where an alert is POSTed (signed JSON); checked by the outbound guard.",
    )
    webhook_secret = serializers.CharField(
        write_only=True,
        required=False,
        allow_blank=True,
        max_length=MAX_SECRET_CHARS,
        style={"input_type": "password"},
        help_text="Write-only signing secret. Omit to keep the stored one; required with a webhook.",
    )

    def to_input(self, instance: Budget | None) -> BudgetInput:
        """The body as the service's input; on a PATCH the budget's own values for what is left out."""
        data = self.validated_data
        current = {
            "team": instance.team if instance else "",
            "cluster": instance.cluster.slug if instance and instance.cluster_id else "",
            "amount_usd": instance.amount_usd if instance else None,
            "emails": instance.emails if instance else [],
            "webhook_url": instance.webhook_url if instance else "",
        }
        if self.partial and ("team" in data or "cluster" in data):
            # A new scope replaces the old one whole (a team's budget moved to a cluster, say).
            current["team"] = current["cluster"] = ""
        if not self.partial:
            current = {"team": "", "cluster": "", "amount_usd": None, "emails": [], "webhook_url": ""}
        merged = {**current, **{k: v for k, v in data.items() if k != "webhook_secret"}}
        return BudgetInput(**merged, webhook_secret=data.get("webhook_secret"))


class BudgetFiguresSerializer(serializers.Serializer):
    """The budget against the month's spend so far (``planner.spend``: the spend report's lines)."""

    month = serializers.CharField()
    status = serializers.CharField(help_text="The month: actual, partial or projected.")
    spent_usd = serializers.CharField(help_text="Actual spend so far (USD).")
    projected_usd = serializers.CharField(help_text="The month's end as projected: spent + the rest (USD).")
    budget_usd = serializers.CharField()
    projected_fraction = serializers.CharField(help_text="projected / budget.")
    over = serializers.BooleanField(help_text="The projection is over the budget.")
    unpriced_gpu_hours = serializers.CharField(help_text="GPU-hours without a quote: in no figure.")


class ChannelSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["pending", "sent", "failed", "gave_up"])
    attempts = serializers.IntegerField()
    at = serializers.CharField(required=False, help_text="The last attempt (ISO time).")
    error = serializers.CharField(required=False, help_text="Why the last attempt failed.")


class BudgetAlertSerializer(serializers.Serializer):
    month = serializers.CharField()
    created = serializers.DateTimeField(help_text="When the check found the projection over the budget.")
    projected_usd = serializers.CharField()
    spent_usd = serializers.CharField()
    budget_usd = serializers.CharField()
    sent_at = serializers.DateTimeField(allow_null=True, help_text="When every channel was delivered.")
    outcome = serializers.ChoiceField(choices=BudgetAlert.Outcome.values)
    channels = serializers.DictField(child=ChannelSerializer(), help_text="email, webhook: each one's delivery.")


class BudgetSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:budget-detail")
    scope = serializers.ChoiceField(choices=["team", "cluster"], read_only=True)
    cluster = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    amount_usd = serializers.DecimalField(max_digits=14, decimal_places=2, read_only=True)
    emails = serializers.ListField(child=serializers.CharField(), read_only=True)
    has_webhook_secret = serializers.BooleanField(read_only=True)
    this_month = serializers.SerializerMethodField()
    alerts = serializers.SerializerMethodField()

    class Meta:
        model = Budget
        fields = (
            "url",
            "id",
            "scope",
            "team",
            "cluster",
            "amount_usd",
            "emails",
            "webhook_url",
            "has_webhook_secret",
            "this_month",
            "alerts",
            "created",
            "updated",
        )
        read_only_fields = fields

    @extend_schema_field(BudgetFiguresSerializer)
    def get_this_month(self, budget: Budget) -> dict[str, Any]:
        cache = self.context.setdefault("_spend", {})
        if "report" not in cache:  # one report per request, shared with the page (planner.spend)
            cache["report"] = spend_report(None, timezone.now().date())
        return figures_for(budget, cache["report"]).to_dict()

    @extend_schema_field(BudgetAlertSerializer(many=True))
    def get_alerts(self, budget: Budget) -> list[dict[str, Any]]:
        return [alert_dict(a) for a in budget.alerts.all()[:SHOWN_ALERTS]]


class BudgetViewSet(HistoryMixin, viewsets.ModelViewSet):
    """Budgets: finance and admin write them, every role reads them; ``this_month`` is the budget
    against this month's spend, ``alerts`` the months its projection crossed it (newest first)."""

    queryset = Budget.objects.select_related("cluster").prefetch_related("alerts")
    serializer_class = BudgetSerializer
    filterset_class = BudgetFilter
    ordering_fields = ["team", "amount_usd", "created"]

    def _answer(self, budget: Budget, code: int) -> Response:
        body = BudgetSerializer(budget, context=self.get_serializer_context()).data
        headers = {"Location": str(body["url"])} if code == status.HTTP_201_CREATED else {}
        return Response(body, status=code, headers=headers)

    @extend_schema(request=BudgetRequestSerializer, responses={201: BudgetSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        incoming = BudgetRequestSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        return self._answer(save_budget(incoming.to_input(None)), status.HTTP_201_CREATED)

    @extend_schema(request=BudgetRequestSerializer, responses={200: BudgetSerializer})
    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        budget = self.get_object()
        incoming = BudgetRequestSerializer(data=request.data, partial=kwargs.get("partial", False))
        incoming.is_valid(raise_exception=True)
        return self._answer(save_budget(incoming.to_input(budget), budget), status.HTTP_200_OK)

    @extend_schema(request=BudgetRequestSerializer, responses={200: BudgetSerializer})
    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.update(request, *args, partial=True, **kwargs)
