"""One stated month per figure (issue 24): spend counts the calendar month and names it with its hours
("December 2026, 744 h"); every other monthly figure (rent vs API, breakevens, decisions) is for the
seeds' 30-day, 720-hour month and says so wherever it is shown."""

from __future__ import annotations

import csv
import io
from datetime import date
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command

from fleet.models import Cluster, GpuQuote, HardwareSku, Provider, Workload
from planner.engine.costs.money import (
    DEFAULT_DAYS_PER_MONTH,
    MONTH_HOURS,
    MONTH_LABEL,
    calendar_month_hours,
    calendar_month_label,
    month_label,
)
from planner.spend import spend_for_month


def test_one_constant_for_the_30_day_month_and_one_function_for_calendar_months():
    assert (DEFAULT_DAYS_PER_MONTH, MONTH_HOURS, MONTH_LABEL) == (30, 720, "30-day month, 720 h")
    assert calendar_month_hours(2026, 12) == 744 and calendar_month_hours(2026, 6) == 720
    assert calendar_month_hours(2026, 2) == 672 and calendar_month_hours(2028, 2) == 696  # a leap year
    assert calendar_month_label(2026, 12) == "December 2026, 744 h"
    assert month_label() == MONTH_LABEL and month_label(31, Decimal(8)) == "31-day month at 8 h a day, 248 h"


@pytest.fixture
def december(db):
    """The catalogue (for models and workloads) and 8 H100s from 1 December 2026 at acme's own 2.50."""
    call_command("load_catalog", stdout=StringIO())
    GpuQuote.objects.all().delete()
    h100 = HardwareSku.objects.get(slug="h100-sxm-80gb")
    GpuQuote.objects.create(
        sku=h100,
        provider=Provider.objects.ensure("acme"),
        usd_per_gpu_hour=Decimal("2.50"),
        quoted_on=date(2026, 11, 1),
    )
    Cluster(slug="c8", name="C8", sku=h100, nodes=1, provider=Provider.objects.ensure("acme"), team="ml").save(
        effective_from=date(2026, 12, 1)
    )
    Workload.objects.create(
        slug="agent", name="Coding agent", team="dev", requests_per_day=50_000, mean_prompt_tokens=20_000,
        mean_output_tokens=800, p95_context_tokens=64_000, prefix_cache_hit_rate=0.9, peak_concurrency=200,
        ttft_slo_ms=2000, tpot_slo_ms=50,
    )  # fmt: skip


def test_spend_prices_the_calendar_month_and_says_so(december, client, make_user, viewer_api):
    data = spend_for_month(2026, 12, today=date(2027, 1, 5)).to_dict()
    assert (data["days_in_month"], data["month_hours"], data["month_label"]) == (31, 744, "December 2026, 744 h")
    # 8 GPUs x 744 h x 2.50 USD = 14,880 USD (a 720-hour month would say 14,400).
    assert data["total_gpu_hours"] == "5952.00" and data["total_cost_usd"] == "14880.00"
    assert any(a.startswith("December 2026, 744 h: the calendar month, 31 days") for a in data["assumptions"])
    client.force_login(make_user("f", "finance"))
    html = client.get("/spend/?month=2026-12").content.decode()
    said = html.split('id="spend-month"')[1].split("</p>")[0]
    assert "December 2026, 744 h" in said and "31 days" in said and "30-day month, 720 h" in said
    body = viewer_api.get("/api/v1/spend/?month=2026-12").json()
    assert body["month_hours"] == 744 and body["month_label"] == "December 2026, 744 h"
    rows = list(csv.DictReader(io.StringIO(viewer_api.get("/api/v1/spend/?month=2026-12&format=csv").content.decode())))
    assert rows[0]["month"] == "2026-12" and rows[0]["month_hours"] == "744"


def test_rent_vs_api_states_the_month_it_prices(december, client, make_user, viewer_api):
    client.force_login(make_user("v", "viewer"))
    query = {"workload": "agent", "gpus": 8, "sku": "h100-sxm-80gb", "usd_per_gpu_hour": "2.50",
             "api_price": "kimi-k3-api", "on": "2026-12-10"}  # fmt: skip
    page = client.get("/rent-vs-api/", query)
    assert page.status_code == 200
    html = page.content.decode()
    convention = html.split('id="month-convention"')[1].split("</p>")[0]
    assert "30-day month, 720 h" in convention and "calendar months" in convention
    assert html.split('id="month-priced">')[1].split("</td>")[0] == "30-day month, 720 h"
    assert page.context["figures"]["gpu_hours"] == "5760.00"  # 8 GPUs x 720 h, whatever December's 744
    assert page.context["figures"]["monthly_rent_usd"] == "14400.00"
    r = viewer_api.post("/api/v1/breakeven/", {"workload": "agent", "gpus": 8, "usd_per_gpu_hour": "2.50",
                                               "api_price": "kimi-k3-api"}, format="json")  # fmt: skip
    assert r.status_code == 200, r.content
    assert r.json()["month"] == "30-day month, 720 h" and r.json()["gpu_hours"] == "5760.00"
    shorter = viewer_api.post("/api/v1/breakeven/", {"workload": "agent", "gpus": 8, "usd_per_gpu_hour": "2.50",
                                                     "api_price": "kimi-k3-api", "days_per_month": 31,
                                                     "hours_per_day": 8}, format="json").json()  # fmt: skip
    assert shorter["month"] == "31-day month at 8 h a day, 248 h" and shorter["gpu_hours"] == "1984.00"
    # The API's schema says which month its monthly figures are for.
    schema = viewer_api.get("/api/v1/schema/?format=json").json()["components"]["schemas"]
    assert "30-day month, 720 h" in schema["BreakevenRequestRequest"]["properties"]["days_per_month"]["description"]
    assert "744" in schema["SpendResponse"]["properties"]["month_hours"]["description"]


def test_the_decisions_page_and_csv_name_the_month(december, client, make_user):
    client.force_login(make_user("f", "finance"))
    html = client.get("/decisions/").content.decode()
    assert "30-day month, 720 h" in html.split('id="month-convention"')[1].split("</p>")[0]
    assert "Rent (USD per 30-day month)" in html
    header = next(csv.reader(io.StringIO(client.get("/decisions/export.csv").content.decode())))
    assert "rent_usd_per_30_day_month" in header and "api_usd_per_30_day_month" in header
