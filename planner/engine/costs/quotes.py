"""GPU rental quotes and the price in force: one rule, used by every page, the API, plans,
breakeven, spend, reviews and ``/metrics`` (``price_in_force``).

Every price carries the date it was quoted (the seeds: prices changed within two weeks of the
K3 launch). A quote is *in force* on day ``on`` when it was quoted on or before ``on`` and its
``valid_until`` (inclusive; ``None`` = open-ended) has not passed; per provider, basis and pricing
kind the latest such quote wins (a newer quote supersedes the provider's older ones; an expired
newer quote does not).

A quote has one of four bases (``Quote.basis``):

- ``own``: a quote a provider issued to the fleet (a contract, a negotiated or reserved rate);
- ``owned``: an owned cluster's own cost per GPU-hour (``owned.OwnedCluster``: depreciation, energy,
  colocation, support, staff), dated to its calendar month; the price in force of an owned cluster
  is only this (``owned_price``), never a rental quote;
- ``list``: a provider's public price list, read on a date;
- ``assumption``: a figure no provider issued (the seeds' 2.50 USD per GPU-hour). It is never in
  force: a person may pick it for a comparison (the request names it), and every figure priced on
  it says so.

The price in force (``price_in_force``):

- **for a cluster** (its provider given): that provider's own quote for the SKU and kind in force
  that day, else that provider's public list price, else nothing: the cluster is *unpriced* that
  day (never another provider's price, never a placeholder). Providers match case-insensitively;
- **for a SKU alone** (what-if, plans, a SKU's ``price_in_force``): the cheapest own quote in force
  from any provider, else the cheapest public list price in force, else nothing.

Ties are broken deterministically: same provider, kind and ``quoted_on`` -> the cheaper quote,
then the larger ``id``; several providers at the same price -> the latest ``quoted_on``, then the
provider name in alphabetical order.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from ..errors import EngineInputError
from .money import MILLS, Fields, Number, as_day, calendar_month_days, dec_str, price_text
from .owned import OwnedCluster

__all__ = [
    "DEFAULT_PRICING_KIND",
    "PRICE_BASES",
    "PRICING_KINDS",
    "PriceInForce",
    "Quote",
    "basis_of",
    "next_quote_change",
    "owned_price",
    "price_in_force",
    "rate_from_quotes",
]

PRICING_KINDS = ("on-demand", "reserved", "spot")
"""The pricing kinds of ``fleet.models.GpuQuote.Kind``."""

DEFAULT_PRICING_KIND = "on-demand"
"""The pricing kind a deployment's GPU-hours are priced at unless a request says otherwise (every
page, ``/metrics``, snapshots, routing, rent vs API)."""

PRICE_BASES = ("own", "list", "assumption", "owned")
"""What a quote is (the module): a provider's quote to the fleet, its public list price, an
assumption no provider issued, or an owned cluster's own cost."""


def basis_of(*, list_price: bool, assumption: bool, owned: bool = False) -> str:
    """A quote's basis (``PRICE_BASES``): ``owned`` for an owned cluster's own cost, ``assumption`` when
    no provider issued it, else ``list`` for a public list price, else ``own``."""
    return "owned" if owned else "assumption" if assumption else "list" if list_price else "own"


@dataclass(frozen=True, slots=True)
class Quote:
    """A provider's price for one GPU-hour of a SKU, as quoted on a date.

    ``sku`` is the SKU's slug (or any stable key); ``valid_until`` is inclusive, ``None`` when the
    quote has no end date. ``id`` is the database id when the quote came from a row.
    ``list_price``: a public price list's figure, not a quote the fleet holds; ``assumption``: a figure
    no provider issued (``provider`` is then ``""``; see the module); ``owned``: an owned cluster's own
    cost for the month from ``quoted_on`` to ``valid_until`` (``owned_price``).
    """

    sku: str
    provider: str
    usd_per_gpu_hour: Decimal
    pricing_kind: str
    quoted_on: date
    valid_until: date | None = None
    id: int | None = None
    list_price: bool = False
    assumption: bool = False
    owned: bool = False

    def __post_init__(self) -> None:
        f = Fields()
        rate = f.decimal("usd_per_gpu_hour", self.usd_per_gpu_hour, above=True)
        if self.pricing_kind not in PRICING_KINDS:
            f.add("pricing_kind", f"Unknown pricing kind {self.pricing_kind!r}; use one of {', '.join(PRICING_KINDS)}.")
        if not isinstance(self.quoted_on, date):
            f.add("quoted_on", "Must be a date.")
        if self.valid_until is not None and not isinstance(self.valid_until, date):
            f.add("valid_until", "Must be a date or None.")
        if self.list_price and self.assumption:
            f.add("list_price", "An assumption is not a provider's list price.")
        if self.owned and (self.list_price or self.assumption):
            f.add("owned", "An owned cluster's cost is neither a list price nor an assumption.")
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
        provider = getattr(record, "provider_name", None)
        if provider is None:
            provider = getattr(record.provider, "name", record.provider)
        return cls(
            sku=sku,
            provider=provider or "",
            usd_per_gpu_hour=record.usd_per_gpu_hour,
            pricing_kind=record.pricing_kind,
            quoted_on=record.quoted_on,
            valid_until=record.valid_until,
            id=getattr(record, "id", None),
            list_price=bool(getattr(record, "list_price", False)),
            assumption=not provider,
        )

    @property
    def basis(self) -> str:
        """``own``, ``list`` or ``assumption`` (``basis_of``)."""
        return basis_of(list_price=self.list_price, assumption=self.assumption, owned=self.owned)

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
        if self.assumption:
            out["assumption"] = True
        if self.owned:
            out["owned"] = True
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


@dataclass(frozen=True, slots=True)
class PriceInForce:
    """The price in force for a cluster or a SKU on a day: the quote it is and on what basis.

    ``basis``: ``own`` (a provider's quote to the fleet), ``list`` (its public list price) or
    ``assumption`` (picked by a person for a comparison: never chosen by ``price_in_force``)."""

    quote: Quote

    @property
    def basis(self) -> str:
        return self.quote.basis

    @property
    def usd_per_gpu_hour(self) -> Decimal:
        return self.quote.usd_per_gpu_hour

    @property
    def note(self) -> str:
        """One sentence for a result's assumptions: the rate, whose it is and since when."""
        rate = price_text(self.usd_per_gpu_hour)
        since = self.quote.quoted_on.isoformat()
        if self.basis == "assumption":
            return (
                f"Priced at {rate} USD per GPU-hour, an assumption no provider quoted (picked for this "
                f"comparison, dated {since}): not a price in force."
            )
        if self.basis == "owned":
            until = self.quote.valid_until.isoformat() if self.quote.valid_until else since
            return (
                f"Priced at {rate} USD per GPU-hour: the cluster is owned, so its own cost from {since} to {until} "
                "(depreciation, energy, colocation, support, staff) over its GPU-hours switched on."
            )
        whose = "public list price" if self.basis == "list" else "quote"
        return (
            f"Priced at {rate} USD per GPU-hour: {self.quote.provider}'s {self.quote.pricing_kind} {whose} of {since}."
        )

    def to_dict(self) -> dict[str, Any]:
        """The API's ``price_in_force`` shape."""
        q = self.quote
        return {
            "usd_per_gpu_hour": dec_str(q.usd_per_gpu_hour, MILLS),
            "quote": q.id,
            "provider": q.provider or None,
            "basis": self.basis,
            "pricing_kind": q.pricing_kind,
            "valid_from": q.quoted_on.isoformat(),
            "valid_until": None if q.valid_until is None else q.valid_until.isoformat(),
        }


def _latest_per_provider(pool: Iterable[Quote], day: date) -> dict[tuple[str, str], Quote]:
    """Per (provider, casefolded; basis) the latest quote in force on ``day``."""
    latest: dict[tuple[str, str], Quote] = {}
    for q in pool:
        if not q.in_force(day):
            continue
        key = (q.provider.casefold(), q.basis)
        if key not in latest or _latest_key(q) > _latest_key(latest[key]):
            latest[key] = q
    return latest


def price_in_force(
    quotes: Iterable[Quote],
    on: date | datetime,
    *,
    sku: str,
    provider: str | None = None,
    kind: str = "on-demand",
) -> PriceInForce | None:
    """The price in force for ``sku`` on ``on`` (the module's rule), or ``None``: unpriced.

    With ``provider`` (a cluster's): that provider's own quote, else its public list price. Without
    (a SKU alone): the cheapest own quote from any provider, else the cheapest list price.
    Assumptions never count. ``quotes`` may mix SKUs and kinds: only ``sku``'s of ``kind`` count.
    """
    if kind not in PRICING_KINDS:
        raise EngineInputError.single("kind", f"Unknown pricing kind {kind!r}; use one of {', '.join(PRICING_KINDS)}.")
    day = _day(on)
    pool = (q for q in quotes if q.sku == sku and q.pricing_kind == kind and not q.assumption and not q.owned)
    latest = _latest_per_provider(pool, day)
    if provider is not None:
        name = provider.casefold()
        found = latest.get((name, "own")) or latest.get((name, "list"))
        return None if found is None else PriceInForce(found)
    for basis in ("own", "list"):
        candidates = [q for (_, b), q in latest.items() if b == basis]
        if candidates:
            return PriceInForce(min(candidates, key=_cheapest_key))
    return None


def owned_price(
    owned: OwnedCluster,
    on: date | datetime,
    *,
    sku: str,
    provider: str,
    gpus: int,
    hours_per_day: Number = 24,
    kind: str = "on-demand",
    utilisation: Decimal | None = None,
) -> PriceInForce | None:
    """An owned cluster's price in force on ``on``: its own cost per GPU-hour that day
    (``OwnedCluster.rate`` with ``gpus`` on ``hours_per_day`` hours at ``utilisation``, None: full
    load), as a quote of basis ``owned`` dated to the day's calendar month; None: unpriced that day (no
    purchase in service, no electricity price on record). The pricing kind does not change it."""
    day = _day(on)
    rate = owned.rate(day, gpus, hours_per_day, utilisation)
    if rate is None:
        return None
    first = day.replace(day=1)
    last = day.replace(day=calendar_month_days(day.year, day.month))
    return PriceInForce(Quote(sku, provider, rate, kind, first, last, owned=True))


def superseded(quotes: Iterable[Quote], on: date | datetime) -> set[int]:
    """Ids of the quotes valid on ``on`` that a later quote of the same SKU, provider, basis and kind
    supersedes (``price_in_force`` never takes them); for the quotes page's statuses."""
    day = _day(on)
    latest: dict[tuple[str, str, str, str], Quote] = {}
    valid = [q for q in quotes if q.in_force(day)]
    for q in valid:
        key = (q.sku, q.provider.casefold(), q.basis, q.pricing_kind)
        if key not in latest or _latest_key(q) > _latest_key(latest[key]):
            latest[key] = q
    kept = {id(q) for q in latest.values()}
    return {q.id for q in valid if id(q) not in kept and q.id is not None}


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
    quotes: Iterable[Quote],
    kind: str = "on-demand",
    owned: Mapping[str, OwnedCluster] | None = None,
    utilisation: Mapping[tuple[str, int, int], Decimal] | None = None,
) -> Callable[[Any, date], Decimal | None]:
    """A rate lookup for ``ledger.spend_month``: ``(state, day) -> USD per GPU-hour | None``: the price
    in force for the state's cluster that day (an owned one's own cost, ``owned_price``, with the
    state's GPUs and hours at the cluster's ``utilisation`` of that month, keyed ``(cluster slug, year,
    month)``, full load when absent; any other's ``price_in_force`` with its SKU and provider); None:
    unpriced. Memoised per stretch of days on which the quotes in force cannot change."""
    if kind not in PRICING_KINDS:
        raise EngineInputError.single("kind", f"Unknown pricing kind {kind!r}; use one of {', '.join(PRICING_KINDS)}.")
    by_sku: dict[str, list[Quote]] = {}
    for q in quotes:
        if q.pricing_kind == kind:
            by_sku.setdefault(q.sku, []).append(q)
    # Which quotes are in force changes only on a quote's first day or the day after it ends; between
    # two such days the answer is the same, so it is looked up once per stretch (a 12-month trend asks
    # ~365 days per cluster).
    changes = {
        sku: sorted({q.quoted_on for q in pool} | {q.valid_until + timedelta(days=1) for q in pool if q.valid_until})
        for sku, pool in by_sku.items()
    }
    memo: dict[tuple[str, str, int], Decimal | None] = {}

    owned = owned or {}
    utilisation = utilisation or {}

    def lookup(state: Any, day: date) -> Decimal | None:
        mine = owned.get(state.cluster) if owned else None
        if mine is not None:
            u = utilisation.get((state.cluster, day.year, day.month))
            return mine.rate(day, state.gpus, state.hours_per_day, u)
        key = (state.sku, state.provider.casefold(), bisect_right(changes.get(state.sku, ()), day))
        if key not in memo:
            found = price_in_force(by_sku.get(state.sku, ()), day, sku=state.sku, provider=state.provider, kind=kind)
            memo[key] = None if found is None else found.usd_per_gpu_hour
        return memo[key]

    return lookup
