"""Fleet pages: clusters and deployments with live status and admission headroom (fleet page,
cluster and deployment detail), and calibrating a deployment from its engine's startup log."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Prefetch
from django.http import HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from fleet import page_cache
from fleet.errors import FIELD_ERRORS, describe
from fleet.filters import ClusterFilter
from fleet.forms import add_service_errors
from fleet.models import Cluster, Deployment, HardwareSku, ModelSpec, OwnedCosts, Provider, WorkerHeartbeat
from fleet.models.ops import polling_state
from fleet.models.polls import left_out_text
from fleet.models.snapshots import describe_capacity
from fleet.owned import owned_month
from fleet.poll_rollups import PollHistory, PollPoint, left_out_totals, poll_history
from fleet.tables import csv_response
from fleet.views.access import HtmxHttpRequest, is_partial, over_limit, perms_required, refused
from fleet.views.history import history_section
from planner import tables
from planner.calibrations import calibrate
from planner.corrections import calibration_of, latest_for, predicted_tpot_ms
from planner.engine import EngineInputError, calendar_month_label
from planner.forms import CalibrationForm, FleetTableForm, PollRangeForm
from planner.headroom import envelope, headroom, stored_curve, stored_headroom
from planner.models.calibrations import RATIO_BAND
from planner.models.corrections import SpeedCorrection
from planner.reviews import flipped_decisions

#: Clusters per page. The table refreshes every few seconds, so it must stay cheap to render.
CLUSTERS_PER_PAGE = 25
#: What a fleet table row reads of a deployment, its stored snapshot (never the figures' JSON) and its
#: workload (the version its snapshot is checked against): 1,000 rows in well under 100 ms
#: (docs/benchmarks.md, "Stored answers").
FLEET_ROW_FIELDS = (
    "slug", "cluster_id", "model_id", "workload_id", "last_status", "last_polled", "poll_interval_s", "last_metrics",
    "updated", "enabled",
    *(f"capacity_snapshot__{name}" for name in (
        "computed_at", "capacity_sequences", "fits", "versions", "stale_since", "stale_reason", "error",
        "failed_at", "valid_until",
    )),
    "workload__updated",
)  # fmt: skip


@perms_required("fleet.view_cluster", "fleet.view_deployment")
def fleet(request: HtmxHttpRequest) -> HttpResponse:
    """Full page, or only the table when HTMX refreshes it (every few seconds). The filters, the
    search and the cluster order (``FleetTableForm``) travel in the URL, so the refresh keeps them.
    The table is rendered once per version of the records it shows and served to every open page
    alike (``fleet.page_cache``)."""
    table = FleetTableForm(request.GET)
    polling = polling_state()

    def render_table() -> page_cache.Expiring:
        context = _fleet_table(request, table, polling)
        html = render_to_string("fleet/_fleet_table.html", context, request)
        # Good until the first status it shows turns stale by age (then "stale", never "up").
        shown = (h.deployment for row in context["rows"] for h in row["deployments"])
        return page_cache.Expiring(html, page_cache.earliest(d.status_turns_stale_at() for d in shown))

    # Whether polls run is in the key: "polls stopped" shows at the next request, not the next window.
    html = page_cache.fragment("fleet-table", request, render_table, page_cache.fleet_version, (polling.state,))
    if is_partial(request):
        return HttpResponse(html)
    context = {
        "table_html": html,
        "filters": request.GET,
        "table": table,
        "polling": polling,
        "teams": Cluster.objects.order_by("team").values_list("team", flat=True).distinct(),
        "providers": Provider.objects.filter(clusters__isnull=False).distinct().values_list("name", flat=True),
        "skus": HardwareSku.objects.values_list("slug", "name"),
        "statuses": Cluster.Status.choices,
        "workers": WorkerHeartbeat.objects.all()[:10],
        # Recorded decisions the workers' review found flipped (planner.reviews), for those who may read them.
        "flipped": list(flipped_decisions()) if request.user.has_perm("planner.view_decision") else [],
    }
    return render(request, "fleet/fleet.html", context)


def _fleet_table(request: HtmxHttpRequest, table: FleetTableForm, polling: Any) -> dict[str, Any]:
    """The fleet table's context: a page of clusters with their deployments' stored headroom and prices."""
    # Each model once per page (a prefetch shares one instance among its deployments), not once per
    # deployment as a join would: a model row is wide (layer groups, formats) and a page shows ~125 rows.
    models = Prefetch("model", ModelSpec.objects.defer("source", "assumptions"))
    # Capacity is read from each deployment's stored snapshot (joined), never computed here; the
    # records' versions (``updated``) tell a snapshot computed before their last change.
    deployments = Deployment.objects.only(*FLEET_ROW_FIELDS).select_related("capacity_snapshot", "workload")
    deployments = tables.with_snapshot_cost(deployments.prefetch_related(models))
    clusters = table.apply(
        table.filtered(ClusterFilter(request.GET, queryset=Cluster.objects.select_related("sku", "provider")))
    )
    page = Paginator(clusters, CLUSTERS_PER_PAGE).get_page(request.GET.get("page"))
    shown = list(page.object_list.prefetch_related(Prefetch("deployments", deployments.order_by("slug"))))
    rows = stored_headroom([d for c in shown for d in c.deployments.all()])
    by_cluster: dict[int, list] = {}
    for row in rows:
        by_cluster.setdefault(row.deployment.cluster_id, []).append(row)
    prices = tables.cluster_prices(shown, timezone.now().date())
    query = request.GET.copy()
    query.pop("page", None)
    return {
        "rows": [{"cluster": c, "price": prices[c.pk], "deployments": by_cluster.get(c.pk, [])} for c in shown],
        "page": page,
        "filters": request.GET,
        "query": query,
        "table": table,
        # Whether beat's poll cycles run: in the table partial, so an open page says so at its next refresh.
        "polling": polling,
    }


@perms_required("fleet.view_cluster", "fleet.view_deployment")
def fleet_csv(request: HtmxHttpRequest) -> HttpResponse:
    """Every deployment of the clusters the fleet page's filters, search and order select (every
    page), with its headroom, as CSV (a refused input: 400)."""
    table = FleetTableForm(request.GET)
    clusters = table.apply(table.filtered(ClusterFilter(request.GET, queryset=tables.clusters())))
    if not table.is_valid():
        return HttpResponseBadRequest(table.errors.as_text(), content_type="text/plain")
    today = timezone.now().date()
    return csv_response("fleet", tables.FLEET_CSV, tables.fleet_csv_rows(clusters, today), today)


@perms_required("fleet.view_cluster", "fleet.view_deployment")
def cluster_detail(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    cluster = get_object_or_404(Cluster.objects.select_related("sku", "provider"), slug=slug)
    deployments = cluster.deployments.select_related("cluster__sku", "model", "workload", "capacity_snapshot")
    today = timezone.now().date()
    context = {
        "cluster": cluster,
        "price": tables.cluster_prices([cluster], today)[cluster.pk],
        "rows": stored_headroom(tables.with_snapshot_cost(deployments)),
        "states": cluster.states.select_related("sku"),
        "scheduled": cluster.scheduled_changes(),
        "today": today,
    }
    if cluster.owned:
        context |= _owned_section(cluster, today)
    return render(request, "fleet/cluster.html", context | history_section(cluster, "cluster"))


def _owned_section(cluster: Cluster, today: Any) -> dict[str, Any]:
    """An owned cluster's card: this calendar month's cost as the engine computes it (``fleet.owned.owned_month``),
    its purchases and running costs as recorded."""
    return {
        "owned": owned_month(cluster, today.year, today.month),
        "owned_month_label": calendar_month_label(today.year, today.month),
        "purchases": list(cluster.purchases.all()),
        "owned_costs": OwnedCosts.objects.filter(cluster=cluster).first(),
    }


@perms_required("fleet.view_deployment", "fleet.view_endpointpoll")
def deployment_detail(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    deployment = get_object_or_404(
        Deployment.objects.select_related("cluster__sku", "model", "workload", "capacity_snapshot"), slug=slug
    )
    if is_partial(request) and request.htmx.target == "poll-range":
        return render(request, "fleet/_poll_range.html", {"d": deployment, **_poll_range(request, deployment)})
    return _deployment_page(request, deployment)


def _launch(deployment: Deployment) -> dict:
    """The deployment's launch command (``Deployment.launch_command``), or why there is none."""
    try:
        return {"launch": deployment.launch_command()}
    except EngineInputError as exc:
        return {"launch": None, "launch_missing": describe(exc).split(": ", 1)[-1]}


def _deployment_page(
    request: HtmxHttpRequest, deployment: Deployment, form: CalibrationForm | None = None, status: int = 200
) -> HttpResponse:
    (stored,) = stored_headroom([deployment])
    context = {"d": deployment, "stored": stored, "snapshot": describe_capacity(deployment)}
    # The figures (envelope, curve, live polls, poll range, assumptions) read only records and polls:
    # rendered once per version of them and shared by every viewer with the same permissions.
    context["figures_html"] = page_cache.fragment(
        "deployment-figures",
        request,
        lambda: render_to_string("fleet/_deployment_figures.html", _figures(request, deployment, stored), request),
        _deployment_version,
    )
    context |= _launch(deployment)
    context |= _calibrations(request, deployment, form)
    context |= history_section(deployment, "deployment")
    return render(request, "fleet/deployment.html", context, status=status)


def _deployment_version() -> str:
    """What the deployment page's figures rest on: the fleet's records and polls, and the speed corrections."""
    return page_cache.fleet_version((SpeedCorrection, ("fitted_at",)))


def _figures(request: HtmxHttpRequest, deployment: Deployment, stored: Any) -> dict[str, Any]:
    """The deployment page's figures: the memory envelope computed now from the records, the admitted
    curve as the snapshot holds it, the recent polls as charts, the poll range and the assumptions."""
    (row,) = headroom([deployment])  # the envelope's bytes, computed now from the records as they are
    context = {"d": deployment, "row": row, "stored": stored}
    # The admitted concurrency is the stored snapshot's, everywhere on the page (header, curve, envelope).
    context["curve"] = stored_curve(deployment)
    context["curve_mark"] = _context_mark(deployment)
    if row.result is not None:
        result = row.result
        observed = int(row.observed) if row.observed is not None else None
        context |= {
            "result": result,
            "envelope": envelope(result, observed if observed is not None else stored.capacity),
            "envelope_full": envelope(result, stored.capacity),
        }
    context |= _poll_series(deployment)
    context |= _poll_range(request, deployment)
    context["left_out"] = _left_out(deployment)
    return context


#: The days the deployment page says untrusted polls were left out over (the observed volume's 30).
LEFT_OUT_DAYS = 30


def _left_out(deployment: Deployment) -> str:
    """What the last ``LEFT_OUT_DAYS`` days' untrusted polls of ``deployment`` were left out of, said plainly
    (``fleet.models.polls.poll_distrust``); empty when none were."""
    today = timezone.now().date()
    counts = left_out_totals(today - timedelta(days=LEFT_OUT_DAYS - 1), today + timedelta(days=1), [deployment.pk])
    return left_out_text(counts.get(deployment.pk, {}))


def _context_mark(deployment: Deployment) -> dict:
    """Where the capacity chart marks the deployment's context limit: its max_model_len, else the model's."""
    tokens = deployment.planning_context_tokens
    what = "max_model_len" if deployment.max_model_len else "max_model_len (the model's maximum context)"
    return {"tokens": tokens, "label": f"{what}: {tokens:,} tokens"}


#: Calibrations listed on a deployment's page, newest first (the latest one in full).
CALIBRATION_HISTORY = 10


def _calibrations(request: HtmxHttpRequest, deployment: Deployment, form: CalibrationForm | None = None) -> dict:
    """The deployment's calibrations (for users who may read them) and the form (for those who may add one)."""
    user = request.user
    if not user.has_perm("planner.view_calibration"):
        return {}
    history = list(deployment.calibrations.select_related("created_by", "model")[:CALIBRATION_HISTORY])
    may_calibrate = user.has_perm("fleet.change_deployment")
    return {
        "calibrations": history,
        "latest_calibration": history[0] if history else None,
        "calibration_form": (form or CalibrationForm()) if may_calibrate else None,
        "ratio_band": RATIO_BAND,
    }


@perms_required("fleet.change_deployment", "planner.view_calibration")
def deployment_calibrate(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Calibrate from a pasted or uploaded startup log.

    From HTMX: the calibration partial, the form's errors beside its inputs (200, so HTMX swaps it).
    Without: a redirect to the page's calibration section, or the page with the errors (400). Past
    the user's calibration limit (``fleet.rate_limits``): 429 with the form as sent and the limit.
    """
    deployment = get_object_or_404(
        Deployment.objects.select_related("cluster__sku", "model", "workload", "capacity_snapshot"), slug=slug
    )
    here = f"{reverse('deployment', args=[deployment.slug])}#calibration"
    if request.method != "POST":
        return redirect(here)
    form = CalibrationForm(request.POST, request.FILES)
    refusal = over_limit(request, "calibration", form)
    saved = False
    if refusal is None and form.is_valid():
        try:
            calibrate(form.to_request(deployment), request.user)
        except FIELD_ERRORS as exc:
            add_service_errors(form, exc)
        else:
            saved = True
    if is_partial(request):
        context = {"d": deployment, **_calibrations(request, deployment, CalibrationForm() if saved else form)}
        return refused(render(request, "fleet/_calibration.html", context), refusal)
    if saved:
        messages.success(request, "Calibrated from the startup log.")
        return redirect(here)
    return refused(_deployment_page(request, deployment, form, status=400), refusal)


def _poll_range(request: HtmxHttpRequest, deployment: Deployment) -> dict:
    """The polls over the range the page's form chooses (``PollRangeForm``; a refused range is said
    beside its input and the last hour drawn), from the raw polls and the hourly rollups."""
    form = PollRangeForm(request.GET if "range" in request.GET or "start" in request.GET else None)
    start, end = form.bounds(timezone.now())
    history = poll_history(deployment.pk, start, end)
    return {"range_form": form, "range_history": history, **_range_charts(history, deployment)}


def _range_charts(history: PollHistory, deployment: Deployment) -> dict:
    """A poll history as the three range charts (the ``timeseries`` chart of static/js/charts.js)."""
    fmt = "%H:%M:%S" if history.resolution == "poll" else "%Y-%m-%d %H:00"
    points, w = history.points, deployment.workload
    if history.resolution == "hour":
        # Every hour of the range on the axis, the hours without polls blank: a gap shows as a gap.
        by_hour = {p.at: p for p in points}
        hour = history.start.replace(minute=0, second=0, microsecond=0)
        slots = []
        while hour < history.end:
            slots.append((hour, by_hour.get(hour)))
            hour += timedelta(hours=1)
        labels = [at.strftime(fmt) for at, _ in slots]
        points = [p or PollPoint.empty(at) for at, p in slots]
    else:
        labels = [p.at.strftime(fmt) for p in points]
    worst = "" if history.resolution == "poll" else ", worst in the hour"
    mean = "" if history.resolution == "poll" else " (mean)"

    def line(label: str, values: list, color: str, dash: list[int] | None = None, axis: str | None = None) -> dict:
        return {"label": label, "values": values, "color": color, **({"dash": dash} if dash else {}),
                **({"axis": axis} if axis else {})}  # fmt: skip

    # TTFT and TPOT on their own axes (as the live chart): on one, TPOT and its SLO lie flat at the bottom.
    ttft = [p.ttft_p95_max for p in points]
    tpot = [p.tpot_p95_max for p in points]
    latency = [
        line(f"TTFT p95 (ms{worst})", ttft, "#2856d8", axis="ttft"),
        line(f"TPOT p95 (ms{worst})", tpot, "#2f8f6b", axis="tpot"),
    ]
    if w:
        latency += [
            *slo_series("TTFT", ttft, w.ttft_slo_ms, SLO_DASH["ttft"], "ttft"),
            *slo_series("TPOT", tpot, w.tpot_slo_ms, SLO_DASH["tpot"], "tpot"),
        ]
    load = [line(f"Running requests{mean}", [p.running_avg for p in points], "#4a5a80")]
    if history.resolution == "hour":
        load.append(line("Running requests (most in the hour)", [p.running_max for p in points], "#c53030", [4, 3]))
    fractions = [
        line(f"KV cache usage{mean}", [p.kv_avg for p in points], "#d08c2e"),
        line("Polls up (fraction)", [p.up_fraction for p in points], "#2f8f6b"),
    ]
    rows = [
        {
            "point": p,
            "ttft_over": over_slo(p.ttft_p95_max, w.ttft_slo_ms if w else None),
            "tpot_over": over_slo(p.tpot_p95_max, w.tpot_slo_ms if w else None),
        }
        for p in history.points[::-1]
    ]
    return {
        "range_latency": {"labels": labels, "series": latency, "unit": "ms", "axes": LATENCY_AXES},
        "range_load": {"labels": labels, "series": load, "unit": "sequences"},
        "range_fractions": {"labels": labels, "series": fractions, "unit": "fraction"},
        "range_rows": rows,
    }


#: The latency charts' two y axes: TTFT (hundreds to thousands of ms) left, TPOT (tens of ms) right.
LATENCY_AXES = {"ttft": {"title": "TTFT p95 (ms)"}, "tpot": {"title": "TPOT p95 (ms)"}}
#: The SLO lines' colour (one for every SLO, apart from the data's) and each SLO's dash.
SLO_COLOR = "#c53030"
SLO_DASH = {"ttft": [10, 4], "tpot": [3, 3]}


def over_slo(value: float | None, slo: float | None) -> bool:
    """Whether a p95 is past its SLO: the one rule the charts' marks and the polls tables follow."""
    return value is not None and slo is not None and value > slo


def slo_series(name: str, values: list, slo: float, dash: list[int], axis: str | None = None) -> list[dict]:
    """An SLO as a flat line (``slo``: drawn above the data) and the points of ``values`` past it
    (``marks``: drawn as points only), for the ``timeseries`` chart of static/js/charts.js."""
    extra = {"axis": axis} if axis else {}
    return [
        {"label": f"{name} SLO ({slo:,g} ms)", "values": [slo] * len(values), "color": SLO_COLOR, "dash": dash,
         "slo": True, **extra},
        {"label": f"{name} p95 over the SLO", "values": [v if over_slo(v, slo) else None for v in values],
         "color": SLO_COLOR, "marks": True, **extra},
    ]  # fmt: skip


#: Polls drawn on the deployment page (newest last).
RECENT_POLLS = 120


def _poll_series(deployment: Deployment) -> dict:
    """Recent polls as chart series, with the workload's SLO lines, and the latest calibration."""
    polls = list(deployment.polls.defer("outcome").order_by("-polled_at")[:RECENT_POLLS])[::-1]
    if not polls:
        return {"polls": []}
    labels = [p.polled_at.strftime("%H:%M:%S") for p in polls]
    w = deployment.workload

    def line(label, values, color, dash=None, axis=None):
        return {"label": label, "values": values, "color": color, **({"dash": dash} if dash else {}),
                **({"axis": axis} if axis else {})}  # fmt: skip

    # TTFT (hundreds to thousands of ms) and TPOT (tens of ms) on their own axes, each SLO on its own:
    # on one axis TPOT and its SLO lay flat along the bottom.
    ttft, tpot = [p.ttft_p95_ms for p in polls], [p.itl_p95_ms for p in polls]
    latency = [
        line("TTFT p95 (ms)", ttft, "#2856d8", axis="ttft"),
        line("Time per output token p95 (ms)", tpot, "#2f8f6b", axis="tpot"),
    ]
    if w:
        latency += [
            *slo_series("TTFT", ttft, w.ttft_slo_ms, SLO_DASH["ttft"], "ttft"),
            *slo_series("TPOT", tpot, w.tpot_slo_ms, SLO_DASH["tpot"], "tpot"),
        ]
    fractions = [
        line("KV cache usage", [p.kv_cache_usage for p in polls], "#d08c2e"),
        line("Prefix-cache hit rate", [p.prefix_cache_hit_rate for p in polls], "#8f6bb3"),
    ]
    tokens = [
        line("Generation tokens/s", [p.generation_tokens_per_s for p in polls], "#2f8f6b"),
        line("Prompt tokens/s", [p.prompt_tokens_per_s for p in polls], "#4a5a80"),
    ]
    speed = _speed_series(deployment, polls, labels, line)
    calibrated = next((p for p in reversed(polls) if p.calibration_ratio is not None), None)
    blocks = next((p for p in reversed(polls) if p.block_ratios is not None), None)
    return {
        "polls": [
            {
                "poll": p,
                "ttft_over": over_slo(p.ttft_p95_ms, w.ttft_slo_ms if w else None),
                "tpot_over": over_slo(p.itl_p95_ms, w.tpot_slo_ms if w else None),
            }
            for p in polls[-10:][::-1]
        ],
        "latency_chart": {
            "labels": labels,
            "series": latency,
            "unit": "ms",
            "axes": LATENCY_AXES,
        },
        "fraction_chart": {"labels": labels, "series": fractions, "unit": "fraction"},
        "tokens_chart": {"labels": labels, "series": tokens, "unit": "tokens/s"},
        "calibration": calibrated,
        "block_check": blocks,
        **speed,
    }


def _speed_series(deployment: Deployment, polls: list, labels: list[str], line) -> dict:
    """Observed TPOT p50 beside the model's TPOT at each poll's running batch, and that times the
    deployment's live speed correction (planner.corrections), with the correction itself."""
    correction = latest_for(deployment)
    newest = correction or deployment.speed_corrections.order_by("-fitted_at", "-id").first()
    predicted = predicted_tpot_ms(deployment, polls)
    series = [
        line("observed TPOT p50 (ms)", [p.itl_p50_ms for p in polls], "#2f8f6b"),
        line("predicted TPOT (model, ms)", predicted, "#8a8a8a", [4, 3]),
    ]
    if correction is not None:
        factor = correction.decode_factor
        corrected = [None if v is None else v * factor for v in predicted]
        series.append(line("predicted x correction (ms)", corrected, "#c0392b"))
    columns = [s["values"] for s in series]
    rows = [{"label": label, "values": [c[i] for c in columns]} for i, label in enumerate(labels)]
    return {
        "speed_chart": {"labels": labels, "series": series, "unit": "ms"},
        "speed_rows": rows[::-1],
        "speed_correction": correction,
        "speed_calibration": calibration_of(correction) if correction else None,
        "stale_speed_correction": newest if correction is None else None,
    }
