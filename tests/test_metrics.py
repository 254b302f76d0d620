"""``GET /metrics``: our figures in the Prometheus text format, parsed back with prometheus-client's
parser and checked against the services they come from and hand numbers; who may read them; that it
costs a fixed number of queries; and the Grafana dashboard in docs/grafana/."""

from __future__ import annotations

import json
import logging
import re
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from api_keys import api_key
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from fleet.models import Cluster, Deployment, GpuQuote, Provider
from planner.breakeven import BreakevenRequest, compare
from planner.corrections import latest_for, latest_for_many, serving_of
from planner.models import Calibration, SpeedCorrection
from planner.snapshots import refresh_snapshots

ROOT = Path(__file__).resolve().parent.parent
DASHBOARD = ROOT / "docs" / "grafana" / "fleetcap.json"
VLLM_SAMPLES = [
    ROOT / "tests" / "polling" / "fixtures" / name
    for name in ("vllm-v1-metrics.txt", "vllm-early-v1-metrics.txt", "vllm-v1-dp2-metrics.txt")
]
API_KEY = "sk-secret-do-not-leak-0123456789"  # the conftest deployment's stored endpoint key


def parse(text: str) -> dict[str, list]:
    """``{family name: [samples]}`` as prometheus-client's parser reads the page."""
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def value(families: dict, name: str, **labels: str) -> float:
    found = [s.value for s in families[name] if all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(found) == 1, (name, labels, families.get(name))
    return found[0]


def bearer(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key(user)}")
    return client


@pytest.fixture
def quotes(sku):
    """acme (the clusters' provider) at 2.50 and a cheaper quote from another provider at 2.00, both in
    force all month: the clusters pay acme's (issue 24: one price in force, on every page and here)."""
    start = date(2026, 1, 1)
    GpuQuote.objects.create(
        sku=sku, provider=Provider.objects.ensure("acme"), usd_per_gpu_hour=Decimal("2.50"), quoted_on=start
    )
    GpuQuote.objects.create(
        sku=sku, provider=Provider.objects.ensure("bargain"), usd_per_gpu_hour=Decimal("2.00"), quoted_on=start
    )


@pytest.fixture
def fleet(deployment, sku, llama70b, quotes):
    """The conftest's Kimi K3 on SGLang (h100-pool: 4 nodes, 32 GPUs, from today) and Llama 3.1 70B
    on vLLM (2 replicas of tp 4 = 8 GPUs) on a one-node cluster billed since the 1st of the month."""
    today = timezone.now().date()
    small = Cluster(
        slug="h100-small", name="H100 small", sku=sku, nodes=1, provider=Provider.objects.ensure("acme"), team="search"
    )
    small.save(effective_from=today.replace(day=1))
    llama = Deployment.objects.create(
        slug="llama-vllm", cluster=small, model=llama70b, replicas=2, tp=4, engine="vllm", max_model_len=32768,
        served_model_id="meta-llama/Llama-3.1-70B-Instruct",
    )  # fmt: skip
    return {"k3": deployment, "llama": llama, "small": small, "today": today}


@pytest.fixture
def viewer(make_user):
    return make_user("prometheus", "viewer")


def scrape(client: APIClient, refresh: bool = True) -> dict:
    """``/metrics`` parsed; with ``refresh``, after the worker's recomputation of every capacity snapshot
    (``planner.snapshots.refresh_snapshots``, what ``planner.refresh_answers`` runs): /metrics only reads."""
    if refresh:
        refresh_snapshots()
    response = client.get("/metrics")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    return parse(response.content.decode())


def test_capacity_and_engine_figures_equal_the_sizing_engine(fleet, viewer):
    families = scrape(bearer(viewer))
    for key in ("k3", "llama"):
        d = Deployment.objects.select_related("cluster__sku", "model").get(pk=fleet[key].pk)
        sized = d.sizing()
        labels = {"deployment": d.slug, "cluster": d.cluster.slug, "model": d.model.slug, "sku": "h100-sxm-80gb"}
        assert value(families, "fleetcap_deployment_capacity_sequences", **labels) == sized.max_concurrent_sequences
        assert value(families, "fleetcap_deployment_kv_cache_tokens", **labels) == sized.engine_kv_cache_tokens
        assert value(families, "fleetcap_deployment_max_concurrency", **labels) == pytest.approx(
            sized.engine_max_concurrency
        )
        assert value(families, "fleetcap_deployment_fits", **labels) == int(sized.fits)
        assert value(families, "fleetcap_deployment_gpu_blocks", **labels) == sized.engine_num_blocks
    llama = {"deployment": "llama-vllm"}
    assert value(families, "fleetcap_deployment_planning_context_tokens", **llama) == 32768
    assert value(families, "fleetcap_deployment_gpus", **llama) == 8
    assert value(families, "fleetcap_deployment_gpus", deployment="k3-prod") == 32
    # The info series names the engine and the served model id (vLLM's model_name label).
    info = {s.labels["deployment"]: s.labels for s in families["fleetcap_deployment_info"]}
    assert info["llama-vllm"]["engine"] == "vllm" and info["k3-prod"]["engine"] == "sglang"
    assert info["llama-vllm"]["served_model_id"] == "meta-llama/Llama-3.1-70B-Instruct"


def test_headroom_and_last_poll_checks_come_from_the_last_poll(fleet, viewer):
    llama = fleet["llama"]
    capacity = llama.sizing().max_concurrent_sequences
    polled = timezone.now().replace(microsecond=0)
    llama.last_status, llama.last_polled = "up", polled
    llama.last_metrics = {
        "requests_running": 10.0,
        "observed_cache_tokens": 900,
        "predicted_cache_tokens": 1000,
        "observed_num_blocks": 1940,
        "predicted_num_blocks": 2000,
        "observed_block_size": 16,
        "predicted_block_size": 16,
    }
    llama.save()
    families = scrape(bearer(viewer))
    one = {"deployment": "llama-vllm"}
    assert value(families, "fleetcap_deployment_requests_running", **one) == 10
    assert value(families, "fleetcap_deployment_headroom_sequences", **one) == capacity - 10
    assert value(families, "fleetcap_deployment_headroom_used_ratio", **one) == pytest.approx(10 / capacity)
    assert value(families, "fleetcap_deployment_kv_cache_calibration_ratio", **one) == pytest.approx(0.9)
    assert value(families, "fleetcap_deployment_block_ratio", dimension="num_gpu_blocks", **one) == pytest.approx(0.97)
    assert value(families, "fleetcap_deployment_block_ratio", dimension="block_size", **one) == 1.0
    assert value(families, "fleetcap_deployment_up", **one) == 1
    assert value(families, "fleetcap_deployment_last_poll_timestamp_seconds", **one) == polled.timestamp()
    # Never polled: no reading, so no load, used ratio, up or ratio series (absent, not 0); its
    # headroom is its whole capacity, as the fleet page shows it.
    for name in ("requests_running", "headroom_used_ratio", "up", "kv_cache_calibration_ratio"):
        assert "k3-prod" not in {s.labels["deployment"] for s in families[f"fleetcap_deployment_{name}"]}
    k3 = {"deployment": "k3-prod"}
    assert value(families, "fleetcap_deployment_headroom_sequences", **k3) == value(
        families, "fleetcap_deployment_capacity_sequences", **k3
    )


def test_cost_is_rent_vs_apis_and_spend_is_the_month_so_far(fleet, viewer):
    families = scrape(bearer(viewer))
    one = {"deployment": "llama-vllm"}
    # 8 GPUs at their cluster's price in force, acme's 2.50 (never bargain's 2.00): 20 USD an hour, the
    # rate spend charges the same cluster below.
    assert value(families, "fleetcap_deployment_gpu_price_usd_per_gpu_hour", **one) == 2.5
    assert value(families, "fleetcap_deployment_cost_usd_per_hour", **one) == 20.0
    assert value(families, "fleetcap_deployment_cost_usd_per_hour", deployment="k3-prod") == 80.0
    # Cost per million output tokens: the rent-vs-API comparison of the same deployment.
    rent_vs_api = compare(
        BreakevenRequest(
            deployment="llama-vllm", api_price=None, input_cache_hit_usd_per_mtok=Decimal("0.1"),
            input_cache_miss_usd_per_mtok=Decimal("1"), output_usd_per_mtok=Decimal("4"),
            monthly_input_tokens=10**9, monthly_output_tokens=10**8,
        )
    ).figures  # fmt: skip
    economics = rent_vs_api["unit_economics"]
    assert value(families, "fleetcap_deployment_cost_usd_per_million_output_tokens", **one) == pytest.approx(
        float(economics["cost_per_mtok_output_usd"]), rel=1e-9
    )
    tokens_per_s = value(families, "fleetcap_deployment_output_tokens_per_second", **one)
    assert tokens_per_s == pytest.approx(fleet["llama"].throughput().tokens_per_s_replica * 2)
    assert value(families, "fleetcap_deployment_cost_usd_per_million_output_tokens", **one) == pytest.approx(
        20 / (tokens_per_s * 3600) * 1e6, abs=5e-5
    )  # (rounded to 4 decimals, as rent vs API shows it)
    # Spend at the clusters' own provider's quote (2.50), whole days through today.
    today = fleet["today"]
    small = {"cluster": "h100-small", "sku": "h100-sxm-80gb", "team": "search", "provider": "acme"}
    assert value(families, "fleetcap_cluster_gpus", **small) == 8
    assert value(families, "fleetcap_cluster_gpu_hours_month_to_date", **small) == 8 * 24 * today.day
    assert value(families, "fleetcap_cluster_spend_month_to_date_usd", **small) == 8 * 24 * today.day * 2.5
    pool = {"cluster": "h100-pool", "team": "platform", "provider": "acme"}
    assert value(families, "fleetcap_cluster_gpus", **pool) == 32
    assert value(families, "fleetcap_cluster_spend_month_to_date_usd", **pool) == 32 * 24 * 2.5  # since today
    assert value(families, "fleetcap_spend_ok") == 1


def test_a_cluster_without_a_quote_this_month_has_no_spend_figure_the_others_do(fleet, viewer, sku):
    mi = sku
    mi.pk, mi.slug = None, "unquoted-sku"  # a copy of the SKU without any quote
    mi.save()
    Cluster(slug="amd", name="AMD", sku=mi, nodes=1, provider=Provider.objects.ensure("acme"), team="t").save(
        effective_from=fleet["today"].replace(day=1)
    )
    families = scrape(bearer(viewer))
    assert value(families, "fleetcap_spend_ok") == 0
    spent = {s.labels["cluster"] for s in families["fleetcap_cluster_spend_month_to_date_usd"]}
    assert "amd" not in spent and "h100-small" in spent  # no partial sum passed off as the month so far


def test_without_any_quote_the_spend_and_cost_are_left_out_not_the_page(deployment, viewer):
    families = scrape(bearer(viewer))
    assert value(families, "fleetcap_spend_ok") == 0
    assert families["fleetcap_cluster_spend_month_to_date_usd"] == []
    assert families["fleetcap_deployment_cost_usd_per_hour"] == []
    assert value(families, "fleetcap_deployment_capacity_sequences", deployment="k3-prod") == (
        deployment.sizing().max_concurrent_sequences
    )
    assert value(families, "fleetcap_deployment_gpus", deployment="k3-prod") == 32


def test_a_deployment_that_does_not_fit_serves_nothing_as_rent_vs_api_says(fleet, viewer):
    """Kimi K3 on 32 H100s does not fit memory: no output rate and no cost per million tokens (rent vs
    API gives it no unit economics either), but its GPUs still cost 32 x 2.50 an hour."""
    k3 = fleet["k3"]
    assert not k3.sizing().fits
    families = scrape(bearer(viewer))
    assert value(families, "fleetcap_deployment_fits", deployment="k3-prod") == 0
    assert value(families, "fleetcap_deployment_cost_usd_per_hour", deployment="k3-prod") == 80.0
    for name in ("output_tokens_per_second", "cost_usd_per_million_output_tokens"):
        assert {s.labels["deployment"] for s in families[f"fleetcap_deployment_{name}"]} == {"llama-vllm"}
    prices = {"input_cache_hit_usd_per_mtok": Decimal("0.1"), "input_cache_miss_usd_per_mtok": Decimal("1"),
              "output_usd_per_mtok": Decimal("4")}  # fmt: skip
    request = BreakevenRequest(deployment="k3-prod", monthly_input_tokens=10**9, monthly_output_tokens=10**8, **prices)
    assert compare(request).figures["unit_economics"] is None


def test_speed_correction_and_startup_calibration_ratios(fleet, viewer):
    llama, now = fleet["llama"], timezone.now()
    fit = {"window_hours": 24, "polls": 40, "decode_samples": 30, "prefill_samples": 20, "prefill_factor": 0.9}
    SpeedCorrection.objects.create(
        deployment=llama, fitted_at=now - timedelta(hours=1), decode_factor=1.25, serving=serving_of(llama), **fit
    )
    # A newer fit for other serving settings (another layout) is not applied: nothing for k3-prod.
    SpeedCorrection.objects.create(
        deployment=fleet["k3"], fitted_at=now - timedelta(minutes=5), decode_factor=2, serving={"tp": 99}, **fit
    )
    Calibration.objects.create(
        deployment=llama, measured_on=fleet["today"], engine="vllm",
        figures=[{"name": "kv_cache_tokens", "ratio": 0.98}, {"name": "num_gpu_blocks", "ratio": None}],
    )  # fmt: skip
    families = scrape(bearer(viewer))
    one = {"deployment": "llama-vllm"}
    assert value(families, "fleetcap_deployment_speed_correction_factor", phase="decode", **one) == 1.25
    assert value(families, "fleetcap_deployment_speed_correction_factor", phase="prefill", **one) == 0.9
    assert value(families, "fleetcap_deployment_speed_correction_age_seconds", **one) == pytest.approx(3600, abs=60)
    assert {s.labels["deployment"] for s in families["fleetcap_deployment_speed_correction_factor"]} == {"llama-vllm"}
    assert value(families, "fleetcap_deployment_startup_calibration_ratio", figure="kv_cache_tokens", **one) == 0.98
    assert len(families["fleetcap_deployment_startup_calibration_ratio"]) == 1  # a figure without a ratio: none


def test_metrics_read_the_stored_snapshot_and_say_when_it_is_not_current(fleet, viewer):
    """Before any worker ran: no predicted figures (absent, not 0) and the snapshot flagged not current;
    after: the figures and a current snapshot; after a change to the deployment: still the stored figures,
    flagged not current until the worker has recomputed them."""
    client = bearer(viewer)
    families = scrape(client, refresh=False)
    one = {"deployment": "llama-vllm"}
    assert value(families, "fleetcap_deployment_capacity_snapshot_current", **one) == 0
    assert "llama-vllm" not in {s.labels["deployment"] for s in families["fleetcap_deployment_capacity_sequences"]}
    families = scrape(client)
    assert value(families, "fleetcap_deployment_capacity_snapshot_current", **one) == 1
    capacity = value(families, "fleetcap_deployment_capacity_sequences", **one)
    llama = fleet["llama"]
    llama.gpu_memory_utilization = 0.8
    llama.save()
    families = scrape(client, refresh=False)
    assert value(families, "fleetcap_deployment_capacity_snapshot_current", **one) == 0
    assert value(families, "fleetcap_deployment_capacity_sequences", **one) == capacity  # the stored one
    families = scrape(client)
    assert value(families, "fleetcap_deployment_capacity_snapshot_current", **one) == 1
    assert value(families, "fleetcap_deployment_capacity_sequences", **one) == llama.sizing().max_concurrent_sequences
    assert llama.sizing().max_concurrent_sequences < capacity


def test_latest_for_many_agrees_with_latest_for(fleet):
    llama, k3, now = fleet["llama"], fleet["k3"], timezone.now()
    fit = {"window_hours": 24, "polls": 40, "decode_samples": 30, "prefill_samples": 0, "prefill_factor": 1}
    SpeedCorrection.objects.create(deployment=llama, fitted_at=now - timedelta(hours=3), decode_factor=1.1,
                                   serving=serving_of(llama), **fit)  # fmt: skip
    newest = SpeedCorrection.objects.create(deployment=llama, fitted_at=now - timedelta(hours=1), decode_factor=1.2,
                                            serving=serving_of(llama), **fit)  # fmt: skip
    SpeedCorrection.objects.create(deployment=k3, fitted_at=now - timedelta(days=30), decode_factor=1.3,
                                   serving=serving_of(k3), **fit)  # fmt: skip
    many = latest_for_many([llama, k3], now)
    assert many == {llama.pk: newest}
    assert latest_for(llama, now) == newest and latest_for(k3, now) is None


def test_bearer_token_is_required_and_checked(fleet, viewer, client):
    assert client.get("/metrics").status_code == 401
    response = APIClient().get("/metrics", HTTP_AUTHORIZATION="Bearer not-a-token")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"
    key = api_key(viewer)
    # A scrape config sends Bearer; DRF's own "Token" names the same token (one scheme everywhere, issue 27).
    assert APIClient().get("/metrics", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
    assert APIClient().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {key}").status_code == 200
    assert APIClient().get("/metrics", HTTP_AUTHORIZATION=f"Basic {key}").status_code == 401


def test_prometheus_accept_header_gets_the_text_format(deployment, viewer):
    """What Prometheus 2 and 3 send: OpenMetrics first, the text format next, anything last."""
    accept = (
        "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
        "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
    )
    response = bearer(viewer).get("/metrics", HTTP_ACCEPT=accept)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    assert "fleetcap_deployment_info" in parse(response.content.decode())


def test_without_the_view_permissions_403(fleet, make_user):
    assert bearer(make_user("no-role")).get("/metrics").status_code == 403
    for role in ("viewer", "finance", "platform", "admin"):
        assert bearer(make_user(f"scraper-{role}", role)).get("/metrics").status_code == 200


def test_no_secret_in_the_output_or_the_logs(fleet, viewer, caplog):
    key = api_key(viewer)
    with caplog.at_level(logging.DEBUG):
        ok = APIClient().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {key}")
        bad = APIClient().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {key[:-1]}x")
    assert ok.status_code == 200 and bad.status_code == 401
    for body in (ok.content.decode(), bad.content.decode()):
        assert API_KEY not in body and key not in body and key[:-1] not in body
        assert "127.0.0.1:30000" not in body  # nor the endpoints' addresses
    assert key[:12] not in caplog.text and API_KEY not in caplog.text


def test_queries_do_not_grow_with_the_fleet(fleet, viewer, llama70b, django_assert_max_num_queries):
    client = bearer(viewer)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/metrics").status_code == 200
        return len(captured)

    few = queries()
    small = fleet["small"]
    Deployment.objects.bulk_create(
        Deployment(slug=f"llama-{i}", cluster=small, model=llama70b, tp=4, engine="vllm", max_model_len=8192)
        for i in range(48)
    )
    Cluster.objects.bulk_create(
        Cluster(
            slug=f"extra-{i}",
            name=f"extra {i}",
            sku=small.sku,
            provider=Provider.objects.ensure("acme"),
            team="t",
            gpus_per_node=8,
        )
        for i in range(10)
    )
    assert Deployment.objects.count() == 50
    assert queries() <= few  # one query per kind of record, whatever the fleet's size (permissions cached)
    with django_assert_max_num_queries(12):
        assert client.get("/metrics").status_code == 200


# The dashboard ------------------------------------------------------------------------------------

METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
PROMQL_WORDS = {
    "sum", "avg", "max", "min", "count", "by", "without", "on", "ignoring", "group_left", "group_right",
    "label_replace", "rate", "increase", "irate", "max_over_time", "avg_over_time", "vector", "scalar",
    "and", "or", "unless", "bool", "offset", "clamp_min", "clamp_max", "time", "topk", "sort_desc", "abs",
}  # fmt: skip


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def our_metric_names() -> set[str]:
    return set(parse(exposition_of_empty_fleet()))


def vllm_metric_names() -> set[str]:
    names = set()
    for path in VLLM_SAMPLES:
        for family in text_string_to_metric_families(path.read_text()):
            names |= {s.name for s in family.samples} | {family.name}
    return names


def exposition_of_empty_fleet() -> str:
    """Every family is emitted (empty ones with HELP and TYPE), so the names need no fleet."""
    from planner.metrics import FleetFigures, exposition

    return exposition(FleetFigures(deployments=[], clusters=[])).decode()


def selectors(expr: str) -> set[str]:
    """Metric names an expression selects (label matchers, strings, durations and functions removed)."""
    stripped = re.sub(r"label_values\(\s*([^,)]+)(,[^)]*)?\)", r"\1", expr)  # a template variable's query
    stripped = re.sub(r'"[^"]*"', '""', stripped)
    stripped = re.sub(r"\{[^}]*\}", "", stripped)
    stripped = re.sub(r"\[[^\]]*\]", "", stripped)
    stripped = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", stripped)
    names = set()
    for m in METRIC_NAME.finditer(stripped):
        word = m.group(0)
        rest = stripped[m.end() :].lstrip()
        if word in PROMQL_WORDS or rest.startswith("(") or word.startswith("$") or stripped[m.start() - 1] == "$":
            continue
        if re.fullmatch(r"\d.*|e\d+", word):
            continue
        names.add(word)
    return names


def test_dashboard_is_grafana_dashboard_json():
    d = dashboard()
    assert d["title"] and re.fullmatch(r"[a-zA-Z0-9_-]{1,40}", d["uid"])
    assert isinstance(d["schemaVersion"], int) and d["schemaVersion"] >= 36
    inputs = {i["name"]: i for i in d["__inputs"]}
    assert inputs["DS_PROMETHEUS"]["type"] == "datasource" and inputs["DS_PROMETHEUS"]["pluginId"] == "prometheus"
    variables = {v["name"]: v for v in d["templating"]["list"]}
    assert variables["deployment"]["type"] == "query"
    assert variables["deployment"]["datasource"] == {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
    panels = [p for p in d["panels"] if p["type"] != "row"]
    assert len(panels) >= 10
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))
    for panel in panels:
        assert panel["type"] in {"timeseries", "stat", "table", "gauge", "bargauge", "text"}, panel["title"]
        assert set(panel["gridPos"]) == {"h", "w", "x", "y"} and 0 <= panel["gridPos"]["x"] < 24
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        if panel["type"] == "text":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["refId"] and target["expr"].strip()


def test_dashboard_queries_name_only_metrics_that_exist():
    ours, vllm = our_metric_names(), vllm_metric_names()
    d = dashboard()
    exprs = [t["expr"] for p in d["panels"] for t in p.get("targets", [])]
    exprs += [v["query"]["query"] if isinstance(v["query"], dict) else v["query"] for v in d["templating"]["list"]
              if v["type"] == "query"]  # fmt: skip
    used = set().union(*(selectors(e) for e in exprs))
    assert used, exprs
    assert used <= ours | vllm, used - ours - vllm
    # Ours beside vLLM's own: the capacity and KV panels read both.
    assert {"fleetcap_deployment_capacity_sequences", "vllm:num_requests_running"} <= used
    assert {"fleetcap_deployment_gpu_blocks", "vllm:cache_config_info"} <= used
    assert {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"} <= used
    for name in ("headroom_sequences", "kv_cache_calibration_ratio", "cost_usd_per_hour",
                 "cost_usd_per_million_output_tokens", "speed_correction_factor"):  # fmt: skip
        assert f"fleetcap_deployment_{name}" in used
    assert {"fleetcap_cluster_gpus", "fleetcap_cluster_spend_month_to_date_usd"} <= used


def test_selectors_reads_metric_names_from_promql():
    expr = 'sum by (deployment) (rate(vllm:prompt_tokens_total{deployment=~"$deployment"}[5m])) / on(deployment) fleetcap_deployment_gpus'  # noqa: E501
    assert selectors(expr) == {"vllm:prompt_tokens_total", "fleetcap_deployment_gpus"}
    assert selectors('label_replace(x_y{a="b"}, "n", "$1", "l", "(.*)") * 100') == {"x_y"}
    assert selectors("label_values(fleetcap_deployment_info, deployment)") == {"fleetcap_deployment_info"}


def test_the_command_prints_the_same_families_and_writes_a_file(fleet, tmp_path):
    from io import StringIO

    from django.core.management import call_command

    refresh_snapshots()  # what a worker has done (the command reads, as /metrics does)
    out = StringIO()
    call_command("metrics", stdout=out)
    families = parse(out.getvalue())
    assert value(families, "fleetcap_deployment_cost_usd_per_hour", deployment="llama-vllm") == 20.0
    target = tmp_path / "fleetcap.prom"
    call_command("metrics", output=str(target))
    assert parse(target.read_text()).keys() == families.keys()
    assert [p.name for p in tmp_path.iterdir()] == ["fleetcap.prom"]  # no temporary file left
