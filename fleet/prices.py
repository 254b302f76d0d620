"""The price book and catalogue as the pages manage them: which GPU quote and API price is in force,
the initial values of a new dated row that supersedes an old one, and deleting a record other
records depend on (refused, naming them).

Prices are never edited in place: a changed price is a new row with its own date, so a past month's
spend and a recorded decision keep the rate they were computed with, and the audit trail shows
when each price arrived. A quote may be ended (``valid_until``) or its source note corrected; a
mistaken row may be deleted (the deletion is on the audit trail).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.db.models import Model, ProtectedError, QuerySet, RestrictedError

from fleet.errors import InputError
from fleet.models import ApiPrice, GpuQuote

#: A slug's date suffix (``kimi-k3-api-2026-12-01``): replaced, not stacked, by the next price's.
DATED_SLUG = re.compile(r"-\d{4}-\d{2}-\d{2}$")
#: How many of the records that block a deletion its message names.
NAMED_BLOCKERS = 5


@dataclass(frozen=True)
class QuoteRow:
    """One GPU quote as the quotes page lists it.

    ``status``: ``price`` (the SKU's price in force for its kind: the cheapest of the fleet's own
    quotes in force), ``in-force`` (in force, not the cheapest), ``list-price`` (a public list price
    in force: shown for comparison), ``superseded`` (a newer quote of the same provider and kind),
    ``expired`` (``valid_until`` passed), ``future`` (quoted after the day shown).
    """

    quote: GpuQuote
    status: str

    @property
    def label(self) -> str:
        return {
            "price": "price in force",
            "in-force": "in force",
            "list-price": "list price",
            "superseded": "superseded",
            "expired": "expired",
            "future": f"from {self.quote.quoted_on.isoformat()}",
        }[self.status]


def quote_rows(quotes: QuerySet[GpuQuote], on: date) -> list[QuoteRow]:
    """``quotes`` (any filter of ``GpuQuote``), each with its status on ``on``; two queries."""
    quotes = list(quotes.select_related("sku"))
    in_force = {q.pk: q for q in GpuQuote.objects.in_force_on(on).filter(pk__in=[q.pk for q in quotes])}
    price_ids = {q.pk for q in prices_in_force(in_force.values()).values()}
    rows = []
    for q in quotes:
        if q.pk in price_ids:
            status = "price"
        elif q.pk in in_force:
            status = "list-price" if q.list_price else "in-force"
        elif q.quoted_on > on:
            status = "future"
        elif q.valid_until is not None and q.valid_until < on:
            status = "expired"
        else:
            status = "superseded"
        rows.append(QuoteRow(q, status))
    return rows


def prices_in_force(in_force: Any) -> dict[tuple[int, str], GpuQuote]:
    """Per (SKU id, pricing kind), the price in force among quotes already in force: the cheapest of
    the fleet's own (then the latest, then the provider), as ``GpuQuoteQuerySet.cheapest`` orders them."""
    best: dict[tuple[int, str], GpuQuote] = {}
    for q in in_force:
        if q.list_price:
            continue
        key = (q.sku_id, q.pricing_kind)
        rank = (q.usd_per_gpu_hour, -q.quoted_on.toordinal(), q.provider)
        held = best.get(key)
        if held is None or rank < (held.usd_per_gpu_hour, -held.quoted_on.toordinal(), held.provider):
            best[key] = q
    return best


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
