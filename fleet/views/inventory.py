"""Register and edit clusters and deployments; their detail pages."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from fleet.forms import ClusterForm, DeploymentForm
from fleet.headroom import capacity_points, envelope, headroom
from fleet.models import Cluster, Deployment

from .access import role_required


@role_required("inventory")
def cluster_form(request: HttpRequest, slug: str | None = None) -> HttpResponse:
    cluster = get_object_or_404(Cluster, slug=slug) if slug else None
    form = ClusterForm(request.POST or None, instance=cluster)
    if request.method == "POST" and form.is_valid():
        cluster = form.save()
        messages.success(request, f"Cluster {cluster.name} saved.")
        return redirect("cluster", slug=cluster.slug)
    title = f"Edit {cluster.name}" if cluster else "Register a cluster"
    return render(request, "form_page.html", {"form": form, "title": title, "cancel": "fleet"})


@role_required("inventory")
def deployment_form(request: HttpRequest, slug: str | None = None) -> HttpResponse:
    deployment = get_object_or_404(Deployment, slug=slug) if slug else None
    initial = {"cluster": request.GET.get("cluster")} if not deployment else None
    form = DeploymentForm(request.POST or None, instance=deployment, initial=initial)
    if request.method == "POST" and form.is_valid():
        deployment = form.save()
        messages.success(request, f"Deployment {deployment.slug} saved.")
        return redirect("deployment", slug=deployment.slug)
    title = f"Edit {deployment.slug}" if deployment else "Register a deployment"
    return render(request, "form_page.html", {"form": form, "title": title, "cancel": "fleet"})


@login_required
def cluster_detail(request: HttpRequest, slug: str) -> HttpResponse:
    cluster = get_object_or_404(Cluster.objects.select_related("sku"), slug=slug)
    deployments = cluster.deployments.select_related("cluster__sku", "model")
    return render(
        request,
        "fleet/cluster.html",
        {"cluster": cluster, "rows": headroom(deployments), "states": cluster.states.select_related("sku")},
    )


@login_required
def deployment_detail(request: HttpRequest, slug: str) -> HttpResponse:
    deployment = get_object_or_404(Deployment.objects.select_related("cluster__sku", "model"), slug=slug)
    (row,) = headroom([deployment])
    context = {"d": deployment, "row": row}
    if row.result is not None:
        result = row.result
        observed = int(row.observed) if row.observed is not None else None
        context |= {
            "result": result,
            "envelope": envelope(result, observed),
            "envelope_full": envelope(result),
            "curve": capacity_points(deployment),
        }
    context |= _poll_series(deployment)
    return render(request, "fleet/deployment.html", context)


#: Polls drawn on the deployment page (newest last).
RECENT_POLLS = 120


def _poll_series(deployment: Deployment) -> dict:
    """Recent polls as chart series, with the workload's SLO lines, and the latest calibration."""
    polls = list(deployment.polls.defer("outcome").order_by("-polled_at")[:RECENT_POLLS])[::-1]
    if not polls:
        return {"polls": []}
    labels = [p.polled_at.strftime("%H:%M:%S") for p in polls]
    w = deployment.workload

    def line(label, values, color, dash=None):
        return {"label": label, "values": values, "color": color, **({"dash": dash} if dash else {})}

    latency = [line("TTFT p95 (ms)", [p.ttft_p95_ms for p in polls], "#2856d8"),
               line("Time per output token p95 (ms)", [p.itl_p95_ms for p in polls], "#2f8f6b")]  # fmt: skip
    if w:
        latency += [line("TTFT SLO", [w.ttft_slo_ms] * len(polls), "#2856d8", [6, 4]),
                    line("TPOT SLO", [w.tpot_slo_ms] * len(polls), "#2f8f6b", [6, 4])]  # fmt: skip
    fractions = [line("KV cache usage", [p.kv_cache_usage for p in polls], "#d08c2e"),
                 line("Prefix-cache hit rate", [p.prefix_cache_hit_rate for p in polls], "#8f6bb3")]  # fmt: skip
    tokens = [line("Generation tokens/s", [p.generation_tokens_per_s for p in polls], "#2f8f6b"),
              line("Prompt tokens/s", [p.prompt_tokens_per_s for p in polls], "#4a5a80")]  # fmt: skip
    calibrated = next((p for p in reversed(polls) if p.calibration_ratio is not None), None)
    return {
        "polls": polls[-10:][::-1],
        "latency_chart": {"labels": labels, "series": latency, "unit": "ms"},
        "fraction_chart": {"labels": labels, "series": fractions, "unit": "fraction"},
        "tokens_chart": {"labels": labels, "series": tokens, "unit": "tokens/s"},
        "calibration": calibrated,
    }
