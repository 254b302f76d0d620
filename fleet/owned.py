"""Owned clusters as the engine prices them: their purchases, running costs, SKU power figures and the
sites' electricity prices read once and turned into ``planner.engine.OwnedCluster`` (``OwnedBook``),
with the reason an owned cluster cannot be priced when it cannot (no running costs on record, no
purchase, a SKU without its full-load power, a purchase in a currency without an exchange rate).

``fleet.prices.PriceBook`` asks this for an owned cluster's price in force, so every page, API view,
export and task prices an owned cluster by one rule (``planner.engine.owned_price``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

from fleet.bills import Rates
from fleet.models import Cluster, ElectricityPrice
from fleet.models.bills import FLEET_CURRENCY, RATE_MAX_AGE_DAYS
from planner.engine import ElectricityPrice as EnginePrice
from planner.engine import EngineInputError, OwnedCluster, OwnedMonth, Purchase


@dataclass(frozen=True)
class OwnedBook:
    """Per owned cluster slug, its engine view (``clusters``) or why it has none (``unpriced``)."""

    clusters: dict[str, OwnedCluster] = field(default_factory=dict)
    unpriced: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, slugs: Iterable[str] | None = None) -> OwnedBook:
        """The owned clusters (of ``slugs``; None: every one): three queries, four with a purchase in a
        currency other than USD."""
        rows = Cluster.objects.filter(ownership=Cluster.Ownership.OWNED).select_related("sku", "owned_costs")
        if slugs is not None:
            rows = rows.filter(slug__in=list(slugs))
        rows = list(rows.prefetch_related("purchases"))
        if not rows:
            return cls()
        sites = {c.owned_costs.site for c in rows if _costs(c) is not None}
        prices: dict[str, list[EnginePrice]] = {}
        for p in ElectricityPrice.objects.filter(site__in=sites).order_by("valid_from"):
            prices.setdefault(p.site, []).append(EnginePrice(p.valid_from, p.usd_per_kwh))
        foreign = {p.currency for c in rows for p in c.purchases.all()} - {FLEET_CURRENCY}
        rates = Rates() if foreign else None
        book = cls()
        for c in rows:
            try:
                book.clusters[c.slug] = owned_cluster(c, prices.get(getattr(_costs(c), "site", ""), []), rates)
            except Unpriced as why:
                book.unpriced[c.slug] = str(why)
        return book


class Unpriced(Exception):
    """Why an owned cluster has no cost (its message, for a page or a warning)."""


def _costs(cluster: Cluster) -> object | None:
    try:
        return cluster.owned_costs
    except Cluster.owned_costs.RelatedObjectDoesNotExist:
        return None


def owned_cluster(cluster: Cluster, electricity: list[EnginePrice], rates: Rates | None) -> OwnedCluster:
    """``cluster``'s engine view (its ``owned_costs``, ``purchases`` and SKU read); ``Unpriced`` saying what is
    missing. A purchase in another currency is converted at the exchange rate of its day (``Rates``: the
    latest on or before it, at most ``RATE_MAX_AGE_DAYS`` older, the rule bills use)."""
    costs = _costs(cluster)
    if costs is None:
        raise Unpriced("owned, but its running costs (site, PUE, colocation, support) are not on record")
    sku = cluster.sku
    if not sku.tdp_watts:
        raise Unpriced(f"owned, but its SKU {sku.slug} has no full-load power (tdp_watts) on record")
    per_node = cluster.gpus_per_node or sku.gpus_per_node
    purchases = []
    for p in cluster.purchases.all():
        rate = Decimal(1) if p.currency == FLEET_CURRENCY else rates.usd_per_unit(p.currency, p.bought_on)
        if rate is None:
            raise Unpriced(
                f"its purchase of {p.bought_on.isoformat()} is in {p.currency}, with no exchange rate on record "
                f"within {RATE_MAX_AGE_DAYS} days before that day"
            )
        total = p.total_price(per_node)
        purchases.append(Purchase(p.bought_on, p.nodes, total * rate, p.useful_life_months, p.residual_value * rate))
    if not purchases:
        raise Unpriced("owned, but no purchase is on record")
    try:
        return OwnedCluster(
            cluster=cluster.slug,
            gpus_per_node=per_node,
            purchases=tuple(purchases),
            power=sku.power(costs.node_overhead_w, costs.pue),
            electricity=tuple(electricity),
            racks=costs.racks,
            usd_per_rack_month=costs.usd_per_rack_month,
            support_share_per_year=costs.support_share_per_year,
            staff_usd_per_month=costs.staff_usd_per_month,
        )
    except EngineInputError as exc:
        raise Unpriced(f"its cost figures are out of range: {exc}") from None


@dataclass(frozen=True)
class OwnedMonthAnswer:
    """An owned cluster's cost in a calendar month as the engine computes it (``month``), or why it has
    none (``unpriced``: the cluster's reason from ``OwnedBook``, or that no GPU is on)."""

    month: OwnedMonth | None
    unpriced: str = ""


def owned_month(cluster: Cluster, year: int, month: int, book: OwnedBook | None = None) -> OwnedMonthAnswer:
    """What owning ``cluster`` costs in ``year``-``month`` (``OwnedCluster.month``) with its GPUs
    (``total_gpus``) on its ``hours_per_day`` every day at full load (no utilisation: the assumptions say
    so), the rule its price in force uses; ``book``: an ``OwnedBook`` already read (else three queries)."""
    book = book if book is not None else OwnedBook.load([cluster.slug])
    mine = book.clusters.get(cluster.slug)
    if mine is None:
        return OwnedMonthAnswer(None, book.unpriced.get(cluster.slug, "not an owned cluster"))
    return OwnedMonthAnswer(mine.month(year, month, cluster.total_gpus, cluster.hours_per_day, None))
