"""Issue 24, "One capacity per deployment": the SGLang hybrid of the issue (Kimi K3 on 2 x 8 H200, tp 8 x
pp 2, ep 8, fp8 KV, max_model_len 262,144) shows one admitted concurrency at 262,144 tokens on every
surface: the deployment page (header, headroom bar, curve, its table), the cluster and fleet pages, the
fleet CSV, the deployments API, ``/metrics``, ``/estimate/``, ``/route/`` and the prefix-cache API; its
curve never rises above what SGLang's state pool lets run and stops at max_model_len.

The expected figures are not read back from the surface under test: the admitted count is worked out
here from the engine's published pool sizes (token pool / tokens per request, state slots / slots per
request: SGLang's own rules, sglang/srt ``init_memory_pool`` and ``handle_max_mamba_cache``), and the
state-pool cap is the one the engine's own assumption states ("so at most N running requests")."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import date, timedelta
from io import StringIO

import pytest
from api_keys import api_key
from django.core.management import call_command
from django.utils import timezone

from fleet.models import Cluster, Deployment, HardwareSku, ModelSpec, Provider
from planner.snapshots import refresh_snapshots

pytestmark = pytest.mark.django_db

CONTEXT = 262_144
SLUG = "k3-sglang"


@pytest.fixture
def world(client, make_user):
    call_command("load_catalog", stdout=StringIO())
    cluster = Cluster(
        slug="h200-2x8", name="H200 2 x 8", sku=HardwareSku.objects.get(slug="h200-141gb"), nodes=2,
        provider=Provider.objects.ensure("CoreWeave"), team="platform",
    )  # fmt: skip
    cluster.save(effective_from=date(2026, 7, 1))
    d = Deployment.objects.create(
        slug=SLUG, cluster=cluster, model=ModelSpec.objects.get(slug="kimi-k3"), tp=8, pp=2, dp=1, ep=8,
        engine="sglang", kv_cache_dtype="fp8", max_model_len=CONTEXT, served_model_id="moonshotai/Kimi-K3",
        last_status="up", last_polled=timezone.now() - timedelta(seconds=5),
        last_metrics={"requests_running": 0.0, "requests_waiting": 0.0},
    )  # fmt: skip
    refresh_snapshots([d.pk])
    user = make_user("admin", "admin")
    client.force_login(user)
    return {"client": client, "deployment": Deployment.objects.get(pk=d.pk), "user": user}


def _expected(d: Deployment) -> tuple[int, int]:
    """``(admitted at max_model_len, state-pool cap)`` from the engine's pool sizes and its own statement."""
    result = d.sizing()
    alloc = result.allocation
    per_request = next(g.extra_blocks + 1 for g in alloc.groups if g.pool == "state")
    stated = next(a for a in result.assumptions if a.startswith("State pool:"))
    cap = int(re.search(r"so at most ([\d,]+) running requests", stated).group(1).replace(",", ""))
    assert cap == alloc.state_slots // per_request  # the statement is the rule it names
    by_tokens = alloc.kv_cache_tokens // CONTEXT  # page size 1 on Hopper (FA3): a request holds L tokens
    return min(by_tokens, cap), cap


def _bar_admitted(page: str, slug: str) -> int:
    (value,) = re.findall(rf'data-deployment="{slug}" data-admitted="(\d+)"', page)
    return int(value)


def test_one_admitted_concurrency_at_max_model_len_everywhere(world):
    client, d = world["client"], world["deployment"]
    admitted, cap = _expected(d)
    assert 1 <= admitted <= cap

    page = client.get(f"/deployments/{SLUG}/").content.decode()
    assert re.search(r'id="admitted">([\d,]+)<', page).group(1).replace(",", "") == str(admitted)
    assert _bar_admitted(page, SLUG) == admitted
    curve = json.loads(re.search(r'<script id="curve-data" type="application/json">(.*?)</script>', page).group(1))
    assert curve[-1] == {"context": CONTEXT, "sequences": admitted}
    # Nothing drawn past max_model_len, nothing above the state pool's cap, and the curve falls as context grows.
    assert all(p["context"] <= CONTEXT for p in curve)
    assert all(p["sequences"] <= cap for p in curve)
    assert curve[0]["sequences"] == cap  # at 1,024 tokens the state pool, not the cache, is the limit
    assert [p["sequences"] for p in curve] == sorted((p["sequences"] for p in curve), reverse=True)
    table = page.split('id="capacity-curve"')[1].split("</table>")[0]
    assert re.findall(r'<td class="num">([\d,]+)</td><td class="num">([\d,]+)</td>', table)[-1] == (
        f"{CONTEXT:,}",
        f"{admitted:,}",
    )

    for path in (f"/clusters/{d.cluster.slug}/", "/"):
        assert _bar_admitted(client.get(path).content.decode(), SLUG) == admitted, path
    (row,) = [r for r in csv.DictReader(io.StringIO(client.get("/fleet.csv").content.decode())) if r["deployment"]]
    assert int(row["predicted_capacity"]) == admitted

    bearer = {"HTTP_AUTHORIZATION": f"Bearer {api_key(world['user'])}"}
    body = client.get("/api/v1/deployments/", **bearer).json()["results"][0]
    figures = body["capacity"]["figures"]
    assert figures["capacity_sequences"] == admitted and figures["capacity_curve"][-1]["sequences"] == admitted
    metrics = client.get("/metrics", **bearer).content.decode()
    (sample,) = re.findall(
        rf'fleetcap_deployment_capacity_sequences\{{[^}}]*deployment="{SLUG}"[^}}]*\}} (\S+)', metrics
    )
    assert float(sample) == admitted

    # The throughput model's memory limit for the deployment at max_model_len: its engine's admission.
    r = client.post(
        "/api/v1/estimate/", {"deployment": SLUG, "context_tokens": CONTEXT}, content_type="application/json", **bearer
    )
    assert r.status_code == 200, r.content
    assert r.json()["memory_limit"] * d.replicas == admitted

    # The router at a request of max_model_len tokens: headroom = admitted (nothing running or waiting).
    request = {"model": "kimi-k3", "context_tokens": CONTEXT, "prompt_tokens": CONTEXT - 1024, "output_tokens": 1024}
    r = client.post("/api/v1/route/", request, content_type="application/json", **bearer)
    assert r.status_code == 200, r.content
    (dest,) = [x for x in r.json()["destinations"] if x["slug"] == SLUG]
    assert dest["headroom_sequences"] == admitted, dest

    # The prefix-cache analysis of the same serving settings: SGLang's own mode admits as many per replica.
    r = client.post(
        "/api/v1/prefix-cache/",
        {"model": "kimi-k3", "sku": "h200-141gb", "engine": "sglang", "tp": 8, "pp": 2, "ep": 8,
         "kv_cache_dtype": "fp8", "context_tokens": CONTEXT},
        content_type="application/json", **bearer,
    )  # fmt: skip
    assert r.status_code == 200, r.content
    result = r.json()
    (mode,) = [m for m in result["modes"] if m["mode"] == result["cache_mode"]]
    assert mode["sequences_per_replica"] * d.replicas == admitted
    # The prefix-cache page started from the deployment (its link) analyses the same serving settings.
    page = client.get(f"/deployments/{SLUG}/").content.decode()
    link = re.search(r'href="([^"]+)" id="prefix-cache-link"', page).group(1)
    analysed = client.get(link.replace("&amp;", "&")).content.decode()
    chosen = re.search(r'<tr data-mode="[^"]+" data-sequences="(\d+)" class="chosen">', analysed)
    assert chosen and int(chosen.group(1)) * d.replicas == admitted


def test_a_context_past_max_model_len_is_refused_not_sized(world):
    """The engine refuses requests longer than max_model_len: sizing one is a field error, not a count."""
    client = world["client"]  # Kimi K3's own maximum is 1,048,576 tokens: only max_model_len refuses 524,288
    r = client.post(
        "/api/v1/sizing/", {"deployment": SLUG, "context_tokens": CONTEXT * 2}, content_type="application/json"
    )
    assert r.status_code == 400, r.content
    (message,) = r.json()["context_tokens"]
    assert "max_model_len (262,144 tokens)" in message and "refuses" in message
