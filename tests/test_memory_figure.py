"""Issue 24, "One memory figure": a SKU's GPU memory is the bytes its driver reports
(``hbm_bytes_reported`` in the catalogue), shown in GiB on every page; usable = GPU memory utilization x
that; the marketing "141GB" only in the SKU's name; the envelope bar adds up to the GPU memory it is
drawn against; no page writes a decimal GB or TB memory figure.

The expected figures are computed here from the catalogue record's bytes (bytes / 2**30), never read
back from the model under test."""

from __future__ import annotations

import html as html_lib
import json
import re
from datetime import date
from io import StringIO

import pytest
from django.core.management import call_command

from fleet.catalog import reference
from fleet.models import Cluster, Deployment, HardwareSku, ModelSpec, Provider

pytestmark = pytest.mark.django_db

GIB = 2**30
H200 = reference.sku_record("h200-141gb")
#: What the driver reports for an H200 (vLLM's "139.81 GiB" total): 150,119,844,413 bytes.
H200_BYTES = H200["hbm_bytes_reported"]
#: The figure every page shows, and the one it must never show (141e9 bytes written in GiB).
H200_GIB = f"{H200_BYTES / GIB:.2f} GiB"
NOMINAL_GIB = f"{H200['hbm_gb'] * 1e9 / GIB:.2f} GiB"
PARTS = ("weights", "runtime", "state", "kv", "free", "reserve")


def _usable(utilisation: float) -> int:
    return int(H200_BYTES * utilisation)


@pytest.fixture
def world(client, make_user):
    call_command("load_catalog", stdout=StringIO())
    h200 = HardwareSku.objects.get(slug="h200-141gb")
    cluster = Cluster(
        slug="h200-pool", name="H200 pool", sku=h200, nodes=2, provider=Provider.objects.ensure("p"), team="t"
    )
    cluster.save(effective_from=date(2026, 7, 1))
    Deployment.objects.create(
        slug="llama-h200", cluster=cluster, model=ModelSpec.objects.get(slug="llama-3.1-70b"), tp=4,
        max_model_len=32768, kv_cache_dtype="fp8", gpu_memory_utilization=0.9,
    )  # fmt: skip
    Deployment.objects.create(
        slug="qwen-sglang", cluster=cluster, model=ModelSpec.objects.get(slug="qwen3-next-80b-a3b"), tp=2,
        engine="sglang", max_model_len=65536, gpu_memory_utilization=0.85,
    )  # fmt: skip
    # Registered before the fit checks (they would refuse it): Kimi K3 on one H200 does not fit.
    Deployment.objects.create(slug="k3-one", cluster=cluster, model=ModelSpec.objects.get(slug="kimi-k3"), tp=1)
    client.force_login(make_user("admin", "admin"))
    return client


def _page(client, path: str) -> str:
    r = client.get(path)
    assert r.status_code == 200, path
    return r.content.decode()


def _by_id(page: str, element_id: str) -> str:
    """The text of the element with ``id`` (its first span's text when it holds a byte figure)."""
    m = re.search(rf'id="{element_id}"[^>]*>(.*?)</(?:td|span)>', page, flags=re.S)
    assert m, element_id
    return html_lib.unescape(re.sub(r"<[^>]+>", "", m.group(1))).strip()


def _shown_bytes(page: str, element_id: str) -> tuple[str, int]:
    """``(shown, exact bytes)`` of the byte figure inside the element with ``id``."""
    m = re.search(rf'id="{element_id}"[^>]*>\s*<span class="bytes" title="([\d,]+) bytes[^"]*">([^<]+)</span>', page)
    assert m, element_id
    return m.group(2), int(m.group(1).replace(",", ""))


def _envelope(page: str, script_id: str) -> dict:
    m = re.search(rf'<script id="{script_id}" type="application/json">(.*?)</script>', page, flags=re.S)
    assert m, script_id
    return json.loads(m.group(1))


def _check_envelope(data: dict, utilisation: float) -> None:
    """The bar's parts add up to the GPU memory it is drawn against (the driver's H200 figure), exactly
    in bytes and to float noise in the GiB the chart reads; usable = utilisation x that."""
    exact = data["bytes"]
    assert exact["gpu"] == H200_BYTES
    assert exact["usable"] == _usable(utilisation)
    assert exact["reserve"] == H200_BYTES - _usable(utilisation)
    assert sum(exact[p] for p in PARTS) == H200_BYTES + exact["short"]
    assert data["gpu"] == pytest.approx(H200_BYTES / GIB)
    assert sum(data[p] for p in PARTS) == pytest.approx(H200_BYTES / GIB + data["short"])
    if exact["short"] == 0:
        assert sum(data[p] for p in PARTS) == pytest.approx(data["gpu"], abs=1e-9)


def test_the_catalogue_h200_reports_139_81_gib():
    assert H200_BYTES == 150_119_844_413 and H200_GIB == "139.81 GiB" and NOMINAL_GIB == "131.32 GiB"


def test_the_sku_list_and_api_show_the_driver_figure(world):
    page = _page(world, "/skus/")
    row = page.split('data-sku="h200-141gb"')[1].split("</tr>")[0]
    assert f'data-memory-bytes="{H200_BYTES}"' in row
    assert f'title="{H200_BYTES:,} bytes (binary units: 1 GiB = {GIB:,} bytes)">{H200_GIB}</span>' in row
    assert NOMINAL_GIB not in page and "HBM (GB)" not in page
    detail = world.get("/api/v1/skus/h200-141gb/").json()
    assert detail["memory_bytes"] == H200_BYTES and detail["hbm_gb"] == 141
    listed = {s["slug"]: s for s in world.get("/api/v1/skus/?page_size=100").json()["results"]}
    assert listed["h200-141gb"]["memory_bytes"] == H200_BYTES
    # A SKU without a reported figure falls back to its nominal decimal GB.
    for record in reference.sku_records():
        expected = record.get("hbm_bytes_reported") or round(record["hbm_gb"] * 1e9)
        assert listed[record["slug"]]["memory_bytes"] == expected, record["slug"]


def test_the_cluster_page_shows_the_same_memory_and_usable_per_deployment(world):
    page = _page(world, "/clusters/h200-pool/")
    assert _shown_bytes(page, "cluster-gpu-memory") == (H200_GIB, H200_BYTES)
    for slug, utilisation in (("llama-h200", 0.9), ("qwen-sglang", 0.85)):
        row = page.split(f'href="/deployments/{slug}/"')[1].split("</tr>")[0]
        usable = _usable(utilisation)
        assert f'data-usable-bytes="{usable}"' in row
        assert f'title="{usable:,} bytes (binary units: 1 GiB = {GIB:,} bytes)">{usable / GIB:.2f} GiB<' in row
    assert f"{_usable(0.9) / GIB:.2f} GiB" == "125.83 GiB"
    assert NOMINAL_GIB not in page


@pytest.mark.parametrize(("slug", "utilisation"), [("llama-h200", 0.9), ("qwen-sglang", 0.85), ("k3-one", 0.9)])
def test_the_deployment_page_and_its_envelope(world, slug, utilisation):
    page = _page(world, f"/deployments/{slug}/")
    assert _shown_bytes(page, "deployment-gpu-memory") == (H200_GIB, H200_BYTES)
    usable = _usable(utilisation)
    assert _shown_bytes(page, "deployment-usable-memory") == (f"{usable / GIB:.2f} GiB", usable)
    assert _shown_bytes(page, "envelope-gpu") == (H200_GIB, H200_BYTES)
    assert _shown_bytes(page, "envelope-usable") == (f"{usable / GIB:.2f} GiB", usable)
    _check_envelope(_envelope(page, "envelope-data"), utilisation)
    assert NOMINAL_GIB not in page


def test_the_envelope_that_does_not_fit_is_short_and_says_so(world):
    data = _envelope(_page(world, "/deployments/k3-one/"), "envelope-data")
    assert data["bytes"]["free"] == 0 and data["bytes"]["short"] > 0
    fits = _envelope(_page(world, "/deployments/llama-h200/"), "envelope-data")
    assert fits["bytes"]["short"] == 0 and fits["bytes"]["free"] > 0


def test_sglang_keeps_its_runtime_outside_the_usable_memory(world):
    """SGLang's mem_fraction_static holds weights and pools; activations and CUDA graphs live in the rest,
    so the bar's runtime part is 0 and the runtime is in the reserve, not counted twice."""
    data = _envelope(_page(world, "/deployments/qwen-sglang/"), "envelope-data")["bytes"]
    assert data["runtime"] == 0 and data["runtime_outside"] > 0
    assert data["runtime_outside"] < data["reserve"]


@pytest.mark.parametrize("utilisation", [0.9, 0.8])
def test_the_what_if_page(world, utilisation):
    page = _page(
        world,
        f"/what-if/?model=llama-3.1-70b&sku=h200-141gb&gpus=4&tp=4&gpu_memory_utilization={utilisation}",
    )
    assert _shown_bytes(page, "whatif-gpu-memory") == (H200_GIB, H200_BYTES)
    usable = _usable(utilisation)
    assert _shown_bytes(page, "whatif-usable-memory") == (f"{usable / GIB:.2f} GiB", usable)
    _check_envelope(_envelope(page, "whatif-envelope"), utilisation)
    assert NOMINAL_GIB not in page


#: A decimal memory figure: "141 GB", "1.601 TB", "80GB" (not a rate such as "4.8 TB/s").
DECIMAL_FIGURE = re.compile(r"\d[\d,.]*\s*[GT]B\b(?!/s)")

MEMORY_PAGES = [
    "/skus/",
    "/clusters/h200-pool/",
    "/deployments/llama-h200/",
    "/deployments/qwen-sglang/",
    "/deployments/k3-one/",
    "/what-if/?model=llama-3.1-70b&sku=h200-141gb&gpus=4&tp=4",
    "/what-if/?model=kimi-k3&sku=h200-141gb&gpus=16&tp=8&dp=2&ep=16",
    "/models/",
    "/models/kimi-k3/",
]


@pytest.mark.parametrize("path", MEMORY_PAGES)
def test_no_page_writes_a_decimal_memory_figure_except_a_sku_name(world, path):
    page = _page(world, path)
    main = page.split("<main>")[1].split('id="history"')[0]
    main = re.sub(r"<script.*?</script>", " ", main, flags=re.S)
    # The engine's own words (assumptions, listed as the engine wrote them) quote logs and datasheets.
    main = re.sub(r"<details><summary>Assumptions.*?</details>", " ", main, flags=re.S)
    main = re.sub(r"<h[23]>Assumptions</h[23]>\s*<ul>.*?</ul>", " ", main, flags=re.S)
    text = html_lib.unescape(main)  # titles and attributes included: exact bytes on hover are binary too
    for name in HardwareSku.objects.values_list("name", flat=True):
        text = text.replace(name, " ")
    assert not DECIMAL_FIGURE.search(text), DECIMAL_FIGURE.findall(text)
    assert "decimal units" not in text


def test_the_fleet_csv_of_models_gives_weights_in_bytes(world):
    r = world.get("/models/export.csv")
    assert r.status_code == 200
    lines = r.content.decode().splitlines()
    header = lines[0].split(",")
    assert "weights_bytes" in header and "weights_tb" not in header
    row = next(line.split(",") for line in lines[1:] if line.startswith("kimi-k3,"))
    assert int(row[header.index("weights_bytes")]) == 1_559_937_995_968  # as shipped (bf16 non-experts)
