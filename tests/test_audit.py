"""The audit trail (fleet/audit.py): who changed which record, when, each field before and after;
through the API (token auth), pages, admin and commands; never a secret, never a poll."""

from __future__ import annotations

import json
import shutil
from decimal import Decimal
from io import StringIO

import pytest
from auditlog.models import LogEntry
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from fleet.catalog_loader import CATALOG_DIR
from fleet.models import ApiPrice, Cluster, Deployment, GpuQuote, HardwareSku, Provider, Workload
from fleet.poller import run_poll_cycle
from fleet.polling.fakeserver import FakeEngineServer
from planner.models import Decision

WORKLOAD = {
    "slug": "coding-agent",
    "name": "Coding agent",
    "team": "dev-tools",
    "requests_per_day": 200000,
    "mean_prompt_tokens": 12000,
    "mean_output_tokens": 600,
    "p95_context_tokens": 64000,
    "prefix_cache_hit_rate": 0.9,
    "peak_concurrency": 256,
    "ttft_slo_ms": 2000,
    "tpot_slo_ms": 50,
}


def entries_of(model) -> list[LogEntry]:
    return list(LogEntry.objects.get_for_model(model).select_related("actor").order_by("timestamp", "id"))


@pytest.mark.django_db
def test_token_authenticated_api_writes_record_the_token_user(platform_api):
    """DRF authenticates the token after every middleware: the entry must still name the user."""
    assert platform_api.post("/api/v1/workloads/", WORKLOAD, format="json").status_code == 201
    r = platform_api.patch("/api/v1/workloads/coding-agent/", {"peak_concurrency": 300}, format="json")
    assert r.status_code == 200
    history = platform_api.get("/api/v1/workloads/coding-agent/history/").json()
    assert platform_api.delete("/api/v1/workloads/coding-agent/").status_code == 204

    created, updated, deleted = entries_of(Workload)
    for e in (created, updated, deleted):
        assert e.actor == platform_api.user and e.additional_data == {"via": "api"}
    assert created.action == LogEntry.Action.CREATE and created.changes["name"] == [None, "Coding agent"]
    assert updated.changes == {"peak_concurrency": [256, 300]}  # not the timestamps
    assert deleted.action == LogEntry.Action.DELETE and deleted.changes["slug"] == ["coding-agent", None]
    assert history["count"] == 2
    newest, oldest = history["results"]
    assert newest == {
        "id": updated.pk,
        "timestamp": newest["timestamp"],
        "action": "update",
        "actor": platform_api.user.username,
        "via": "api",
        "changes": {"peak_concurrency": [256, 300]},
    }
    assert oldest["action"] == "create" and oldest["changes"]["ttft_slo_ms"] == [None, 2000]


@pytest.mark.django_db
def test_history_is_paginated_and_readable_by_whoever_may_read_the_record(platform_api, viewer_api, client_for, sku):
    for hbm in (90, 100, 110):
        r = platform_api.patch(f"/api/v1/skus/{sku.slug}/", {"hbm_gb": hbm}, format="json")
        assert r.status_code == 200
    page = viewer_api.get(f"/api/v1/skus/{sku.slug}/history/?page_size=2").json()
    assert page["count"] == 4 and len(page["results"]) == 2 and page["next"]
    assert [e["changes"]["hbm_gb"] for e in page["results"]] == [[100, 110], [90, 100]]
    last = viewer_api.get(page["next"]).json()["results"]
    assert [e["action"] for e in last] == ["update", "create"]
    assert last[0]["actor"] == platform_api.user.username and last[1]["actor"] is None  # a fixture: no request
    assert client_for(None).get(f"/api/v1/skus/{sku.slug}/history/").status_code == 403
    assert viewer_api.get("/api/v1/skus/no-such-sku/history/").status_code == 404


@pytest.mark.django_db
def test_history_queries_do_not_grow_with_entries(platform_api, viewer_api, sku):
    def count() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert viewer_api.get(f"/api/v1/skus/{sku.slug}/history/").status_code == 200
        return len(ctx.captured_queries)

    platform_api.patch(f"/api/v1/skus/{sku.slug}/", {"hbm_gb": 81}, format="json")
    few = count()
    for hbm in range(82, 100):
        platform_api.patch(f"/api/v1/skus/{sku.slug}/", {"hbm_gb": hbm}, format="json")
    assert count() <= few  # never more (the first count read the permissions; later ones the cache)


@pytest.mark.django_db
def test_quotes_history_by_id_and_decimals_compare_by_value(finance_api, sku):
    Provider.objects.ensure("acme")
    r = finance_api.post(
        "/api/v1/gpu-quotes/",
        {"sku": sku.slug, "provider": "acme", "usd_per_gpu_hour": "2.50", "quoted_on": "2026-07-17"},
        format="json",
    )
    qid = r.json()["id"]
    finance_api.patch(f"/api/v1/gpu-quotes/{qid}/", {"usd_per_gpu_hour": "2.5"}, format="json")  # same price
    finance_api.patch(f"/api/v1/gpu-quotes/{qid}/", {"usd_per_gpu_hour": "2.10"}, format="json")
    results = finance_api.get(f"/api/v1/gpu-quotes/{qid}/history/").json()["results"]
    assert [e["action"] for e in results] == ["update", "create"]
    assert results[0]["changes"] == {"usd_per_gpu_hour": ["2.5000", "2.1000"]}
    assert results[1]["changes"]["sku"] == [None, sku.name]  # related records by name


@pytest.mark.django_db
def test_the_api_key_is_never_in_the_audit_trail(platform_api, cluster, kimi_k3):
    body = {"slug": "d2", "cluster": cluster.slug, "model": kimi_k3.slug, "tp": 8, "dp": 4, "ep": 32}
    body |= {"max_model_len": 131072, "api_key": "sk-first-key-123"}
    assert platform_api.post("/api/v1/deployments/", body, format="json").status_code == 201
    first_token = Deployment.objects.get(slug="d2").api_key_encrypted
    platform_api.patch("/api/v1/deployments/d2/", {"api_key": "sk-second-key-456"}, format="json")
    second_token = Deployment.objects.get(slug="d2").api_key_encrypted
    platform_api.patch("/api/v1/deployments/d2/", {"enabled": False}, format="json")  # the key kept
    platform_api.patch("/api/v1/deployments/d2/", {"api_key": ""}, format="json")

    stored = json.dumps(list(LogEntry.objects.values()), default=str)
    history = platform_api.get("/api/v1/deployments/d2/history/").content.decode()
    for text in (stored, history):
        for secret in ("sk-first-key-123", "sk-second-key-456", first_token, second_token):
            assert secret not in text
    results = json.loads(history)["results"][::-1]
    assert [e["changes"].get("api_key") for e in results] == [
        ["(none)", "(set)"],  # one entry for a create with its key
        ["(set)", "(set)"],  # replaced
        None,  # unchanged
        ["(set)", "(none)"],  # cleared
    ]
    assert results[2]["changes"] == {"enabled": [True, False]}


@pytest.mark.django_db
def test_polls_and_live_state_add_no_entry(cluster, llama70b):
    with FakeEngineServer("vllm") as server:
        d = Deployment(slug="live", cluster=cluster, model=llama70b, tp=4, base_url=server.url,
                       served_model_id=server.model_id)  # fmt: skip
        d.save()
        before = LogEntry.objects.count()
        run_poll_cycle()
    d.refresh_from_db()
    assert d.last_polled is not None and d.last_status == "up"
    # Live state saved through the ORM (not the poller's raw UPDATE) is not recorded either.
    d.last_status, d.last_metrics = "down", {"requests_running": 1}
    d.save()
    assert LogEntry.objects.count() == before


@pytest.mark.django_db
def test_load_catalog_twice_adds_nothing_and_a_changed_figure_is_one_entry(tmp_path):
    call_command("load_catalog", stdout=StringIO())
    first = LogEntry.objects.count()
    # SKUs, quotes, providers, models, API prices
    catalogue = HardwareSku.objects.count() + GpuQuote.objects.count() + Provider.objects.count()
    assert first == catalogue + 11 + ApiPrice.objects.count()
    call_command("load_catalog", stdout=StringIO())
    assert LogEntry.objects.count() == first
    assert {(e.actor_id, e.additional_data["via"]) for e in LogEntry.objects.all()} == {
        (None, "manage.py load_catalog")
    }

    shutil.copytree(CATALOG_DIR, tmp_path / "catalog")
    quotes = json.loads((tmp_path / "catalog" / "gpu_quotes.json").read_text())
    old = quotes[0]["usd_per_gpu_hour"]
    quotes[0]["usd_per_gpu_hour"] = 99.5
    (tmp_path / "catalog" / "gpu_quotes.json").write_text(json.dumps(quotes))
    call_command("load_catalog", "--dir", str(tmp_path / "catalog"), stdout=StringIO())
    (changed,) = LogEntry.objects.filter(action=LogEntry.Action.UPDATE)
    assert list(changed.changes) == ["usd_per_gpu_hour"]  # nothing else, though every row was saved again
    before, after = changed.changes["usd_per_gpu_hour"]
    assert Decimal(before) == Decimal(str(old)) and Decimal(after) == Decimal("99.5")


@pytest.mark.django_db
def test_page_edits_name_the_user_and_the_record_pages_show_the_history(client, make_user, sku):
    user = make_user("pat", "platform")
    client.force_login(user)
    acme = Provider.objects.ensure("acme").name
    form = {"name": "H100 pool", "slug": "h100-pool", "sku": sku.pk, "nodes": 2, "provider": acme,
            "team": "ml", "hours_per_day": "24", "status": "active"}  # fmt: skip
    assert client.post("/clusters/new/", form).status_code == 302
    assert client.post("/clusters/h100-pool/edit/", {**form, "nodes": 3}).status_code == 302
    created, updated = entries_of(Cluster)
    assert (created.actor, updated.actor) == (user, user) and updated.additional_data == {"via": "pages"}
    assert updated.changes == {"nodes": [2, 3]}

    page = client.get("/clusters/h100-pool/").content.decode()
    assert 'id="history"' in page and f'data-entry="{updated.pk}"' in page and "pat" in page
    assert client.get("/history/cluster/h100-pool/").status_code == 200
    assert client.get(f"/history/sku/{sku.slug}/").status_code == 200
    assert client.get("/history/gpu-quote/nope/").status_code == 404
    client.force_login(make_user("nobody"))
    assert client.get("/history/cluster/h100-pool/").status_code == 403


@pytest.mark.django_db
def test_admin_deletes_name_the_admin(client, make_user):
    workload = Workload.objects.create(**WORKLOAD)
    admin = make_user("root", "admin", is_staff=True, is_superuser=True)
    client.force_login(admin)
    r = client.post(f"/admin/fleet/workload/{workload.pk}/delete/", {"post": "yes"})
    assert r.status_code == 302 and not Workload.objects.exists()
    deleted = entries_of(Workload)[-1]
    assert deleted.action == LogEntry.Action.DELETE and deleted.actor == admin
    assert deleted.additional_data == {"via": "admin"}


@pytest.mark.django_db
def test_a_decision_records_who_made_it(finance_api, client, make_user):
    call_command("load_catalog", stdout=StringIO())
    Workload.objects.create(**WORKLOAD)
    body = {
        "workload": "coding-agent",
        "tier": 3,
        "note": "cheaper",
        "breakeven": {"gpus": 8, "sku": "h100-sxm-80gb", "on": "2026-08-01", "api_price": "kimi-k3-api"},
    }
    decision = finance_api.post("/api/v1/decisions/", body, format="json").json()
    (entry,) = finance_api.get(f"/api/v1/decisions/{decision['id']}/history/").json()["results"]
    assert entry["action"] == "create" and entry["actor"] == finance_api.user.username
    assert entry["changes"]["tier"] == [None, 3] and entry["changes"]["note"] == [None, "cheaper"]
    assert "figures" not in entry["changes"] and "inputs" not in entry["changes"]  # frozen on the record
    client.force_login(make_user("fin", "finance"))
    assert f"/decisions/{decision['id']}/history/" in client.get("/decisions/").content.decode()
    page = client.get(f"/decisions/{decision['id']}/history/").content.decode()
    assert finance_api.user.username in page and Decision.objects.count() == 1


@pytest.mark.django_db
def test_a_calibration_records_who_uploaded_it_without_its_log(platform_api, viewer_api):
    from pathlib import Path

    from fleet.catalog.reference import model_record, sku_record
    from fleet.models import ModelSpec

    HardwareSku.objects.create(**sku_record("h200-141gb"))
    record = model_record("qwen3-next-80b-a3b")
    ModelSpec.objects.create(**{**record, "expert_weight_format": record.get("expert_weight_format") or ""})
    log = (Path(__file__).parent / "fixtures/startup_logs/vllm-0.10.2-Qwen3-Next-80B-A3B-Instruct-tp2.log").read_text()
    created = platform_api.post("/api/v1/calibrations/", {"log": log, "sku": "h200-141gb"}, format="json").json()
    (entry,) = viewer_api.get(f"/api/v1/calibrations/{created['id']}/history/").json()["results"]
    assert entry["action"] == "create" and entry["actor"] == platform_api.user.username
    assert entry["changes"]["engine_version"] == [None, "0.10.2"]
    assert not {"log_text", "parsed", "prediction", "figures"} & set(entry["changes"])


MALFORMED_FORWARDED = ["not-an-ip", "1.2.3.4, garbage", "::::", "256.1.1.1", " , ", "unknown, 10.0.0.1x"]


@pytest.mark.django_db
@pytest.mark.parametrize("forwarded", [*MALFORMED_FORWARDED, "6.6.6.6"])
def test_a_forwarded_for_header_is_ignored_without_a_trusted_proxy(platform_api, client, make_user, sku, forwarded):
    """Issue 29: a malformed X-Forwarded-For gave a 500 (the audit address column refuses non-IP text on
    PostgreSQL) and a forged valid one was recorded as the change's origin. Without a trusted proxy the
    header is not read: the socket's address is recorded, and nothing fails."""
    r = platform_api.post(
        "/api/v1/workloads/",
        {"slug": "w1", "name": "W", "team": "t", "requests_per_day": 1, "mean_prompt_tokens": 1,
         "mean_output_tokens": 1, "p95_context_tokens": 1, "peak_concurrency": 1, "ttft_slo_ms": 1,
         "tpot_slo_ms": 1},
        format="json", HTTP_X_FORWARDED_FOR=forwarded,
    )  # fmt: skip
    assert r.status_code == 201, r.content
    client.force_login(make_user("pat", "platform"))
    page = client.post(
        "/workloads/new/",
        {"slug": "w2", "name": "W2", "team": "t", "requests_per_day": 1, "mean_prompt_tokens": 1,
         "mean_output_tokens": 1, "p95_context_tokens": 1, "prefix_cache_hit_rate": 0, "peak_concurrency": 1,
         "ttft_slo_ms": 1, "tpot_slo_ms": 1},
        HTTP_X_FORWARDED_FOR=forwarded,
    )  # fmt: skip
    assert page.status_code == 302, page.content[:500]
    addresses = {e.remote_addr for e in LogEntry.objects.filter(object_repr__in=["W", "W2"])}
    assert addresses == {"127.0.0.1"}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("forwarded", "recorded"),
    [("10.0.0.7", "10.0.0.7"), ("6.6.6.6, 10.0.0.7", "10.0.0.7"), ("6.6.6.6, [2001:db8::1]:443", "2001:db8::1"),
     ("6.6.6.6, garbage", "127.0.0.1"), ("10.0.0.7:51000", "10.0.0.7")],
)  # fmt: skip
def test_behind_one_trusted_proxy_the_address_it_appended_is_recorded(platform_api, settings, forwarded, recorded):
    """With FLEETCAP_TRUSTED_PROXIES=1 the proxy's appended address (the last entry) is the client's; what
    the client wrote before it is never read; a malformed entry falls back to the socket's address."""
    settings.TRUSTED_PROXIES = 1
    r = platform_api.post(
        "/api/v1/workloads/",
        {"slug": "w1", "name": "W", "team": "t", "requests_per_day": 1, "mean_prompt_tokens": 1,
         "mean_output_tokens": 1, "p95_context_tokens": 1, "peak_concurrency": 1, "ttft_slo_ms": 1,
         "tpot_slo_ms": 1},
        format="json", HTTP_X_FORWARDED_FOR=forwarded,
    )  # fmt: skip
    assert r.status_code == 201, r.content
    assert LogEntry.objects.get(object_repr="W").remote_addr == recorded
