"""From plan to deployment: register one of a finished plan's ranked layouts as a deployment on a cluster
(``deploy_from_plan``); its launch command is the deployment's (``Deployment.launch_command``).

Called by the plan page's "Register as deployment" and ``POST /api/v1/plans/{id}/deploy/``. The deployment gets the
ranked configuration's layout (tp, pp, dp, ep), replicas and KV cache dtype, the plan's model and
workload, the chosen engine and a ``max_model_len`` (default: the workload's p95 context, the context
the plan sized at), and passes the same checks as one registered by hand (``Deployment.full_clean``,
``fleet.registration.check_deployment``: the layout must fit). Errors are ``InputError`` by field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from fleet.errors import ConflictError, InputError
from fleet.models import Cluster, Deployment
from fleet.registration import check_deployment
from planner.engine import DEFAULT_ENGINE
from planner.models import Plan
from planner.plans import plan_ranking


@dataclass(frozen=True)
class DeployRequest:
    """Register ranked configuration ``rank`` (1 = best) of plan ``plan`` on cluster ``cluster`` (slug) as
    deployment ``slug``; ``engine`` serves it; ``max_model_len`` None: the workload's p95 context."""

    plan: str
    rank: int
    cluster: str
    slug: str
    engine: str = DEFAULT_ENGINE
    max_model_len: int | None = None


def ranked(plan: Plan, rank: int) -> dict[str, Any]:
    """Configuration ``rank`` (1-based) of a done plan's ranking; ``InputError`` when there is none."""
    if plan.status != Plan.Status.DONE:
        raise InputError.single("plan", f"The plan is {plan.status}: only a finished plan's layouts can be registered.")
    rows = plan_ranking(plan)
    if not 1 <= rank <= len(rows):
        raise InputError.single("rank", f"Pick a rank from 1 to {len(rows)}." if rows else "The plan ranked nothing.")
    return rows[rank - 1]


def clusters_for(row: dict[str, Any]) -> list[Cluster]:
    """The active clusters of the configuration's SKU with room for its GPUs (free = total - deployed)."""
    rows = Cluster.objects.filter(sku__slug=row["sku"], status=Cluster.Status.ACTIVE).select_related("sku")
    return [c for c in rows.prefetch_related("deployments") if c.free_gpus >= row["gpus"]]


def deploy_from_plan(request: DeployRequest, user: Any = None) -> Deployment:
    """Create the deployment ``request`` describes (module docstring) and return it."""
    plan = Plan.objects.select_related("model", "workload").filter(pk=request.plan).first()
    if plan is None:
        raise InputError.single("plan", f"No plan {request.plan}.")
    row = ranked(plan, request.rank)
    if row.get("prefill"):
        raise InputError.single(
            "rank",
            "This configuration serves prefill and decode on separate pools (disaggregated): register each pool "
            "as its own deployment by hand; only aggregated configurations register in one step.",
        )
    cluster = Cluster.objects.select_related("sku").filter(slug=request.cluster).first()
    if cluster is None:
        raise InputError.single("cluster", f"No cluster {request.cluster}.")
    if cluster.sku.slug != row["sku"]:
        fitting = ", ".join(c.slug for c in clusters_for(row)) or "none with room"
        raise InputError.single(
            "cluster", f"{cluster.slug} has {cluster.sku.slug} GPUs; this layout is for {row['sku']} ({fitting})."
        )
    if cluster.free_gpus < row["gpus"]:
        raise InputError.single(
            "cluster",
            f"{cluster.slug} has {cluster.free_gpus} of {cluster.total_gpus} GPUs free; this layout needs "
            f"{row['gpus']}.",
        )
    layout = row["decode"]["layout"]
    deployment = Deployment(
        slug=request.slug,
        cluster=cluster,
        model=plan.model,
        workload=plan.workload,
        replicas=row["decode"]["replicas"],
        tp=layout.get("tp") or 1,
        pp=layout.get("pp") or 1,
        dp=layout.get("dp") or 1,
        ep=layout.get("ep") or 1,
        engine=request.engine,
        kv_cache_dtype=row["kv_cache_dtype"],
        max_model_len=request.max_model_len or plan.workload.p95_context_tokens,
    )
    try:
        deployment.full_clean()
    except ValidationError as exc:
        raise InputError(exc.message_dict) from None
    check_deployment(deployment)
    try:
        with transaction.atomic():
            deployment.save()
    except IntegrityError:
        raise ConflictError(f"A deployment called {request.slug} exists already.") from None
    return deployment
