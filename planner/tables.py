"""The planner's list pages as data: the records each list shows (searched and sorted by its
``fleet.tables.TableForm``), their rows with computed figures, and their CSV columns.

The pages and their CSV read the same rows, so a CSV holds exactly what the page's search and sort
select (every page of it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from django.db.models import Prefetch, QuerySet

from fleet.models import Cluster, Deployment, ModelSpec
from planner.engine import weights_bytes
from planner.headroom import Headroom, stored_headroom
from planner.models import Decision, Plan


def decisions() -> QuerySet[Decision]:
    """Every decision with what its row shows (workload, the decision superseding it, its review)."""
    return Decision.objects.select_related("workload", "superseded_by", "review")


#: Columns of the decisions CSV; the money columns name their month (the seeds' 30-day month, 720 h,
#: ``planner.engine.costs.money.MONTH_LABEL``), which spend's calendar months are not.
DECISION_CSV = (
    "id",
    "decided_at",
    "workload",
    "tier",
    "current",
    "rent_usd_per_30_day_month",
    "api_usd_per_30_day_month",
    "verdict",
    "decided_by",
    "note",
)


def decision_csv_rows(rows: Iterable[Decision]) -> list[list[Any]]:
    """One CSV row per decision (``DECISION_CSV``); money as the decision froze it."""
    return [
        [
            d.pk,
            d.decided_at.strftime("%Y-%m-%d %H:%M:%S"),
            d.workload.name,
            d.get_tier_display(),
            "yes" if d.is_current else "no",
            (d.figures or {}).get("monthly_rent_usd"),
            (d.figures or {}).get("monthly_api_usd"),
            (d.figures or {}).get("verdict"),
            d.decided_by_name,
            d.note,
        ]
        for d in rows
    ]


def plans() -> QuerySet[Plan]:
    """Every plan with its model and workload (the result, large, left out of the list)."""
    return Plan.objects.select_related("model", "workload").defer("result", "progress_log")


PLAN_CSV = ("id", "started", "model", "workload", "status", "progress_percent", "candidates_evaluated")


def plan_csv_rows(rows: Iterable[Plan]) -> list[list[Any]]:
    """One CSV row per plan (``PLAN_CSV``)."""
    return [
        [
            str(p.pk),
            p.created.strftime("%Y-%m-%d %H:%M:%S"),
            p.model.name,
            p.workload.name,
            p.status,
            p.progress,
            p.candidates_evaluated,
        ]
        for p in rows
    ]


def models() -> QuerySet[ModelSpec]:
    return ModelSpec.objects.all()


def model_rows(rows: Iterable[ModelSpec]) -> list[dict[str, Any]]:
    """Each model with its weights as shipped (bytes): computed by the engine, not stored."""
    return [{"m": m, "weights_bytes": weights_bytes(m.to_engine())} for m in rows]


MODEL_CSV = (
    "slug",
    "name",
    "total_params",
    "active_params",
    "routed_experts",
    "active_experts",
    "weight_format",
    "expert_weight_format",
    "weights_bytes",
    "max_context_tokens",
)


def model_csv_rows(rows: Iterable[dict[str, Any]]) -> list[list[Any]]:
    """One CSV row per model (``MODEL_CSV``), from ``model_rows``."""
    return [
        [
            r["m"].slug,
            r["m"].name,
            r["m"].total_params,
            r["m"].active_params,
            r["m"].n_routed_experts,
            r["m"].n_active_experts,
            r["m"].weight_format,
            r["m"].expert_weight_format,
            r["weights_bytes"],
            r["m"].max_context_tokens,
        ]
        for r in rows
    ]


def clusters() -> QuerySet[Cluster]:
    return Cluster.objects.select_related("sku", "provider")


def decision_items(rows: Iterable[Decision]) -> list[dict[str, Any]]:
    """Each decision with its frozen inputs as indented JSON (the row's details)."""
    return [{"d": d, "inputs": json.dumps(d.inputs, indent=1, default=str)} for d in rows]


FLEET_CSV = (
    "cluster", "cluster_name", "team", "provider", "region", "sku", "gpus", "cluster_status",
    "deployment", "model", "engine", "deployment_status", "running", "predicted_capacity", "free", "fits",
    "capacity_ratio",
)  # fmt: skip


def fleet_csv_rows(clusters: QuerySet[Cluster]) -> list[list[Any]]:
    """A row per deployment of the clusters selected (a cluster without any: one row with its figures
    only), with the headroom the fleet page shows (the stored snapshots: ``planner.headroom.stored_headroom``)."""
    # The reverse prefetch sets each deployment's cluster to its (select_related sku) parent.
    deployments = Deployment.objects.select_related("model", "workload", "capacity_snapshot")
    shown = list(clusters.prefetch_related(Prefetch("deployments", deployments)))
    rows = stored_headroom([d for c in shown for d in c.deployments.all()])
    by_cluster: dict[int, list[Headroom]] = {}
    for row in rows:
        by_cluster.setdefault(row.deployment.cluster_id, []).append(row)
    out = []
    for c in shown:
        head = [c.slug, c.name, c.team, c.provider.name, c.region, c.sku.name, c.total_gpus, c.status]
        mine = sorted(by_cluster.get(c.pk, []), key=lambda h: h.deployment.slug)
        if not mine:
            out.append(head + [None] * (len(FLEET_CSV) - len(head)))
        for h in mine:
            d = h.deployment
            ratio = None if d.calibration_ratio is None else round(d.calibration_ratio, 3)
            out.append(
                [*head, d.slug, d.model.name, d.engine, d.last_status, h.observed, h.capacity, h.free, h.fits, ratio]
            )
    return out
