"""Issue 15's tables: the decisions, plans, models, fleet (and, issue 30, workloads) lists sorted by column header and
searched server-side (HTMX partials), pages kept, CSV of exactly the rows selected (formula
injection defused), and refused ``sort``/``q`` values that never make a 500."""

from __future__ import annotations

import csv
import io
from datetime import date

import pytest
from django.utils import timezone

from fleet.models import Cluster, HardwareSku, ModelSpec, Provider, Workload
from fleet.tables import csv_text, safe_cell
from planner.models import Decision, Plan
from planner.plans import plan_summary

NUL = "\x00"


@pytest.fixture
def viewer(client, make_user, catalog_and_agent):
    client.force_login(make_user("v", "viewer"))
    return client


def _csv(response) -> list[list[str]]:
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    today = timezone.now().date()
    assert f"-{today:%Y-%m-%d}.csv" in response["Content-Disposition"]
    return list(csv.reader(io.StringIO(response.content.decode())))


def _decision(workload: Workload, note: str, rent: str = "1000.00", api: str = "2000.00") -> Decision:
    return Decision.record(
        workload=workload,
        tier=1,
        note=note,
        figures={"monthly_rent_usd": rent, "monthly_api_usd": api, "verdict": "Renting is cheaper."},
        inputs={"quotes_used": []},
        user=None,
    )


def test_safe_cell_defuses_formulas_and_keeps_numbers():
    assert safe_cell("=HYPERLINK(1)") == "'=HYPERLINK(1)"
    assert [safe_cell(v) for v in ("+1", "-x", "@SUM", "\tA", "plain")] == ["'+1", "'-x", "'@SUM", "'\tA", "plain"]
    assert safe_cell(-3) == "-3" and safe_cell(2.5) == "2.5" and safe_cell(None) == ""
    rows = list(csv.reader(io.StringIO(csv_text(["a", "b"], [["=1+2", 'x,"y"']]))))
    assert rows == [["a", "b"], ["'=1+2", 'x,"y"']]


@pytest.mark.django_db
def test_models_sorted_by_header_searched_and_exported(viewer):
    page = viewer.get("/models/").content.decode()
    assert 'id="models-table"' in page and 'name="q"' in page and "hx-push-url" in page
    assert 'href="/models/?sort=-name"' in page  # sorted by name: a click reverses it
    by_size = viewer.get("/models/?sort=-total")
    names = [m.name for m in ModelSpec.objects.order_by("-total_params", "name")]
    shown = [r["m"].name for r in by_size.context["rows"]]
    assert shown == names[: len(shown)] and 'aria-sort="descending"' in by_size.content.decode()
    # Search: the partial alone for HTMX, only the matching rows.
    partial = viewer.get("/models/?q=kimi", HTTP_HX_REQUEST="true")
    body = partial.content.decode()
    assert "<html" not in body and body.strip().startswith('<section class="card" id="models-table">')
    assert [r["m"].slug for r in partial.context["rows"]] == list(
        ModelSpec.objects.filter(name__icontains="kimi").order_by("name").values_list("slug", flat=True)
    )
    # The CSV link carries the search and the sort; the CSV has exactly those rows, in that order.
    assert 'href="/models/export.csv?q=kimi&amp;sort=name"' in body
    rows = _csv(viewer.get("/models/export.csv?q=kimi&sort=-context"))
    assert rows[0][:3] == ["slug", "name", "total_params"]
    expected = ModelSpec.objects.filter(slug__icontains="kimi").order_by("-max_context_tokens", "-name")
    assert [r[0] for r in rows[1:]] == [m.slug for m in expected]


@pytest.mark.django_db
def test_models_show_thousands_separators(viewer):
    html = viewer.get("/models/?q=kimi-k3").content.decode()
    k3 = ModelSpec.objects.get(slug="kimi-k3")
    assert f"{k3.max_context_tokens:,}" in html


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/models/", "/plans/", "/decisions/", "/", "/workloads/"])
def test_a_bad_sort_is_said_and_ignored_never_a_500(viewer, url):
    r = viewer.get(url, {"sort": "password; drop table"})
    assert r.status_code == 200
    assert "Cannot sort by" in r.content.decode()
    long = viewer.get(url, {"q": "x" * 500})
    assert long.status_code == 200 and "at most 100 characters" in long.content.decode()
    assert viewer.get(url, {"page": "-3"}).status_code == 200
    assert viewer.get(url, {"q": f"a{NUL}b"}).status_code == 400  # refused before any view (fleet.inputs)


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/models/export.csv", "/plans/export.csv", "/decisions/export.csv"])
def test_a_bad_sort_or_search_in_a_csv_is_a_400(viewer, url):
    bad = viewer.get(url, {"sort": "nope"})
    assert bad.status_code == 400 and "Cannot sort by" in bad.content.decode()
    assert viewer.get(url, {"q": f"{NUL}"}).status_code == 400


def test_the_search_field_refuses_control_characters_itself():
    from planner.forms import ModelTableForm

    form = ModelTableForm({"q": "a\x07b"})
    assert not form.is_valid() and "control character" in form.errors["q"][0]
    assert ModelTableForm({"q": "ok", "sort": "-total"}).is_valid()


@pytest.mark.django_db
def test_decisions_search_sort_pages_and_csv_with_formula_injection(viewer, catalog_and_agent):
    other = Workload.objects.create(**{**_agent_fields(catalog_and_agent), "slug": "batch", "name": "Batch jobs"})
    _decision(catalog_and_agent, "=cmd|' /C calc'!A0", rent="14400.00", api="95040.00")
    for i in range(30):
        _decision(other, f"batch note {i}")
    page = viewer.get("/decisions/")
    html = page.content.decode()
    assert page.context["page"].paginator.count == 31 and len(page.context["rows"]) == 25
    assert "Pages of decisions" in html and "decisions 1\u201325 of 31" in html
    second = viewer.get("/decisions/?sort=workload&page=2", HTTP_HX_REQUEST="true")
    assert len(second.context["rows"]) == 6 and 'href="/decisions/?sort=workload&amp;page=1"' in second.content.decode()
    # Sorting by workload puts "Batch jobs" before "Coding agent".
    first = viewer.get("/decisions/?sort=workload").context["rows"][0]
    assert first.workload.slug == "batch"
    found = viewer.get("/decisions/?q=calc")
    assert [d.workload.slug for d in found.context["rows"]] == ["agent"]
    assert "14,400.00" in found.content.decode() and "95,040.00" in found.content.decode()
    rows = _csv(viewer.get("/decisions/export.csv?q=calc"))
    assert rows[0][0] == "id" and len(rows) == 2
    assert rows[1][rows[0].index("note")] == "'=cmd|' /C calc'!A0"  # a spreadsheet shows it as text
    assert rows[1][rows[0].index("rent_usd_per_30_day_month")] == "14400.00"
    everything = _csv(viewer.get("/decisions/export.csv?sort=-decided"))
    assert len(everything) == 32  # every page, not only the first


def _agent_fields(w: Workload) -> dict:
    fields = (
        "team", "requests_per_day", "mean_prompt_tokens", "mean_output_tokens", "p95_context_tokens",
        "prefix_cache_hit_rate", "peak_concurrency", "ttft_slo_ms", "tpot_slo_ms",
    )  # fmt: skip
    return {f: getattr(w, f) for f in fields}


def _done_plan(model_slug: str, workload: Workload, sku_slug: str, usd: float, tpot: float, gpus: int) -> Plan:
    sku = HardwareSku.objects.get(slug=sku_slug)
    best = {
        "sku": sku_slug, "mode": "unified", "kv_cache_dtype": "fp8", "gpus": gpus, "nodes": gpus // 8 or 1,
        "usd_per_gpu_hour": "2.50", "usd_per_hour": gpus * 2.5, "usd_per_mtok": usd, "tpot_ms": tpot,
        "ttft_ms": 900.0, "tokens_per_s_per_gpu": 1234.0,
        "decode": {"layout": {"tp": 8, "dp": gpus // 8 or 1}, "replicas": 1}, "prefill": None, "reason": None,
    }  # fmt: skip
    second = {**best, "usd_per_mtok": usd * 2, "reason": "costs_more", "mode": "=evil()"}
    result = {"best": best, "top": [best, second], "frontier": [], "feasible": 2, "rejected": {}}
    plan = Plan.objects.create(
        model=ModelSpec.objects.get(slug=model_slug),
        workload=workload,
        status=Plan.Status.DONE,
        progress=100,
        options={"max_nodes": 4, "on": "2026-08-01"},
        result=result,
        summary=plan_summary(result),
    )
    plan.skus.set([sku])
    return plan


@pytest.mark.django_db
def test_plans_list_sort_search_csv(viewer, catalog_and_agent):
    a = _done_plan("kimi-k3", catalog_and_agent, "h200-141gb", 1.5, 30.0, 16)
    b = _done_plan("llama-3.1-70b", catalog_and_agent, "h100-sxm-80gb", 0.8, 20.0, 8)
    Plan.objects.filter(pk=b.pk).update(status=Plan.Status.FAILED)
    html = viewer.get("/plans/").content.decode()
    assert 'name="plan"' in html and 'form="compare-form"' in html and "Compare the two ticked" in html
    by_status = viewer.get("/plans/?sort=status").context["rows"]
    assert [p.status for p in by_status] == ["done", "failed"]
    found = viewer.get("/plans/?q=llama", HTTP_HX_REQUEST="true")
    assert [p.pk for p in found.context["rows"]] == [b.pk]
    rows = _csv(viewer.get("/plans/export.csv?sort=-model"))
    assert [r[0] for r in rows[1:]] == [str(b.pk), str(a.pk)]  # Llama after Kimi, reversed
    assert rows[0][:8] == [
        "id", "started", "model", "workload", "price_basis", "status", "progress_percent", "candidates_evaluated"
    ]  # fmt: skip
    assert rows[0][8:] == [
        "feasible", "best_sku", "best_mode", "best_kv_cache_dtype", "best_gpus", "best_layout", "best_usd_per_mtok",
        "best_tpot_ms",
    ]  # fmt: skip
    kimi = dict(zip(rows[0], rows[2], strict=True))  # the best configuration from the plan's summary
    assert (kimi["price_basis"], kimi["feasible"], kimi["best_sku"], kimi["best_gpus"]) == (
        "fleet",
        "2",
        "h200-141gb",
        "16",
    )
    assert (kimi["best_layout"], kimi["best_usd_per_mtok"], kimi["best_tpot_ms"]) == ("tp 8 · dp 2", "1.5", "30.0")


@pytest.mark.django_db
def test_compare_two_plans_side_by_side(viewer, catalog_and_agent):
    a = _done_plan("kimi-k3", catalog_and_agent, "h200-141gb", 1.5, 30.0, 16)
    b = _done_plan("kimi-k3", catalog_and_agent, "b200-192gb", 0.75, 30.0, 8)
    # Two ticked boxes of the plans list redirect to the canonical ?a=&b=.
    ticked = viewer.get("/plans/compare/", {"plan": [str(a.pk), str(b.pk)]})
    assert ticked.status_code == 302 and ticked["Location"] == f"/plans/compare/?a={a.pk}&b={b.pk}"
    r = viewer.get(f"/plans/compare/?a={a.pk}&b={b.pk}")
    assert r.status_code == 200
    html = r.content.decode()
    figures = {f.label: f for f in r.context["figures"]}
    assert figures["SKU"].a == "NVIDIA H200 SXM 141GB" and figures["SKU"].differs
    assert figures["USD per million output tokens"].differs and not figures["TPOT (ms)"].differs
    assert figures["Layout"].a == "tp 8 · dp 2" and figures["Layout"].b == "tp 8"
    assert 'class="differs" data-figure="SKU"' in html and 'data-figure="TPOT (ms)"' in html
    assert 'class="differs" data-figure="TPOT (ms)"' not in html
    assert "1,234" in html  # tokens/s per GPU with a thousands separator
    # The plan page offers the other finished plans to compare with.
    assert f'value="{b.pk}"' in viewer.get(f"/plans/{a.pk}/").content.decode()


@pytest.mark.django_db
def test_compare_refuses_bad_input_without_a_500(viewer, catalog_and_agent):
    a = _done_plan("kimi-k3", catalog_and_agent, "h200-141gb", 1.5, 30.0, 16)
    one = viewer.get("/plans/compare/", {"plan": [str(a.pk)]})
    assert one.status_code == 400 and "Tick two plans to compare (1 ticked)" in one.content.decode()
    assert viewer.get("/plans/compare/").status_code == 400
    assert viewer.get("/plans/compare/?a=nope&b=x").status_code == 400
    assert viewer.get("/plans/compare/", {"plan": ["x", "y"]}).status_code == 400
    missing = "00000000-0000-0000-0000-000000000000"
    assert viewer.get(f"/plans/compare/?a={a.pk}&b={missing}").status_code == 404


@pytest.mark.django_db
def test_ranking_csv(viewer, catalog_and_agent):
    plan = _done_plan("kimi-k3", catalog_and_agent, "h200-141gb", 1.5, 30.0, 16)
    rows = _csv(viewer.get(f"/plans/{plan.pk}/ranking.csv"))
    header = rows[0]
    assert header[:5] == ["rank", "sku", "sku_name", "mode", "layout"]
    assert rows[1][header.index("sku_name")] == "NVIDIA H200 SXM 141GB" and rows[1][header.index("outcome")] == "best"
    assert rows[2][header.index("mode")] == "'=evil()" and rows[2][header.index("outcome")] == "costs_more"
    assert f'href="/plans/{plan.pk}/ranking.csv"' in viewer.get(f"/plans/{plan.pk}/").content.decode()


@pytest.mark.django_db
def test_fleet_table_search_and_order(viewer):
    sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
    Cluster(
        slug="alpha", name="Alpha", sku=sku, nodes=1, provider=Provider.objects.ensure("zeta-cloud"), team="ml"
    ).save(effective_from=date(2026, 7, 17))
    Cluster(slug="beta", name="Beta", sku=sku, nodes=1, provider=Provider.objects.ensure("acme"), team="search").save(
        effective_from=date(2026, 7, 17)
    )
    ordered = viewer.get("/?sort=-name")
    assert [r["cluster"].slug for r in ordered.context["rows"]] == ["beta", "alpha"]
    by_provider = viewer.get("/?sort=provider", HTTP_HX_REQUEST="true")
    assert [r["cluster"].slug for r in by_provider.context["rows"]] == ["beta", "alpha"]
    found = viewer.get("/?q=zeta", HTTP_HX_REQUEST="true")
    assert [r["cluster"].slug for r in found.context["rows"]] == ["alpha"]
    assert 'hx-get="/?q=zeta"' in found.content.decode()  # the 5 s refresh keeps the search


@pytest.mark.django_db
def test_workloads_are_listed_a_page_at_a_time_searched_and_sorted(viewer):
    """Issue 30: the list drew every workload."""
    Workload.objects.bulk_create(
        Workload(slug=f"w-{i:02d}", name=f"Batch {i:02d}", team="data" if i % 2 else "ads", requests_per_day=i + 1,
                 mean_prompt_tokens=1, mean_output_tokens=1, p95_context_tokens=1, peak_concurrency=1, ttft_slo_ms=1,
                 tpot_slo_ms=1)
        for i in range(30)
    )  # fmt: skip
    page = viewer.get("/workloads/")
    html = page.content.decode()
    assert [w.slug for w in page.context["rows"]] == [f"w-{i:02d}" for i in range(25)]  # by name: Batch 00 ...
    assert (
        "31 workloads" in html
        and "workloads 1\u201325 of 31" in html
        and 'href="/workloads/?sort=name&amp;page=2"' in html
    )
    assert [w.slug for w in viewer.get("/workloads/?page=2").context["rows"]] == [
        *(f"w-{i}" for i in range(25, 30)),
        "agent",
    ]
    ads = viewer.get("/workloads/?q=ads&sort=-requests", HTTP_HX_REQUEST="true")
    assert ads.templates[0].name == "fleet/_workloads_table.html"  # the table alone for HTMX
    assert [w.slug for w in ads.context["rows"]] == [f"w-{i:02d}" for i in range(28, -1, -2)]
    assert 'tr data-workload="w-28"' in ads.content.decode() and "15 workloads matching “ads”" in ads.content.decode()


@pytest.mark.django_db
def test_a_pushed_url_restored_by_htmx_gets_the_whole_page(viewer):
    """htmx asks for a pushed URL missing from its history cache with HX-History-Restore-Request:
    that needs the whole page, not the table partial."""
    r = viewer.get("/models/?q=kimi", HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true")
    assert "<html" in r.content.decode() and 'id="models-table-q"' in r.content.decode()


NEW_READ_PAGES = [
    "/models/export.csv", "/plans/export.csv", "/decisions/export.csv", "/plans/{plan}/ranking.csv",
    "/plans/compare/?a={plan}&b={plan}", "/models/?sort=-total&q=k",
]  # fmt: skip


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["anonymous", "none", "viewer"])
@pytest.mark.parametrize("path", NEW_READ_PAGES)
def test_the_new_pages_need_the_view_permissions(client, make_user, catalog_and_agent, role, path):
    plan = _done_plan("kimi-k3", catalog_and_agent, "h200-141gb", 1.5, 30.0, 16)
    if role != "anonymous":
        client.force_login(make_user(role, None if role == "none" else role))
    expected = {"anonymous": 302, "none": 403, "viewer": 200}[role]
    assert client.get(path.format(plan=plan.pk)).status_code == expected


@pytest.mark.django_db
def test_the_new_pages_have_no_inline_script_or_style(viewer, catalog_and_agent):
    from test_security import INLINE_SCRIPT, INLINE_STYLE

    a = _done_plan("kimi-k3", catalog_and_agent, "h200-141gb", 1.5, 30.0, 16)
    for url in ("/models/?q=k", "/plans/", f"/plans/compare/?a={a.pk}&b={a.pk}", "/decisions/"):
        html = viewer.get(url).content.decode()
        assert not INLINE_SCRIPT.search(html) and not INLINE_STYLE.search(html), url


@pytest.mark.django_db
def test_fleet_csv_has_the_filtered_ordered_deployments_with_headroom(viewer):
    from fleet.models import Deployment

    sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
    for slug, team in (("alpha", "=ml"), ("beta", "search"), ("gamma", "search")):
        Cluster(
            slug=slug, name=slug.title(), sku=sku, nodes=1, provider=Provider.objects.ensure("acme"), team=team
        ).save(effective_from=date(2026, 7, 17))
    llama = ModelSpec.objects.get(slug="llama-3.1-70b")
    Deployment.objects.create(slug="llama", cluster=Cluster.objects.get(slug="alpha"), model=llama, tp=4, replicas=2)
    from planner.snapshots import refresh_snapshots

    refresh_snapshots()  # the worker's part: the CSV reads the stored capacity, as the page does
    html = viewer.get("/?team=search").content.decode()
    assert 'href="/fleet.csv?team=search"' in html
    rows = _csv(viewer.get("/fleet.csv?sort=-name&q=a"))
    header = rows[0]
    assert [r[0] for r in rows[1:]] == ["gamma", "beta", "alpha"]
    alpha = dict(zip(header, rows[3], strict=True))
    assert alpha["team"] == "'=ml" and alpha["deployment"] == "llama" and int(alpha["predicted_capacity"]) > 0
    assert alpha["gpus"] == "8" and alpha["fits"] == "True"
    assert [r[0] for r in _csv(viewer.get("/fleet.csv?team=search"))[1:]] == ["beta", "gamma"]
    assert viewer.get("/fleet.csv?sort=bogus").status_code == 400


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/plans/?sort=model", "/decisions/?q=note&sort=workload", "/models/?q=qwen"])
def test_list_queries_do_not_grow_with_the_rows(viewer, catalog_and_agent, url):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def count() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert viewer.get(url).status_code == 200
        return len(ctx.captured_queries)

    _done_plan("kimi-k3", catalog_and_agent, "h200-141gb", 1.5, 30.0, 16)
    _decision(catalog_and_agent, "note 0")
    before = count()
    for i in range(5):
        _done_plan("llama-3.1-70b", catalog_and_agent, "h100-sxm-80gb", 0.8, 20.0, 8)
        _decision(catalog_and_agent, f"note {i + 1}")
    assert count() <= before  # never more (permissions cached after the first)
