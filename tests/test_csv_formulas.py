"""Every CSV the product serves goes through one writer (``fleet.tables.csv_text``) that neutralises
cells a spreadsheet would run as a formula (issue 29; OWASP "CSV injection"): free text that starts
with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is written with a leading ``'``. Records
here carry such text in every free-text field a CSV shows; no cell of any export may start with one
(a negative number stays a number)."""

from __future__ import annotations

import csv
import io
import re
from datetime import date
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command

from fleet.models import Cluster, Deployment, GpuQuote, HardwareSku, ModelSpec, Provider, Workload
from planner.models import Decision, Plan

#: Each free-text field gets one of these; the test finds them back, neutralised.
EVIL = {
    "team": '=HYPERLINK("http://x","team")',
    "provider": "+cmd|' /C calc'!A0",
    "cluster": "@SUM(1+1)",
    "model": "-2+3+cmd",
    "workload": "=1+1",
    "note": "\tsneaky",
}
#: A cell a spreadsheet would run: a formula start, except a plain number ("-12.5").
RUNS = re.compile(r"^[=+@\t\r]|^-(?!\d+(\.\d+)?$)")


@pytest.fixture
def evil_fleet(db):
    call_command("load_catalog", stdout=StringIO())
    sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
    provider = Provider.objects.create(name=EVIL["provider"])
    GpuQuote.objects.create(sku=sku, provider=provider, usd_per_gpu_hour=Decimal("2.50"), quoted_on=date(2026, 7, 1))
    cluster = Cluster(slug="evil", name=EVIL["cluster"], sku=sku, nodes=1, provider=provider, team=EVIL["team"])
    cluster.save(effective_from=date(2026, 7, 1))
    llama = ModelSpec.objects.get(slug="llama-3.1-70b")
    model = ModelSpec.objects.get(pk=llama.pk)
    model.pk, model.slug, model.name = None, "evil-model", EVIL["model"]
    model.save()
    workload = Workload.objects.create(
        slug="evil-w", name=EVIL["workload"], team=EVIL["team"], requests_per_day=1000, mean_prompt_tokens=1000,
        mean_output_tokens=100, p95_context_tokens=4000, peak_concurrency=8, ttft_slo_ms=2000, tpot_slo_ms=50,
    )  # fmt: skip
    Deployment.objects.create(slug="evil-d", cluster=cluster, model=model, tp=4, workload=workload)
    Decision.record(workload=workload, tier=3, note=EVIL["note"], figures={}, inputs={}, user=None)
    Plan.objects.create(model=model, workload=workload, options={})
    return workload


def _cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


def _check(name: str, text: str, expected: list[str]) -> None:
    cells = _cells(text)
    running = [c for c in cells if RUNS.match(c)]
    assert not running, (name, running)
    for key in expected:
        assert f"'{EVIL[key]}" in cells, (name, key, EVIL[key])


@pytest.mark.django_db
def test_every_csv_the_product_serves_neutralises_formula_cells(evil_fleet, client, make_user, viewer_api):
    from planner.snapshots import refresh_snapshots

    refresh_snapshots()
    client.force_login(make_user("admin", "admin"))
    plan = Plan.objects.get()
    pages = {
        "/fleet.csv": ["team", "provider", "cluster", "model"],
        "/models/export.csv": ["model"],
        "/plans/export.csv": ["model", "workload"],
        f"/plans/{plan.pk}/ranking.csv": [],
        "/decisions/export.csv": ["workload", "note"],
    }
    for url, expected in pages.items():
        response = client.get(url)
        assert response.status_code == 200 and response["Content-Type"].startswith("text/csv"), url
        _check(url, response.content.decode(), expected)
    # Spend: the API's CSV (the spend page links to it) and manage.py spend --csv.
    response = viewer_api.get("/api/v1/spend/?month=2026-07&format=csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    _check("spend API", response.content.decode(), ["team", "provider"])
    out = StringIO()
    call_command("spend", "--month", "2026-07", "--csv", stdout=out)
    _check("manage.py spend --csv", out.getvalue(), ["team", "provider"])


def test_the_writer_keeps_numbers_and_neutralises_text():
    from fleet.tables import csv_text

    text = csv_text(["a", "b", "c", "d"], [[-12.5, "-12.50", "=1+1", "@x"], [None, 3, "+1", "plain"]])
    assert list(csv.reader(io.StringIO(text))) == [
        ["a", "b", "c", "d"],
        ["-12.5", "'-12.50", "'=1+1", "'@x"],
        ["", "3", "'+1", "plain"],
    ]
