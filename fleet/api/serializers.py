"""Serializers for the inventory and prices. Related records are referenced by slug."""

from __future__ import annotations

import copy
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from fleet import inputs, registration
from fleet.errors import InputError
from fleet.models import (
    ApiPrice,
    Cluster,
    ClusterPurchase,
    Deployment,
    ElectricityPrice,
    EndpointPoll,
    GpuQuote,
    HardwareSku,
    ModelSpec,
    OwnedCosts,
    Provider,
    Workload,
)
from fleet.models.base import SLUG_MAX_CHARS
from fleet.models.snapshots import SNAPSHOT_STATES, describe_capacity
from fleet.owned import owned_month
from fleet.prices import PriceBook
from planner.engine import MAX_PARAMS, PRICE_BASES, WEIGHT_FORMATS, superseded

from .cleaning import ModelCleanMixin
from .fields import BoundedJSONField, SlugRelation

TIMESTAMPS = ("created", "updated")


@extend_schema_field({"type": "string", "maxLength": 100})
class ProviderField(serializers.SlugRelatedField):
    """A provider given by its name, matched whatever the case ("coreweave" is CoreWeave)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("queryset", Provider.objects.all())
        super().__init__(slug_field="name", **kwargs)

    def to_internal_value(self, data: Any) -> Provider:
        if not isinstance(data, str) or not data.strip():
            self.fail("invalid")
        if len(data) > 100 or (message := inputs.control_character_message(data)):
            raise serializers.ValidationError(
                message if len(data) <= 100 else "A provider's name has 100 characters at most."
            )
        found = self.get_queryset().named(data)
        if found is None:
            raise serializers.ValidationError(
                f"No provider called {data.strip()[:100]!r}; pick one of /api/v1/providers/ or add it there first."
            )
        return found


class PriceInForceSerializer(serializers.Serializer):
    """The price in force today (``planner.engine.price_in_force``): for a cluster its provider's own
    quote, else that provider's public list price; for a SKU the cheapest own quote, else the
    cheapest list price. ``null``: unpriced."""

    usd_per_gpu_hour = serializers.DecimalField(max_digits=10, decimal_places=4)
    quote = serializers.IntegerField(
        allow_null=True,
        help_text="The GPU quote's id (/api/v1/gpu-quotes/<id>/); null for an owned cluster's own cost.",
    )
    provider = serializers.CharField()
    basis = serializers.ChoiceField(
        choices=PRICE_BASES,
        help_text="own (a provider's quote), list (its list price) or owned (an owned cluster's own cost this "
        "calendar month: depreciation, energy, colocation, support, staff over its GPU-hours).",
    )
    pricing_kind = serializers.CharField()
    valid_from = serializers.DateField()
    valid_until = serializers.DateField(allow_null=True)


class PricedMixin:
    """Reads the price book once per response (one query), whatever the number of rows."""

    def price_book(self) -> tuple[PriceBook, Any]:
        from django.utils import timezone

        context = self.context  # shared by a list's rows
        if "price_book" not in context:
            today = timezone.now().date()
            context["price_book"] = (PriceBook.load(until=today), today)
        return context["price_book"]


class OwnedMonthSerializer(serializers.Serializer):
    """An owned cluster's cost in a calendar month (``planner.engine.OwnedMonth``), by part, in USD."""

    year = serializers.IntegerField()
    month = serializers.IntegerField()
    month_label = serializers.CharField()
    parts = serializers.DictField(
        child=serializers.DecimalField(max_digits=20, decimal_places=2),
        help_text="depreciation, energy, colocation, support, staff (USD, to the cent).",
    )
    total_usd = serializers.DecimalField(max_digits=20, decimal_places=2)
    gpu_hours = serializers.DecimalField(max_digits=20, decimal_places=2)
    usd_per_gpu_hour = serializers.DecimalField(
        max_digits=12, decimal_places=4, allow_null=True, help_text="null: no day of the month is priced."
    )
    kwh = serializers.DecimalField(max_digits=20, decimal_places=2)
    unpriced_days = serializers.IntegerField(help_text="Days without an electricity price or a purchase in service.")
    assumptions = serializers.ListField(child=serializers.CharField())


class HardwareSkuSerializer(PricedMixin, ModelCleanMixin, serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:sku-detail", lookup_field="slug")
    price_in_force = serializers.SerializerMethodField(
        help_text="The SKU's on-demand price in force today: the cheapest quote a provider gave the fleet, else "
        "the cheapest public list price; null: unpriced. Assumptions (quotes with no provider) are never in force."
    )
    memory_bytes = serializers.IntegerField(
        read_only=True,
        help_text="GPU memory (bytes) every page shows, in GiB, and sizes in: hbm_bytes_reported when known, "
        "else the nominal hbm_gb x 1e9. Usable memory is gpu_memory_utilization x this.",
    )

    class Meta:
        model = HardwareSku
        fields = (
            "url",
            "slug",
            "name",
            "vendor",
            *HardwareSku.FIGURES,
            "memory_bytes",
            "hbm_reported_source",
            "tdp_watts",
            "idle_watts",
            "power_source",
            "price_in_force",
            "source",
            "assumptions",
            *TIMESTAMPS,
        )
        extra_kwargs = {
            "hbm_gb": {
                "help_text": "Nominal HBM in decimal GB, as the SKU is marketed (its name's '141GB'); "
                "not the memory sized in: see memory_bytes."
            },
        }

    @extend_schema_field(PriceInForceSerializer(allow_null=True))
    def get_price_in_force(self, sku: HardwareSku) -> dict[str, Any] | None:
        book, today = self.price_book()
        price = book.for_sku(sku.slug, today)
        return None if price is None else price.to_dict()


class ClusterSerializer(PricedMixin, ModelCleanMixin, serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:cluster-detail", lookup_field="slug")
    sku = SlugRelation(queryset=HardwareSku.objects.all())
    provider = ProviderField(help_text="The provider's name (any case), one of /api/v1/providers/.")
    price_in_force = serializers.SerializerMethodField(
        help_text="The cluster's on-demand price in force today: a rented cluster's provider's own quote for the "
        "SKU, else that provider's public list price; an owned cluster's own cost this month (basis owned); "
        "null: unpriced (never another provider's price or an assumption)."
    )
    owned_month = serializers.SerializerMethodField(
        help_text="An owned cluster's cost this calendar month with its GPUs on its hours a day at full load, by "
        "part (depreciation, energy, colocation, support, staff); null for a rented cluster or an owned one "
        "that cannot be priced (its page says why)."
    )
    total_gpus = serializers.IntegerField(read_only=True)
    effective_from = serializers.DateField(
        write_only=True,
        required=False,
        help_text="When this registration or change takes effect, for spend (default: today).",
    )

    class Meta:
        model = Cluster
        fields = (
            "url",
            "slug",
            "name",
            "sku",
            "nodes",
            "gpus_per_node",
            "total_gpus",
            "provider",
            "region",
            "team",
            "hours_per_day",
            "status",
            "ownership",
            "price_in_force",
            "owned_month",
            "effective_from",
            *TIMESTAMPS,
        )

    @extend_schema_field(PriceInForceSerializer(allow_null=True))
    def get_price_in_force(self, cluster: Cluster) -> dict[str, Any] | None:
        book, today = self.price_book()
        price = book.for_cluster(cluster, today)
        return None if price is None else price.to_dict()

    @extend_schema_field(OwnedMonthSerializer(allow_null=True))
    def get_owned_month(self, cluster: Cluster) -> dict[str, Any] | None:
        if not cluster.owned:
            return None
        book, today = self.price_book()
        month = owned_month(cluster, today.year, today.month, book.owned).month
        return None if month is None else month.to_dict()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        effective_from = attrs.pop("effective_from", None)
        attrs = super().validate(attrs)
        if effective_from is not None:
            attrs["effective_from"] = effective_from
        return attrs

    def create(self, validated_data: dict[str, Any]) -> Cluster:
        effective_from = validated_data.pop("effective_from", None)
        cluster = Cluster(**validated_data)
        cluster.save(effective_from=effective_from)
        return cluster

    def update(self, instance: Cluster, validated_data: dict[str, Any]) -> Cluster:
        effective_from = validated_data.pop("effective_from", None)
        for name, value in validated_data.items():
            setattr(instance, name, value)
        instance.save(effective_from=effective_from)
        return instance


class CapacitySerializer(serializers.Serializer):
    """A deployment's stored capacity snapshot (computed by a worker; docs/api.md, "Capacity")."""

    state = serializers.ChoiceField(
        choices=SNAPSHOT_STATES,
        help_text="current; stale (an input changed, its quote ended, or too old: being recomputed); failed "
        "(the last recomputation raised: figures are the previous ones, if any); pending (never computed).",
    )
    reason = serializers.CharField(help_text="Why it is not current (empty when it is).")
    computed_at = serializers.DateTimeField(allow_null=True, help_text="When the figures were computed.")
    error = serializers.CharField(help_text="The last recomputation's error (empty when it succeeded).")
    figures = serializers.DictField(
        allow_null=True,
        help_text="fits, capacity_sequences, planning_context_tokens, kv_cache_tokens, max_concurrency, gpu_blocks, "
        "block_size_tokens, envelope_bytes_per_gpu, speed (tpot_ms, ttft_ms at the observed batch, calibrated), "
        "output_tokens_per_s, usd_per_gpu_hour, usd_per_hour, usd_per_mtok_output (USD strings), quote, ...",
    )


class DeploymentSerializer(ModelCleanMixin, serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:deployment-detail", lookup_field="slug")
    cluster = SlugRelation(queryset=Cluster.objects.select_related("sku"))
    model = SlugRelation(queryset=ModelSpec.objects.all())
    workload = SlugRelation(queryset=Workload.objects.all(), required=False, allow_null=True)
    api_key = serializers.CharField(
        write_only=True,
        required=False,
        allow_blank=True,
        max_length=registration.MAX_API_KEY_CHARS,
        style={"input_type": "password"},
        help_text="Write-only. Omit to keep the stored key, send an empty string to clear it.",
    )
    has_api_key = serializers.BooleanField(read_only=True)
    last_status = serializers.CharField(
        source="shown_status",
        read_only=True,
        help_text="The last poll's status (up, loading, down, unauthorized, misconfigured, error; unknown: never "
        "polled), or stale when that poll is older than stale_after_s: never up on an old poll.",
    )
    last_poll_status = serializers.CharField(
        source="last_status", read_only=True, help_text="What the last poll said, however old it is."
    )
    stale_after_s = serializers.FloatField(
        read_only=True,
        help_text="Seconds after which the last poll is stale: max(FLEETCAP_ROUTE_STALE_POLL_INTERVALS x "
        "poll_interval_s, FLEETCAP_ROUTE_STALE_MIN_S).",
    )
    capacity = serializers.SerializerMethodField(
        help_text="The stored capacity snapshot: read, never recomputed by this request."
    )

    class Meta:
        model = Deployment
        fields = (
            "url",
            *Deployment.REGISTERED,
            "api_key",
            "has_api_key",
            "poll_interval_s",
            "enabled",
            "last_status",
            "last_poll_status",
            "stale_after_s",
            "last_status_changed",
            "last_polled",
            "last_metrics",
            "capacity",
            *TIMESTAMPS,
        )
        read_only_fields = ("last_status_changed", "last_polled", "last_metrics")

    @extend_schema_field(CapacitySerializer)
    def get_capacity(self, deployment: Deployment) -> dict[str, Any]:
        # The shape CapacitySerializer documents, as it is (plain JSON values; DRF's encoder writes the
        # datetime as its DateTimeField would): a serializer per row cost ~0.1 ms, a list of 50 ~5 ms.
        return describe_capacity(deployment)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        api_key = attrs.pop("api_key", None)
        errors: dict[str, Any] = {}
        try:
            attrs = super().validate(attrs)
        except serializers.ValidationError as exc:
            errors = dict(exc.detail) if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        # The registration checks (endpoint guard, sizing) on the deployment as it would be saved.
        instance = copy.copy(self.instance) if self.instance is not None else Deployment()
        for name, value in attrs.items():
            setattr(instance, name, value)
        try:
            registration.check_deployment(instance, valid=not errors)
        except InputError as exc:
            for name, messages in exc.errors.items():  # "__all__" as full_clean() reports it too
                errors[name] = [*errors.get(name, []), *messages]
        if errors:
            raise serializers.ValidationError(errors)
        if api_key is not None:
            attrs["api_key"] = api_key
        return attrs

    def to_representation(self, instance: Deployment) -> dict[str, Any]:
        data = super().to_representation(instance)
        if "base_url" in data:
            # Never the user info or query string a row stored before they were refused may carry.
            data["base_url"] = instance.shown_base_url
        return data

    # The key is set before the one save, so the audit trail has one entry per request.
    def create(self, validated_data: dict[str, Any]) -> Deployment:
        api_key = validated_data.pop("api_key", None)
        deployment = Deployment(**validated_data)
        if api_key is not None:
            deployment.set_api_key(api_key.strip())
        deployment.save()
        return deployment

    def update(self, instance: Deployment, validated_data: dict[str, Any]) -> Deployment:
        api_key = validated_data.pop("api_key", None)
        if api_key is not None:
            instance.set_api_key(api_key.strip())
        return super().update(instance, validated_data)


class GpuQuoteSerializer(PricedMixin, ModelCleanMixin, serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:gpuquote-detail")
    sku = SlugRelation(queryset=HardwareSku.objects.all())
    provider = ProviderField(
        required=False,
        allow_null=True,
        help_text="Who quoted it (a name of /api/v1/providers/, any case). null: an assumption no provider issued, "
        "never in force (a comparison may pick it by id).",
    )
    basis = serializers.SerializerMethodField(help_text="own, list or assumption.")
    in_force = serializers.SerializerMethodField(
        help_text="In force today: valid, not superseded by a newer quote of its provider and kind, not an assumption "
        "(it prices the clusters at its provider, or the SKU)."
    )

    class Meta:
        model = GpuQuote
        fields = (
            "url",
            "id",
            "sku",
            "provider",
            "usd_per_gpu_hour",
            "pricing_kind",
            "quoted_on",
            "valid_until",
            "source",
            "list_price",
            "basis",
            "in_force",
            *TIMESTAMPS,
        )

    def get_basis(self, quote: GpuQuote) -> str:
        return quote.basis

    def get_in_force(self, quote: GpuQuote) -> bool:
        book, today = self.price_book()
        if "superseded" not in self.context:
            self.context["superseded"] = superseded(book.quotes, today)
        valid = quote.quoted_on <= today and (quote.valid_until is None or quote.valid_until >= today)
        return quote.provider_id is not None and valid and quote.pk not in self.context["superseded"]


class ApiPriceSerializer(ModelCleanMixin, serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:apiprice-detail", lookup_field="slug")
    model = SlugRelation(
        queryset=ModelSpec.objects.all(),
        required=False,
        allow_null=True,
        help_text="Slug of the model spec this price is for (rent vs API says so when it compares different models).",
    )

    class Meta:
        model = ApiPrice
        fields = (
            "url",
            "slug",
            "provider",
            "model_name",
            "model",
            *ApiPrice.PRICES,
            "context_window",
            "quoted_on",
            "source",
            *TIMESTAMPS,
        )


class EndpointPollSerializer(serializers.ModelSerializer):
    deployment = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    calibration_ratio = serializers.FloatField(read_only=True, allow_null=True)
    block_check_ok = serializers.BooleanField(
        read_only=True,
        allow_null=True,
        help_text="vLLM's published blocks and block size within 0.97-1.03 of the vLLM profile's; "
        "null: nothing to compare.",
    )

    class Meta:
        model = EndpointPoll
        fields = (
            "id",
            "deployment",
            "polled_at",
            "status",
            "reason",
            "latency_ms",
            "requests_running",
            "requests_waiting",
            "kv_cache_usage",
            "prefix_cache_hit_rate",
            "prompt_tokens_per_s",
            "generation_tokens_per_s",
            "ttft_p50_ms",
            "ttft_p95_ms",
            "itl_p50_ms",
            "itl_p95_ms",
            "counter_reset",
            "observed_cache_tokens",
            "predicted_cache_tokens",
            "calibration_ratio",
            "observed_num_blocks",
            "predicted_num_blocks",
            "observed_block_size",
            "predicted_block_size",
            "block_check_ok",
            "outcome",
        )
        read_only_fields = fields


class ModelSpecSerializer(ModelCleanMixin, serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:modelspec-detail", lookup_field="slug")
    is_moe = serializers.BooleanField(read_only=True)

    class Meta:
        model = ModelSpec
        fields = (
            "url",
            "slug",
            "name",
            "hf_model_id",
            *ModelSpec.FIGURES,
            "modalities",
            "is_moe",
            "source",
            "assumptions",
            *TIMESTAMPS,
        )


class ModelImportSerializer(serializers.Serializer):
    """``POST /api/v1/models/import/``: a config.json and what it does not say. Only types the body;
    ``fleet.registration.import_model`` converts and validates it."""

    slug = serializers.CharField(max_length=SLUG_MAX_CHARS)
    name = serializers.CharField(max_length=100)
    config = BoundedJSONField(
        max_chars=registration.MAX_CONFIG_BYTES,
        allow_non_finite=True,
        help_text="The model's config.json, as a JSON object (at most 2 MB); Infinity and NaN are read as written.",
    )
    total_params = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=MAX_PARAMS, help_text="Default: computed."
    )
    active_params = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=MAX_PARAMS, help_text="Default: computed."
    )
    weight_format = serializers.ChoiceField(
        choices=WEIGHT_FORMATS,
        required=False,
        allow_null=True,
        allow_blank=True,
        help_text="Every weight in this format; default: read from the config's quantization_config.",
    )
    quant_config = BoundedJSONField(
        max_chars=registration.MAX_CONFIG_BYTES,
        allow_non_finite=True,
        required=False,
        allow_null=True,
        help_text="A ModelOpt hf_quant_config.json shipped beside the config.",
    )
    hf_model_id = serializers.CharField(
        required=False, allow_blank=True, max_length=200, help_text="owner/name; default: the config's _name_or_path."
    )
    source = serializers.CharField(required=False, allow_blank=True, max_length=inputs.MAX_TEXT_CHARS)

    def to_request(self) -> registration.ImportModelRequest:
        return registration.ImportModelRequest.from_fields(self.validated_data)


class WorkloadSerializer(ModelCleanMixin, serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:workload-detail", lookup_field="slug")

    class Meta:
        model = Workload
        fields = (
            "url",
            "slug",
            "name",
            "team",
            *Workload.FIGURES,
            *TIMESTAMPS,
        )


class ProviderSerializer(ModelCleanMixin, serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:provider-detail")

    class Meta:
        model = Provider
        fields = ("url", "id", "name", "kind", *TIMESTAMPS)


class LaunchFlagSerializer(serializers.Serializer):
    option = serializers.CharField(read_only=True, help_text="The option as the engine's parser spells it.")
    value = serializers.CharField(read_only=True, allow_null=True, help_text="Null: a switch.")
    why = serializers.CharField(read_only=True)
    source = serializers.CharField(read_only=True, help_text="The release, file and function that define it.")


class LaunchCommandSerializer(serializers.Serializer):
    """``GET /api/v1/deployments/{slug}/launch/`` (``planner.engine.LaunchCommand.to_dict``)."""

    engine = serializers.CharField(read_only=True)
    release = serializers.CharField(
        read_only=True, help_text="The engine release whose parser the flags are read from."
    )
    command = serializers.CharField(read_only=True, help_text="One shell line for one replica.")
    argv = serializers.ListField(child=serializers.CharField(), read_only=True)
    flags = LaunchFlagSerializer(many=True, read_only=True)
    gpus_per_replica = serializers.IntegerField(read_only=True)
    replicas = serializers.IntegerField(read_only=True)
    pods_per_replica = serializers.IntegerField(read_only=True)
    kubernetes = serializers.CharField(read_only=True, help_text="A container fragment (YAML) for one replica's pod.")
    notes = serializers.ListField(child=serializers.CharField(), read_only=True)


class OwnedCostsSerializer(ModelCleanMixin, serializers.ModelSerializer):
    """An owned cluster's running costs (one per cluster)."""

    url = serializers.HyperlinkedIdentityField(view_name="api:ownedcosts-detail")
    cluster = SlugRelation(queryset=Cluster.objects.all())

    class Meta:
        model = OwnedCosts
        fields = ("url", "id", "cluster", *OwnedCosts.FIGURES, *TIMESTAMPS)


class ClusterPurchaseSerializer(ModelCleanMixin, serializers.ModelSerializer):
    """Nodes of an owned cluster bought on a day, in a currency (another than USD: converted at the exchange
    rate of its day, /api/v1/exchange-rates/)."""

    url = serializers.HyperlinkedIdentityField(view_name="api:clusterpurchase-detail")
    cluster = SlugRelation(queryset=Cluster.objects.select_related("sku"))

    class Meta:
        model = ClusterPurchase
        fields = ("url", "id", "cluster", *ClusterPurchase.FIGURES, *TIMESTAMPS)


class ElectricityPriceSerializer(ModelCleanMixin, serializers.ModelSerializer):
    """A site's electricity price from a day until the site's next one."""

    url = serializers.HyperlinkedIdentityField(view_name="api:electricityprice-detail")

    class Meta:
        model = ElectricityPrice
        fields = ("url", "id", "site", "valid_from", "usd_per_kwh", "source", *TIMESTAMPS)
