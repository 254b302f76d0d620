"""Register and edit clusters and deployments (their detail pages are planner's: headroom)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from fleet.forms import ClusterForm, DeploymentForm
from fleet.models import Cluster, Deployment

from .access import add_or_change_required


@add_or_change_required("fleet", "cluster")
def cluster_form(request: HttpRequest, slug: str | None = None) -> HttpResponse:
    cluster = get_object_or_404(Cluster, slug=slug) if slug else None
    form = ClusterForm(request.POST or None, instance=cluster)
    if request.method == "POST" and form.is_valid():
        cluster = form.save()
        messages.success(request, f"Cluster {cluster.name} saved.")
        return redirect("cluster", slug=cluster.slug)
    title = f"Edit {cluster.name}" if cluster else "Register a cluster"
    return render(request, "form_page.html", {"form": form, "title": title, "cancel": "fleet"})


@add_or_change_required("fleet", "deployment")
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
