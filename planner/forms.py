"""Page forms for the planner: they type a page's input and show a service's domain errors beside
the fields (``add_service_errors``). Rules live in the models (``full_clean``), the services and
the engine, never here."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django import forms

from fleet.errors import InputError
from fleet.forms import BoundedDecimalField, BoundedFloatField, BoundedIntegerField, UploadField, keep_upload_text
from fleet.limits import MAX_BLOCK_TOKENS, MAX_DEGREE, MAX_GIB_PER_GPU, MAX_GPUS, MAX_MONTHLY, MAX_SLO_MS, MAX_TOKENS
from fleet.models import ApiPrice, Deployment, GpuQuote, HardwareSku, ModelSpec, Workload
from fleet.models.base import SLUG_MAX_CHARS
from fleet.pickers import PickField
from fleet.tables import Column, TableForm
from planner.breakeven import BreakevenRequest
from planner.calibrations import CalibrationRequest
from planner.decisions import NOTE_MAX_CHARS
from planner.engine import (
    CACHE_MODES,
    DEFAULT_ENGINE,
    DEFAULT_GPU_MEMORY_UTILIZATION,
    DEFAULT_KV_CACHE_DTYPE,
    GENERIC,
    KV_CACHE_DTYPES,
    MAX_LOG_BYTES,
    MAX_TRACE_BYTES,
    MODALITIES,
    MODES,
    NEWEST_VLLM,
    RETENTIONS,
    RequestClass,
    engine_choices,
    prefix_cache_engines,
    profile_names,
)
from planner.models import Decision
from planner.plans import MAX_NODES_LIMIT, PLAN_KV_CACHE_DTYPES, PRICE_BASES, PlanRequest
from planner.prefix_cache import EXAMPLE_TRACE, PrefixCacheRequest, trace_text
from planner.routing import most_served_model
from planner.sizing import POOLS, Sizing, SizingRequest, deployment_inputs, find_deployment
from planner.spend import FIRST_MONTH, LAST_MONTH


def _number(**attrs: object) -> forms.NumberInput:
    return forms.NumberInput(attrs={"min": 1, **attrs})


def _pairs(names: Callable[[], tuple[str, ...]]) -> Callable[[], list[tuple[str, str]]]:
    """Choices ``(name, name)`` read from ``names()`` each time a form is made (Django calls a callable
    for its choices): the serving-engine registry's lists, never a copy taken at import."""
    return lambda: [(name, name) for name in names()]


def utilisation_field() -> forms.FloatField:
    """The GPU memory utilisation input of the sizing pages (a fraction above 0 and at most 1, blank: the
    engine's default), one definition for every form that takes it."""
    return BoundedFloatField(
        label="GPU memory utilisation",
        min_value=0.01,
        max_value=1,
        required=False,
        widget=forms.NumberInput(
            attrs={"step": "0.01", "min": "0.01", "max": "1", "placeholder": f"{DEFAULT_GPU_MEMORY_UTILIZATION:g}"}
        ),
    )


class WhatIfForm(forms.Form):
    """The what-if inputs (GET, so a result's URL can be shared). Choices come from the records;
    every default is ``SizingRequest``'s, except the page's starting example (``EXAMPLE``)."""

    #: Where the page starts when the URL names no input: Kimi K3 on 16 H200 (the seeds' example).
    EXAMPLE = {
        "model": "kimi-k3",
        "sku": "h200-141gb",
        "gpus": "16",
        "tp": "8",
        "dp": "2",
        "ep": "16",
        "kv_cache_dtype": "fp8",
        "context_tokens": "131072",
        "pool": "unified",
    }

    deployment = PickField(
        "deployments",
        label="From deployment",
        required=False,
        placeholder="none (slug or model)",
        help_text="Picking one loads its inputs; the result then names each input changed from it, and a field "
        "left blank takes the deployment's. Its live speed correction applies to its own layout.",
    )
    #: The deployment the fields were loaded from (``from_query``): picking another loads that one's.
    loaded = forms.CharField(required=False, max_length=SLUG_MAX_CHARS, widget=forms.HiddenInput)
    model = forms.ChoiceField(required=False)
    sku = forms.ChoiceField(label="SKU", required=False)
    gpus = BoundedIntegerField(label="GPUs", min_value=1, max_value=MAX_GPUS, required=False, widget=_number())
    tp = BoundedIntegerField(label="tp", min_value=1, max_value=MAX_DEGREE, required=False, widget=_number())
    pp = BoundedIntegerField(label="pp", min_value=1, max_value=MAX_DEGREE, required=False, widget=_number())
    dp = BoundedIntegerField(label="dp", min_value=1, max_value=MAX_DEGREE, required=False, widget=_number())
    ep = BoundedIntegerField(label="ep", min_value=1, max_value=MAX_DEGREE, required=False, widget=_number())
    kv_cache_dtype = forms.ChoiceField(
        label="KV dtype", choices=[(d, d) for d in KV_CACHE_DTYPES], initial=DEFAULT_KV_CACHE_DTYPE, required=False
    )
    context_tokens = BoundedIntegerField(
        label="Context (tokens)", min_value=1, max_value=MAX_TOKENS, required=False, widget=_number()
    )
    pool = forms.ChoiceField(choices=[(p, p) for p in POOLS], initial="unified", required=False)
    gpu_memory_utilization = utilisation_field()
    # Choices read from the serving-engine registry whenever a form is made (a callable).
    engine = forms.ChoiceField(label="Engine", choices=_pairs(profile_names), initial=GENERIC, required=False)
    engine_version = forms.CharField(
        label="Release",
        max_length=20,
        required=False,
        widget=forms.TextInput(attrs={"placeholder": NEWEST_VLLM, "size": "7"}),
    )
    max_model_len = BoundedIntegerField(
        label="Max model length (tokens)", min_value=1, max_value=MAX_TOKENS, required=False, widget=_number()
    )
    block_size_tokens = BoundedIntegerField(
        label="Block size", min_value=1, max_value=MAX_BLOCK_TOKENS, required=False, widget=_number()
    )
    prefix_caching = forms.NullBooleanField(
        label="Prefix caching (vLLM hybrids)",
        required=False,
        widget=forms.Select(choices=[("", "the release's default"), ("true", "on"), ("false", "off")]),
    )
    available_kv_cache_gib = BoundedFloatField(
        label="KV memory as logged (GiB/GPU)",
        min_value=0,
        max_value=MAX_GIB_PER_GPU,
        required=False,
        widget=forms.NumberInput(attrs={"step": "0.01", "min": "0"}),
    )
    workload = PickField(
        "workloads",
        required=False,
        placeholder="none: 2,048 in, 256 out",
        help_text="Its mean prompt and output tokens are the speed estimate's request shape.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: True when this form's inputs were (re)loaded from its deployment or cleared of it (``from_query``):
        #: the page draws the form again.
        self.reloaded = False
        blank = [("", "the deployment's")]
        self.fields["model"].choices = [*blank, *ModelSpec.objects.values_list("slug", "name")]
        self.fields["sku"].choices = [*blank, *HardwareSku.objects.values_list("slug", "name")]

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> WhatIfForm:
        """Bound to a URL's inputs (blank ones left out). A ``deployment`` replaces every input by its own
        (``deployment_inputs``; the pool is kept) when the page's form sent another one than the fields
        were ``loaded`` from (picking one), or when the URL names no other input (``?deployment=SLUG``):
        both start from how it serves. A URL with inputs and a deployment sizes those inputs as it."""
        data = {k: v for k, v in query.items() if v != ""}
        slug, loaded = data.get("deployment", ""), data.pop("loaded", "")
        alone = bool(slug) and not set(data) - {"deployment", "pool"}
        load = slug != loaded if "loaded" in query else alone
        inputs = None
        if load and slug:
            try:
                inputs = deployment_inputs(find_deployment(slug))
            except InputError:
                load = False  # an unknown slug (or one being typed) loads nothing: its field says so
        if inputs is not None:
            shown = {name: cls._shown(value) for name, value in inputs.items() if value is not None}
            data = {**shown, "pool": data.get("pool", "unified"), "deployment": slug}
        if inputs is not None or "loaded" not in query:
            data["loaded"] = slug  # just loaded, or a URL's own inputs sized as that deployment
        elif not load:
            data["loaded"] = loaded  # the same deployment, or an unknown one being typed: as they were
        form = cls(data)
        form.reloaded = load
        return form

    @staticmethod
    def _shown(value: object) -> str:
        """A service value as its input takes it (booleans as the select's ``true`` / ``false``)."""
        return str(value).lower() if isinstance(value, bool) else str(value)

    def to_request(self) -> SizingRequest:
        """The sizing request of a valid form (blank numbers take the service's defaults)."""
        data = {k: v for k, v in self.cleaned_data.items() if v not in (None, "") and k != "loaded"}
        return SizingRequest(**data)

    def changes_of(self, sizing: Sizing) -> list[dict[str, Any]]:
        """The inputs ``sizing`` changed from its deployment (``Sizing.changes``) as the page names them:
        each field's name, label and both values as text."""
        return [
            {"name": name, "label": self.fields[name].label or name, "was": _text(was), "now": _text(now)}
            for name, was, now in sizing.changes()
        ]


def _text(value: object) -> str:
    """A sizing input as the what-if page writes it (None: the default; booleans on / off; numbers grouped)."""
    if value is None:
        return "default"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


class PlanForm(forms.Form):
    """Start a layout search from the plans page (defaults are ``PlanRequest``'s)."""

    model = forms.ChoiceField(initial="kimi-k3")
    workload = PickField("workloads")
    max_nodes = BoundedIntegerField(
        label="Up to nodes per SKU",
        initial=PlanRequest.max_nodes,
        min_value=1,
        max_value=MAX_NODES_LIMIT,
        required=False,
    )
    modes = forms.MultipleChoiceField(
        label="Serving (none = both)",
        choices=[(m, m) for m in MODES],
        initial=list(MODES),
        widget=forms.CheckboxSelectMultiple,
        required=False,
    )
    kv_cache_dtypes = forms.MultipleChoiceField(
        label="KV cache (none = both)",
        choices=[(d, d) for d in PLAN_KV_CACHE_DTYPES],
        initial=list(PLAN_KV_CACHE_DTYPES),
        widget=forms.CheckboxSelectMultiple,
        required=False,
    )
    skus = forms.MultipleChoiceField(
        label="SKUs (none = all with a quote)", required=False, widget=forms.SelectMultiple(attrs={"size": 4})
    )
    price_basis = forms.ChoiceField(
        label="Rank by prices",
        choices=[(k, v[0].upper() + v[1:]) for k, v in PRICE_BASES.items()],
        initial=PlanRequest.price_basis,
        required=False,
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["model"].choices = list(ModelSpec.objects.values_list("slug", "name"))
        self.fields["skus"].choices = list(HardwareSku.objects.values_list("slug", "name"))

    def to_request(self) -> PlanRequest:
        """The request of a valid form; what is left blank (or unticked) takes PlanRequest's default."""
        d = self.cleaned_data
        chosen = {name: tuple(d[name]) for name in ("skus", "kv_cache_dtypes", "modes") if d[name]}
        if d["max_nodes"] is not None:
            chosen["max_nodes"] = d["max_nodes"]
        if d.get("price_basis"):
            chosen["price_basis"] = d["price_basis"]
        return PlanRequest(model=d["model"], workload=d["workload"], **chosen)


def _blank(choices: list[tuple[str, str]], label: str) -> list[tuple[str, str]]:
    return [("", label), *choices]


def _buy_decimal(label: str, low: Decimal, high: Decimal, placeholder: str) -> BoundedDecimalField:
    return BoundedDecimalField(
        label=label,
        min_value=low,
        max_value=high,
        required=False,
        widget=forms.NumberInput(attrs={"step": "any", "min": str(low), "max": str(high), "placeholder": placeholder}),
    )


class RentVsApiForm(forms.Form):
    """The rent-vs-API comparison's inputs (GET). A deployment brings its GPUs and SKU, so those
    two are ignored when one is picked; blanks take ``BreakevenRequest``'s defaults."""

    workload = PickField("workloads", required=False, placeholder="none (slug or name)")
    deployment = PickField(
        "deployments",
        label="Deployment (capacity from the throughput model)",
        required=False,
        placeholder="none: give GPUs and a SKU",
    )
    gpus = BoundedIntegerField(label="GPUs", min_value=1, max_value=MAX_GPUS, required=False, widget=_number())
    sku = forms.ChoiceField(label="SKU (price in force)", required=False)
    gpu_quote = forms.TypedChoiceField(
        label="GPU price",
        coerce=int,
        required=False,
        empty_value=None,
        help_text="Blank: the price in force (the deployment's cluster's provider, else the SKU's cheapest). Pick a "
        "quote to compare on it instead, e.g. the seeds' assumption, which is never in force.",
    )
    hours_per_day = BoundedDecimalField(
        label="Hours a day",
        min_value=Decimal("0.5"),
        max_value=Decimal(24),
        required=False,
        widget=forms.NumberInput(attrs={"step": "0.5", "min": "0.5", "max": "24", "placeholder": "24"}),
    )
    api_price = forms.ChoiceField(label="API price", required=False)
    capacity_output_tokens_per_month = BoundedIntegerField(
        label="Capacity (output tokens/month)",
        min_value=0,
        max_value=MAX_MONTHLY,
        required=False,
        widget=_number(min=0),
    )
    on = forms.DateField(label="Prices on", required=False, widget=forms.DateInput(attrs={"type": "date"}))
    # Or buy the same GPUs (blank: rent vs API only); ``planner.engine.buy_option``.
    buy_usd_per_gpu = _buy_decimal("Buy at (USD per GPU)", Decimal("0.01"), Decimal(10_000_000), "e.g. 31250")
    buy_useful_life_months = BoundedIntegerField(
        label="Life (months)", min_value=1, max_value=600, required=False, widget=_number(placeholder="48")
    )
    buy_residual_share = _buy_decimal("Residual (share)", Decimal(0), Decimal(1), "0")
    buy_pue = _buy_decimal("PUE", Decimal(1), Decimal(5), "e.g. 1.3")
    buy_usd_per_kwh = _buy_decimal("Electricity (USD/kWh)", Decimal(0), Decimal(100), "e.g. 0.12")
    buy_node_overhead_w = _buy_decimal("Node overhead (W)", Decimal(0), Decimal(100_000), "0")
    buy_racks = _buy_decimal("Racks", Decimal(0), Decimal(100_000), "0")
    buy_usd_per_rack_month = _buy_decimal("Colocation (USD/rack-month)", Decimal(0), Decimal(10_000_000), "0")
    buy_support_share_per_year = _buy_decimal("Support (share a year)", Decimal(0), Decimal(1), "e.g. 0.08")
    buy_staff_usd_per_month = _buy_decimal("Staff (USD/month)", Decimal(0), Decimal(10_000_000), "0")

    #: The fields of the buy option (the page groups them).
    BUY_FIELDS = (
        "buy_usd_per_gpu",
        "buy_useful_life_months",
        "buy_residual_share",
        "buy_pue",
        "buy_usd_per_kwh",
        "buy_node_overhead_w",
        "buy_racks",
        "buy_usd_per_rack_month",
        "buy_support_share_per_year",
        "buy_staff_usd_per_month",
    )

    def rent_fields(self) -> list[Any]:
        return [f for f in self if f.name not in self.BUY_FIELDS]

    def buy_fields(self) -> list[Any]:
        return [self[name] for name in self.BUY_FIELDS]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["sku"].choices = _blank(
            list(HardwareSku.objects.values_list("slug", "name")), "(from the deployment)"
        )
        prices = ApiPrice.objects.values_list("slug", "provider", "model_name", "quoted_on")
        self.fields["api_price"].choices = [(s, f"{p} {m} ({on:%Y-%m-%d})") for s, p, m, on in prices]
        quotes = GpuQuote.objects.order_by("sku__name", "provider__name", "-quoted_on").values_list(
            "pk", "sku__name", "provider__name", "list_price", "usd_per_gpu_hour", "quoted_on"
        )
        self.fields["gpu_quote"].choices = _blank(
            [
                (pk, f"{sku}: {provider or 'assumption (no provider)'}{' list' if listed else ''} "
                 f"{usd.normalize():f} USD/GPU-h ({on:%Y-%m-%d})")
                for pk, sku, provider, listed, usd, on in quotes
            ],
            "(the price in force)",
        )  # fmt: skip

    @classmethod
    def starting_inputs(cls, given: dict[str, str]) -> dict[str, str]:
        """The page's inputs: what the URL gives, or, when it picks nothing to compare, the first
        workload with the deployment serving it (else 8 H100s) and the newest API price: for the
        deployment's model when there is one (the page says so when the two sides are different models)."""
        inputs = {name: given[name] for name in cls.base_fields if given.get(name, "") != ""}
        if not any(name in inputs for name in ("workload", "deployment", "gpus", "sku")):
            workload = Workload.objects.order_by("name").first()
            serving = Deployment.objects.filter(workload=workload).first() if workload else None
            newest = ApiPrice.objects.order_by("-quoted_on", "slug")
            api = (newest.filter(model_id=serving.model_id).first() if serving else None) or newest.first()
            if workload and api and serving:
                inputs = {"workload": workload.slug, "deployment": serving.slug, "api_price": api.slug, **inputs}
            elif workload and api and HardwareSku.objects.filter(slug="h100-sxm-80gb").exists():
                inputs = {
                    "workload": workload.slug,
                    "gpus": "8",
                    "sku": "h100-sxm-80gb",
                    "api_price": api.slug,
                    **inputs,
                }
        if inputs.get("deployment"):
            # The deployment gives the GPUs and the SKU (its quote in force) and, with the throughput
            # model, the capacity; GPUs or a SKU picked beside it would contradict it.
            inputs.pop("gpus", None)
            inputs.pop("sku", None)
        return inputs

    def to_request(self) -> BreakevenRequest:
        return BreakevenRequest(**{k: v for k, v in self.cleaned_data.items() if v not in (None, "")})


class PlanDeployForm(forms.Form):
    """Register a plan's ranked configuration as a deployment (the plan page's "Register as deployment"):
    a cluster of its SKU with room for it, a slug, the engine and the max model length."""

    rank = BoundedIntegerField(min_value=1, max_value=1000, widget=forms.HiddenInput)
    cluster = forms.ChoiceField(help_text="Active clusters of this configuration's SKU with room for its GPUs.")
    slug = forms.SlugField(max_length=64, help_text="The new deployment's slug.")
    engine = forms.ChoiceField(choices=engine_choices)
    max_model_len = BoundedIntegerField(
        label="Max model length (tokens)",
        min_value=1,
        max_value=MAX_TOKENS,
        required=False,
        help_text="Blank: the workload's p95 context, the context the plan sized at.",
    )

    def __init__(self, *args: Any, clusters: list[Any] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["cluster"].choices = [
            (c.slug, f"{c.name} ({c.total_gpus} x {c.sku.name}, {c.free_gpus} free)") for c in clusters
        ]


class DecisionForm(forms.Form):
    """Record a decision on the comparison the page shows (its inputs travel as hidden fields)."""

    tier = forms.TypedChoiceField(choices=Decision.Tier.choices, coerce=int)
    note = forms.CharField(required=False, max_length=NOTE_MAX_CHARS)


class SupersedeForm(forms.Form):
    """Supersede a decision its review found no longer holds (decisions page). ``favours`` is the side
    the page showed the review favouring: a review that changed since is refused, not acted on."""

    favours = forms.ChoiceField(choices=[("rent", "rent"), ("api", "api"), ("buy", "buy")], widget=forms.HiddenInput)


class RecomputeForm(forms.Form):
    """Ask the workers to recompute a workload's stored breakeven now (rent-vs-API page)."""

    workload = forms.ModelChoiceField(queryset=Workload.objects.all(), to_field_name="slug")


class SpendForm(forms.Form):
    """The spend page's month (``YYYY-MM``; the spend service checks it)."""

    month = forms.CharField(
        max_length=7,
        widget=forms.TextInput(
            attrs={
                "type": "month",
                "min": "{:04d}-{:02d}".format(*FIRST_MONTH),
                "max": "{:04d}-{:02d}".format(*LAST_MONTH),
            }
        ),
    )


class CalibrationForm(forms.Form):
    """A startup log for a deployment, pasted or uploaded (the calibration service does the rest)."""

    log = forms.CharField(
        label="Startup log",
        required=False,
        max_length=MAX_LOG_BYTES,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 8, "class": "mono", "spellcheck": "false"}),
        help_text="Paste the server's log from its first line to the KV cache lines (up to 5 MiB).",
    )
    upload = UploadField(label="or upload a log file", required=False)
    engine_version = forms.CharField(
        label="Engine version", max_length=40, required=False, help_text="Only if the log does not print it (SGLang)."
    )
    measured_on = forms.DateField(
        label="Taken on", required=False, widget=forms.DateInput(attrs={"type": "date"}), help_text="Default: today."
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        upload = data.get("upload")
        if upload is not None:
            if upload.size > MAX_LOG_BYTES:
                self.add_error("upload", f"The file is over {MAX_LOG_BYTES // (1024 * 1024)} MiB.")
                return data
            data["log"] = upload.read(MAX_LOG_BYTES + 1).decode("utf-8", "replace")
            keep_upload_text(self, "upload", "log", data["log"])
        if not data.get("log"):
            self.add_error("log", "Paste the log or upload its file.")
        return data

    def to_request(self, deployment: Deployment) -> CalibrationRequest:
        data = self.cleaned_data
        return CalibrationRequest(
            log=data["log"],
            deployment_slug=deployment.slug,
            engine_version=data.get("engine_version") or None,
            measured_on=data.get("measured_on"),
        )


class DecisionTableForm(TableForm):
    """The decision log's search and sort (newest first by default)."""

    columns = (
        Column("decided", "Decided", ("decided_at", "id")),
        Column("workload", "Workload", ("workload__name", "-decided_at")),
        Column("tier", "Tier", ("tier", "-decided_at")),
        Column("by", "Decided by", ("decided_by_name", "-decided_at")),
    )
    default_sort = "-decided"
    search_fields = ("workload__name", "workload__slug", "note", "decided_by_name")


class PlanTableForm(TableForm):
    """The plans list's search and sort (newest first by default); the best configuration's columns
    sort by the plan's stored summary (``Plan.summary``), never its result."""

    columns = (
        Column("started", "Started", ("created",)),
        Column("model", "Model", ("model__name", "-created")),
        Column("workload", "Workload", ("workload__name", "-created")),
        Column("prices", "Price basis", ("options__price_basis", "-created")),
        Column("status", "Status", ("status", "-created")),
        Column("progress", "Progress", ("progress", "-created"), numeric=True),
        Column("best", "Best configuration", ("summary__best__sku", "summary__best__gpus", "-created")),
        Column("usd", "USD/Mtok", ("summary__best__usd_per_mtok", "-created"), numeric=True),
        Column("tpot", "TPOT ms", ("summary__best__tpot_ms", "-created"), numeric=True),
    )
    default_sort = "-started"
    search_fields = ("model__name", "model__slug", "workload__name", "workload__slug", "status")


class ModelTableForm(TableForm):
    """The model catalogue's search and sort (by name by default)."""

    columns = (
        Column("name", "Model", ("name",)),
        Column("total", "Total params (B)", ("total_params", "name"), numeric=True),
        Column("active", "Active (B)", ("active_params", "name"), numeric=True),
        Column("experts", "Experts (routed / active)", ("n_routed_experts", "n_active_experts", "name"), numeric=True),
        Column("format", "Format", ("weight_format", "name")),
        Column("context", "Max context", ("max_context_tokens", "name"), numeric=True),
    )
    default_sort = "name"
    search_fields = ("name", "slug", "weight_format", "expert_weight_format")


class FleetTableForm(TableForm):
    """The fleet page's search (cluster name, slug, team, provider, SKU; a deployment's slug or model)
    and cluster order."""

    columns = (
        Column("name", "Name", ("name", "slug")),
        Column("team", "Team", ("team", "name")),
        Column("provider", "Provider", ("provider__name", "name")),
        Column("sku", "SKU", ("sku__name", "name")),
        Column("status", "Status", ("status", "name")),
    )
    default_sort = "name"
    search_fields = (
        "name", "slug", "team", "provider__name", "sku__name", "deployments__slug", "deployments__model__name"
    )  # fmt: skip
    search_distinct = True


class UUIDListField(forms.Field):
    """Every value of a repeated parameter (``?plan=..&plan=..``) as a UUID."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: Any) -> list[uuid.UUID]:
        try:
            return [uuid.UUID(str(v)) for v in value or []]
        except ValueError as exc:
            raise forms.ValidationError("A ticked plan is not a plan id.") from exc


class PlanCompareForm(forms.Form):
    """Two plans to compare: ``a`` and ``b`` (``?a=&b=``), or two ticked ``plan`` boxes of the
    plans list (the view then redirects to ``?a=&b=``)."""

    a = forms.UUIDField(required=False)
    b = forms.UUIDField(required=False)
    plan = UUIDListField(required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        ticked = data.get("plan") or []
        if ticked:
            if len(ticked) != 2:
                raise forms.ValidationError(f"Tick two plans to compare ({len(ticked)} ticked).")
            data["a"], data["b"] = ticked
        elif not self.errors and (data.get("a") is None or data.get("b") is None):
            raise forms.ValidationError("Pick two plans to compare (a and b).")
        return data


class PollRangeForm(forms.Form):
    """The range of polls the deployment page draws: a preset, or from-to (dates, UTC)."""

    RANGES = (("1h", "last hour"), ("24h", "last 24 hours"), ("7d", "last 7 days"), ("30d", "last 30 days"))
    range = forms.ChoiceField(choices=(*RANGES, ("custom", "from - to")), initial="1h", required=False)
    start = forms.DateField(label="From", required=False, widget=forms.DateInput(attrs={"type": "date"}))
    end = forms.DateField(label="To", required=False, widget=forms.DateInput(attrs={"type": "date"}))

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("range") == "custom" or (not data.get("range") and (data.get("start") or data.get("end"))):
            data["range"] = "custom"
            if not data.get("start") and not data.get("end") and not self.errors:
                self.awaiting_dates = True  # from-to just chosen: the page asks for the dates
                return data
            if not data.get("start") or not data.get("end"):
                raise forms.ValidationError("Give both dates of the range (from and to).")
            if data["end"] < data["start"]:
                self.add_error("end", "The end is before the start.")
            elif (data["end"] - data["start"]).days > MAX_POLL_RANGE_DAYS:
                self.add_error("end", f"Give at most {MAX_POLL_RANGE_DAYS} days.")
        return data

    awaiting_dates = False

    def bounds(self, now: datetime) -> tuple[datetime, datetime]:
        """The chosen range as [start, end) in UTC (the last hour when nothing valid is chosen)."""
        data = self.cleaned_data if self.is_valid() else {}
        chosen = data.get("range") or "1h"
        if chosen == "custom" and self.awaiting_dates:
            chosen = "1h"
        elif chosen == "custom":
            start = datetime.combine(data["start"], time.min, tzinfo=UTC)
            return start, datetime.combine(data["end"], time.min, tzinfo=UTC) + timedelta(days=1)
        return now - PRESET_SPANS[chosen], now


#: The preset ranges of ``PollRangeForm``.
PRESET_SPANS = {"1h": timedelta(hours=1), "24h": timedelta(days=1), "7d": timedelta(days=7), "30d": timedelta(days=30)}
#: The longest from-to range (the rollups are kept 400 days; a chart of more is unreadable).
MAX_POLL_RANGE_DAYS = 92


class PrefixCacheForm(forms.Form):
    """The prefix-cache page: a model, SKU, layout and engine release, and a request trace (pasted or
    uploaded; the example when both are empty). Defaults are ``PrefixCacheRequest``'s except the
    page's starting example (``EXAMPLE``)."""

    #: Where the page starts: Qwen3-Next on 2 H200 under vLLM (the 544-token block of vLLM's log).
    EXAMPLE = {"model": "qwen3-next-80b-a3b", "sku": "h200-141gb", "tp": "2", "engine": "vllm"}

    model = forms.ChoiceField()
    sku = forms.ChoiceField(label="SKU")
    engine = forms.ChoiceField(label="Engine", choices=_pairs(prefix_cache_engines), initial=DEFAULT_ENGINE)
    engine_version = forms.CharField(
        label="Release",
        max_length=20,
        required=False,
        widget=forms.TextInput(attrs={"placeholder": "newest", "size": "7"}),
    )
    cache_mode = forms.ChoiceField(
        label="Caching mode",
        required=False,
        choices=[("", "the engine's"), *((m, m) for m in dict.fromkeys(m for v in CACHE_MODES.values() for m in v))],
    )
    retention = forms.ChoiceField(
        label="Retention (vLLM 0.29+)", required=False, choices=[("", "default"), *((r, r) for r in RETENTIONS)]
    )
    checkpoint_interval_tokens = BoundedIntegerField(
        label="Checkpoint interval", min_value=0, max_value=MAX_TOKENS, required=False, widget=_number(min=0)
    )
    tp = BoundedIntegerField(label="tp", min_value=1, max_value=MAX_DEGREE, required=False, widget=_number())
    pp = BoundedIntegerField(label="pp", min_value=1, max_value=MAX_DEGREE, required=False, widget=_number())
    dp = BoundedIntegerField(label="dp", min_value=1, max_value=MAX_DEGREE, required=False, widget=_number())
    ep = BoundedIntegerField(label="ep", min_value=1, max_value=MAX_DEGREE, required=False, widget=_number())
    kv_cache_dtype = forms.ChoiceField(
        label="KV dtype", choices=[(d, d) for d in KV_CACHE_DTYPES], initial=DEFAULT_KV_CACHE_DTYPE, required=False
    )
    context_tokens = BoundedIntegerField(
        label="Context (tokens)", min_value=1, max_value=MAX_TOKENS, required=False, widget=_number()
    )
    gpu_memory_utilization = utilisation_field()
    block_size_tokens = BoundedIntegerField(
        label="Block / page size (tokens)", min_value=1, max_value=MAX_BLOCK_TOKENS, required=False, widget=_number()
    )
    concurrency = BoundedIntegerField(
        label="Concurrency (SGLang ratio)", min_value=1, max_value=1_000_000, required=False, widget=_number()
    )
    available_kv_cache_gib = BoundedFloatField(
        label="KV memory as logged (GiB/GPU)",
        min_value=0,
        max_value=MAX_GIB_PER_GPU,
        required=False,
        widget=forms.NumberInput(attrs={"step": "0.01", "min": "0"}),
    )
    trace_text = forms.CharField(
        label="Request trace (CSV)",
        required=False,
        max_length=MAX_TRACE_BYTES,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 6, "class": "mono", "spellcheck": "false"}),
        help_text="request_id,arrival_s,prompt_tokens,shared_prefix_id,shared_prefix_tokens; empty: the example.",
    )
    trace_file = UploadField(label="or upload a CSV", required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["model"].choices = list(ModelSpec.objects.values_list("slug", "name"))
        self.fields["sku"].choices = list(HardwareSku.objects.values_list("slug", "name"))

    @staticmethod
    def of_deployment(d: Deployment) -> dict[str, str]:
        """The page's inputs as ``d`` serves (its model, SKU, engine and release, layout, KV dtype, memory
        utilisation, block size, and max_model_len as the context), so the analysis sizes what the
        deployment's snapshot sizes; None-valued inputs left out (the defaults)."""
        values = {
            "model": d.model.slug, "sku": d.cluster.sku.slug, "engine": d.engine, "engine_version": d.engine_version,
            "tp": d.tp, "pp": d.pp, "dp": d.dp, "ep": d.ep, "kv_cache_dtype": d.kv_cache_dtype,
            "context_tokens": d.planning_context_tokens, "gpu_memory_utilization": d.gpu_memory_utilization,
            "block_size_tokens": d.block_size_tokens,
        }  # fmt: skip
        return {k: str(v) for k, v in values.items() if v not in (None, "")}

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        upload = data.get("trace_file")
        if upload is not None:
            if upload.size > MAX_TRACE_BYTES:
                self.add_error("trace_file", f"The file is over {MAX_TRACE_BYTES // (1024 * 1024)} MiB.")
                return data
            try:
                data["trace_text"] = trace_text(upload.read(MAX_TRACE_BYTES + 1), "trace_file")
                keep_upload_text(self, "trace_file", "trace_text", data["trace_text"])
            except InputError as exc:
                self.add_error("trace_file", exc.errors["trace_file"])
        return data

    def to_request(self) -> PrefixCacheRequest:
        """The request of a valid form (blank fields take the service's defaults; no trace: the example)."""
        data = {k: v for k, v in self.cleaned_data.items() if v not in (None, "")}
        data.pop("trace_file", None)
        data["trace_csv"] = data.pop("trace_text", None) or EXAMPLE_TRACE
        return PrefixCacheRequest(**data)


class RouteForm(forms.Form):
    """The route page's request class (GET, so a ranking's URL can be shared); ``RequestClass``'s
    fields, checked again by the engine (``RequestClass.check``), whose errors go beside the inputs. The
    page always asks for a model (the API may leave it out: any model)."""

    #: Where the page starts when the URL names no input: agent-like traffic with a reused prefix.
    EXAMPLE = {
        "context_tokens": "8192",
        "prompt_tokens": "4000",
        "output_tokens": "300",
        "prefix_reuse_fraction": "0.8",
        "ttft_slo_ms": "2000",
        "tpot_slo_ms": "50",
    }

    model = forms.ChoiceField(label="Model", help_text="The model the requests are for.")
    context_tokens = BoundedIntegerField(
        label="Context (tokens)", min_value=1, max_value=MAX_TOKENS, widget=_number(), help_text=">= prompt + output."
    )
    prompt_tokens = BoundedIntegerField(label="Prompt (tokens)", min_value=1, max_value=MAX_TOKENS, widget=_number())
    output_tokens = BoundedIntegerField(label="Output (tokens)", min_value=1, max_value=MAX_TOKENS, widget=_number())
    prefix_reuse_fraction = BoundedFloatField(
        label="Prefix reuse (0-1)",
        min_value=0,
        max_value=1,
        required=False,
        widget=forms.NumberInput(attrs={"step": "0.05", "min": "0", "max": "1", "placeholder": "0"}),
    )
    ttft_slo_ms = BoundedFloatField(
        label="TTFT SLO (ms)",
        min_value=0.001,
        max_value=MAX_SLO_MS,
        required=False,
        widget=forms.NumberInput(attrs={"step": "any", "min": "0"}),
    )
    tpot_slo_ms = BoundedFloatField(
        label="TPOT SLO (ms)",
        min_value=0.001,
        max_value=MAX_SLO_MS,
        required=False,
        widget=forms.NumberInput(attrs={"step": "any", "min": "0"}),
    )
    modality = forms.ChoiceField(
        label="Modality", required=False, choices=[("", "text"), *((m, m) for m in MODALITIES if m != "text")]
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["model"].choices = list(ModelSpec.objects.values_list("slug", "name"))

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> RouteForm:
        """Bound to a URL's inputs (blank ones left out), or to the page's example when it names none; the
        model, when not named, is the one the fleet serves most (``planner.routing.most_served_model``)."""
        named = any(name in query for name in cls.base_fields)
        data = {k: v for k, v in query.items() if v != ""} if named else dict(cls.EXAMPLE)
        if "model" not in data and (model := most_served_model()):
            data["model"] = model
        return cls(data)

    def to_request(self) -> RequestClass:
        """The request class of a valid form (blank: no SLO, text, no reuse)."""
        data = self.cleaned_data
        return RequestClass(
            context_tokens=data["context_tokens"],
            prompt_tokens=data["prompt_tokens"],
            output_tokens=data["output_tokens"],
            prefix_reuse_fraction=data.get("prefix_reuse_fraction") or 0.0,
            ttft_slo_ms=data.get("ttft_slo_ms"),
            tpot_slo_ms=data.get("tpot_slo_ms"),
            model=data.get("model") or None,
            modality=data.get("modality") or None,
        )
