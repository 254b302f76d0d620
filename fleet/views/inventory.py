"""Register and edit clusters and deployments (their detail pages are planner's: headroom)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse

from fleet.forms import ClusterForm, DeploymentForm
from fleet.models import Cluster, Deployment

from .access import add_or_change_required, record_form_page


@add_or_change_required("fleet", "cluster")
def cluster_form(request: HttpRequest, slug: str | None = None) -> HttpResponse:
    cluster = get_object_or_404(Cluster, slug=slug) if slug else None
    return record_form_page(
        request,
        ClusterForm,
        cluster,
        title=f"Edit {cluster.name}" if cluster else "Register a cluster",
        saved=lambda c: (f"Cluster {c.name} saved.", reverse("cluster", args=[c.slug])),
        cancel="fleet",
    )


@add_or_change_required("fleet", "deployment")
def deployment_form(request: HttpRequest, slug: str | None = None) -> HttpResponse:
    deployment = get_object_or_404(Deployment, slug=slug) if slug else None
    return record_form_page(
        request,
        DeploymentForm,
        deployment,
        title=f"Edit {deployment.headline}" if deployment else "Register a deployment",
        saved=lambda d: (f"Deployment {d.slug} saved.", reverse("deployment", args=[d.slug])),
        cancel="fleet",
        initial=None if deployment else {"cluster": request.GET.get("cluster")},
    )
