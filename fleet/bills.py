"""Cloud bills (issue 26): a FOCUS cost and usage file uploaded, stored to a file, and imported by a
worker row by row in batches, all or nothing; rows matched to clusters; what each cluster was billed
per month (``billed_by_cluster``, which planner/spend.py sets against modelled spend).

The import, ``run_import`` (task ``fleet.import_bill``, sent through the outbox by ``submit_bill``):

1. claim the bill (a conditional UPDATE with a lease renewed every batch, as plans do: a redelivered
   task finds a live run and does nothing; a dead run's bill is taken over and its rows deleted);
2. read every row and check it (``fleet.focus``: the spec's column rules; a currency other than USD
   needs an ``ExchangeRate``): progress 0-50 %; nothing is written, so a refusal stores nothing;
3. read the file again and write its rows in batches of ``BILL_BATCH_ROWS``: progress 50-100 %; a row
   whose key is stored already (any bill) is counted as a duplicate, not written again;
4. one UPDATE makes the bill ``done``. Until then its rows count nowhere (``billed_by_cluster`` reads
   done bills only), and a run that fails in step 3 deletes them: all or nothing per file.

Memory is bounded by the batch: a row is parsed, checked, written and dropped; the identical rows seen
before a row (its key's occurrence number) are counted in a temporary on-disk SQLite table, not in a
dict that would grow with the file (docs/benchmarks.md, "Bill import").
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import logging
import re
import sqlite3
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from fleet import outbox
from fleet.errors import InputError
from fleet.focus import FocusError, FocusReader, FocusRow
from fleet.inputs import control_character_message
from fleet.models import BillRow, CloudBill, Cluster, ExchangeRate
from fleet.models.bills import FLEET_CURRENCY, RATE_MAX_AGE_DAYS

log = logging.getLogger(__name__)

IMPORT_TASK = "fleet.import_bill"
#: Rows of these categories are stored and listed, but not set against modelled spend: the model
#: prices GPU-hours, not taxes or up-front commitment purchases.
NOT_COMPARED = ("Tax", "Purchase")
MAX_TAG_KEY_CHARS = 128
USD_PLACES = Decimal("1e-10")
Status = CloudBill.Status


class ImportInterrupted(Exception):
    """A database error stopped a run: the task retries it with the run's ``token``."""

    def __init__(self, token: str):
        super().__init__(token)
        self.token = token


class LostLease(Exception):
    """Another run took the bill over (this one was too slow to renew its lease)."""


@dataclass(frozen=True)
class Submission:
    """A stored bill waiting for its worker, and whether its task reached the broker."""

    bill: CloudBill
    sent: bool

    @property
    def dispatch(self) -> str:
        return "sent" if self.sent else "broker_unreachable"


def _tag_key(raw: str | None) -> str:
    key = (raw or "").strip() or settings.BILL_CLUSTER_TAG
    if len(key) > MAX_TAG_KEY_CHARS:
        raise InputError.single("tag_key", f"At most {MAX_TAG_KEY_CHARS} characters.")
    if message := control_character_message(key):
        raise InputError.single("tag_key", message)
    return key


def _folder() -> Path:
    folder = Path(settings.BILL_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _check_header(path: Path) -> None:
    """The header row's problem (a missing column, not CSV) as an InputError on ``file``."""
    with path.open("rb") as raw:
        try:
            FocusReader(raw)
        except FocusError as exc:
            raise InputError.single("file", str(exc)) from None


def store_upload(chunks: Iterable[bytes], filename: str, size: int | None = None) -> tuple[Path, int, str]:
    """Write an upload's chunks to a new file under ``BILL_DIR``: its path, size and sha256. More than
    ``BILL_MAX_BYTES`` is refused (the part written is deleted)."""
    if size is not None and size > settings.BILL_MAX_BYTES:
        raise InputError.single("file", f"More than {settings.BILL_MAX_BYTES:,} bytes.")
    path = _folder() / f"{uuid.uuid4().hex}.csv"
    digest, written = hashlib.sha256(), 0
    try:
        with path.open("wb") as out:
            for chunk in chunks:
                written += len(chunk)
                if written > settings.BILL_MAX_BYTES:
                    raise InputError.single("file", f"More than {settings.BILL_MAX_BYTES:,} bytes.")
                digest.update(chunk)
                out.write(chunk)
        if not written:
            raise InputError.single("file", "The file is empty.")
        _check_header(path)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path, written, digest.hexdigest()


def _name(filename: str) -> str:
    name = Path(filename or "bill.csv").name[:255] or "bill.csv"
    return re.sub(r"[\x00-\x1f\x7f]", "?", name)


def create_bill(path: Path, size: int, sha256: str, filename: str, user: Any, tag_key: str | None) -> CloudBill:
    return CloudBill.objects.create(
        filename=_name(filename),
        stored_path=str(path),
        size_bytes=size,
        sha256=sha256,
        tag_key=_tag_key(tag_key),
        uploaded_by=user if getattr(user, "is_authenticated", False) else None,
    )


def submit_bill(upload: Any, user: Any, tag_key: str | None = None) -> Submission:
    """Store an uploaded file (Django's ``UploadedFile``: ``chunks()``, ``name``, ``size``), record its
    bill and import task in one transaction (the outbox), then publish the task. A header that is not
    FOCUS (a missing column), an empty or oversized file, or a bad tag key: ``InputError`` on ``file``
    or ``tag_key``, and nothing is kept."""
    key = _tag_key(tag_key)
    path, size, sha = store_upload(upload.chunks(), upload.name, getattr(upload, "size", None))
    try:
        with transaction.atomic():
            bill = create_bill(path, size, sha, upload.name, user, key)
            message = outbox.record(IMPORT_TASK, args=[str(bill.pk)], task_id=str(bill.pk))
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return Submission(bill=bill, sent=outbox.send(message))


def import_path(path: Path, user: Any = None, tag_key: str | None = None, run: Any = None) -> CloudBill:
    """Import a file in this process (``manage.py import_bill``): copied under ``BILL_DIR`` first, so the
    import reads its own copy as a worker would, then imported at once (by ``run``, default
    ``run_import``)."""
    key = _tag_key(tag_key)
    with Path(path).open("rb") as raw:
        stored, size, sha = store_upload(iter(lambda: raw.read(1024 * 1024), b""), Path(path).name)
    bill = create_bill(stored, size, sha, Path(path).name, user, key)
    return (run or run_import)(str(bill.pk)) or bill


# -- the import -----------------------------------------------------------------------------------------


class Rates:
    """The exchange rates on record (a small table, read once per import): USD per unit of a currency for
    a charge day, the latest dated on or before it and at most ``RATE_MAX_AGE_DAYS`` older."""

    def __init__(self) -> None:
        self._by: dict[str, tuple[list[date], list[Decimal]]] = {}
        for currency, on, rate in ExchangeRate.objects.order_by("currency", "on").values_list(
            "currency", "on", "usd_per_unit"
        ):
            days, rates = self._by.setdefault(currency, ([], []))
            days.append(on)
            rates.append(rate)

    def usd_per_unit(self, currency: str, on: date) -> Decimal | None:
        if currency == FLEET_CURRENCY:
            return Decimal(1)
        days, rates = self._by.get(currency, ((), ()))
        i = bisect.bisect_right(days, on) - 1
        if i < 0 or days[i] < on - timedelta(days=RATE_MAX_AGE_DAYS):
            return None
        return rates[i]


class Matcher:
    """A row's cluster: its ResourceId is a cluster's slug, or ends with one after ``/`` or ``:`` (an ARN,
    an Azure resource path); else its tag ``tag_key`` names one. Case does not matter."""

    def __init__(self, tag_key: str):
        self.tag_key = tag_key
        self.clusters = {slug.casefold(): pk for pk, slug in Cluster.objects.values_list("pk", "slug")}

    def match(self, row: FocusRow) -> tuple[int | None, str, str]:
        """(cluster pk or None, how: ``resource_id``, ``tag`` or "", the tag's value)."""
        tag = row.tags.get(self.tag_key)
        tag_value = str(tag)[:200] if tag is not None else ""
        if row.resource_id:
            rid = row.resource_id.casefold()
            pk = self.clusters.get(rid) or self.clusters.get(re.split(r"[/:]", rid)[-1])
            if pk:
                return pk, BillRow.MatchedBy.RESOURCE, tag_value
        if tag_value and (pk := self.clusters.get(tag_value.casefold())):
            return pk, BillRow.MatchedBy.TAG, tag_value
        return None, BillRow.MatchedBy.NONE, tag_value


class Occurrences:
    """How many identical rows (same content hash) came before each row in the file, counted in a private
    temporary on-disk SQLite database (bounded memory, whatever the file's length)."""

    def __init__(self) -> None:
        self.db = sqlite3.connect("")  # "": a private temporary database on disk, deleted on close
        self.db.execute("PRAGMA cache_size = -4096")  # 4 MiB of pages at most
        self.db.execute("CREATE TABLE seen (h TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID")

    def number(self, hashes: list[str]) -> list[int]:
        unique = list(dict.fromkeys(hashes))
        marks = ",".join("?" * len(unique))
        counts = dict(self.db.execute(f"SELECT h, n FROM seen WHERE h IN ({marks})", unique))  # noqa: S608
        out = []
        for h in hashes:
            n = counts.get(h, 0)
            out.append(n)
            counts[h] = n + 1
        self.db.executemany(
            "INSERT INTO seen (h, n) VALUES (?, ?) ON CONFLICT (h) DO UPDATE SET n = excluded.n",
            [(h, counts[h]) for h in unique],
        )
        return out

    def close(self) -> None:
        self.db.close()


def row_key(content_hash: str, occurrence: int) -> str:
    return hashlib.sha256(f"{content_hash}:{occurrence}".encode()).hexdigest()


def _batches(rows: Iterator[FocusRow], size: int) -> Iterator[list[FocusRow]]:
    batch: list[FocusRow] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _month(row: FocusRow) -> date:
    return row.charge_period_start.date().replace(day=1)


class _Run:
    """One claimed run of a bill's import (``run_import``)."""

    def __init__(self, bill: CloudBill, token: str, on_progress: Any = None):
        self.bill, self.token, self.on_progress = bill, token, on_progress
        self.mine = CloudBill.objects.filter(pk=bill.pk, lease_token=token)
        self.size = max(1, bill.size_bytes)
        self.progress = 0

    def beat(self, pct: int, **values: Any) -> None:
        """Renew the lease and store progress (and ``values``); LostLease when another run holds it."""
        lease = timezone.now() + timedelta(seconds=settings.BILL_LEASE_S)
        if pct != self.progress:
            values["progress"] = self.progress = pct
        if not self.mine.update(lease_until=lease, **values):
            raise LostLease(self.bill.pk)
        if self.on_progress:
            self.on_progress(pct)

    def read(self) -> tuple[int, date | None, date | None]:
        """Step 2: check every row (FocusError: the first problem). Rows, first and last month."""
        rates = Rates()
        n, first, last = 0, None, None
        with open(self.bill.stored_path, "rb") as raw:
            reader = FocusReader(raw)
            for batch in _batches(iter(reader), settings.BILL_BATCH_ROWS):
                for row in batch:
                    if rates.usd_per_unit(row.currency, row.charge_period_start.date()) is None:
                        raise FocusError(
                            row.row,
                            "BillingCurrency",
                            f"{row.currency}: no exchange rate to USD on record for "
                            f"{row.charge_period_start.date()} (one dated that day or up to {RATE_MAX_AGE_DAYS} "
                            "days before; finance records one with POST /api/v1/exchange-rates/).",
                        )
                    month = _month(row)
                    first = month if first is None or month < first else first
                    last = month if last is None or month > last else last
                n += len(batch)
                self.beat(int(50 * reader.bytes_read / self.size), rows_read=n)
        return n, first, last

    def write(self) -> dict[str, int]:
        """Step 3: store every row not stored already, batch by batch."""
        rates, matcher, occurrences = Rates(), Matcher(self.bill.tag_key), Occurrences()
        counts = {"rows_new": 0, "rows_duplicate": 0, "rows_matched": 0, "rows_unmatched": 0}
        try:
            with open(self.bill.stored_path, "rb") as raw:
                reader = FocusReader(raw)
                for batch in _batches(iter(reader), settings.BILL_BATCH_ROWS):
                    keys = [
                        row_key(r.content_hash, n)
                        for r, n in zip(batch, occurrences.number([r.content_hash for r in batch]), strict=True)
                    ]
                    stored = set(BillRow.objects.filter(row_key__in=keys).values_list("row_key", flat=True))
                    new = []
                    for row, key in zip(batch, keys, strict=True):
                        if key in stored:
                            counts["rows_duplicate"] += 1
                            continue
                        stored.add(key)
                        new.append(self._record(row, key, rates, matcher, counts))
                    BillRow.objects.bulk_create(new, ignore_conflicts=True)
                    counts["rows_new"] += len(new)
                    self.beat(50 + int(50 * reader.bytes_read / self.size), **counts)
        finally:
            occurrences.close()
        return counts

    def _record(self, row: FocusRow, key: str, rates: Rates, matcher: Matcher, counts: dict) -> BillRow:
        rate = rates.usd_per_unit(row.currency, row.charge_period_start.date())
        if rate is None:  # read() checked every row against the same table; a rate deleted since
            raise FocusError(row.row, "BillingCurrency", f"{row.currency}: its exchange rate was deleted.")
        cluster, how, tag_value = matcher.match(row)
        counts["rows_matched" if cluster else "rows_unmatched"] += 1
        return BillRow(
            bill_id=self.bill.pk,
            row_number=row.row,
            row_key=key,
            month=_month(row),
            charge_period_start=row.charge_period_start,
            charge_period_end=row.charge_period_end,
            billing_period_start=row.billing_period_start,
            charge_category=row.charge_category,
            charge_class=row.charge_class,
            currency=row.currency,
            billed_cost=row.billed_cost,
            effective_cost=row.effective_cost,
            usd_per_unit=rate,
            billed_cost_usd=(row.billed_cost * rate).quantize(USD_PLACES),
            effective_cost_usd=(row.effective_cost * rate).quantize(USD_PLACES),
            resource_id=row.resource_id[:512],
            tag_value=tag_value,
            cluster_id=cluster,
            matched_by=how,
            service_name=row.service_name,
            charge_description=row.charge_description,
        )


def _claim(bill_id: str, token: str | None) -> tuple[CloudBill | None, str | None]:
    """Take the bill for a run: queued, or held by a run whose lease expired, or by ``token`` (this run's
    retry). (bill, token) when taken; (bill or None, None) when not (finished, held, gone)."""
    now = timezone.now()
    mine = uuid.uuid4().hex
    claimable = Q(status=Status.QUEUED) | Q(status__in=[Status.READING, Status.WRITING], lease_until__lt=now)
    if token:
        claimable |= Q(status__in=[Status.READING, Status.WRITING], lease_token=token)
    taken = (
        CloudBill.objects.filter(pk=bill_id)
        .filter(claimable)
        .update(
            status=Status.READING,
            lease_token=mine,
            lease_until=now + timedelta(seconds=settings.BILL_LEASE_S),
            started_at=now,
            progress=0,
        )
    )
    bill = CloudBill.objects.filter(pk=bill_id).first()
    return (bill, mine) if taken else (bill, None)


def _discard_file(bill: CloudBill) -> None:
    path = Path(bill.stored_path) if bill.stored_path else None
    if path and path.resolve().parent == Path(settings.BILL_DIR).resolve():
        path.unlink(missing_ok=True)


def run_import(bill_id: str, token: str | None = None, on_progress: Any = None) -> CloudBill | None:
    """Import a stored bill (idempotent: a bill finished or held by a live run is returned as it is; None
    when there is no such bill). A refusal is stored on the bill (row, column, message) with none of its
    rows; a database error deletes what the run wrote and raises ``ImportInterrupted`` for a retry."""
    bill, mine = _claim(bill_id, token)
    if bill is None or mine is None:
        return bill
    run = _Run(bill, mine, on_progress)
    BillRow.objects.filter(bill=bill).delete()  # a dead run's rows: it never finished
    try:
        read, first, last = run.read()
        run.beat(50, status=Status.WRITING)
        counts = run.write()
    except FocusError as exc:
        _end(run, Status.REFUSED, error_row=exc.row, error_column=exc.column or "", error=exc.message)
    except LostLease:
        log.warning("bill %s: another run took it over", bill.pk)
        return CloudBill.objects.filter(pk=bill.pk).first()
    except (OperationalError, InterfaceError) as exc:
        with contextlib.suppress(OperationalError, InterfaceError):  # else the retry deletes them on its claim
            BillRow.objects.filter(bill=bill).delete()
        raise ImportInterrupted(mine) from exc
    except Exception as exc:
        log.exception("bill %s: import failed", bill.pk)
        _end(run, Status.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000])
    else:
        if not run.mine.update(
            status=Status.DONE,
            progress=100,
            finished_at=timezone.now(),
            rows_read=read,
            first_month=first,
            last_month=last,
            lease_until=None,
            stored_path="",
            **counts,
        ):
            return CloudBill.objects.filter(pk=bill.pk).first()
        _discard_file(bill)
    return CloudBill.objects.filter(pk=bill.pk).first()


def _end(run: _Run, status: str, **values: Any) -> None:
    """Finish a run without its rows: deleted (all or nothing), the file too; the reason kept."""
    BillRow.objects.filter(bill=run.bill).delete()
    run.mine.update(
        status=status, finished_at=timezone.now(), lease_until=None, stored_path="", **{
            "rows_new": 0, "rows_duplicate": 0, "rows_matched": 0, "rows_unmatched": 0, **values,
        }
    )  # fmt: skip
    _discard_file(run.bill)


# -- what was billed ----------------------------------------------------------------------------------------


def done_rows(month: date) -> Any:
    """The stored rows of done bills charged in ``month`` (its first day)."""
    return BillRow.objects.filter(month=month, bill__status=Status.DONE)


@dataclass(frozen=True)
class Billed:
    """What done bills charged in a month: per cluster slug (USD, compared categories), unmatched rows,
    and what is not compared (taxes, purchases)."""

    by_cluster: dict[str, Decimal]
    rows_by_cluster: dict[str, int]
    unmatched_usd: Decimal
    unmatched_rows: int
    not_compared_usd: Decimal
    bills: int


def billed_by_cluster(year: int, month: int) -> Billed:
    """Four queries: billed USD per cluster (Usage, Credit, Adjustment; corrections count in the month of
    the period they correct), the unmatched rows, the categories not compared, and the bills behind them."""
    rows = done_rows(date(year, month, 1))
    compared = rows.exclude(charge_category__in=NOT_COMPARED)
    per = (
        compared.filter(cluster__isnull=False)
        .values("cluster__slug")
        .annotate(usd=Sum("billed_cost_usd"), n=Count("id"))
        .order_by("cluster__slug")
    )
    unmatched = compared.filter(cluster__isnull=True).aggregate(usd=Sum("billed_cost_usd"), n=Count("id"))
    other = rows.filter(charge_category__in=NOT_COMPARED).aggregate(usd=Sum("billed_cost_usd"))
    return Billed(
        by_cluster={r["cluster__slug"]: r["usd"] for r in per},
        rows_by_cluster={r["cluster__slug"]: r["n"] for r in per},
        unmatched_usd=unmatched["usd"] or Decimal(0),
        unmatched_rows=unmatched["n"] or 0,
        not_compared_usd=other["usd"] or Decimal(0),
        bills=rows.values("bill").distinct().count(),
    )


def unmatched_rows(bill: CloudBill) -> Any:
    """A bill's rows no cluster matched (the bill's page lists them)."""
    return bill.rows.filter(cluster__isnull=True).order_by("row_number")
