"""Rent versus API over HTTP: breakeven, recorded decisions, and monthly GPU spend."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import mixins, serializers, viewsets
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BaseRenderer, BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from fleet.api.fields import SlugReference
from fleet.api.history import HistoryMixin
from fleet.api.permissions import require
from fleet.limits import MAX_DEGREE, MAX_GPUS, MAX_MONTHLY, MAX_PRICE_USD
from planner.breakeven import BreakevenRequest, compare
from planner.decisions import NOTE_MAX_CHARS, record_decision
from planner.engine import DEFAULT_DAYS_PER_MONTH, MONTH_LABEL, PRICING_KINDS
from planner.filters import DecisionFilter
from planner.models import Decision
from planner.spend import spend_csv, spend_report


def _money(**kwargs: Any) -> serializers.DecimalField:
    return serializers.DecimalField(
        max_digits=14,
        decimal_places=4,
        min_value=Decimal(0),
        max_value=Decimal(MAX_PRICE_USD),
        required=False,
        **kwargs,
    )


def _decimal(places: int, high: int, low: int = 0, **kwargs: Any) -> serializers.DecimalField:
    """An optional decimal between ``low`` and ``high`` with ``places`` decimals (the buy figures)."""
    digits = places + len(str(high))
    return serializers.DecimalField(
        max_digits=digits, decimal_places=places, min_value=Decimal(low), max_value=Decimal(high), required=False,
        **kwargs,
    )  # fmt: skip


def _amount(**kwargs: Any) -> serializers.DecimalField:
    """A monthly amount in USD (colocation, staff): cents, up to 10 million."""
    return serializers.DecimalField(
        max_digits=12, decimal_places=2, min_value=Decimal(0), max_value=Decimal(10_000_000), required=False, **kwargs
    )


def _count(**kwargs: Any) -> serializers.IntegerField:
    return serializers.IntegerField(required=False, min_value=0, max_value=MAX_MONTHLY, **kwargs)


class BreakevenRequestSerializer(serializers.Serializer):
    """``POST /api/v1/breakeven/`` request body: types only; the breakeven service checks which
    combinations are given (``planner.breakeven.resolve``). Defaults are ``BreakevenRequest``'s."""

    gpus = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_GPUS, help_text="Default: the deployment's GPUs."
    )
    usd_per_gpu_hour = _money(help_text="Inline rate; or give `deployment` or `sku` to use the price in force.")
    sku = SlugReference(
        required=False,
        help_text="SKU slug: its price in force is the rate (the cheapest provider's quote, else the cheapest public "
        "list price). With a deployment, its cluster's provider's price is used instead.",
    )
    gpu_quote = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=2**63 - 1,
        help_text="Price on this GPU quote (an id of /api/v1/gpu-quotes/) instead of the price in force: e.g. the "
        "seeds' assumption, which is never in force; the figures say so (price_basis, assumptions).",
    )
    on = serializers.DateField(required=False, help_text="Date for the price in force (default: today).")
    pricing_kind = serializers.ChoiceField(choices=PRICING_KINDS, required=False, help_text="Default on-demand.")
    hours_per_day = serializers.DecimalField(
        max_digits=4,
        decimal_places=2,
        min_value=Decimal("0.01"),
        max_value=Decimal(24),
        required=False,
        help_text="Default 24.",
    )
    days_per_month = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=31,
        help_text=f"Default {DEFAULT_DAYS_PER_MONTH}: every monthly figure is for a {MONTH_LABEL} (the response's "
        "`month` says which), not a calendar month (spend's).",
    )
    api_price = SlugReference(required=False, help_text="API price slug (or the three inline prices).")
    input_cache_hit_usd_per_mtok = _money()
    input_cache_miss_usd_per_mtok = _money()
    output_usd_per_mtok = _money()
    workload = SlugReference(
        required=False,
        help_text="Workload slug: fills the monthly tokens (requests/day x mean tokens x days_per_month) and the "
        "cache hit rate.",
    )
    deployment = SlugReference(
        required=False,
        help_text="Deployment slug: fills gpus, sku, the model (weights) and, from the throughput model, the capacity.",
    )
    model = SlugReference(
        required=False, help_text="Model slug: fills weights_bytes (one copy, with block scales) for the download."
    )
    monthly_input_tokens = _count(help_text=f"Prompt tokens a month (a {MONTH_LABEL} by default).")
    monthly_output_tokens = _count(help_text=f"Output tokens a month (a {MONTH_LABEL} by default).")
    cache_hit_rate = serializers.FloatField(required=False, min_value=0, max_value=1)
    capacity_output_tokens_per_month = _count(help_text=f"Output tokens the cluster serves a month ({MONTH_LABEL}).")
    utilisation = serializers.FloatField(required=False, min_value=0, max_value=1)
    weights_bytes = _count()
    download_gbytes_per_s = serializers.FloatField(required=False, min_value=0.001, max_value=1e6)
    storage_usd_per_gb_month = serializers.DecimalField(
        max_digits=10,
        decimal_places=4,
        min_value=Decimal(0),
        max_value=Decimal(MAX_PRICE_USD),
        required=False,
        help_text="Keep the weights on a persistent volume at this price (decimal GB).",
    )
    tp = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_DEGREE, help_text="With model and sku: capacity of this layout."
    )
    pp = serializers.IntegerField(required=False, min_value=1, max_value=MAX_DEGREE)
    dp = serializers.IntegerField(required=False, min_value=1, max_value=MAX_DEGREE)
    ep = serializers.IntegerField(required=False, min_value=1, max_value=MAX_DEGREE)
    buy_usd_per_gpu = serializers.DecimalField(
        max_digits=12,
        decimal_places=2,
        min_value=Decimal("0.01"),
        max_value=Decimal(10_000_000),
        required=False,
        help_text="Cost buying the same GPUs too (whole nodes of the SKU's GPUs per node): purchase price per GPU, "
        "USD. The response's `buy` has the monthly cost and payback months, `cheapest` the least of three.",
    )
    buy_useful_life_months = serializers.IntegerField(
        required=False, min_value=1, max_value=600, help_text="Straight-line depreciation period. Default 48."
    )
    buy_residual_share = _decimal(
        4, 1, help_text="Value left at the end of the life, as a share of the price. Default 0."
    )
    buy_pue = _decimal(2, 5, low=1, help_text="The site's power usage effectiveness. Required with buy_usd_per_gpu.")
    buy_usd_per_kwh = _decimal(5, 100, help_text="Electricity price, USD per kWh. Required with buy_usd_per_gpu.")
    buy_node_overhead_w = _decimal(1, 100_000, help_text="W per node besides the GPUs (CPUs, NICs, fans). Default 0.")
    buy_racks = _decimal(2, 100_000, help_text="Racks the nodes take. Default 0.")
    buy_usd_per_rack_month = _amount(help_text="Colocation price per rack-month. Default 0.")
    buy_support_share_per_year = _decimal(
        4, 1, help_text="Support as a share of the purchase price a year (0.08 = 8%). Default 0."
    )
    buy_staff_usd_per_month = _amount(help_text="Staff cost a month. Default 0.")

    @staticmethod
    def request_from(data: dict[str, Any]) -> BreakevenRequest:
        return BreakevenRequest(**data)


class BreakevenView(APIView):
    """Monthly rent of a cluster against the hosted API's bill for the same tokens, per 30-day month
    (720 h; the response's `month` names it), not spend's calendar month."""

    # A computation (POST for its body): whoever may read the prices may compare them.
    permission_classes = [IsAuthenticated, require("fleet.view_gpuquote", "fleet.view_apiprice")]

    @extend_schema(request=BreakevenRequestSerializer, responses={200: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        serializer = BreakevenRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response(compare(serializer.request_from(serializer.validated_data)).response())


class MovedFigureSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="cheaper, monthly_rent_usd, monthly_api_usd, "
                                 "breakeven_output_tokens_per_month or monthly_output_tokens (observed).")  # fmt: skip
    was = serializers.JSONField(help_text="As the decision froze it.")
    now = serializers.JSONField(help_text="On today's inputs (or the volume the polls observed).")
    observed = serializers.BooleanField(
        required=False, help_text=f"True: the volume the polls observed (30 days), scaled to a {MONTH_LABEL}."
    )


class DecisionReviewSerializer(serializers.Serializer):
    """The decision's comparison recomputed on today's inputs (``planner.reviews``, by the workers)."""

    checked = serializers.BooleanField(help_text="False: never reviewed yet (the other fields are null or empty).")
    checked_at = serializers.DateTimeField(allow_null=True)
    still_holds = serializers.BooleanField(allow_null=True, help_text="null: not checked, or it could not be.")
    reason = serializers.CharField(help_text="What flipped, that it holds, or why it could not be recomputed.")
    moved = MovedFigureSerializer(many=True)
    state = serializers.CharField(help_text="current, stale (an input changed since: a worker is reviewing it again) "
                                  "or pending (never reviewed).")  # fmt: skip


def review_body(decision: Decision) -> dict[str, Any]:
    """``review`` of a decision as the API gives it (``checked`` false when never reviewed)."""
    review = getattr(decision, "review", None)
    if review is None:
        return {"checked": False, "checked_at": None, "still_holds": None, "reason": "", "moved": [],
                "state": "pending"}  # fmt: skip
    return {
        "checked": True,
        "checked_at": review.checked_at,
        "still_holds": review.still_holds,
        "reason": review.reason,
        "moved": review.moved,
        "state": review.state(),
    }


class DecisionSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:decision-detail")
    workload = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    tier_label = serializers.CharField(source="get_tier_display", read_only=True)
    supersedes = serializers.PrimaryKeyRelatedField(read_only=True)
    is_current = serializers.BooleanField(read_only=True)
    review = serializers.SerializerMethodField()

    @extend_schema_field(DecisionReviewSerializer)
    def get_review(self, decision: Decision) -> dict[str, Any]:
        return DecisionReviewSerializer(review_body(decision)).data

    class Meta:
        model = Decision
        fields = (
            "url",
            "id",
            "workload",
            "tier",
            "tier_label",
            "figures",
            "inputs",
            "note",
            "decided_by_name",
            "decided_at",
            "supersedes",
            "is_current",
            "review",
        )
        read_only_fields = fields
        extra_kwargs = {
            "figures": {
                "help_text": f"The comparison's figures as recorded (POST /api/v1/breakeven/'s): monthly_rent_usd, "
                f"monthly_api_usd and the token volumes are per {MONTH_LABEL} (`month`), not a calendar month."
            }
        }


class DecisionCreateSerializer(serializers.Serializer):
    workload = SlugReference(help_text="Workload slug.")
    tier = serializers.ChoiceField(choices=Decision.Tier.choices)
    note = serializers.CharField(required=False, allow_blank=True, max_length=NOTE_MAX_CHARS)
    breakeven = BreakevenRequestSerializer(
        help_text="The comparison the decision is made on (same fields as POST /api/v1/breakeven/; "
        "the workload is filled in)."
    )


class DecisionViewSet(
    HistoryMixin, mixins.CreateModelMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Append-only: create, list, read, and its audit trail (``history``: who recorded it, when).
    Updating or deleting a decision is refused (405)."""

    queryset = Decision.objects.select_related("workload", "superseded_by", "review")
    serializer_class = DecisionSerializer
    filterset_class = DecisionFilter
    ordering_fields = ["decided_at"]

    @extend_schema(request=DecisionCreateSerializer, responses={201: DecisionSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        incoming = DecisionCreateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        decision = record_decision(
            workload=data["workload"],
            tier=data["tier"],
            note=data.get("note", ""),
            comparison=BreakevenRequestSerializer.request_from(data["breakeven"]),
            user=request.user,
        )
        body = DecisionSerializer(decision, context=self.get_serializer_context()).data
        return Response(body, status=201, headers={"Location": str(body["url"])})


class SpendCsvRenderer(BaseRenderer):
    """``?format=csv``: the spend service's CSV (``planner.spend.spend_csv``)."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        return spend_csv(data).encode()


def _usd(help_text: str = "", **kwargs: Any) -> serializers.CharField:
    """A Decimal written as a string (USD: 2 decimals; rates and fractions: 4)."""
    return serializers.CharField(help_text=help_text, **kwargs)


LINE_KINDS = ["cluster", "deployment", "unassigned", "team", "provider", "model", "total"]


class SpendLineSerializer(serializers.Serializer):
    """One line of a month: a cluster, a deployment (or a cluster's unassigned GPUs), or a subtotal.
    ``cost_usd`` = ``actual_cost_usd`` + ``projected_cost_usd``: only the actual part was spent."""

    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=LINE_KINDS)
    cluster = serializers.CharField(allow_null=True)
    model = serializers.CharField(allow_null=True)
    team = serializers.CharField(allow_null=True)
    provider = serializers.CharField(allow_null=True)
    sku = serializers.CharField(allow_null=True)
    gpus = serializers.IntegerField(help_text="The most GPUs held on any day of the month.")
    gpu_hours = _usd("Actual + projected GPU-hours (priced).")
    cost_usd = _usd(
        "Actual + projected USD: the month as expected, not all spent; null: none of its GPU-hours priced.",
        allow_null=True,
    )
    actual_gpu_hours = _usd("GPU-hours of the days through today (priced).")
    actual_cost_usd = _usd(
        "USD spent: days through today, hardware and quote in force each day; null: none priced.", allow_null=True
    )
    projected_gpu_hours = _usd("GPU-hours of the days after today (priced).")
    projected_cost_usd = _usd(
        "USD projected: days after today at the quotes in force today; null: none priced.", allow_null=True
    )
    unpriced_gpu_hours = _usd("GPU-hours of days without any quote in force: in no USD figure (see warnings).")
    utilisation = _usd(
        "Running sequences / admitted capacity over the month's polls, 0..1; null: unknown.", allow_null=True
    )
    idle_cost_usd = _usd(
        "Actual cost x (1 - utilisation), where utilisation is known; null: unknown, or none of it priced.",
        allow_null=True,
    )
    idle_unknown_usd = _usd("Actual USD of the lines whose utilisation is unknown.")
    polls = serializers.IntegerField(allow_null=True, help_text="Polls behind the utilisation (deployments).")
    active_days = serializers.IntegerField(allow_null=True, help_text="Days billed this month (clusters).")
    members = serializers.ListField(child=serializers.CharField(), help_text="Lines summed into this one.")
    assumptions = serializers.ListField(child=serializers.CharField())


class SpendClusterSerializer(SpendLineSerializer):
    cluster = serializers.CharField()
    usd_per_gpu_hour = _usd("Cost / GPU-hours (the GPU-hour-weighted mean rate).", allow_null=True)


class SpendWarningSerializer(serializers.Serializer):
    """A quote missing (those GPU-hours are unpriced), or deployments holding more GPUs than their cluster
    had, for one cluster and run of days."""

    kind = serializers.CharField(help_text="missing or over_assigned.")
    part = serializers.ChoiceField(choices=["actual", "projected"])
    cluster = serializers.CharField()
    sku = serializers.CharField()
    provider = serializers.CharField()
    first_day = serializers.DateField()
    last_day = serializers.DateField()
    days = serializers.IntegerField()
    gpu_hours = _usd()
    usd_per_gpu_hour = _usd(allow_null=True)
    message = serializers.CharField()


class SpendTrendSerializer(serializers.Serializer):
    month = serializers.CharField(help_text="YYYY-MM")
    status = serializers.CharField(help_text="actual, partial or projected.")
    actual_cost_usd = _usd()
    projected_cost_usd = _usd()
    unpriced_gpu_hours = _usd()
    warnings = serializers.IntegerField()


class SpendLeftOutSerializer(serializers.Serializer):
    """A deployment's untrusted polls of the month's actual days, left out of its utilisation and idle cost."""

    polls = serializers.IntegerField()
    reasons = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="Polls left out per reason: misconfigured (the endpoint serves another model), stale (rates "
        "averaged over a gap since the previous scrape).",
    )
    text = serializers.CharField(help_text="What the spend page says about them.")


class BilledClusterSerializer(serializers.Serializer):
    """One cluster's month: what its FOCUS bills charged against what the model priced."""

    cluster = serializers.CharField()
    billed_usd = _usd("Usage, credits and adjustments of done bills charged this month (corrections included).")
    modelled_usd = _usd("The cluster's actual (spent) USD as modelled; null: unpriced.", allow_null=True)
    variance_usd = _usd("billed - modelled; null when modelled is unpriced.", allow_null=True)
    variance_pct = serializers.CharField(
        allow_null=True, help_text="variance / modelled x 100, 1 decimal; null when nothing was modelled."
    )
    flagged = serializers.BooleanField(
        help_text="|variance_pct| beyond threshold_pct, or billed where nothing (or nothing priced) was modelled."
    )
    rows = serializers.IntegerField(help_text="Bill rows behind billed_usd.")


class BilledSerializer(serializers.Serializer):
    """Billed against modelled (``fleet.bills``): no cluster is compared in a month no bill charged."""

    threshold_pct = serializers.CharField(help_text="FLEETCAP_BILL_VARIANCE_PCT (default 10.0).")
    bills = serializers.IntegerField(help_text="Done bills with rows charged this month.")
    clusters = BilledClusterSerializer(many=True)
    flagged = serializers.IntegerField()
    unmatched_usd = _usd("Rows no cluster matched (listed on each bill's page and /api/v1/bills/<id>/rows/).")
    unmatched_rows = serializers.IntegerField()
    not_compared_usd = _usd("Tax and Purchase rows: stored, not compared (the model prices GPU-hours).")


class SpendResponseSerializer(serializers.Serializer):
    """``GET /api/v1/spend/``: a month's spend, actual (days through ``today``) and projected (the rest)
    apart, by cluster, deployment, team, provider and model, with warnings and a 12-month trend."""

    year = serializers.IntegerField()
    month = serializers.IntegerField()
    days_in_month = serializers.IntegerField(help_text="Days of the calendar month spend counts (31 in December).")
    month_hours = serializers.IntegerField(
        help_text="Hours of the calendar month (744 in December): spend's month, not rent vs API's 30-day 720 h."
    )
    month_label = serializers.CharField(help_text='The calendar month and its hours: "December 2026, 744 h".')
    today = serializers.DateField()
    status = serializers.CharField(
        help_text="actual (a past month), partial (this month) or projected (a future month)."
    )
    actual_days = serializers.IntegerField()
    projected_days = serializers.IntegerField()
    pricing_kind = serializers.CharField()
    previous_month = serializers.CharField(allow_null=True)
    next_month = serializers.CharField(allow_null=True)
    clusters = SpendClusterSerializer(many=True)
    deployments = SpendLineSerializer(many=True, help_text="Deployment lines and each cluster's unassigned GPUs.")
    by_team = serializers.DictField(child=SpendLineSerializer())
    by_provider = serializers.DictField(child=SpendLineSerializer())
    by_model = serializers.DictField(child=SpendLineSerializer())
    total_gpu_hours = _usd("Actual + projected.")
    total_cost_usd = _usd("Actual + projected USD (the month as expected).")
    actual_gpu_hours = _usd()
    actual_cost_usd = _usd("USD spent so far.")
    projected_gpu_hours = _usd()
    projected_cost_usd = _usd("USD projected for the rest of the month.")
    unpriced_gpu_hours = _usd()
    total_idle_cost_usd = _usd(allow_null=True)
    idle_unknown_usd = _usd()
    warnings = SpendWarningSerializer(many=True)
    left_out_polls = serializers.DictField(
        child=SpendLeftOutSerializer(),
        help_text="Per deployment slug: its untrusted polls left out of utilisation and idle cost (absent: none).",
    )
    trend = SpendTrendSerializer(many=True, help_text="The 12 months ending with this one.")
    assumptions = serializers.ListField(child=serializers.CharField())
    billed = BilledSerializer(help_text="Billed (FOCUS bills) against modelled per cluster and the variance.")


class SpendView(APIView):
    """GPU spend for a calendar month from the dated cluster history, with the rate in force each
    day: actual and projected apart, breakdowns, idle cost, quote warnings and a 12-month trend."""

    permission_classes = [IsAuthenticated, require("fleet.view_clusterstate", "fleet.view_gpuquote")]
    renderer_classes = [JSONRenderer, BrowsableAPIRenderer, SpendCsvRenderer]

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "month",
                str,
                pattern=r"^\d{4}-(0[1-9]|1[0-2])$",
                description="YYYY-MM from 1970-01 to 2999-12 (default: this month)",
            ),
            OpenApiParameter("format", str, enum=["json", "csv"]),
        ],
        responses={200: SpendResponseSerializer},
    )
    def get(self, request: Request) -> Response:
        report = spend_report(request.query_params.get("month"), timezone.now().date())
        response = Response(report)
        if request.accepted_renderer.format == "csv":
            month = f"{report['year']:04d}-{report['month']:02d}"
            response["Content-Disposition"] = f'attachment; filename="gpu-spend-{month}.csv"'
        return response
