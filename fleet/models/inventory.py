"""The fleet's inventory: hardware SKUs, clusters and the deployments served on them."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.core.validators import MinValueValidator, URLValidator
from django.db import models, transaction
from django.urls import reverse
from django.utils import timezone

from fleet import crypto
from fleet.polling import display_url
from fleet.validators import hours_per_day, non_negative, positive, utilisation
from planner.engine import (
    ACCELERATOR_RECORD_FIELDS,
    DEFAULT_ENGINE,
    DEFAULT_GPU_MEMORY_UTILIZATION,
    DEFAULT_KV_CACHE_DTYPE,
    KV_CACHE_DTYPES,
    Accelerator,
    EngineInputError,
    LaunchCommand,
    LaunchRequest,
    Layout,
    ModelArch,
    Power,
    Serving,
    SizingResult,
    ThroughputResult,
    context_window,
    engine_choices,
    estimate,
    gpu_memory_bytes,
    launch_command,
    layout_errors,
    profile_of,
    stale_limit_s,
    usable_bytes,
)

from .base import SlugField, Sourced, TimeStamped
from .history import TRACKED_FIELDS, ClusterState
from .polls import cache_ratio, ratio_ok


class HardwareSku(TimeStamped, Sourced):
    """An accelerator model. ``hbm_gb`` is the vendor's nominal decimal GB (1e9 bytes)."""

    #: The figures the engine models it by (the API, the forms and decision snapshots list these).
    FIGURES = ACCELERATOR_RECORD_FIELDS

    slug = SlugField()
    name = models.CharField(max_length=100)
    vendor = models.CharField(max_length=50)
    hbm_gb = models.FloatField("HBM (GB, decimal)", validators=[positive])
    hbm_bandwidth_tbps = models.FloatField("HBM bandwidth (TB/s)", validators=[positive])
    bf16_tflops = models.FloatField("dense BF16 TFLOPS", validators=[positive])
    fp8_tflops = models.FloatField("dense FP8 TFLOPS", null=True, blank=True, validators=[positive])
    fp4_tflops = models.FloatField("dense FP4 TFLOPS", null=True, blank=True, validators=[positive])
    interconnect_gbps = models.FloatField(
        "scale-up link (GB/s per GPU)", validators=[non_negative], help_text="Per-GPU scale-up bandwidth."
    )
    gpus_per_node = models.PositiveSmallIntegerField("GPUs per node", default=8, validators=[MinValueValidator(1)])
    scaleup_domain_gpus = models.PositiveSmallIntegerField(
        "scale-up domain (GPUs)",
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="GPUs on one NVLink/Infinity Fabric: 8 for HGX, 72 for a GB300 NVL72 rack. Blank: GPUs per node.",
    )
    hbm_bytes_reported = models.PositiveBigIntegerField(
        "HBM the driver reports (bytes)",
        null=True,
        blank=True,
        validators=[positive],
        help_text="Total memory as the driver reports it to the engine (torch.cuda.mem_get_info); "
        "usable memory is this x gpu_memory_utilization. Blank: the nominal decimal GB.",
    )
    hbm_reported_source = models.CharField(
        "source of the reported HBM", max_length=500, blank=True, help_text="Where the reported figure was read."
    )
    tdp_watts = models.FloatField(
        "power at full load (W per GPU)",
        null=True,
        blank=True,
        validators=[positive],
        help_text="The datasheet's maximum board power (TDP): an owned cluster's energy at full load.",
    )
    idle_watts = models.FloatField(
        "power idle (W per GPU)",
        null=True,
        blank=True,
        validators=[non_negative],
        help_text="A measured idle draw (nvidia-smi / rocm-smi with nothing running). Blank: full load is assumed.",
    )
    power_source = models.TextField(blank=True, help_text="Where the power figures were read.")

    class Meta:
        ordering = ["vendor", "hbm_gb", "name"]
        verbose_name = "hardware SKU"

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("api:sku-detail", kwargs={"slug": self.slug})

    @property
    def memory_bytes(self) -> int:
        """This SKU's GPU memory (bytes): what its driver reports (``hbm_bytes_reported``), else the
        nominal ``hbm_gb`` x 1e9, by the engine's one rule (``planner.engine.gpu_memory_bytes``). Every
        page shows this figure (in GiB, ``binary_bytes``); ``hbm_gb`` is the marketing figure, in the name."""
        return gpu_memory_bytes(self.hbm_gb, self.hbm_bytes_reported)

    def power(self, node_overhead_w: Any = 0, pue: Any = 1) -> Power:
        """The engine's power model of a node of this SKU (``planner.engine.Power``): full load from
        ``tdp_watts``, idle from ``idle_watts`` (None: unknown), with a node's overhead (W) and the site's
        PUE. ``EngineInputError`` when the figures are out of range or the SKU has no full-load power."""
        return Power(
            gpu_full_w=None if self.tdp_watts is None else Decimal(str(self.tdp_watts)),
            gpu_idle_w=None if self.idle_watts is None else Decimal(str(self.idle_watts)),
            node_overhead_w=Decimal(str(node_overhead_w)),
            pue=Decimal(str(pue)),
        )

    def clean(self) -> None:
        """The power figures as the engine's power model takes them (``planner.engine.Power``: idle at most
        full load, full load at most 10 kW), so an owned cluster on this SKU can be priced."""
        if not self.tdp_watts or self.tdp_watts < 0 or (self.idle_watts is not None and self.idle_watts < 0):
            return  # blank (unpriced, said so) or refused by the field validators
        try:
            self.power()
        except EngineInputError as exc:
            names = {"gpu_full_w": "tdp_watts", "gpu_idle_w": "idle_watts"}
            raise ValidationError(
                {names.get(k.split(".")[-1], NON_FIELD_ERRORS): v for k, v in exc.errors.items()}
            ) from None

    def to_engine(self) -> Accelerator:
        """The engine's view of this record (the catalogue row's shape: ``Accelerator.from_record``)."""
        return Accelerator.from_record({name: getattr(self, name) for name in ("name", *self.FIGURES)})


class EngineField(models.CharField):
    """A serving engine's name, its choices the serving-engine registry's (``planner.engine.engine_choices``)
    read whenever they are used: validation (``full_clean``), page and admin forms, the API's
    serializers and the display name, so one entry in the registry adds an engine everywhere.

    Migrations see the registry's list as it is (a plain ``CharField`` with those choices), so the
    migration state changes only when the registry does, and then ``makemigrations`` records it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["choices"] = engine_choices  # a callable: Django reads it each time
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> tuple[str, str, list[Any], dict[str, Any]]:
        name, _path, args, kwargs = super().deconstruct()
        kwargs["choices"] = engine_choices()
        return name, "django.db.models.CharField", args, kwargs

    def formfield(self, **kwargs: Any) -> Any:
        field = super().formfield(**kwargs)
        field.choices = engine_choices  # the form's too, not a copy taken when its class was made
        return field


class Cluster(TimeStamped):
    """A group of identical nodes rented or owned together."""

    class Status(models.TextChoices):
        PLANNED = "planned", "Planned"
        ACTIVE = "active", "Active"
        RETIRED = "retired", "Retired"

    class Ownership(models.TextChoices):
        RENTED = "rented", "Rented"
        OWNED = "owned", "Owned"

    slug = SlugField()
    name = models.CharField(max_length=100)
    sku = models.ForeignKey(HardwareSku, on_delete=models.PROTECT, related_name="clusters", verbose_name="SKU")
    nodes = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    gpus_per_node = models.PositiveSmallIntegerField(
        "GPUs per node", null=True, blank=True, validators=[MinValueValidator(1)], help_text="Defaults to the SKU's."
    )
    provider = models.ForeignKey(
        "fleet.Provider",
        on_delete=models.PROTECT,
        related_name="clusters",
        help_text="Who rents or runs it: its price in force is this provider's quote for the SKU.",
    )
    region = models.CharField(max_length=100, blank=True)
    team = models.CharField(max_length=100)
    hours_per_day = models.DecimalField(
        max_digits=4, decimal_places=2, default=24, validators=[hours_per_day], help_text="24 = always on."
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    ownership = models.CharField(
        max_length=6,
        choices=Ownership.choices,
        default=Ownership.RENTED,
        help_text="Rented: priced at its provider's quote. Owned: at its own cost (purchases, power, "
        "colocation, support, staff).",
    )

    class Meta:
        ordering = ["name"]
        indexes = [models.Index(fields=["team"])]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("api:cluster-detail", kwargs={"slug": self.slug})

    def clean(self) -> None:
        """Default the GPUs per node to the SKU's; refuse a size that leaves a deployment on this
        cluster without the GPUs its layout needs (listing them)."""
        if self.gpus_per_node is None and self.sku_id:
            self.gpus_per_node = self.sku.gpus_per_node
        if self.pk is None or not self.nodes or not self.gpus_per_node:
            return
        total = self.total_gpus
        short = [d for d in self.deployments.all() if d.gpus > total]
        if short:
            needs = ", ".join(f"{d.slug} needs {d.gpus}" for d in short)
            raise ValidationError(
                {
                    "nodes": (
                        f"With {total} GPUs this cluster would leave {len(short)} deployment(s) without the GPUs "
                        f"their layout needs: {needs}. Shrink or move them first."
                    )
                }
            )

    def save(self, *args, effective_from: date | None = None, record_state: bool = True, **kwargs) -> None:
        """Save, and record the figures that cost money in the dated history when they change.

        ``effective_from`` (default: today, UTC) is when a change takes effect, so a cluster
        registered late or resized last week can be dated correctly. A change of an existing
        cluster dated in the future is only scheduled: its state is recorded for that date and the
        row keeps today's figures until ``apply_due_changes`` (task ``fleet.apply_cluster_changes``,
        hourly) applies it on the day. ``record_state=False``: the row is brought in line with a
        state already recorded.
        """
        if self.gpus_per_node is None and self.sku_id:
            self.gpus_per_node = self.sku.gpus_per_node
        today = timezone.now().date()
        if self.pk is not None and effective_from is not None and effective_from > today:
            with transaction.atomic():
                ClusterState.record(self, effective_from)
                current = self.states.filter(effective_from__lte=today).order_by("-effective_from").first()
                if current is not None:
                    for name in TRACKED_FIELDS:
                        setattr(self, name, getattr(current, name))
                super().save(*args, **kwargs)
            return
        with transaction.atomic():
            super().save(*args, **kwargs)
            if not record_state:
                return
            latest = self.states.order_by("-effective_from").first()
            if (
                latest is None
                or any(getattr(latest, name) != getattr(self, name) for name in TRACKED_FIELDS)
                or (effective_from is not None and effective_from != latest.effective_from)
            ):
                ClusterState.record(self, effective_from or timezone.now().date())

    @property
    def owned(self) -> bool:
        return self.ownership == self.Ownership.OWNED

    @property
    def total_gpus(self) -> int:
        """GPUs in the cluster: nodes x GPUs per node."""
        return self.nodes * (self.gpus_per_node or self.sku.gpus_per_node)

    @property
    def free_gpus(self) -> int:
        """GPUs no deployment on this cluster holds (total - each deployment's replicas x tp x pp x dp)."""
        return self.total_gpus - sum(d.gpus for d in self.deployments.all())

    def scheduled_changes(self, today: date | None = None) -> list[ClusterState]:
        """States dated after ``today`` (default: today, UTC): changes recorded, not yet in force."""
        today = today or timezone.now().date()
        return list(self.states.filter(effective_from__gt=today).select_related("sku").order_by("effective_from"))

    @classmethod
    def apply_due_changes(cls, today: date | None = None) -> list[str]:
        """Bring every cluster's row in line with its state in force ``today`` (scheduled changes
        whose day has come); the slugs changed. Idempotent."""
        today = today or timezone.now().date()
        in_force: dict[int, ClusterState] = {}
        for state in ClusterState.objects.filter(effective_from__lte=today).order_by("cluster_id", "-effective_from"):
            in_force.setdefault(state.cluster_id, state)  # the latest on or before today, per cluster
        changed = []
        for cluster in cls.objects.select_related("sku").filter(pk__in=in_force):
            state = in_force[cluster.pk]
            if all(getattr(state, n) == getattr(cluster, n) for n in TRACKED_FIELDS):
                continue
            for name in TRACKED_FIELDS:
                setattr(cluster, name, getattr(state, name))
            cluster.save(record_state=False)
            changed.append(cluster.slug)
        return changed


#: What a deployment's status reads when its last poll is older than its staleness limit
#: (``Deployment.shown_status``): never "up" on an old poll.
STALE_STATUS = "stale"


class Deployment(TimeStamped):
    """A model served on a cluster, with its parallel layout and serving endpoint."""

    #: How it is served: the layout and the engine's settings (API, forms and decision snapshots).
    SERVING = (
        "replicas",
        "tp",
        "pp",
        "dp",
        "ep",
        "engine",
        "engine_version",
        "block_size_tokens",
        "enable_prefix_caching",
        "kv_cache_dtype",
        "max_model_len",
        "gpu_memory_utilization",
    )
    #: What registering one names: where it runs, what it serves and how, and its endpoint.
    REGISTERED = ("slug", "cluster", "model", "workload", *SERVING, "base_url", "served_model_id")
    #: Written by the poller (``fleet.poll_store``): the live state and the poll lease. Not part of the
    #: audit trail (fleet/audit.py): they change on every poll.
    LIVE_FIELDS = (
        "last_status",
        "last_status_changed",
        "last_polled",
        "last_metrics",
        "poll_lease_until",
        "poll_lease_owner",
    )

    slug = SlugField()
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="deployments")
    model = models.ForeignKey("fleet.ModelSpec", on_delete=models.PROTECT, related_name="deployments")
    workload = models.ForeignKey(
        "fleet.Workload",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="deployments",
        help_text="The traffic it serves: its SLOs are drawn on the charts, its shape sets the speed estimate.",
    )
    replicas = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    tp = models.PositiveSmallIntegerField("tensor parallel", default=1, validators=[MinValueValidator(1)])
    pp = models.PositiveSmallIntegerField("pipeline parallel", default=1, validators=[MinValueValidator(1)])
    dp = models.PositiveSmallIntegerField("data parallel (attention)", default=1, validators=[MinValueValidator(1)])
    ep = models.PositiveSmallIntegerField("expert parallel", default=1, validators=[MinValueValidator(1)])
    engine = EngineField(max_length=10, default=DEFAULT_ENGINE)
    engine_version = models.CharField(
        max_length=20, blank=True, help_text="The engine's release (e.g. 0.11.0); blank: the newest the app models."
    )
    block_size_tokens = models.PositiveIntegerField(
        "KV block size (tokens)",
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="--block-size / --page-size as served; blank: the engine's default.",
    )
    enable_prefix_caching = models.BooleanField(
        "prefix caching",
        null=True,
        blank=True,
        help_text="vLLM's --enable-prefix-caching as served (hybrid models keep one more state block per request "
        "with it); blank: the engine release's default (on for hybrids from vLLM 0.28).",
    )
    base_url = models.CharField(
        "base URL",
        max_length=300,
        blank=True,
        validators=[URLValidator(schemes=["http", "https"])],
        help_text="The server's root, e.g. http://10.0.0.5:8000 (without /v1).",
    )
    served_model_id = models.CharField("served model ID", max_length=200, blank=True)
    kv_cache_dtype = models.CharField(
        "KV cache dtype", max_length=10, choices=[(d, d) for d in KV_CACHE_DTYPES], default=DEFAULT_KV_CACHE_DTYPE
    )
    max_model_len = models.PositiveIntegerField(
        "max model length (tokens)", null=True, blank=True, validators=[MinValueValidator(1)]
    )
    gpu_memory_utilization = models.FloatField(
        "GPU memory utilization (0-1)", default=DEFAULT_GPU_MEMORY_UTILIZATION, validators=[utilisation]
    )
    api_key_encrypted = models.TextField(blank=True, default="", editable=False)
    poll_interval_s = models.PositiveIntegerField("poll interval (s)", default=15, validators=[MinValueValidator(5)])
    enabled = models.BooleanField(default=True)
    # Live state, written by the poller (fleet.polling): the last status and when it changed,
    # the last poll time and the latest normalised metrics (so pages need no join to the polls).
    last_status = models.CharField(max_length=15, default="unknown", editable=False)
    last_status_changed = models.DateTimeField(null=True, blank=True, editable=False)
    last_polled = models.DateTimeField(null=True, blank=True, editable=False)
    last_metrics = models.JSONField(default=dict, blank=True, editable=False)
    #: While set in the future, one worker holds the right to poll this deployment; the owner is
    #: the token of the cycle (or single poll) that took it (fleet/poller.py, ``take_leases``).
    poll_lease_until = models.DateTimeField(null=True, blank=True, editable=False)
    poll_lease_owner = models.CharField(max_length=32, blank=True, default="", editable=False)

    class Meta:
        ordering = ["slug"]
        permissions = [("poll_deployment", "Can poll a deployment's endpoint now")]

    def __str__(self) -> str:
        return self.slug

    @property
    def headline(self) -> str:
        """How a page's headline names it (a deployment has no name; its slug is an identifier):
        ``Llama-3.1-70B-Instruct on Pool``."""
        return f"{self.model.name} on {self.cluster.name}"

    def get_absolute_url(self) -> str:
        return reverse("api:deployment-detail", kwargs={"slug": self.slug})

    # The API key is write-only: it can be set or cleared, never read back through a form,
    # the API or a page. Only the poller calls ``decrypted_api_key()``.
    def set_api_key(self, plaintext: str) -> None:
        self.api_key_encrypted = crypto.encrypt(plaintext)

    def decrypted_api_key(self) -> str:
        """The decrypted key (``""`` when none is set); raises ``crypto.UndecryptableSecret`` when
        the stored key cannot be decrypted with any configured key."""
        return crypto.decrypt(self.api_key_encrypted)

    @property
    def has_api_key(self) -> bool:
        return bool(self.api_key_encrypted)

    @property
    def shown_base_url(self) -> str:
        """``base_url`` as safe to show: without user info, query string or fragment (a row stored
        before registration refused them may carry a key there)."""
        return display_url(self.base_url) if self.base_url else ""

    @property
    def stale_after_s(self) -> float:
        """Seconds after which the last poll is stale: ``max(ROUTE_STALE_POLL_INTERVALS x poll_interval_s,
        ROUTE_STALE_MIN_S)``, the router's rule (``planner.engine.stale_limit_s``), the one rule of a stale poll."""
        return stale_limit_s(
            self.poll_interval_s, float(settings.ROUTE_STALE_POLL_INTERVALS), float(settings.ROUTE_STALE_MIN_S)
        )

    def poll_is_stale(self, now: datetime | None = None) -> bool:
        """Whether the last poll is older than :attr:`stale_after_s` (never polled: no)."""
        if self.last_polled is None:
            return False
        return ((now or timezone.now()) - self.last_polled).total_seconds() > self.stale_after_s

    def status_turns_stale_at(self, now: datetime | None = None) -> datetime | None:
        """When :meth:`shown_status` turns stale by age alone (the last poll plus :attr:`stale_after_s`);
        None when it never will without a poll (never polled, or already stale). Shared answers that
        show the status are good until then at most (``fleet.page_cache``)."""
        if self.last_polled is None or self.poll_is_stale(now):
            return None
        return self.last_polled + timedelta(seconds=self.stale_after_s)

    def shown_status(self, now: datetime | None = None) -> str:
        """The status pages, the API and ``/metrics`` show: the last poll's (``last_status``), or
        :data:`STALE_STATUS` when that poll is older than :attr:`stale_after_s` (polls stopped: a
        deployment never reads "up" on an old poll)."""
        return STALE_STATUS if self.poll_is_stale(now) else self.last_status

    def shown_status_title(self, now: datetime | None = None) -> str:
        """Why a stale status reads stale (the badge's title): what the last poll said, and when (empty otherwise)."""
        if not self.poll_is_stale(now):
            return ""
        at = timezone.localtime(self.last_polled)
        return (
            f"The last poll, at {at:%Y-%m-%d %H:%M:%S} {at.tzname()}, said {self.last_status}; it is older than "
            f"this deployment's staleness limit ({self.stale_after_s:,.0f} s)."
        )

    @property
    def layout(self) -> Layout:
        return Layout(tp=self.tp, pp=self.pp, dp=self.dp, ep=self.ep)

    @property
    def gpus_per_replica(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def gpus(self) -> int:
        """GPUs the deployment occupies: replicas x tp x pp x dp."""
        return self.replicas * self.gpus_per_replica

    @property
    def usable_memory_bytes(self) -> int:
        """Memory per GPU the engine may use (bytes): ``gpu_memory_utilization`` x the SKU's GPU memory
        (``HardwareSku.memory_bytes``), as the engine sizes it (``planner.engine.usable_bytes``)."""
        return usable_bytes(self.cluster.sku.memory_bytes, self.gpu_memory_utilization)

    @property
    def planning_context_tokens(self) -> int:
        """The context length capacity is quoted at: the served maximum, else the model's
        (``planner.engine.context_window``, the engine's one rule)."""
        return context_window(self.max_model_len, self.model.max_context_tokens)

    @property
    def engine_profile(self) -> str:
        """The allocator profile the serving engine registry sizes this engine with (``generic``: none)."""
        return profile_of(self.engine)

    def serving(self, model: ModelArch | None = None, accelerator: Accelerator | None = None, **extra: Any) -> Serving:
        """How this deployment serves, for the engine (``planner.engine.Serving``): its model, SKU, layout,
        replicas, KV cache dtype, memory utilisation and engine profile with release, block size and
        max_model_len. ``model`` / ``accelerator`` let a caller reuse engine objects across deployments;
        ``extra`` sets the router's fields (``correction``, ``correction_age_s``)."""
        return Serving(
            model=model or self.model.to_engine(),
            accelerator=accelerator or self.cluster.sku.to_engine(),
            layout=self.layout,
            replicas=self.replicas,
            kv_cache_dtype=self.kv_cache_dtype,
            gpu_memory_utilization=self.gpu_memory_utilization,
            engine=self.engine_profile,
            engine_version=self.engine_version or None,
            block_size_tokens=self.block_size_tokens,
            max_model_len=self.max_model_len,
            prefix_caching=self.enable_prefix_caching,
            **extra,
        )

    def sizing(self, context_tokens: int | None = None, model: ModelArch | None = None) -> SizingResult:
        """Predicted memory envelopes and admission capacity of this deployment (whole deployment) at
        ``context_tokens`` (default: its planning context, ``max_model_len``), sized with its own engine
        profile (``Serving.size``). ``model`` lets a caller reuse one engine object for many deployments of
        the same model (the engine memoises per-model constants on it)."""
        return self.serving(model).size(context_tokens or self.planning_context_tokens)

    @property
    def calibration_ratio(self) -> float | None:
        """Observed over predicted KV-cache tokens at the last poll that had both (``last_metrics``)."""
        metrics = self.last_metrics or {}
        return cache_ratio(metrics.get("observed_cache_tokens"), metrics.get("predicted_cache_tokens"))

    @property
    def calibration_flagged(self) -> bool:
        """True when the last poll's ratio is outside ``polls.CALIBRATION_RANGE`` (pages flag it)."""
        return ratio_ok(self.calibration_ratio) is False

    def throughput(
        self, usd_per_gpu_hour=None, *, batch: int | None = None, model: ModelArch | None = None
    ) -> ThroughputResult:
        """Speed of one replica for its workload's request shape (or 2,048 in / 256 out), at ``batch``
        sequences per replica (default: its SLO-limited concurrency), memory admission sized with its own
        engine profile (``Serving.engine_options``). ``model``: a reused engine object."""
        w = self.workload
        serving = self.serving(model)
        return estimate(
            serving.model,
            serving.accelerator,
            self.layout,
            prompt_tokens=w.mean_prompt_tokens if w else 2048,
            output_tokens=w.mean_output_tokens if w else 256,
            context_tokens=self.planning_context_tokens
            if not w
            else min(w.p95_context_tokens, self.planning_context_tokens),
            batch=batch,
            prefix_cache_hit_rate=w.prefix_cache_hit_rate if w else 0.0,
            ttft_slo_ms=w.ttft_slo_ms if w else None,
            tpot_slo_ms=w.tpot_slo_ms if w else None,
            usd_per_gpu_hour=usd_per_gpu_hour,
            kv_cache_dtype=self.kv_cache_dtype,
            gpu_memory_utilization=self.gpu_memory_utilization,
            engine=serving.engine_options(),
        )

    def launch_command(self, engine: str | None = None) -> LaunchCommand:
        """The command that starts one replica of this deployment on its engine (or ``engine``), with a
        Kubernetes fragment (``planner.engine.launch_command``: each flag cited to the engine release's
        parser). ``EngineInputError``: the engine has no launch command, or the model no Hugging Face id."""
        if not self.model.hf_model_id:
            raise EngineInputError.single(
                "model", f"{self.model.name} has no Hugging Face model id: add it to the model to get a launch command."
            )
        request = LaunchRequest(
            model_id=self.model.hf_model_id,
            layout=self.layout,
            replicas=self.replicas,
            kv_cache_dtype=self.kv_cache_dtype,
            max_model_len=self.max_model_len,
            gpu_memory_utilization=self.gpu_memory_utilization,
            block_size_tokens=self.block_size_tokens,
            enable_prefix_caching=self.enable_prefix_caching,
            served_model_name=self.served_model_id or None,
            gpus_per_node=self.cluster.gpus_per_node or self.cluster.sku.gpus_per_node,
        )
        return launch_command(engine or self.engine, request)

    def clean(self) -> None:
        """Check the layout against the cluster and the model (rules in docs/layouts.md).

        Plain validation only: no network, no sizing engine. Registration (API, pages, admin) also
        runs ``fleet.registration.check_deployment``: the endpoint guard (resolves DNS) and the
        engine's own rules."""
        if not (self.cluster_id and self.model_id):
            return
        values = [self.tp, self.pp, self.dp, self.ep, self.replicas]
        if any(v is None or v < 1 for v in values):
            return  # the field validators report these
        errors = layout_errors(
            self.layout,
            model=self.model.to_engine(),
            available_gpus=self.cluster.total_gpus,
            replicas=self.replicas,
        )
        if self.max_model_len and self.model.max_context_tokens and self.max_model_len > self.model.max_context_tokens:
            errors.setdefault("max_model_len", []).append(
                f"The model's maximum context is {self.model.max_context_tokens} tokens."
            )
        if errors:
            raise ValidationError(errors)
