"""GPU rental quotes in force on a date.

Every price carries the date it was quoted (the seeds: prices changed within two weeks of the
K3 launch). A quote is *in force* on day ``on`` when it was quoted on or before ``on`` and its
``valid_until`` (inclusive; ``None`` = open-ended) has not passed. For each provider and pricing
kind the latest such quote wins (a newer quote supersedes the provider's older ones; an expired
newer quote does not); across providers the cheapest wins per pricing kind.

A quote marked ``list_price`` is a provider's public price list, kept for comparison: it is never
the market's cheapest (``quotes_in_force`` leaves list prices out unless asked for them alone), and
it prices a cluster only at that provider, when the fleet holds no quote of its own from it
(``rate_from_quotes``). So adding public prices never moves a figure computed from the fleet's
quotes (the seeds' 2.50 USD assumption included).

Ties are broken deterministically: same provider, kind and ``quoted_on`` -> the cheaper quote,
then the larger ``id``; several providers at the same price -> the latest ``quoted_on``, then the
provider name in alphabetical order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from ..errors import EngineInputError
from .money import MILLS, Fields, as_day, dec_str

__all__ = [
    "PRICING_KINDS",
    "Quote",
    "quote_in_force",
    "quotes_in_force",
    "rate_from_quotes",
]

PRICING_KINDS = ("on-demand", "reserved", "spot")
"""The pricing kinds of ``fleet.models.GpuQuote.Kind``."""


@dataclass(frozen=True, slots=True)
class Quote:
    """A provider's price for one GPU-hour of a SKU, as quoted on a date.

    ``sku`` is the SKU's slug (or any stable key); ``valid_until`` is inclusive, ``None`` when the
    quote has no end date. ``id`` is the database id when the quote came from a row.
    ``list_price``: a public price list's figure, not a quote the fleet holds (see the module).
    """

    sku: str
    provider: str
    usd_per_gpu_hour: Decimal
    pricing_kind: str
    quoted_on: date
    valid_until: date | None = None
    id: int | None = None
    list_price: bool = False

    def __post_init__(self) -> None:
        f = Fields()
        rate = f.decimal("usd_per_gpu_hour", self.usd_per_gpu_hour, above=True)
        if self.pricing_kind not in PRICING_KINDS:
            f.add("pricing_kind", f"Unknown pricing kind {self.pricing_kind!r}; use one of {', '.join(PRICING_KINDS)}.")
        if not isinstance(self.quoted_on, date):
            f.add("quoted_on", "Must be a date.")
        if self.valid_until is not None and not isinstance(self.valid_until, date):
            f.add("valid_until", "Must be a date or None.")
        f.raise_if_any()
        object.__setattr__(self, "usd_per_gpu_hour", rate)
        object.__setattr__(self, "quoted_on", as_day(self.quoted_on))
        if self.valid_until is not None:
            object.__setattr__(self, "valid_until", as_day(self.valid_until))
            if self.valid_until < self.quoted_on:
                raise EngineInputError.single("valid_until", "A quote cannot expire before the date it was quoted.")

    @classmethod
    def from_record(cls, record: Any, sku: str | None = None) -> Quote:
        """Build from any object with the quote's attributes (a ``GpuQuote`` row: pass ``sku=row.sku.slug``,
        or let ``sku`` default to ``record.sku.slug``/``record.sku_id``/``record.sku``)."""
        if sku is None:
            raw = record.sku
            sku = getattr(raw, "slug", None) or str(raw)
        return cls(
            sku=sku,
            provider=record.provider,
            usd_per_gpu_hour=record.usd_per_gpu_hour,
            pricing_kind=record.pricing_kind,
            quoted_on=record.quoted_on,
            valid_until=record.valid_until,
            id=getattr(record, "id", None),
            list_price=bool(getattr(record, "list_price", False)),
        )

    def in_force(self, on: date) -> bool:
        """Quoted on or before ``on`` and not expired (``valid_until >= on``)."""
        return self.quoted_on <= on and (self.valid_until is None or self.valid_until >= on)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "id": self.id,
            "sku": self.sku,
            "provider": self.provider,
            "usd_per_gpu_hour": dec_str(self.usd_per_gpu_hour, MILLS),
            "pricing_kind": self.pricing_kind,
            "quoted_on": self.quoted_on.isoformat(),
            "valid_until": None if self.valid_until is None else self.valid_until.isoformat(),
        }
        if self.list_price:  # only then: snapshots of the fleet's quotes keep their shape
            out["list_price"] = True
        return out


def _day(on: Any) -> date:
    if isinstance(on, date):
        return as_day(on)
    raise EngineInputError.single("on", "Must be a date.")


def _latest_key(q: Quote) -> tuple:
    # larger is better: latest quoted_on, then cheaper, then larger id
    return (q.quoted_on, -q.usd_per_gpu_hour, q.id if q.id is not None else -1)


def _cheapest_key(q: Quote) -> tuple:
    # smaller is better: cheaper, then later quoted_on, then provider name
    return (q.usd_per_gpu_hour, -q.quoted_on.toordinal(), q.provider)


def quotes_in_force(
    quotes: Iterable[Quote], on: date | datetime, sku: str | None = None, list_prices: bool = False
) -> dict[str, Quote]:
    """The quote in force for each pricing kind on ``on``: per provider the latest quote in force,
    then the cheapest provider. ``{}`` when none is in force.

    ``quotes`` should be one SKU's quotes; give ``sku`` to filter a mixed list. A mixed list
    without ``sku`` raises ``EngineInputError`` (prices of different SKUs are not comparable).
    Only the fleet's quotes count (``list_price`` False), or with ``list_prices`` only public list
    prices.
    """
    day = _day(on)
    pool = [q for q in quotes if (sku is None or q.sku == sku) and q.list_price == list_prices]
    skus = {q.sku for q in pool}
    if len(skus) > 1:
        raise EngineInputError.single(
            "sku", f"The quotes cover several SKUs ({', '.join(sorted(skus))}); say which SKU to price."
        )
    latest: dict[tuple[str, str], Quote] = {}
    for q in pool:
        if not q.in_force(day):
            continue
        key = (q.provider, q.pricing_kind)
        if key not in latest or _latest_key(q) > _latest_key(latest[key]):
            latest[key] = q
    best: dict[str, Quote] = {}
    for (_, kind), q in latest.items():
        if kind not in best or _cheapest_key(q) < _cheapest_key(best[kind]):
            best[kind] = q
    return {kind: best[kind] for kind in PRICING_KINDS if kind in best}


def quote_in_force(
    quotes: Iterable[Quote], on: date | datetime, kind: str = "on-demand", sku: str | None = None
) -> Quote | None:
    """The quote of one pricing kind in force on ``on`` (see ``quotes_in_force``), or ``None``."""
    if kind not in PRICING_KINDS:
        raise EngineInputError.single("kind", f"Unknown pricing kind {kind!r}; use one of {', '.join(PRICING_KINDS)}.")
    return quotes_in_force(quotes, on, sku=sku).get(kind)


def next_quote_change(quotes: Iterable[Quote], on: date | datetime, sku: str | None = None) -> date | None:
    """The first day after ``on`` on which the quotes in force (``quotes_in_force``) may differ: the day
    after a quote in force ends (``valid_until`` is inclusive), or the day a later-dated quote starts.
    ``None`` when no quote of ``sku`` ends or starts after ``on``. A figure priced on ``on`` is priced
    on the quotes in force until then (a capacity snapshot is stale from that day)."""
    day = _day(on)
    days = []
    for q in quotes:
        if sku is not None and q.sku != sku:
            continue
        if q.quoted_on > day:
            days.append(q.quoted_on)
        elif q.valid_until is not None and q.valid_until >= day:
            days.append(q.valid_until + timedelta(days=1))
    return min(days, default=None)


def rate_from_quotes(
    quotes: Iterable[Quote], kind: str = "on-demand", match_provider: bool = True
) -> Callable[[Any, date], Decimal | None]:
    """A rate lookup for ``ledger.spend_month``: ``(state, day) -> USD per GPU-hour | None``.

    For the state's SKU, the quote of ``kind`` in force that day; with ``match_provider`` (the
    default) only the state's own provider's quotes count (a cluster pays its provider's price,
    not the market's cheapest), and when the fleet holds none from it, that provider's public list
    price. Without ``match_provider``, list prices never count (the market's cheapest is the
    cheapest quote the fleet holds).
    """
    if kind not in PRICING_KINDS:
        raise EngineInputError.single("kind", f"Unknown pricing kind {kind!r}; use one of {', '.join(PRICING_KINDS)}.")
    by_key: dict[tuple[str, str | None], list[Quote]] = {}
    for q in quotes:
        by_key.setdefault((q.sku, q.provider if match_provider else None), []).append(q)
    memo: dict[tuple[str, str | None, date], Decimal | None] = {}

    def lookup(state: Any, day: date) -> Decimal | None:
        provider = state.provider if match_provider else None
        key = (state.sku, provider, day)
        if key not in memo:
            pool = by_key.get((state.sku, provider), [])
            found = quotes_in_force(pool, day).get(kind)
            if found is None and match_provider:
                found = quotes_in_force(pool, day, list_prices=True).get(kind)
            memo[key] = None if found is None else found.usd_per_gpu_hour
        return memo[key]

    return lookup
