"""The planner's list pages as data: the records each list shows (searched and sorted by its
``fleet.tables.TableForm``), their rows with computed figures, and their CSV columns.

The pages and their CSV read the same rows, so a CSV holds exactly what the page's search and sort
select (every page of it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

from django.db.models import Prefetch, QuerySet, TextField, Value
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import NullIf
from django.utils import timezone

from fleet.models import Cluster, Deployment, HardwareSku, ModelSpec
from fleet.prices import PriceBook
from planner.decisions import frozen_inputs
from planner.engine import DEFAULT_PRICING_KIND, MILLS, PriceInForce, quantize, weights_bytes
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
    "deployment",
    "sku",
    "current",
    "review",
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
            d.deployment_slug,
            d.sku_name,
            "yes" if d.is_current else "no",
            d.review_state,
            (d.figures or {}).get("monthly_rent_usd"),
            (d.figures or {}).get("monthly_api_usd"),
            (d.figures or {}).get("verdict"),
            d.decided_by_name,
            d.note,
        ]
        for d in rows
    ]


def plans() -> QuerySet[Plan]:
    """Every plan with its model and workload, and its summary instead of its result (``Plan.objects.listed``)."""
    return Plan.objects.listed().select_related("model", "workload")


def with_best_sku_names(rows: Iterable[Plan]) -> list[Plan]:
    """The plans with ``best_sku_name``: the name of their best configuration's SKU (its summary keeps the
    slug; one query for the page)."""
    plans = list(rows)
    slugs = {((p.summary or {}).get("best") or {}).get("sku") for p in plans} - {None}
    names = dict(HardwareSku.objects.filter(slug__in=slugs).values_list("slug", "name")) if slugs else {}
    for p in plans:
        slug = ((p.summary or {}).get("best") or {}).get("sku")
        p.best_sku_name = names.get(slug, slug)
    return plans


PLAN_CSV = (
    "id",
    "started",
    "model",
    "workload",
    "price_basis",
    "status",
    "progress_percent",
    "candidates_evaluated",
    "feasible",
    "best_sku",
    "best_mode",
    "best_kv_cache_dtype",
    "best_gpus",
    "best_layout",
    "best_usd_per_mtok",
    "best_tpot_ms",
)
#: The best configuration's figures in ``PLAN_CSV`` (``best_<key>``), from the plan's summary.
PLAN_CSV_BEST = ("sku", "mode", "kv_cache_dtype", "gpus", "layout", "usd_per_mtok", "tpot_ms")


def plan_csv_rows(rows: Iterable[Plan]) -> list[list[Any]]:
    """One CSV row per plan (``PLAN_CSV``): the best configuration from its summary (blank until done,
    or when none meets the SLOs)."""
    out = []
    for p in rows:
        summary = p.summary or {}
        best = summary.get("best") or {}
        out.append(
            [
                str(p.pk),
                p.created.strftime("%Y-%m-%d %H:%M:%S"),
                p.model.name,
                p.workload.name,
                p.price_basis,
                p.status,
                p.progress,
                p.candidates_evaluated,
                summary.get("feasible"),
                *(best.get(key) for key in PLAN_CSV_BEST),
            ]
        )
    return out


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


@dataclass(frozen=True)
class ClusterPrice:
    """A cluster's price in force today (``PriceBook.for_cluster``: the one rule) and what its GPUs cost
    an hour at it; ``price`` None: unpriced."""

    price: PriceInForce | None
    gpus: int
    unpriced_reason: str = ""

    @property
    def usd_per_gpu_hour(self) -> Decimal | None:
        """To 4 decimals, as quotes are (an owned cluster's own cost is exact)."""
        return None if self.price is None else quantize(self.price.usd_per_gpu_hour, MILLS)

    @property
    def usd_per_hour(self) -> Decimal | None:
        return None if self.price is None else quantize(self.price.usd_per_gpu_hour * self.gpus, MILLS)


def cluster_prices(clusters: Iterable[Cluster], on: date) -> dict[int, ClusterPrice]:
    """Each cluster's (select_related ``sku`` and ``provider``) ``ClusterPrice`` on ``on``, by id, with why it
    is unpriced when it is (``PriceBook.unpriced_reason``); one query, three more with an owned cluster."""
    clusters = list(clusters)
    book = PriceBook.load({c.sku_id for c in clusters}, until=on, kind=DEFAULT_PRICING_KIND)
    out = {}
    for c in clusters:
        price = book.for_cluster(c, on, DEFAULT_PRICING_KIND)
        out[c.pk] = ClusterPrice(price, c.total_gpus, "" if price is not None else book.unpriced_reason(c))
    return out


def with_snapshot_cost(deployments: QuerySet[Deployment]) -> QuerySet[Deployment]:
    """``deployments`` with the rate and cost per hour their stored snapshot priced them at (text, as the
    snapshot stores them; None: unpriced or not computed): ``snapshot_usd_per_gpu_hour``,
    ``snapshot_usd_per_hour``. Read from the snapshot's figures in SQL, not the whole figures' JSON."""

    def key(name: str) -> NullIf:
        # A JSON null may come back as the text "null" (SQLite): unpriced, not a figure.
        return NullIf(KeyTextTransform(name, "capacity_snapshot__figures"), Value("null"), output_field=TextField())

    return deployments.annotate(
        snapshot_usd_per_gpu_hour=key("usd_per_gpu_hour"), snapshot_usd_per_hour=key("usd_per_hour")
    )


def decision_inputs(decision: Decision) -> dict[str, Any]:
    """A decision's frozen inputs as labelled sections (``planner.decisions.frozen_inputs``) and as indented JSON
    (behind the table): what its row of the log loads when opened (``decision-inputs``)."""
    return {
        "d": decision,
        "sections": frozen_inputs(decision.inputs),
        "inputs": json.dumps(decision.inputs, indent=1, default=str),
    }


FLEET_CSV = (
    "cluster", "cluster_name", "team", "provider", "region", "sku", "gpus", "cluster_status",
    "deployment", "model", "engine", "deployment_status", "running", "predicted_capacity", "free", "fits",
    "capacity_ratio", "cluster_usd_per_gpu_hour", "cluster_usd_per_hour", "deployment_usd_per_hour",
)  # fmt: skip


def fleet_csv_rows(clusters: QuerySet[Cluster], on: date) -> list[list[Any]]:
    """A row per deployment of the clusters selected (a cluster without any: one row with its figures
    only), with the headroom the fleet page shows (the stored snapshots: ``planner.headroom.stored_headroom``),
    each cluster's price in force on ``on`` and its cost an hour, and each deployment's cost an hour as its
    snapshot priced it (blank: unpriced)."""
    # The reverse prefetch sets each deployment's cluster to its (select_related sku) parent.
    deployments = with_snapshot_cost(Deployment.objects.select_related("model", "workload", "capacity_snapshot"))
    shown = list(clusters.prefetch_related(Prefetch("deployments", deployments)))
    prices = cluster_prices(shown, on)
    rows = stored_headroom([d for c in shown for d in c.deployments.all()])
    by_cluster: dict[int, list[Headroom]] = {}
    for row in rows:
        by_cluster.setdefault(row.deployment.cluster_id, []).append(row)
    out = []
    now = timezone.now()  # one clock for every row's staleness
    for c in shown:
        head = [c.slug, c.name, c.team, c.provider.name, c.region, c.sku.name, c.total_gpus, c.status]
        price = prices[c.pk]
        tail = [price.usd_per_gpu_hour, price.usd_per_hour]
        mine = sorted(by_cluster.get(c.pk, []), key=lambda h: h.deployment.slug)
        if not mine:
            out.append(head + [None] * (len(FLEET_CSV) - len(head) - 3) + [*tail, None])
        for h in mine:
            d = h.deployment
            ratio = None if d.calibration_ratio is None else round(d.calibration_ratio, 3)
            out.append(
                [*head, d.slug, d.model.name, d.engine, d.shown_status(now), h.observed, h.capacity, h.free, h.fits,
                 ratio, *tail, d.snapshot_usd_per_hour]
            )  # fmt: skip
    return out
