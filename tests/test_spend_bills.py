"""Cloud bills (issue 26): a FOCUS bill imported, matched to clusters, set against modelled spend; imported
again without duplicates; malformed files refused with row and column and nothing of them stored."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from io import StringIO
from pathlib import Path
from unittest import mock

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from focus_bills import COLUMNS, focus_csv, row

from fleet.bills import billed_by_cluster, import_path, unmatched_rows
from fleet.errors import InputError
from fleet.models import BillRow, CloudBill, Cluster, ExchangeRate, GpuQuote, HardwareSku, Provider
from planner.spend import spend_for, spend_for_month

JUNE, JULY = (2026, 6), (2026, 7)
AFTER = date(2026, 8, 2)  # June and July are past: every modelled figure is actual


@pytest.fixture
def june(db, settings, tmp_path):
    """c8: 8 H100s from 1 June 2026 at their provider's own 2.50 USD/GPU-hour (as test_spend_service.py);
    bills wait under a folder of this test's own."""
    settings.BILL_DIR = tmp_path / "bills"
    settings.BILL_BATCH_ROWS = 2  # several batches even for the sample
    call_command("load_catalog", stdout=StringIO())
    GpuQuote.objects.all().delete()
    h100 = HardwareSku.objects.get(slug="h100-sxm-80gb")
    GpuQuote.objects.create(
        sku=h100, provider=Provider.objects.ensure("acme"), usd_per_gpu_hour=Decimal("2.50"), quoted_on=date(2026, 5, 1)
    )
    c = Cluster(slug="c8", name="C8", sku=h100, nodes=1, provider=Provider.objects.ensure("acme"), team="ml")
    c.save(effective_from=date(2026, 6, 1))
    return c


UNMATCHED = {"ResourceId": "i-0ffbeat", "Tags": {"team": "research"}}


def june_bill() -> bytes:
    """June's bill: two usage rows of c8 (one matched by its ResourceId's last segment, one by the tag),
    a credit, a tax row, and the same unmatched row twice (two charges, both kept)."""
    return focus_csv(
        [
            row(JUNE, "2026-06-01", "2026-06-16", "7000.00", ResourceId="arn:aws:ec2:eu-west-1:123:instance/c8"),
            row(JUNE, "2026-06-16", "2026-07-01", "7500.00", ResourceId="i-0abc", Tags={"fleetcap-cluster": "c8"}),
            row(JUNE, "2026-06-01", "2026-07-01", "-400.00", ChargeCategory="Credit", ResourceId="c8"),
            row(JUNE, "2026-06-01", "2026-07-01", "50.00", ChargeCategory="Tax", ResourceId="c8"),
            row(JUNE, "2026-06-03", "2026-06-04", "123.45", **UNMATCHED),
            row(JUNE, "2026-06-03", "2026-06-04", "123.45", **UNMATCHED),
        ]
    )


def july_bill() -> bytes:
    """July's bill: July's usage, and a correction of June (billed in July, charged over 10-11 June)."""
    return focus_csv(
        [
            row(JULY, "2026-07-01", "2026-08-01", "14880.00", ResourceId="c8"),
            row(JULY, "2026-06-10", "2026-06-11", "1100.00", ChargeClass="Correction", ResourceId="c8"),
        ]
    )


def write(tmp_path: Path, name: str, content: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


def test_a_bill_reconciles_against_modelled_spend_and_imports_again_without_duplicates(june, tmp_path, settings):
    """Modelled June for c8: 8 GPUs x 24 h x 30 days x 2.50 USD = 14,400.00 USD (all actual on 2 August).

    Billed June for c8 = 7,000.00 (usage, ResourceId ``.../instance/c8``) + 7,500.00 (usage, tag
    ``fleetcap-cluster=c8``) - 400.00 (credit) + 1,100.00 (July's correction of 10 June: it counts in June,
    the period it corrects) = 15,200.00 USD; the 50.00 tax is stored but not compared.
    Variance = 15,200.00 - 14,400.00 = +800.00 USD = 800 / 14,400 = +5.6 %: within the default 10 %
    threshold, flagged at 5 %. Unmatched: 2 x 123.45 = 246.90 USD in 2 rows (identical rows are two charges).
    July for c8: 14,880.00 billed against 8 x 24 x 31 x 2.50 = 14,880.00 modelled: variance 0.
    """
    first = import_path(write(tmp_path, "june.csv", june_bill()))
    assert (first.status, first.progress, first.rows_read, first.rows_new) == ("done", 100, 6, 6)
    assert (first.rows_matched, first.rows_unmatched, first.rows_duplicate) == (4, 2, 0)
    assert not list(Path(settings.BILL_DIR).iterdir())  # the stored upload is gone once imported
    import_path(write(tmp_path, "july.csv", july_bill()))
    assert [r.row_number for r in unmatched_rows(first)] == [6, 7]

    billed = spend_for("2026-06", AFTER).to_dict()["billed"]
    assert billed["clusters"] == [
        {
            "cluster": "c8",
            "billed_usd": "15200.00",
            "modelled_usd": "14400.00",
            "variance_usd": "800.00",
            "variance_pct": "5.6",
            "flagged": False,
            "rows": 4,
        }
    ]
    assert (billed["unmatched_usd"], billed["unmatched_rows"], billed["not_compared_usd"]) == ("246.90", 2, "50.00")
    assert (billed["bills"], billed["threshold_pct"], billed["flagged"]) == (2, "10.0", 0)
    july = spend_for("2026-07", AFTER).to_dict()["billed"]["clusters"][0]
    assert (july["billed_usd"], july["modelled_usd"], july["variance_pct"]) == ("14880.00", "14880.00", "0.0")

    settings.BILL_VARIANCE_PCT = 5
    assert spend_for_month(2026, 6, today=AFTER).billed["clusters"][0]["flagged"] is True
    out = StringIO()
    with mock.patch("django.utils.timezone.now", return_value=datetime(2026, 8, 2, 12, tzinfo=UTC)):
        call_command("spend", "--month", "2026-06", stdout=out)
    assert (
        "c8                      billed       15200.00 modelled       14400.00 variance       800.00 (5.6 %)  FLAGGED"
        in (out.getvalue())
    )
    assert "unmatched: 246.90 USD in 2 row(s)" in out.getvalue()

    stored = BillRow.objects.count()
    again = import_path(write(tmp_path, "june-again.csv", june_bill()))
    assert (again.status, again.rows_read, again.rows_new, again.rows_duplicate) == ("done", 6, 0, 6)
    assert BillRow.objects.count() == stored == 8
    assert billed_by_cluster(2026, 6).by_cluster == {"c8": Decimal("15200.0000000000")}


def test_the_columns_in_another_order_are_the_same_rows(june, tmp_path):
    import_path(write(tmp_path, "june.csv", june_bill()))
    shuffled = import_path(write(tmp_path, "shuffled.csv", focus_csv([], reversed(COLUMNS)) + _body_reversed()))
    assert (shuffled.status, shuffled.rows_new, shuffled.rows_duplicate) == ("done", 0, 6)


def _body_reversed() -> bytes:
    lines = focus_csv([], COLUMNS)  # header only, to count
    body = focus_csv(
        [
            row(JUNE, "2026-06-01", "2026-06-16", "7000.00", ResourceId="arn:aws:ec2:eu-west-1:123:instance/c8"),
            row(JUNE, "2026-06-16", "2026-07-01", "7500.00", ResourceId="i-0abc", Tags={"fleetcap-cluster": "c8"}),
            row(JUNE, "2026-06-01", "2026-07-01", "-400.00", ChargeCategory="Credit", ResourceId="c8"),
            row(JUNE, "2026-06-01", "2026-07-01", "50.00", ChargeCategory="Tax", ResourceId="c8"),
            row(JUNE, "2026-06-03", "2026-06-04", "123.45", **UNMATCHED),
            row(JUNE, "2026-06-03", "2026-06-04", "123.45", **UNMATCHED),
        ],
        reversed(COLUMNS),
    )
    return body[len(lines) :] if body.startswith(lines) else body.split(b"\n", 1)[1]


def test_a_configured_tag_key_matches(june, tmp_path):
    content = focus_csv([row(JUNE, "2026-06-01", "2026-06-02", "10.00", ResourceId="i-1", Tags={"cost-pool": "C8"})])
    assert import_path(write(tmp_path, "a.csv", content)).rows_unmatched == 1
    BillRow.objects.all().delete()
    bill = import_path(write(tmp_path, "b.csv", content), tag_key="cost-pool")
    assert (bill.rows_matched, BillRow.objects.get().matched_by) == (1, "tag")


def test_another_currency_needs_a_dated_exchange_rate(june, tmp_path):
    """300 EUR at 1.10 USD per EUR (rated 1 June, charged 20 June) = 330.00 USD."""
    content = focus_csv(
        [
            row(JUNE, "2026-06-01", "2026-06-02", "10.00", ResourceId="c8"),
            row(JUNE, "2026-06-20", "2026-06-21", "300.00", ResourceId="c8", BillingCurrency="EUR"),
        ]
    )
    refused = import_path(write(tmp_path, "eur.csv", content))
    assert (refused.status, refused.error_row, refused.error_column) == ("refused", 3, "BillingCurrency")
    assert "EUR: no exchange rate to USD on record for 2026-06-20" in refused.error
    assert BillRow.objects.count() == 0
    ExchangeRate.objects.create(currency="EUR", on=date(2026, 5, 1), usd_per_unit=Decimal("1.2"))  # 50 days old
    assert import_path(write(tmp_path, "eur2.csv", content)).status == "refused"
    ExchangeRate.objects.create(currency="EUR", on=date(2026, 6, 1), usd_per_unit=Decimal("1.10"))
    bill = import_path(write(tmp_path, "eur3.csv", content))
    assert bill.status == "done"
    eur = BillRow.objects.get(currency="EUR")
    assert (eur.billed_cost, eur.usd_per_unit, eur.billed_cost_usd) == (Decimal(300), Decimal("1.1"), Decimal(330))


def good_rows(n: int = 3) -> list[dict[str, str]]:
    return [row(JUNE, "2026-06-01", "2026-06-02", f"{i}.00", ResourceId="c8") for i in range(1, n + 1)]


def _refused(tmp_path: Path, content: bytes) -> CloudBill:
    bill = import_path(write(tmp_path, "bad.csv", content))
    assert bill.status == "refused" and bill.rows_new == 0
    assert BillRow.objects.count() == 0  # nothing of the file, though its first rows were good
    return bill


@pytest.mark.parametrize(
    ("change", "column", "message"),
    [
        ({"ChargePeriodStart": "2026-06-31T00:00:00Z"}, "ChargePeriodStart", "is no date"),
        ({"ChargePeriodEnd": "01/06/2026"}, "ChargePeriodEnd", "not a FOCUS date/time"),
        ({"ChargePeriodStart": "2026-06-01T00:00:00+02:00"}, "ChargePeriodStart", "ISO 8601 in UTC"),
        ({"BillingCurrency": "usd"}, "BillingCurrency", "not an ISO 4217"),
        ({"BillingCurrency": "GBP"}, "BillingCurrency", "GBP: no exchange rate"),
        ({"BilledCost": "$12.00"}, "BilledCost", "not a FOCUS decimal"),
        ({"EffectiveCost": ""}, "EffectiveCost", "never null"),
        ({"ChargeCategory": "Refund"}, "ChargeCategory", "not one of"),
        ({"ChargeClass": "Rebill"}, "ChargeClass", "only null or Correction"),
        ({"Tags": "[1, 2]"}, "Tags", "Not a JSON object"),
        ({"ResourceName": "gpu\x00node"}, "ResourceName", "NUL byte"),
        ({"ChargeDescription": "bell\x07"}, "ChargeDescription", "control character"),
    ],
)
def test_a_malformed_row_refuses_the_file_with_its_row_and_column(june, tmp_path, change, column, message):
    rows = good_rows(5)
    rows[3] = {**rows[3], **change}  # the fourth charge row: row 5 of the file (header = 1)
    bill = _refused(tmp_path, focus_csv(rows))
    assert (bill.error_row, bill.error_column) == (5, column)
    assert message in bill.error, bill.error
    assert bill.refusal.startswith(f"row 5, column {column}: ")


def test_a_ragged_row_and_a_file_not_utf8_are_refused(june, tmp_path):
    content = focus_csv(good_rows(2)) + b"1.00,2.00\n"
    assert _refused(tmp_path, content).error_row == 4
    latin = focus_csv(good_rows(2)).replace(b"GPU instance hours", b"GPU \xe9t\xe9")
    assert "Not UTF-8" in _refused(tmp_path, latin).error


def test_an_endless_line_is_refused_without_reading_it_whole(june, tmp_path):
    from fleet.focus import MAX_LINE_BYTES

    content = focus_csv(good_rows(1)) + b"," * (MAX_LINE_BYTES + 10) + b"\n"
    bill = _refused(tmp_path, content)
    assert bill.error_row == 3 and "A line of more than 4,194,304 bytes" in bill.error


def test_a_missing_column_is_refused_at_once_and_nothing_is_kept(june, tmp_path, settings):
    columns = [c for c in COLUMNS if c != "ChargeClass"]
    with pytest.raises(InputError) as exc:
        import_path(write(tmp_path, "no-class.csv", focus_csv(good_rows(), columns)))
    assert exc.value.errors["file"] == [
        "row 1, column ChargeClass: Missing: a mandatory FOCUS column (FOCUS 1.0, 1.1, 1.2)."
    ]
    assert CloudBill.objects.count() == 0 and BillRow.objects.count() == 0
    assert not list(Path(settings.BILL_DIR).iterdir())
    neither = [c for c in COLUMNS if c not in ("ResourceId", "Tags")]
    with pytest.raises(InputError, match="nothing to match a cluster by"):
        import_path(write(tmp_path, "no-match.csv", focus_csv(good_rows(), neither)))


def test_the_command_imports_and_refuses(june, tmp_path):
    out = StringIO()
    call_command("import_bill", str(write(tmp_path, "june.csv", june_bill())), stdout=out)
    assert "6 rows read: 6 new, 0 already stored; 4 matched to clusters, 2 unmatched" in out.getvalue()
    bad = good_rows()
    bad[0]["BilledCost"] = "1,000"
    with pytest.raises(CommandError, match="row 2, column BilledCost"):
        call_command("import_bill", str(write(tmp_path, "bad.csv", focus_csv(bad))), stdout=StringIO())
