"""Cloud bills' front doors: the page (finance uploads, a viewer reads and cannot upload), the API
(``POST /api/v1/bills/``, a bill, its unmatched rows, exchange rates) and the spend page and API showing
billed against modelled."""

from __future__ import annotations

from datetime import date
from unittest import mock

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from focus_bills import COLUMNS, focus_csv
from test_spend_bills import AFTER, july_bill, june, june_bill  # noqa: F401 (june: the fixture)

from fleet.bills import run_import
from fleet.models import BillRow, CloudBill, ExchangeRate


def _browser(make_user, role: str) -> Client:
    client = Client()
    client.force_login(make_user(f"page-{role}", role))
    return client


def _upload(name: str, content: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="text/csv")


@pytest.fixture
def today_after():
    """The pages ask for today's date: 2 August 2026, when June and July are past."""
    with mock.patch("django.utils.timezone.now") as now:
        from datetime import UTC, datetime

        now.return_value = datetime(2026, 8, 2, 12, tzinfo=UTC)
        yield


def test_finance_uploads_a_bill_on_the_page_and_follows_its_import(june, make_user):  # noqa: F811
    finance = _browser(make_user, "finance")
    assert b'id="bill-upload"' in finance.get("/bills/").content
    response = finance.post("/bills/upload/", {"file": _upload("june.csv", june_bill()), "tag_key": ""})
    bill = CloudBill.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/bills/{bill.pk}/"
    assert (bill.status, bill.uploaded_by.username, bill.tag_key) == ("queued", "page-finance", "fleetcap-cluster")
    queued = finance.get(f"/bills/{bill.pk}/", HTTP_HX_REQUEST="true")
    assert b'hx-trigger="every 1s"' in queued.content and b"Queued: 0 %" in queued.content

    run_import(str(bill.pk))  # what the worker's fleet.import_bill does
    page = finance.get(f"/bills/{bill.pk}/").content.decode()
    assert "every 1s" not in page
    assert "6 rows, 6 new and 0 already stored" in page and "4 matched to clusters, 2 unmatched" in page
    assert page.count("<code>i-0ffbeat</code>") == 2  # the unmatched rows, listed
    assert "june.csv" in finance.get("/bills/").content.decode()


def test_a_viewer_reads_bills_and_cannot_upload(june, make_user):  # noqa: F811
    viewer = _browser(make_user, "viewer")
    page = viewer.get("/bills/")
    assert page.status_code == 200 and b'id="bill-upload"' not in page.content
    assert viewer.post("/bills/upload/", {"file": _upload("june.csv", june_bill())}).status_code == 403
    assert CloudBill.objects.count() == 0
    assert Client().get("/bills/").status_code == 302  # anonymous: to the login page
    assert _browser(make_user, "platform").post("/bills/upload/", {"file": _upload("j.csv", b"x")}).status_code == 403


def test_a_file_that_is_not_focus_is_refused_beside_its_input(june, make_user, settings):  # noqa: F811
    finance = _browser(make_user, "finance")
    columns = [c for c in COLUMNS if c != "BilledCost"]
    response = finance.post("/bills/upload/", {"file": _upload("x.csv", focus_csv([], columns))})
    assert response.status_code == 400
    assert "row 1, column BilledCost: Missing: a mandatory FOCUS column" in response.content.decode()
    assert CloudBill.objects.count() == 0 and not list(settings.BILL_DIR.iterdir())


def test_the_spend_page_shows_billed_against_modelled_and_flags(june, make_user, settings, today_after):  # noqa: F811
    settings.PAGE_CACHE_S = 0
    for name, content in (("june.csv", june_bill()), ("july.csv", july_bill())):
        bill = CloudBill.objects.create(filename=name, size_bytes=len(content), sha256="-", tag_key="fleetcap-cluster")
        path = settings.BILL_DIR / f"{bill.pk}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        CloudBill.objects.filter(pk=bill.pk).update(stored_path=str(path))
        assert run_import(str(bill.pk)).status == "done"
    viewer = _browser(make_user, "viewer")
    page = viewer.get("/spend/?month=2026-06").content.decode()
    assert 'id="spend-billed"' in page and 'data-variance-pct="5.6"' in page and 'class="flagged"' not in page
    assert "246.90 USD in 2 rows" in page
    settings.BILL_VARIANCE_PCT = 5
    page = viewer.get("/spend/?month=2026-06").content.decode()
    assert 'class="flagged"' in page and "beyond 5.0 %" in page
    assert "No cloud bill charged this month" in viewer.get("/spend/?month=2026-05").content.decode()


def test_the_api_takes_a_bill_and_shows_its_rows(june, finance_api, viewer_api, settings):  # noqa: F811
    response = finance_api.post("/api/v1/bills/", {"file": _upload("june.csv", june_bill())}, format="multipart")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["dispatch"] in ("sent", "broker_unreachable") and body["bill"]["status"] == "queued"
    bill_id = body["bill"]["id"]
    assert response["Location"].endswith(f"/api/v1/bills/{bill_id}/")
    run_import(bill_id)

    bill = viewer_api.get(f"/api/v1/bills/{bill_id}/").json()
    assert (bill["status"], bill["rows_new"], bill["rows_unmatched"], bill["refusal"]) == ("done", 6, 2, None)
    assert (bill["first_month"], bill["last_month"]) == ("2026-06-01", "2026-06-01")
    rows = viewer_api.get(f"/api/v1/bills/{bill_id}/rows/?unmatched=true").json()
    assert [r["row_number"] for r in rows["results"]] == [6, 7]
    assert rows["results"][0]["cluster"] is None and rows["results"][0]["billed_cost_usd"] == "123.4500000000"
    every = viewer_api.get(f"/api/v1/bills/{bill_id}/rows/").json()
    assert every["count"] == 6 and {r["matched_by"] for r in every["results"]} == {"resource_id", "tag", ""}

    with mock.patch("django.utils.timezone.now") as now:
        from datetime import UTC, datetime

        now.return_value = datetime(2026, 8, 2, 12, tzinfo=UTC)
        settings.PAGE_CACHE_S = 0
        billed = viewer_api.get("/api/v1/spend/?month=2026-06").json()["billed"]
    # Without July's correction of June: 7,000 + 7,500 - 400 = 14,100 billed against 14,400 modelled.
    assert billed["clusters"][0] | {} == {
        "cluster": "c8",
        "billed_usd": "14100.00",
        "modelled_usd": "14400.00",
        "variance_usd": "-300.00",
        "variance_pct": "-2.1",
        "flagged": False,
        "rows": 3,
    }

    refused = viewer_api.post("/api/v1/bills/", {"file": _upload("j.csv", june_bill())}, format="multipart")
    assert refused.status_code == 403
    missing = finance_api.post(
        "/api/v1/bills/",
        {"file": _upload("x.csv", focus_csv([], [c for c in COLUMNS if c != "ChargePeriodEnd"]))},
        format="multipart",
    )
    assert missing.status_code == 400 and "row 1, column ChargePeriodEnd" in missing.content.decode()
    assert CloudBill.objects.count() == 1 and BillRow.objects.count() == 6

    assert finance_api.delete(f"/api/v1/bills/{bill_id}/").status_code == 204
    assert BillRow.objects.count() == 0


def test_a_refused_bill_says_row_and_column_in_the_api(june, finance_api):  # noqa: F811
    bad = june_bill().replace(b"2026-06-16T00:00:00Z,2026-07-01", b"2026-06-16T00:00:00Z,2026-13-01", 1)
    bill_id = finance_api.post("/api/v1/bills/", {"file": _upload("bad.csv", bad)}, format="multipart").json()["bill"][
        "id"
    ]
    run_import(bill_id)
    bill = finance_api.get(f"/api/v1/bills/{bill_id}/").json()
    assert bill["status"] == "refused" and bill["rows_new"] == 0
    assert (bill["refusal"]["row"], bill["refusal"]["column"]) == (3, "ChargePeriodEnd")
    assert BillRow.objects.count() == 0


def test_finance_records_exchange_rates_and_a_viewer_does_not(finance_api, viewer_api):
    body = {"currency": "EUR", "on": "2026-06-01", "usd_per_unit": "1.10", "source": "ECB reference rate"}
    assert viewer_api.post("/api/v1/exchange-rates/", body, format="json").status_code == 403
    response = finance_api.post("/api/v1/exchange-rates/", body, format="json")
    assert response.status_code == 201, response.content
    assert ExchangeRate.objects.get().on == date(2026, 6, 1)
    assert finance_api.post("/api/v1/exchange-rates/", {**body, "currency": "eur"}, format="json").status_code == 400
