"""The price book and catalogue as the pages manage them: the price in force of a cluster or a SKU
(``PriceBook``: the quotes read once, the engine's one rule ``planner.engine.price_in_force`` asked
of them), each quote's status, which API price is current,
the initial values of a new dated row that supersedes an old one, and deleting a record other
records depend on (refused, naming them).

Prices are never edited in place: a changed price is a new row with its own date, so a past month's
spend and a recorded decision keep the rate they were computed with, and the audit trail shows
when each price arrived. A quote may be ended (``valid_until``) or its source note corrected; a
mistaken row may be deleted (the deletion is on the audit trail).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from django.db.models import Model, ProtectedError, QuerySet, RestrictedError

from fleet.errors import InputError
from fleet.models import ApiPrice, GpuQuote
from fleet.owned import OwnedBook
from planner.engine import (
    PRICING_KINDS,
    PriceInForce,
    Quote,
    next_quote_change,
    owned_price,
    price_in_force,
    superseded,
)

#: A slug's date suffix (``kimi-k3-api-2026-12-01``): replaced, not stacked, by the next price's.
DATED_SLUG = re.compile(r"-\d{4}-\d{2}-\d{2}$")
#: How many of the records that block a deletion its message names.
NAMED_BLOCKERS = 5


class PriceBook:
    """GPU quotes read once (one query) and the price in force asked of them by the engine's rule.

    Every page, API view, export, plan, breakeven, review, spend report and ``/metrics`` prices GPUs
    through this: SQL only prefilters (SKUs, kind, quoted on or before the last day asked).
    """

    def __init__(self, quotes: list[Quote], sku_ids: Iterable[int] | None = None) -> None:
        self.quotes = quotes
        #: The SKU ids whose quotes were read (None: every SKU's).
        self.sku_ids = None if sku_ids is None else frozenset(sku_ids)
        self._by_sku: dict[str, list[Quote]] = {}
        self._by_id = {q.id: q for q in quotes}
        self._owned: OwnedBook | None = None
        for q in quotes:
            self._by_sku.setdefault(q.sku, []).append(q)

    @classmethod
    def load(
        cls, skus: Iterable[int] | None = None, *, until: date | None = None, kind: str | None = None
    ) -> PriceBook:
        """The quotes of the SKU ids ``skus`` (None: every SKU), quoted on or before ``until`` (None:
        any day), of ``kind`` (None: every kind)."""
        rows = GpuQuote.objects.all()
        if skus is not None:
            skus = list(skus)
            rows = rows.filter(sku_id__in=skus)
        if until is not None:
            rows = rows.filter(quoted_on__lte=until)
        if kind is not None:
            rows = rows.filter(pricing_kind=kind)
        return cls(rows.as_quotes(), skus)

    def covers(self, sku_id: int) -> bool:
        """Whether the book read the quotes of SKU id ``sku_id``."""
        return self.sku_ids is None or sku_id in self.sku_ids

    def of_sku(self, sku: str) -> list[Quote]:
        """Every quote of the SKU slug ``sku`` the book holds."""
        return self._by_sku.get(sku, [])

    def quote(self, quote_id: int) -> Quote | None:
        return self._by_id.get(quote_id)

    @property
    def owned(self) -> OwnedBook:
        """Every owned cluster's cost inputs (``fleet.owned.OwnedBook``), read on first use (three queries):
        a book that prices no owned cluster never reads them."""
        if self._owned is None:
            self._owned = OwnedBook.load()
        return self._owned

    def for_cluster(self, cluster: Any, on: date, kind: str = "on-demand") -> PriceInForce | None:
        """The price in force for ``cluster`` (a ``Cluster``, ``sku`` and ``provider`` selected) on ``on``:
        an owned cluster's own cost with its GPUs and hours a day at full load (``owned_price``), any other's
        provider's quote or list price (``price_in_force``); None: unpriced that day (``unpriced_reason``)."""
        sku, provider = cluster.sku.slug, cluster.provider.name
        if cluster.owned:
            mine = self.owned.clusters.get(cluster.slug)
            if mine is None:
                return None
            gpus, hours = cluster.total_gpus, cluster.hours_per_day
            return owned_price(mine, on, sku=sku, provider=provider, gpus=gpus, hours_per_day=hours, kind=kind)
        return self.for_rented(sku, provider, on, kind)

    def for_rented(self, sku: str, provider: str, on: date, kind: str = "on-demand") -> PriceInForce | None:
        """The price in force for a rented cluster of SKU slug ``sku`` at ``provider`` (name) on ``on``;
        None: unpriced that day."""
        return price_in_force(self.of_sku(sku), on, sku=sku, provider=provider, kind=kind)

    def unpriced_reason(self, cluster: Any) -> str:
        """Why ``cluster`` has no price in force (for a page or a warning)."""
        if cluster.owned:
            return self.owned.unpriced.get(
                cluster.slug, "owned, but no purchase in service or no electricity price on record for the day"
            )
        return f"{cluster.provider.name} has no quote or list price in force for {cluster.sku.slug}"

    def for_deployment(self, deployment: Any, on: date, kind: str = "on-demand") -> PriceInForce | None:
        """The price in force for ``deployment``'s cluster (select_related ``cluster__sku`` and
        ``cluster__provider``)."""
        return self.for_cluster(deployment.cluster, on, kind)

    def for_sku(self, sku: str, on: date, kind: str = "on-demand") -> PriceInForce | None:
        """The price in force for the SKU slug ``sku`` alone on ``on`` (cheapest own quote, else the
        cheapest list price); None: unpriced."""
        return price_in_force(self.of_sku(sku), on, sku=sku, kind=kind)

    def next_cluster_change(self, cluster: Any, on: date) -> date | None:
        """The first day after ``on`` on which ``cluster``'s price in force may change: an owned cluster's on
        the first of next month (its fixed costs are spread over each month's days) or on its site's next
        electricity price; a rented one's when a quote of its SKU starts or ends (``next_change``)."""
        if not cluster.owned:
            return self.next_change(cluster.sku.slug, on)
        first_of_next = (on.replace(day=28) + timedelta(days=4)).replace(day=1)
        mine = self.owned.clusters.get(cluster.slug)
        later = [p.valid_from for p in mine.electricity if p.valid_from > on] if mine is not None else []
        return min([first_of_next, *later])

    def next_change(self, sku: str, on: date) -> date | None:
        """The first day after ``on`` on which ``sku``'s price in force may change."""
        return next_quote_change(self.of_sku(sku), on, sku=sku)


def price_of_sku(sku: Any, on: date, kind: str = "on-demand") -> PriceInForce | None:
    """One SKU's price in force on ``on`` (one query)."""
    return PriceBook.load([sku.pk], until=on, kind=kind).for_sku(sku.slug, on, kind)


@dataclass(frozen=True)
class QuoteRow:
    """One GPU quote as the quotes page lists it.

    ``status``: ``price`` (the SKU's price in force for its kind), ``in-force`` (in force: it prices
    the clusters at its provider, not the SKU alone), ``list-price`` (a public list price in force, not
    the SKU's price), ``assumption`` (no provider issued it: never in force), ``superseded`` (a newer
    quote of the same provider and kind), ``expired`` (``valid_until`` passed), ``future`` (quoted
    after the day shown).
    """

    quote: GpuQuote
    status: str

    @property
    def label(self) -> str:
        return {
            "price": "price in force",
            "in-force": "in force",
            "list-price": "list price",
            "assumption": "assumption: never in force",
            "superseded": "superseded",
            "expired": "expired",
            "future": f"from {self.quote.quoted_on.isoformat()}",
        }[self.status]


def quote_rows(quotes: QuerySet[GpuQuote], on: date) -> list[QuoteRow]:
    """``quotes`` (any filter of ``GpuQuote``), each with its status on ``on``; two queries."""
    rows = list(quotes.select_related("sku", "provider"))
    book = PriceBook.load({q.sku_id for q in rows}, until=on)
    gone = superseded(book.quotes, on)
    prices = {
        p.quote.id
        for sku in {q.sku.slug for q in rows}
        for kind in PRICING_KINDS
        if (p := book.for_sku(sku, on, kind)) is not None
    }
    out = []
    for q in rows:
        if q.provider_id is None:
            status = "assumption"
        elif q.pk in prices:
            status = "price"
        elif q.quoted_on > on:
            status = "future"
        elif q.valid_until is not None and q.valid_until < on:
            status = "expired"
        elif q.pk in gone:
            status = "superseded"
        else:
            status = "list-price" if q.list_price else "in-force"
        out.append(QuoteRow(q, status))
    return out


def superseding_quote(previous: GpuQuote, on: date) -> dict[str, Any]:
    """Initial values of a new quote that supersedes ``previous`` from ``on`` (its price to fill in)."""
    return {
        "sku": previous.sku_id,
        "provider": previous.provider,
        "pricing_kind": previous.pricing_kind,
        "list_price": previous.list_price,
        "usd_per_gpu_hour": previous.usd_per_gpu_hour,
        "quoted_on": on,
        "source": "",
    }


@dataclass(frozen=True)
class ApiPriceRow:
    """One API price: ``current`` when it is the latest quoted on or before the day shown for its
    provider and model name (the one to compare with), ``future`` when quoted after it."""

    price: ApiPrice
    current: bool
    future: bool


def api_price_rows(prices: QuerySet[ApiPrice], on: date) -> list[ApiPriceRow]:
    """``prices`` with which one is current per (provider, model name) on ``on``; one query."""
    prices = list(prices.select_related("model"))
    latest: dict[tuple[str, str], ApiPrice] = {}
    for p in prices:
        key = (p.provider, p.model_name)
        if p.quoted_on <= on and (key not in latest or (p.quoted_on, p.pk) > (latest[key].quoted_on, latest[key].pk)):
            latest[key] = p
    current = {p.pk for p in latest.values()}
    return [ApiPriceRow(p, p.pk in current, p.quoted_on > on) for p in prices]


def superseding_api_price(previous: ApiPrice, on: date) -> dict[str, Any]:
    """Initial values of a new API price that supersedes ``previous`` from ``on``: a slug of its own
    (``<slug>-<date>``), the same provider, model name and model, the prices to fill in."""
    base = DATED_SLUG.sub("", previous.slug)[:53]
    return {
        "slug": f"{base}-{on.isoformat()}",
        "provider": previous.provider,
        "model_name": previous.model_name,
        "model": previous.model_id,
        **{name: getattr(previous, name) for name in ApiPrice.PRICES},
        "context_window": previous.context_window,
        "quoted_on": on,
        "source": "",
    }


def delete_record(record: Model) -> None:
    """Delete ``record``; ``InputError`` naming the records that depend on it when the database
    protects it (a SKU with clusters or quotes, a workload with plans or decisions)."""
    try:
        record.delete()
    except (ProtectedError, RestrictedError) as exc:
        blockers = list(exc.protected_objects if isinstance(exc, ProtectedError) else exc.restricted_objects)
        kinds: dict[str, int] = {}
        for obj in blockers:
            name = str(obj._meta.verbose_name)
            kinds[name] = kinds.get(name, 0) + 1
        counted = ", ".join(f"{n} {kind}{'' if n == 1 else 's'}" for kind, n in sorted(kinds.items()))
        named = "; ".join(str(obj) for obj in blockers[:NAMED_BLOCKERS])
        more = f" and {len(blockers) - NAMED_BLOCKERS} more" if len(blockers) > NAMED_BLOCKERS else ""
        raise InputError.single(
            "__all__",
            f"{record} cannot be deleted: {counted} use it ({named}{more}). Change or delete those first.",
        ) from None
