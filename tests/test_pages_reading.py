"""Issue 15, "Reading": every page as text a person reads. Labels are verbose names (never a field's
attribute name), a model's layer groups are a table (no dict text), its source names no internal
path, no byte count is written as raw bytes, and table numbers carry thousands separators."""

from __future__ import annotations

import html as html_lib
import re
from datetime import date, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone
from priced import acme_quoting_the_seeds_rate

from fleet.catalog import reference
from fleet.models import Cluster, Deployment, EndpointPoll, HardwareSku, ModelSpec, Workload
from planner.templatetags.reading import has_internal_path

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(client, make_user):
    call_command("load_catalog", stdout=StringIO())
    workload = Workload.objects.create(
        slug="agent", name="Coding agent", team="dev", requests_per_day=200_000, mean_prompt_tokens=12_000,
        mean_output_tokens=600, p95_context_tokens=64_000, prefix_cache_hit_rate=0.9, peak_concurrency=256,
        ttft_slo_ms=2000, tpot_slo_ms=50,
    )  # fmt: skip
    h100 = HardwareSku.objects.get(slug="h100-sxm-80gb")
    cluster = Cluster(slug="pool", name="Pool", sku=h100, nodes=2, provider=acme_quoting_the_seeds_rate(h100),
                      team="platform")  # fmt: skip
    cluster.save(effective_from=date(2026, 7, 17))
    deployment = Deployment.objects.create(
        slug="llama", cluster=cluster, model=ModelSpec.objects.get(slug="llama-3.1-70b"), tp=4, replicas=2,
        max_model_len=32768, kv_cache_dtype="fp8", last_status="up", last_metrics={"requests_running": 1200},
        workload=workload,
    )  # fmt: skip
    now = timezone.now()
    EndpointPoll.objects.bulk_create(
        [
            EndpointPoll(deployment=deployment, polled_at=now - timedelta(minutes=5 - i), status="up",
                         ttft_p95_ms=1900 + i, itl_p95_ms=30, itl_p50_ms=25, requests_running=1200)
            for i in range(5)
        ]
    )  # fmt: skip
    # Made before the registration checks existed (they would refuse it): Kimi K3 on one H200.
    h200_sku = HardwareSku.objects.get(slug="h200-141gb")
    h200 = Cluster.objects.create(slug="h200", name="H200 box", sku=h200_sku, nodes=1,
                                  provider=acme_quoting_the_seeds_rate(h200_sku), team="t")  # fmt: skip
    Deployment.objects.create(slug="k3-one", cluster=h200, model=ModelSpec.objects.get(slug="kimi-k3"), tp=1)
    from planner.snapshots import refresh_snapshots

    refresh_snapshots()  # the worker's part: pages read the stored capacity snapshots
    client.force_login(make_user("admin", "admin"))
    return client


def _text(html: str) -> str:
    """What the page says, without markup (attributes, scripts' JSON and tags removed)."""
    html = re.sub(r"<script.*?</script>", " ", html, flags=re.S)
    return html_lib.unescape(re.sub(r"<[^>]+>", " ", html))


def _labels(html: str) -> list[str]:
    return [" ".join(_text(m).split()) for m in re.findall(r"<label[^>]*>(.*?)(?:<input|<select|<textarea|</label>)",
                                                            html, flags=re.S)]  # fmt: skip


FORM_PAGES = [
    "/clusters/new/", "/clusters/pool/edit/", "/deployments/new/", "/deployments/llama/edit/", "/models/new/",
    "/models/kimi-k3/edit/", "/models/import/", "/what-if/", "/rent-vs-api/", "/plans/", "/spend/",
    "/deployments/llama/", "/quotes/new/", "/api-prices/new/", "/skus/new/", "/skus/h100-sxm-80gb/edit/",
    "/workloads/new/", "/workloads/agent/edit/",
]  # fmt: skip
#: Labels that name a file or an engine's own flag on purpose.
NAMED_ON_PURPOSE = {"config.json", "or upload config.json", "hf_quant_config.json (optional)"}
#: What Django writes for a field without a verbose name: the defects issue 15 saw.
RAW = {"Sku", "Gpus per node", "N routed experts", "N active experts", "N shared experts", "Kv cache dtype",
       "Api key", "Hf model id", "Base url", "Poll interval s", "Max model len", "Gpu memory utilization",
       "max_model_len"}  # fmt: skip


@pytest.mark.parametrize("path", FORM_PAGES)
def test_form_labels_are_verbose_names_not_field_names(world, path):
    r = world.get(path)
    assert r.status_code == 200, path
    labels = _labels(r.content.decode())
    assert labels, path
    for label in labels:
        if label in NAMED_ON_PURPOSE:
            continue
        assert "_" not in label, f"{path}: {label!r}"
        assert label not in RAW, f"{path}: {label!r}"
    if path.startswith("/clusters/"):
        assert {"SKU", "GPUs per node"} <= set(labels)
    if path.startswith("/models/kimi"):
        assert {"Routed experts", "Active experts per token", "Shared experts", "Max context (tokens)"} <= set(labels)


def test_the_audit_trail_names_fields_by_their_verbose_names(world):
    page = world.get("/deployments/llama/").content.decode()
    history = _text(page[page.index('id="history"') :])
    assert "GPU memory utilization (0-1)" in history and "Max model length (tokens)" in history
    assert "Max model length (tokens) : 32,768" in " ".join(history.split())
    assert "gpu_memory_utilization" not in history and "max_model_len" not in history


@pytest.mark.parametrize("slug", [m["slug"] for m in reference.model_records()])
def test_model_pages_show_layer_groups_as_a_table_and_no_internal_path(world, slug):
    page = world.get(f"/models/{slug}/").content.decode()
    groups = page.split('id="layer-groups">')[1].split("</table>")[0]
    text = _text(groups)
    assert "{" not in text and "'" not in text and '"' not in text, "dict text in the layer groups"
    assert not re.search(r"\b[a-z]+_[a-z_]+\b", text), f"a raw key in the layer groups: {text}"
    assert groups.count("<tr>") >= 2  # a header and a row per group
    main = _text(page.split("<main>")[1].split('id="history"')[0])
    assert not has_internal_path(main), re.findall(r"\S*/\S*", main)
    assert "/work/" not in main and "fleet/catalog" not in main and "DESIGN.md" not in main


def test_k3_layer_groups_and_source(world):
    page = world.get("/models/kimi-k3/").content.decode()
    table = " ".join(_text(page.split('id="layer-groups">')[1].split("</table>")[0]).split())
    assert "Linear attention 69 Key heads 96 · Value heads 96 · Key dim 128" in table
    assert "Multi-head latent attention (MLA) 24 KV latent rank 512 · RoPE head dim 64" in table
    source = _text(page.split('id="model-source">')[1].split("</dd>")[0])
    assert "Kimi K3's published config.json (moonshotai/Kimi-K3" in source
    llama = world.get("/models/llama-3.1-70b/").content.decode()
    assert '<a href="https://huggingface.co/meta-llama/Llama-3.1-70B-Instruct"' in llama


BYTE_PAGES = ["/what-if/?model=kimi-k3&sku=h200-141gb&gpus=16&tp=8&dp=2&ep=16",
              "/what-if/?model=llama-3.1-70b&sku=h100-sxm-80gb&gpus=4&tp=4", "/models/kimi-k3/", "/models/",
              "/deployments/llama/", "/clusters/pool/",
              "/rent-vs-api/?workload=agent&deployment=k3-one&api_price=kimi-k3-api&on=2026-08-01"]  # fmt: skip


@pytest.mark.parametrize("path", BYTE_PAGES)
def test_no_raw_byte_counts_and_every_byte_count_has_its_exact_bytes_on_hover(world, path):
    page = world.get(path).content.decode()
    main = page.split("<main>")[1].split('id="history"')[0]
    body = re.sub(r"<details><summary>Assumptions.*?</details>", "", main, flags=re.S)
    body = re.sub(r"<h[23]>Assumptions</h[23]>\s*<ul>.*?</ul>", "", body, flags=re.S)  # the engine's own words
    spans = re.findall(r'<span class="bytes" title="([^"]+)">([^<]+)</span>', body)
    text = _text(re.sub(r'<span class="bytes" title="[^"]+">[^<]+</span>', " ", body))
    assert not re.search(r"\d B\b", text), re.findall(r".{30}\d B\b", text)
    assert not re.search(r"\d[\d,]* bytes", text), "exact bytes belong in the title, not beside the unit"
    assert spans, path
    for title, shown in spans:
        assert re.match(r"[\d,]+ bytes", title), title
        unit = shown.split()[-1]
        assert unit in {"B", "KiB", "MiB", "GiB", "TiB"}, shown  # one unit family for bytes (issue 24)
        if unit != "B":
            assert "binary units" in title


TABLE_PAGES = [*BYTE_PAGES, "/spend/?month=2026-07", "/", "/quotes/", "/api-prices/", "/skus/", "/workloads/",
               "/rent-vs-api/?workload=agent&gpus=8&sku=h100-sxm-80gb&api_price=kimi-k3-api&on=2026-08-01"]  # fmt: skip


@pytest.mark.parametrize("path", TABLE_PAGES)
def test_table_numbers_have_thousands_separators(world, path):
    page = world.get(path).content.decode()
    main = page.split("<main>")[1].split('id="history"')[0]
    cells = re.findall(r'<td class="num"[^>]*>(.*?)</td>', main, flags=re.S) + re.findall(
        r'<span class="(?:n|bar-label)">(.*?)</span>', main
    )
    assert cells, path
    for cell in cells:
        number = re.sub(r"\d{4}-\d{2}-\d{2}", "", _text(cell))  # a quote's date is not a number
        assert not re.search(r"(?<![\d.,])\d{4,}", number), f"{path}: {cell!r}"


def test_thousands_in_the_pages_that_have_them(world):
    spend = _text(world.get("/spend/?month=2026-07").content.decode())
    assert "14,400.00" in spend  # 16 GPUs x 24 h x 15 days x 2.50
    fleet = world.get("/").content.decode()
    assert "1,200 / " in fleet
    deployment = _text(world.get("/deployments/llama/").content.decode())
    assert "1,903" in deployment and "capacity quoted at 32,768 tokens" in deployment


#: Names a page uses on purpose: what the engines call their own flags and metrics.
ENGINE_TERMS = {"max_model_len", "cache_config_info", "max_total_num_tokens", "fp8_e4m3", "fp8_e5m2"}


@pytest.mark.parametrize(
    "path", ["/deployments/llama/", "/clusters/pool/", "/models/kimi-k3/", "/models/llama-3.1-70b/"]
)
def test_detail_pages_name_no_field_by_its_attribute_name(world, path):
    page = world.get(path).content.decode()
    main = page.split("<main>")[1].split('id="history"')[0]
    main = re.sub(r"<(ul|details)>.*?</\1>", " ", main, flags=re.S)  # assumptions: the engine's own words
    words = set(re.findall(r"\b[a-z0-9]+_[a-z0-9_]+\b", _text(main))) - ENGINE_TERMS
    if "/models/" in path:  # a source quotes the config.json keys it read
        main = main.split('id="model-source">')[0]
        words = set(re.findall(r"\b[a-z0-9]+_[a-z0-9_]+\b", _text(main))) - ENGINE_TERMS
    assert not words, f"{path}: {sorted(words)}"
