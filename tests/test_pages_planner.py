"""Planner pages: models, what-if (HTMX), rent vs API with decisions, spend, decision log."""

from __future__ import annotations

from datetime import date
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from priced import acme_quoting_the_seeds_rate

from fleet.models import Cluster, GpuQuote, HardwareSku, ModelSpec, Provider, Workload
from planner.forms import WhatIfForm
from planner.models import Decision


@pytest.fixture
def catalog(db):
    call_command("load_catalog", stdout=StringIO())
    Workload.objects.create(
        slug="agent",
        name="Coding agent",
        team="dev",
        requests_per_day=50_000,
        mean_prompt_tokens=20_000,
        mean_output_tokens=800,
        p95_context_tokens=64_000,
        prefix_cache_hit_rate=0.9,
        peak_concurrency=200,
        ttft_slo_ms=2000,
        tpot_slo_ms=50,
    )


@pytest.fixture
def viewer(client, make_user):
    client.force_login(make_user("v", "viewer"))
    return client


@pytest.mark.django_db
def test_model_pages(viewer, catalog):
    page = viewer.get("/models/").content.decode()
    assert "Kimi K3" in page and "Llama-3.1-70B-Instruct" in page
    detail = viewer.get("/models/kimi-k3/").content.decode()
    # mxfp4 raw and with scales, bf16: in binary units (issue 24), the exact bytes on hover; the config's
    # 2,779,481,795,168 parameters x 0.5, x 4.25 / 8 and x 2 B (the seeds' 1.4 / 1.49 / 5.6 TB are the card's 2.8T)
    for exact in (1_389_740_897_584, round(2_779_481_795_168 * 4.25 / 8), 5_558_963_590_336):
        assert f'title="{exact:,} bytes (binary units: 1 TiB = {2**40:,} bytes)">{exact / 2**40:.2f} TiB<' in detail
    assert " TB<" not in detail and "decimal TB" not in detail
    assert viewer.get("/models/nope/").status_code == 404


@pytest.mark.django_db
def test_model_page_shows_the_seeds_floors_and_the_shipped_ones(viewer, catalog):
    """K3's weights-only floors in nominal decimal GB (DESIGN.md, seeds):
    raw MXFP4, the config's 2,779,481,795,168 x 0.5 B = 1.39 TB (the seeds' 1.4 TB from the card's 2.8T gives the
    same floors): /80 GB = 17.4 -> 18, /141 = 9.86 -> 10, /192 = 7.24 -> 8, /288 = 4.83 -> 5;
    with the 8-bit scale per 32 (4.25 bits) 1.4766 TB: 18.5 -> 19, 10.5 -> 11, 7.69 -> 8, 5.13 -> 6;
    as shipped (bf16 non-experts, catalogue assumptions) 1,559,937,995,968 B:
    19.5 -> 20, 11.06 -> 12, 8.12 -> 9, 5.42 -> 6."""
    import re

    page = viewer.get("/models/kimi-k3/").content.decode()
    table = page[page.index('id="floors"') :]
    rows = dict(
        (name, tuple(int(n) for n in nums))
        for name, *nums in re.findall(
            r'<tr><td><a [^>]+>([^<]+)</a></td><td class="num">(\d+)</td><td class="num">(\d+)</td>'
            r'<td class="num">(\d+)</td>',
            table,
        )
    )
    assert rows["NVIDIA H100 SXM 80GB"] == (18, 19, 20)
    assert rows["NVIDIA H200 SXM 141GB"] == (10, 11, 12)
    assert rows["NVIDIA B200 192GB (HGX B200)"] == (8, 8, 9)
    assert rows["NVIDIA GB300 (Blackwell Ultra) 288GB, NVL72"] == (5, 6, 6)


@pytest.mark.django_db
def test_model_form_reports_layer_group_errors_inline(client, make_user, catalog):
    client.force_login(make_user("p", "platform"))
    form = {
        "name": "Bad",
        "slug": "bad",
        "total_params": 10,
        "active_params": 10,
        "n_routed_experts": 0,
        "n_active_experts": 0,
        "n_shared_experts": 0,
        "hidden_size": 1,
        "vocab_size": 1,
        "max_context_tokens": 1,
        "weight_format": "bf16",
        "layer_groups": '[{"kind": "full", "count": 2}]',
    }
    r = client.post("/models/new/", form)
    assert r.status_code == 400 and "layer_groups.0.kv_heads" in r.content.decode()
    assert not ModelSpec.objects.filter(slug="bad").exists()
    form["layer_groups"] = '[{"kind": "full", "count": 2, "kv_heads": 1, "head_dim": 64}]'
    assert client.post("/models/new/", form).status_code == 302


@pytest.mark.django_db
def test_model_page_lists_the_checkpoints_module_classes(viewer, catalog):
    """Issue 25: the module classes with format, parameters, bits and bytes; K3's routed experts MXFP4 at 4.25."""
    page = viewer.get("/models/kimi-k3/").content.decode()
    table = page[page.index('id="weights-by-module"') :].split("</table>")[0]
    assert (
        '<td>Routed experts</td><td>mxfp4</td><td class="num">2,722,740,830,208</td><td class="num">4.25</td>' in table
    )
    assert "<td>Attention projections</td><td>bf16</td>" in table and "Linear-attention mixers" in table
    assert "2,779,481,795,168" in table  # the checkpoint's total, the config's count


@pytest.mark.django_db
def test_editing_counts_of_a_model_with_parts_asks_for_the_parts(client, make_user, catalog):
    """The parts are the weights: a total that no longer matches them is a form error naming them, not a
    silent mismatch; cleared, the two formats apply again."""
    client.force_login(make_user("p", "platform"))
    edit = "/models/kimi-k3/edit/"
    form = {k: v for k, v in client.get(edit).context["form"].initial.items() if v is not None}
    form["total_params"] = 2_800_000_000_000
    r = client.post(edit, form)
    assert r.status_code == 400 and "The parts add up to 2,779,481,795,168 parameters" in r.content.decode()
    assert ModelSpec.objects.get(slug="kimi-k3").total_params == 2_779_481_795_168
    form["weight_parts"] = ""
    assert client.post(edit, form).status_code == 302
    k3 = ModelSpec.objects.get(slug="kimi-k3")
    assert (k3.total_params, k3.weight_parts) == (2_800_000_000_000, [])


@pytest.mark.django_db
def test_what_if_full_page_and_partial(viewer, catalog):
    url = "/what-if/?model=kimi-k3&sku=h200-141gb&gpus=16&tp=8&dp=2&ep=16&kv_cache_dtype=fp8&context_tokens=131072"
    page = viewer.get(url)
    assert page["Vary"] and "HX-Request" in page["Vary"]
    assert "<form" in page.content.decode() and "Fits:" in page.content.decode()
    short = viewer.get(url, HTTP_HX_REQUEST="true").content.decode()
    long = viewer.get(url.replace("131072", "524288"), HTTP_HX_REQUEST="true").content.decode()
    assert short.lstrip().startswith('<section id="whatif-result"') and "<form" not in short
    assert 'id="whatif-speed"' in short and "USD per million output tokens" in short

    def capacity(html: str) -> int:
        return int(html.split('id="whatif-capacity">')[1].split("<")[0].replace(",", ""))

    assert capacity(short) > capacity(long) > 0


@pytest.mark.django_db
def test_what_if_bad_input_shows_errors_not_a_500(viewer, catalog):
    r = viewer.get("/what-if/?model=kimi-k3&sku=h200-141gb&tp=5", HTTP_HX_REQUEST="true")
    assert r.status_code == 200 and "Check the inputs" in r.content.decode() and "tp" in r.content.decode()
    r = viewer.get("/what-if/?model=kimi-k3&sku=h200-141gb&gpus=banana")
    assert r.status_code == 200 and "gpus" in r.content.decode()


def _error_beside(html: str, field: str) -> str:
    """The text of the error element that sits beside ``field``'s input."""
    return html.split(f'id="err-{field}"')[1].split(">", 1)[1].split("</span>")[0]


@pytest.mark.django_db
def test_what_if_errors_sit_beside_their_inputs(viewer, catalog):
    # A type error (the form) and an engine rule (tp must divide the heads) each beside its input.
    page = viewer.get("/what-if/?model=kimi-k3&sku=h200-141gb&gpus=banana").content.decode()
    assert _error_beside(page, "gpus") == "Enter a whole number." and _error_beside(page, "tp") == ""
    partial = viewer.get("/what-if/?model=kimi-k3&sku=h200-141gb&tp=5", HTTP_HX_REQUEST="true").content.decode()
    # The HTMX partial updates every input's error out of band, so a fixed input's message clears.
    visible = [name for name, field in WhatIfForm.base_fields.items() if not field.widget.is_hidden]
    assert partial.count('hx-swap-oob="true"') == len(visible)  # one error beside each input (none for ``loaded``)
    assert "96" in _error_beside(partial, "tp") and _error_beside(partial, "gpus") == ""
    fixed = viewer.get("/what-if/?model=kimi-k3&sku=h200-141gb&tp=8", HTTP_HX_REQUEST="true").content.decode()
    assert _error_beside(fixed, "tp") == "" and 'id="whatif-capacity"' in fixed


@pytest.mark.django_db
def test_rent_vs_api_errors_sit_beside_their_inputs(client, make_user, catalog):
    client.force_login(make_user("f", "finance"))
    page = client.get("/rent-vs-api/", {"workload": "agent", "sku": "h100-sxm-80gb", "api_price": "kimi-k3-api"})
    assert page.context["form"].errors == {"gpus": ["Give the number of GPUs, or a deployment."]}
    label = page.content.decode().split('name="gpus"')[1].split("</label>")[0]
    assert "Give the number of GPUs, or a deployment." in label
    # A decision on a comparison that cannot be made is not recorded; the page says why, at 400.
    bad = {"workload": "agent", "gpus": "8", "sku": "h100-sxm-80gb", "api_price": "kimi-k3-api", "on": "2020-01-01"}
    r = client.post("/rent-vs-api/decide/", {**bad, "tier": "3"})
    assert r.status_code == 400 and not Decision.objects.exists()
    assert "h100-sxm-80gb is unpriced on 2020-01-01" in r.context["form"].errors["sku"][0]


@pytest.mark.django_db
def test_rent_vs_api_shows_the_recommendation_and_chart(viewer, catalog):
    seeds = GpuQuote.objects.get(sku__slug="h100-sxm-80gb", provider__isnull=True).pk
    url = "/rent-vs-api/?workload=agent&gpus=8&sku=h100-sxm-80gb&api_price=kimi-k3-api&on=2026-08-01"
    html = viewer.get(f"{url}&gpu_quote={seeds}").content.decode()  # the seeds' assumption, picked
    assert 'id="recommendation"' in html and 'data-chart="breakeven"' in html
    assert "14,400.00" in html and "2026-07-17" in html
    price = html.split('id="gpu-price"')[1].split("</p>")[0]
    assert "an assumption no provider quoted, picked for this comparison" in price
    # Not picked: the SKU's price in force, the cheapest public list price that day (Nebius's 2.95).
    price = viewer.get(url).content.decode().split('id="gpu-price"')[1].split("</p>")[0]
    assert "2.9500 USD/GPU-hour (Nebius public list price, quoted 2026-05-18)" in price
    assert "Record a decision" not in html  # viewers are not offered the button


@pytest.mark.django_db
def test_finance_records_a_decision_from_the_page_and_viewer_is_refused(client, make_user, catalog):
    inputs = {"workload": "agent", "gpus": "8", "sku": "h100-sxm-80gb", "api_price": "kimi-k3-api", "on": "2026-08-01",
              "gpu_quote": GpuQuote.objects.get(sku__slug="h100-sxm-80gb", provider__isnull=True).pk}  # fmt: skip
    client.force_login(make_user("v", "viewer"))
    assert client.post("/rent-vs-api/decide/", {**inputs, "tier": "3"}).status_code == 403
    client.force_login(make_user("f", "finance"))
    assert "Record a decision" in client.get("/rent-vs-api/", inputs).content.decode()
    r = client.post("/rent-vs-api/decide/", {**inputs, "tier": "3", "note": "cheaper"})
    assert r.status_code == 302 and r["Location"] == "/decisions/"
    d = Decision.objects.get()
    assert d.tier == 3 and d.decided_by_name == "f" and d.inputs["quotes_used"][0]["quoted_on"] == "2026-07-17"
    log = client.get("/decisions/").content.decode()
    assert "Coding agent" in log and "cheaper" in log
    assert "2026-07-17" in client.get(f"/decisions/{d.pk}/inputs/", HTTP_HX_REQUEST="true").content.decode()


@pytest.mark.django_db
def test_spend_page_and_csv_link(viewer, catalog):
    sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
    acme = acme_quoting_the_seeds_rate(sku)
    Cluster(slug="k", name="K", sku=sku, nodes=1, provider=acme, team="ml").save(effective_from=date(2026, 7, 17))
    html = viewer.get("/spend/?month=2026-07").content.decode()
    assert "7,200.00" in html  # 8 GPUs x 24 h x 15 days (17..31 July) x 2.50, all spent (a past month)
    assert "/api/v1/spend/?month=2026-07&amp;format=csv" in html
    assert 'href="?month=2026-06"' in html and 'href="?month=2026-08"' in html  # previous / next month
    assert 'min="1970-01"' in html and 'max="2999-12"' in html
    bad = viewer.get("/spend/?month=July")
    assert bad.status_code == 400
    label = bad.content.decode().split('name="month"')[1].split("</label>")[0]
    assert "Give a month as YYYY-MM, e.g. 2026-07." in label  # beside the input
    # A month with days no quote prices (acme's quote starts on 17 July) is priced where it can be, and
    # the rest is named in a warning above the tables.
    Cluster(slug="early", name="Early", sku=sku, nodes=1, provider=Provider.objects.ensure("acme"), team="ml").save(
        effective_from=date(2026, 6, 1)
    )
    unpriced = viewer.get("/spend/?month=2026-06")
    assert unpriced.status_code == 200
    warnings = unpriced.content.decode().split('id="spend-warnings"')[1].split("</section>")[0]
    assert "No quote in force for cluster early (acme, h100-sxm-80gb), 2026-06-01 to 2026-06-30" in warnings


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/models/", "/decisions/", "/spend/?month=2026-07"])
def test_planner_pages_query_count_is_constant(viewer, catalog, url):
    def count() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert viewer.get(url).status_code == 200
        return len(ctx.captured_queries)

    sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
    workload = Workload.objects.get()
    for i in range(2):
        Cluster(slug=f"a{i}", name=f"A{i}", sku=sku, nodes=1, provider=Provider.objects.ensure("acme"), team="t").save(
            effective_from=date(2026, 7, 17)
        )
        Decision.record(workload=workload, tier=3, note="", figures={}, inputs={}, user=None)
    few = count()
    for i in range(12):
        Cluster(slug=f"b{i}", name=f"B{i}", sku=sku, nodes=1, provider=Provider.objects.ensure("acme"), team="t").save(
            effective_from=date(2026, 7, 17)
        )
        Decision.record(workload=workload, tier=1, note="", figures={}, inputs={}, user=None)
        ModelSpec.objects.create(
            slug=f"m{i}",
            name=f"M{i}",
            total_params=10,
            active_params=10,
            hidden_size=1,
            vocab_size=1,
            max_context_tokens=8,
            layer_groups=[{"kind": "full", "count": 1, "kv_heads": 1, "head_dim": 8}],
        )
    assert count() <= few  # never more (permissions cached after the first)


@pytest.mark.django_db
def test_rent_vs_api_with_a_deployment_knows_the_capacity(viewer, catalog):
    from fleet.models import Deployment

    sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
    acme = acme_quoting_the_seeds_rate(sku)
    c = Cluster.objects.create(slug="c", name="C", sku=sku, nodes=1, provider=acme, team="t")
    Deployment.objects.create(
        slug="llama",
        cluster=c,
        model=ModelSpec.objects.get(slug="llama-3.1-70b"),
        tp=4,
        replicas=2,
        workload=Workload.objects.get(slug="agent"),
    )
    html = viewer.get("/rent-vs-api/?on=2026-08-01").content.decode()  # defaults to the workload's deployment
    assert 'name="deployment" id="id_deployment" value="llama"' in html and "Cluster capacity" in html
    assert "unknown" not in html.split("Cluster capacity")[1][:200]


@pytest.mark.django_db
def test_whatif_shows_what_vllm_will_allocate(viewer, catalog):
    """Qwen3-Next on 2 H200 with vLLM 0.11.0 and 40 GiB logged: block 544, 6,425 blocks, logged
    1,606 x 544 = 873,664 tokens, 13.25x at 262,144 (tests/engine/test_profile_vllm.py derives each)."""
    url = (
        "/what-if/?model=qwen3-next-80b-a3b&sku=h200-141gb&gpus=2&context_tokens=262144"
        "&engine=vllm&engine_version=0.11.0&available_kv_cache_gib=40"
    )
    page = viewer.get(url, headers={"HX-Request": "true"}).content.decode()
    table = page[page.index('id="whatif-engine"') :]
    assert "544 tokens" in table and "6,425" in table
    assert 'id="whatif-engine-tokens">873,664 tokens' in table
    assert 'id="whatif-engine-concurrency">13.25x' in table
    assert "1.49%" in table
    bad = viewer.get("/what-if/?model=qwen3-next-80b-a3b&sku=h200-141gb&engine=vllm&engine_version=0.8").content
    assert b"vLLM 0.8 predates the releases the app models (0.10.0 to 0.33.0)" in bad
