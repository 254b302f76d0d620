"""The API's examples are real requests (issue 27): every operation of the schema has one call here, made
against one world (Kimi K3 on 16 H200s serving a coding agent, the catalogue beside it), and what the call
sent and got back is what ``/api/v1/schema/`` shows as that operation's examples (``fleet/api/examples.json``,
attached by ``fleet.api.schema.attach_examples``).

Each call runs in its own rolled-back transaction (a Django ``TestCase`` method per operation) and checks
that it still answers as recorded: the same status, the same request (dates aside: they are relative to
today) and a response of the same shape (every key at every depth). An example that stops working, or an
operation without one, fails CI. ``FLEETCAP_RECORD_EXAMPLES=1`` re-records the file from these calls (docs/api.md,
"Examples"); lists of records in the recorded answers keep their first three items.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from io import StringIO
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import TestCase, override_settings
from django.utils import timezone
from focus_bills import focus_csv
from rest_framework.test import APIClient

from fleet.api.schema import EXAMPLES_FILE, load_examples

RECORD = os.environ.get("FLEETCAP_RECORD_EXAMPLES") == "1"
BILL_DIR = tempfile.mkdtemp(prefix="fleetcap-example-bills-")
K2_LOG = (
    "(Worker_TP0 pid=591236) INFO 11-06 12:08:54 [gpu_worker.py:349] Available KV cache memory: 46.80 GiB\n"
    "(EngineCore_DP0 pid=591074) INFO 11-06 12:08:55 [kv_cache_utils.py:1229] GPU KV cache size: 715,072 tokens\n"
)  # tests/fixtures/startup_logs/vllm-0.11.1-Kimi-K2-Thinking-tp8.log, vLLM's recipe for Kimi K2 Thinking on 8 H200s


def day(offset: int) -> str:
    """Today plus ``offset`` days, ISO: the world's dates are relative to the day the tests run."""
    return (timezone.now().date() + timedelta(days=offset)).isoformat()


def month(offset: int = 0) -> str:
    """This month plus ``offset`` months, ``YYYY-MM``."""
    today = timezone.now().date()
    index = today.year * 12 + today.month - 1 + offset
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


@dataclass
class World:
    """What the calls name: slugs are fixed, ids are the rows ``build`` made."""

    ids: dict[str, int] = field(default_factory=dict)
    key: str = ""  # the procurement script's API token


def bill_csv() -> bytes:
    """Last month's FOCUS 1.2 bill of the rented H200s: two usage rows matched to ``h200-agents`` (by resource
    id and by tag), a credit, and a row of another team's instance that matches no cluster."""
    start, end = month(-1) + "-01", month(0) + "-01"

    def row(cost: str, **extra: Any) -> dict[str, Any]:
        return {
            "BilledCost": cost, "EffectiveCost": cost, "ListCost": cost, "ContractedCost": cost,
            "BillingPeriodStart": start, "BillingPeriodEnd": end, "ChargePeriodStart": start,
            "ChargePeriodEnd": end, "ConsumedQuantity": "720", "SkuId": "h200-141gb-x8", **extra,
        }  # fmt: skip

    return focus_csv(
        [
            row("18432.00", ResourceId="arn:acme:compute:eu-west:42:instance/h200-agents"),
            row("18432.00", ResourceId="i-0a1b2c", Tags={"fleetcap-cluster": "h200-agents"}),
            row("-1200.00", ChargeCategory="Credit", ResourceId="h200-agents"),
            row("310.50", ResourceId="i-0ffbeat", Tags={"team": "research"}),
        ]
    )


def build_world() -> World:
    """The catalogue; the coding agent; ``h200-agents`` (2 nodes of H200, rented from acme at 3.20 USD per
    GPU-hour) with ``k3-agent`` (Kimi K3 at tp 8, dp 2, ep 16 on vLLM); ``h200-burst`` (4 nodes, for a
    plan's layout); ``h200-owned`` (bought: costs, a purchase, its site's electricity); a budget, a bill,
    an exchange rate, a calibration, a decision and a finished plan."""
    from fleet.bills import import_path
    from fleet.models import (
        ApiPrice,
        Cluster,
        ClusterPurchase,
        Deployment,
        ElectricityPrice,
        ExchangeRate,
        GpuQuote,
        HardwareSku,
        ModelSpec,
        OwnedCosts,
        Provider,
        Workload,
    )
    from planner import plans as plan_service
    from planner.models import Budget

    call_command("load_catalog", stdout=StringIO())
    world = World()
    acme = Provider.objects.ensure("acme")
    h200 = HardwareSku.objects.get(slug="h200-141gb")
    k3 = ModelSpec.objects.get(slug="kimi-k3")
    agent = Workload.objects.create(
        slug="coding-agent", name="Coding agent", team="dev-tools", requests_per_day=200_000,
        mean_prompt_tokens=12_000, mean_output_tokens=600, p95_context_tokens=64_000, prefix_cache_hit_rate=0.9,
        peak_concurrency=256, ttft_slo_ms=2000, tpot_slo_ms=50,
    )  # fmt: skip
    world.ids["quote"] = GpuQuote.objects.create(
        sku=h200, provider=acme, usd_per_gpu_hour=Decimal("3.20"), quoted_on=timezone.now().date() - timedelta(days=20),
        source="acme's order form for the fleet, on demand", pricing_kind="on-demand",
    ).pk  # fmt: skip
    common = {"sku": h200, "provider": acme, "region": "eu-west", "team": "ml-platform"}
    agents = Cluster(slug="h200-agents", name="H200 agents", nodes=2, **common)
    agents.save(effective_from=timezone.now().date().replace(day=1) - timedelta(days=40))
    Cluster.objects.create(slug="h200-burst", name="H200 burst", nodes=4, **common)
    deployment = Deployment(
        slug="k3-agent", cluster=agents, model=k3, workload=agent, tp=8, dp=2, ep=16, engine="vllm",
        engine_version="0.33.0", kv_cache_dtype="fp8", max_model_len=131072, base_url="http://127.0.0.1:8100",
        served_model_id="moonshotai/Kimi-K3",
    )  # fmt: skip
    deployment.save()
    owned = Cluster.objects.create(
        slug="h200-owned", name="H200 owned", nodes=2, ownership=Cluster.Ownership.OWNED, **common
    )
    world.ids["owned_costs"] = OwnedCosts.objects.create(
        cluster=owned, site="fra-1", pue="1.3", racks=1, usd_per_rack_month=1500, support_share_per_year="0.08",
        source="colocation contract, fra-1",
    ).pk  # fmt: skip
    world.ids["electricity"] = ElectricityPrice.objects.create(
        site="fra-1", valid_from=timezone.now().date().replace(day=1), usd_per_kwh="0.14", source="utility tariff"
    ).pk
    world.ids["purchase"] = ClusterPurchase.objects.create(
        cluster=owned, bought_on=timezone.now().date() - timedelta(days=90), nodes=2, price=310000,
        price_per="node", useful_life_months=48, source="integrator invoice",
    ).pk  # fmt: skip
    world.ids["rate"] = ExchangeRate.objects.create(
        currency="EUR", on=timezone.now().date().replace(day=1), usd_per_unit="1.08", source="ECB reference rate"
    ).pk
    world.ids["budget"] = Budget.objects.create(team="ml-platform", amount_usd=Decimal("45000")).pk
    world.ids["provider"] = acme.pk
    world.ids["spare_provider"] = Provider.objects.ensure("coreweave-trial").pk
    world.ids["api_price"] = ApiPrice.objects.get(slug="kimi-k3-api").pk
    user = User.objects.create_superuser("procurement", "procurement@example.com", "pw-for-tests-only")
    upload = Path(BILL_DIR) / "acme-last-month.csv"
    upload.write_bytes(bill_csv())
    world.ids["bill"] = import_path(upload, user).pk
    plan = plan_service.create_plan(
        plan_service.PlanRequest(model="kimi-k3", workload="coding-agent", skus=("h200-141gb",), max_nodes=4), user
    )
    world.ids["plan"] = plan_service.execute_plan(plan.pk).pk
    return world


@dataclass(frozen=True)
class Call:
    """One example: an operation's request. ``body`` and ``path`` may be functions of the world (ids);
    ``setup`` makes what the call needs and returns more path values."""

    operation: str
    method: str
    path: str
    body: Any = None
    query: dict[str, str] | None = None
    status: int = 200
    summary: str = ""
    multipart: bool = False
    setup: Callable[[World], dict[str, Any]] | None = None
    key: str = ""  # the record ``{key}`` in the path names: a slug, or ``#name`` for ``World.ids[name]``


def _sku_body() -> dict[str, Any]:
    from fleet.catalog.reference import sku_record

    record = sku_record("h200-141gb")
    body = {k: v for k, v in record.items() if k not in ("assumptions",)}
    return {**body, "slug": "h200-141gb-lab", "name": "NVIDIA H200 SXM 141GB (lab units)"}


def _model_body() -> dict[str, Any]:
    from fleet.catalog.reference import model_record

    record = model_record("kimi-k3")
    body = {k: v for k, v in record.items() if k not in ("assumptions", "hf_model_id")}
    return {**body, "slug": "kimi-k3-draft", "name": "Kimi K3 (draft entry)"}


def _k3_config() -> dict[str, Any]:
    import fleet.catalog

    path = Path(fleet.catalog.__file__).parent / "hf-configs" / "moonshotai--Kimi-K3_config.json"
    return json.loads(path.read_text())


def _spare_cluster(world: World) -> dict[str, Any]:
    from fleet.models import Cluster, HardwareSku, Provider

    Cluster.objects.create(
        slug="h200-spare", name="H200 spare", sku=HardwareSku.objects.get(slug="h200-141gb"), nodes=1,
        provider=Provider.objects.ensure("acme"), team="ml-platform",
    )  # fmt: skip
    return {}


def _spare_model(world: World) -> dict[str, Any]:
    from fleet.models import ModelSpec

    ModelSpec.objects.create(**{**_model_body(), "assumptions": {}})
    return {}


def _spare_sku(world: World) -> dict[str, Any]:
    from fleet.models import HardwareSku

    HardwareSku.objects.create(**_sku_body())
    return {}


def _spare_workload(world: World) -> dict[str, Any]:
    from fleet.models import Workload

    Workload.objects.create(**{**WORKLOAD, "slug": "batch-evals", "name": "Batch evals"})
    return {}


def _spare_api_price(world: World) -> dict[str, Any]:
    from fleet.models import ApiPrice

    ApiPrice.objects.create(**{**API_PRICE, "model_id": None, "model": None, "quoted_on": day(-3)})
    return {}


def _second_owned_cluster(world: World) -> dict[str, Any]:
    from fleet.models import Cluster, HardwareSku, Provider

    Cluster.objects.create(
        slug="h200-owned-b", name="H200 owned (second hall)", sku=HardwareSku.objects.get(slug="h200-141gb"),
        nodes=1, provider=Provider.objects.ensure("acme"), team="ml-platform", ownership=Cluster.Ownership.OWNED,
    )  # fmt: skip
    return {}


def _a_queued_plan(world: World) -> dict[str, Any]:
    return {"id": _client(world).post("/api/v1/plans/", PLAN, format="json").json()["id"]}


def _second_token(world: World) -> dict[str, Any]:
    from fleet.tokens import create_token

    token = create_token(User.objects.get(username="procurement"), name="old-ci", scope="read", days=30)
    return {"id": token.token.pk}


def _a_calibration(world: World) -> dict[str, Any]:
    return {"id": _client(world).post("/api/v1/calibrations/", CALIBRATION, format="json").json()["id"]}


def _a_decision(world: World) -> dict[str, Any]:
    return {"id": _client(world).post("/api/v1/decisions/", _concrete(DECISION), format="json").json()["id"]}


def _a_token(world: World) -> dict[str, Any]:
    from fleet.models import ApiToken

    return {"id": ApiToken.objects.get(user__username="procurement", name="procurement-script").pk}


def _client(world: World) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {world.key}")
    return client


WORKLOAD = {
    "slug": "support-chat", "name": "Support chat", "team": "customer-care", "requests_per_day": 80_000,
    "mean_prompt_tokens": 2_500, "mean_output_tokens": 400, "p95_context_tokens": 16_000,
    "prefix_cache_hit_rate": 0.6, "peak_concurrency": 96, "ttft_slo_ms": 1500, "tpot_slo_ms": 40,
}  # fmt: skip
API_PRICE = {
    "slug": "kimi-k3-together", "provider": "Together AI", "model_name": "moonshotai/Kimi-K3", "model": "kimi-k3",
    "input_cache_hit_usd_per_mtok": "0.20", "input_cache_miss_usd_per_mtok": "1.00", "output_usd_per_mtok": "3.50",
    "context_window": 262144, "source": "provider's pricing page, read by procurement",
}  # fmt: skip
CLUSTER = {
    "slug": "h200-west", "name": "H200 west", "sku": "h200-141gb", "nodes": 2, "provider": "acme",
    "region": "us-west", "team": "ml-platform", "hours_per_day": "24",
}  # fmt: skip
DEPLOYMENT = {
    "slug": "k3-agent-b", "cluster": "h200-burst", "model": "kimi-k3", "workload": "coding-agent", "tp": 8,
    "dp": 2, "ep": 16, "engine": "vllm", "engine_version": "0.33.0", "kv_cache_dtype": "fp8",
    "max_model_len": 131072, "base_url": "http://127.0.0.1:8101", "served_model_id": "moonshotai/Kimi-K3",
}  # fmt: skip
CALIBRATION = {"log": K2_LOG, "model": "kimi-k2", "sku": "h200-141gb", "engine_version": "0.11.1"}
BREAKEVEN = {"deployment": "k3-agent", "workload": "coding-agent", "api_price": "kimi-k3-api"}
DECISION = {"workload": "coding-agent", "tier": 3, "note": "Rent: the API costs more at this volume",
            "breakeven": BREAKEVEN}  # fmt: skip
PURCHASE = {
    "cluster": "h200-owned", "nodes": 1, "price": "298000", "price_per": "node", "currency": "USD",
    "useful_life_months": 48, "residual_value": "30000", "source": "integrator quote Q-1142",
}  # fmt: skip
OWNED = {
    "cluster": "h200-owned", "site": "fra-1", "node_overhead_w": 2000, "pue": "1.25", "racks": "1",
    "usd_per_rack_month": "1500", "support_share_per_year": "0.08", "staff_usd_per_month": "2500",
    "source": "colocation contract, fra-1",
}  # fmt: skip
QUOTE = {
    "sku": "h200-141gb", "provider": "acme", "usd_per_gpu_hour": "3.05", "pricing_kind": "reserved",
    "source": "acme's renewal offer, 12 months",
}  # fmt: skip
SIZING = {"model": "kimi-k3", "sku": "h200-141gb", "gpus": 16, "tp": 8, "dp": 2, "ep": 16,
          "kv_cache_dtype": "fp8", "context_tokens": 64000, "engine": "vllm", "engine_version": "0.33.0"}  # fmt: skip
PLAN = {"model": "kimi-k3", "workload": "coding-agent", "skus": ["h200-141gb"], "max_nodes": 4}


def _calls() -> list[Call]:
    api = "/api/v1"
    calls: list[Call] = []

    def crud(
        name: str,
        url: str,
        key: str,
        *,
        create: Any,
        put: Any,
        patch: dict[str, Any],
        query: dict[str, Any],
        create_setup: Callable[[World], dict[str, Any]] | None = None,
        spare: Callable[[World], dict[str, Any]] | None = None,
        spare_key: str = "",
    ) -> None:
        """The list, create, retrieve, update, partial update, destroy and history calls of one resource;
        ``key`` is the world's slug or id name of the record the calls read and change."""
        op = f"api_v1_{name}"
        detail = f"{api}/{url}/{{key}}/"
        calls.append(Call(f"{op}_list", "GET", f"{api}/{url}/", query=query))
        calls.append(Call(f"{op}_retrieve", "GET", detail, key=key))
        calls.append(Call(f"{op}_history_list", "GET", f"{detail}history/", key=key))
        calls.append(Call(f"{op}_create", "POST", f"{api}/{url}/", body=create, status=201, setup=create_setup))
        calls.append(Call(f"{op}_update", "PUT", detail, body=put, key=key))
        calls.append(Call(f"{op}_partial_update", "PATCH", detail, body=patch, key=key))
        calls.append(Call(f"{op}_destroy", "DELETE", detail, status=204, setup=spare, key=spare_key or key))

    crud(
        "api_prices",
        "api-prices",
        "kimi-k3-api",
        create={**API_PRICE, "quoted_on": lambda: day(-3)},
        put={
            **API_PRICE,
            "slug": "kimi-k3-api",
            "model_name": "kimi-k3",
            "provider": "Moonshot AI",
            "output_usd_per_mtok": "3.00",
            "quoted_on": lambda: day(-1),
        },
        patch={"output_usd_per_mtok": "2.80"},
        query={"model": "kimi-k3"},
        spare=_spare_api_price,
        spare_key="kimi-k3-together",
    )
    crud(
        "budgets",
        "budgets",
        "#budget",
        create={"cluster": "h200-agents", "amount_usd": "40000", "emails": ["finance@example.com"]},
        put={"team": "ml-platform", "amount_usd": "50000", "emails": ["finance@example.com", "ml-leads@example.com"]},
        patch={"amount_usd": "48000"},
        query={"team": "ml-platform"},
    )
    crud(
        "cluster_purchases",
        "cluster-purchases",
        "#purchase",
        create={**PURCHASE, "bought_on": lambda: day(-10)},
        put={**PURCHASE, "nodes": 2, "price": "310000", "bought_on": lambda: day(-90)},
        patch={"residual_value": "25000"},
        query={"cluster": "h200-owned"},
    )
    crud(
        "clusters",
        "clusters",
        "h200-agents",
        create=CLUSTER,
        put={**CLUSTER, "slug": "h200-agents", "name": "H200 agents", "nodes": 3, "region": "eu-west"},
        patch={"nodes": 3},
        query={"sku": "h200-141gb", "team": "ml-platform"},
        spare=_spare_cluster,
        spare_key="h200-spare",
    )
    crud(
        "deployments",
        "deployments",
        "k3-agent",
        create=DEPLOYMENT,
        put={
            **DEPLOYMENT,
            "slug": "k3-agent",
            "cluster": "h200-agents",
            "base_url": "http://127.0.0.1:8100",
            "gpu_memory_utilization": 0.9,
        },
        patch={"max_model_len": 65536},
        query={"model": "kimi-k3", "cluster": "h200-agents"},
    )
    crud(
        "electricity_prices",
        "electricity-prices",
        "#electricity",
        create={
            "site": "fra-1",
            "valid_from": lambda: day(30),
            "usd_per_kwh": "0.152",
            "source": "utility tariff, next quarter",
        },
        put={
            "site": "fra-1",
            "valid_from": lambda: month(0) + "-01",
            "usd_per_kwh": "0.145",
            "source": "utility tariff",
        },
        patch={"usd_per_kwh": "0.141"},
        query={"site": "fra-1"},
    )
    crud(
        "exchange_rates",
        "exchange-rates",
        "#rate",
        create={
            "currency": "GBP",
            "on": lambda: month(0) + "-01",
            "usd_per_unit": "1.27",
            "source": "ECB reference rate",
        },
        put={"currency": "EUR", "on": lambda: month(0) + "-01", "usd_per_unit": "1.09", "source": "ECB reference rate"},
        patch={"usd_per_unit": "1.085"},
        query={"currency": "EUR"},
    )
    crud(
        "gpu_quotes",
        "gpu-quotes",
        "#quote",
        create={**QUOTE, "quoted_on": lambda: day(-1), "valid_until": lambda: day(60)},
        put={**QUOTE, "usd_per_gpu_hour": "3.20", "quoted_on": lambda: day(-20)},
        patch={"valid_until": lambda: day(45)},
        query={"sku": "h200-141gb", "valid_on": lambda: day(0)},
    )
    crud(
        "models",
        "models",
        "kimi-k3",
        create=_model_body,
        put=lambda: {**_model_body(), "slug": "kimi-k3", "name": "Kimi K3"},
        patch={"max_context_tokens": 262144},
        query={"is_moe": "true"},
        spare=_spare_model,
        spare_key="kimi-k3-draft",
    )
    crud(
        "owned_costs",
        "owned-costs",
        "#owned_costs",
        create={**OWNED, "cluster": "h200-owned-b"},
        create_setup=_second_owned_cluster,
        put=OWNED,
        patch={"staff_usd_per_month": "3000"},
        query={"site": "fra-1"},
    )
    crud(
        "providers",
        "providers",
        "#provider",
        create={"name": "Crusoe", "kind": "neo-cloud"},
        put={"name": "acme", "kind": "neo-cloud"},
        patch={"kind": "neo-cloud"},
        query={"kind": "cloud"},
        spare_key="#spare_provider",
    )
    crud(
        "skus",
        "skus",
        "h200-141gb",
        create=_sku_body,
        put=lambda: {**_sku_body(), "slug": "h200-141gb", "name": "NVIDIA H200 SXM 141GB"},
        patch={"tdp_watts": 700},
        query={"vendor": "NVIDIA", "min_hbm_gb": "141"},
        spare=_spare_sku,
        spare_key="h200-141gb-lab",
    )
    crud(
        "workloads", "workloads", "coding-agent",
        create=WORKLOAD, put={**WORKLOAD, "slug": "coding-agent", "name": "Coding agent", "team": "dev-tools"},
        patch={"peak_concurrency": 320}, query={"team": "dev-tools"},
        spare=_spare_workload, spare_key="batch-evals",
    )  # fmt: skip
    calls.extend(
        [
            Call("api_v1_bills_list", "GET", f"{api}/bills/", query={"status": "done"}),
            Call("api_v1_bills_create", "POST", f"{api}/bills/", status=202, multipart=True,
                 body={"file": "acme-this-month.csv", "tag_key": "fleetcap-cluster"}),
            Call("api_v1_bills_retrieve", "GET", f"{api}/bills/{{#bill}}/"),
            Call("api_v1_bills_rows_list", "GET", f"{api}/bills/{{#bill}}/rows/", query={"unmatched": "true"}),
            Call("api_v1_bills_destroy", "DELETE", f"{api}/bills/{{#bill}}/", status=204),
            Call("api_v1_breakeven_create", "POST", f"{api}/breakeven/", body=BREAKEVEN,
                 summary="The K3 deployment's rent against Kimi's own API, buying beside them"),
            Call("api_v1_calibrations_list", "GET", f"{api}/calibrations/", setup=_a_calibration),
            Call("api_v1_calibrations_create", "POST", f"{api}/calibrations/", body=CALIBRATION, status=201),
            Call("api_v1_calibrations_retrieve", "GET", f"{api}/calibrations/{{id}}/", setup=_a_calibration),
            Call("api_v1_calibrations_history_list", "GET", f"{api}/calibrations/{{id}}/history/",
                 setup=_a_calibration),
            Call("api_v1_decisions_list", "GET", f"{api}/decisions/", query={"workload": "coding-agent"},
                 setup=_a_decision),
            Call("api_v1_decisions_create", "POST", f"{api}/decisions/", body=DECISION, status=201),
            Call("api_v1_decisions_retrieve", "GET", f"{api}/decisions/{{id}}/", setup=_a_decision),
            Call("api_v1_decisions_history_list", "GET", f"{api}/decisions/{{id}}/history/", setup=_a_decision),
            Call("api_v1_deployments_launch_retrieve", "GET", f"{api}/deployments/k3-agent/launch/",
                 query={"launch_engine": "vllm"}),
            Call("api_v1_deployments_poll_create", "POST", f"{api}/deployments/k3-agent/poll/", status=202),
            Call("api_v1_deployments_polls_list", "GET", f"{api}/deployments/k3-agent/polls/",
                 query={"since": lambda: day(-7)}),
            Call("api_v1_estimate_create", "POST", f"{api}/estimate/",
                 body={"deployment": "k3-agent", "batch": 64, "prompt_tokens": 12000, "output_tokens": 600,
                       "context_tokens": 64000}),
            Call("api_v1_models_import_create", "POST", f"{api}/models/import/", status=201,
                 body=lambda: {"slug": "kimi-k3-mirror", "name": "Kimi K3 (internal mirror)", "config": _k3_config(),
                               "hf_model_id": "moonshotai/Kimi-K3", "source": "our mirror's config.json"}),
            Call("api_v1_plans_list", "GET", f"{api}/plans/", query={"model": "kimi-k3", "status": "done"}),
            Call("api_v1_plans_create", "POST", f"{api}/plans/", body=PLAN, status=202),
            Call("api_v1_plans_retrieve", "GET", f"{api}/plans/{{#plan}}/"),
            Call("api_v1_plans_cancel_create", "POST", f"{api}/plans/{{id}}/cancel/", setup=_a_queued_plan),
            Call("api_v1_plans_deploy_create", "POST", f"{api}/plans/{{#plan}}/deploy/", status=201,
                 body={"rank": 1, "cluster": "h200-burst", "slug": "k3-agent-plan", "engine": "vllm"}),
            Call("api_v1_prefix_cache_create", "POST", f"{api}/prefix-cache/",
                 body={"model": "kimi-k3", "sku": "h200-141gb", "tp": 8, "dp": 2, "ep": 16, "kv_cache_dtype": "fp8",
                       "context_tokens": 64000, "concurrency": 64, "engine": "vllm", "engine_version": "0.33.0"}),
            Call("api_v1_route_create", "POST", f"{api}/route/",
                 body={"context_tokens": 64000, "prompt_tokens": 12000, "output_tokens": 600,
                       "prefix_reuse_fraction": 0.9, "ttft_slo_ms": 2000, "tpot_slo_ms": 50, "model": "kimi-k3"}),
            Call("api_v1_route_litellm_retrieve", "GET", f"{api}/route/litellm/"),
            Call("api_v1_sizing_create", "POST", f"{api}/sizing/", body=SIZING),
            Call("api_v1_spend_retrieve", "GET", f"{api}/spend/", query={"month": lambda: month(-1)}),
            Call("api_v1_tokens_list", "GET", f"{api}/tokens/", query={"state": "active"}),
            Call("api_v1_tokens_create", "POST", f"{api}/tokens/", status=201,
                 body={"name": "procurement-nightly", "scope": "read", "expires_in_days": 90}),
            Call("api_v1_tokens_retrieve", "GET", f"{api}/tokens/{{id}}/", setup=_a_token),
            Call("api_v1_tokens_destroy", "DELETE", f"{api}/tokens/{{id}}/", status=204, setup=_second_token),
            Call("metrics_retrieve", "GET", "/metrics"),
        ]
    )  # fmt: skip
    return calls


def _resolve(world: World, value: str) -> Any:
    return world.ids[value[1:]] if value.startswith("#") else value


def _concrete(value: Any) -> Any:
    """``value`` with its functions called (dates relative to today, bodies built from the catalogue)."""
    if callable(value):
        return _concrete(value())
    if isinstance(value, dict):
        return {k: _concrete(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_concrete(v) for v in value]
    return value


CALLS = _calls()
DATE = re.compile(r"^\d{4}-\d{2}(-\d{2})?([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$")
SECRETS = re.compile(r"fct_[A-Za-z0-9_-]{20,}")


def undated(value: Any) -> Any:
    """``value`` with every ISO date, month or timestamp replaced by ``"<date>"``: what two days' runs share."""
    if isinstance(value, dict):
        return {k: undated(v) for k, v in value.items()}
    if isinstance(value, list):
        return [undated(v) for v in value]
    if isinstance(value, str) and DATE.match(value):
        return "<date>"
    return value


def shape(value: Any) -> Any:
    """The keys of ``value`` at every depth (a list by its first item): what the schema's example promises."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return None


def shapes_agree(recorded: Any, now: Any) -> bool:
    """Same keys at every depth; a list empty on one side agrees with any."""
    if isinstance(recorded, dict) and isinstance(now, dict):
        return recorded.keys() == now.keys() and all(shapes_agree(recorded[k], now[k]) for k in recorded)
    if isinstance(recorded, list) and isinstance(now, list):
        return not recorded or not now or shapes_agree(recorded[0], now[0])
    return (recorded is None) == (now is None) or not isinstance(recorded, dict | list)


def cut(value: Any) -> Any:
    """What the docs show of an answer: lists of records to their first ``CUT`` items, secrets (a new token's
    key) masked."""
    if isinstance(value, dict):
        return {k: cut(v) for k, v in value.items()}
    if isinstance(value, list):
        return [cut(v) for v in (value[:CUT] if value and isinstance(value[0], dict) else value)]
    if isinstance(value, str):
        return SECRETS.sub("fct_<the key, shown once>", value)
    return value


CUT = 3  # records a list keeps in the docs
RECORDED: dict[str, dict[str, Any]] = {}


@override_settings(BILL_DIR=BILL_DIR, API_SCHEMA_PUBLIC=True)
class Examples(TestCase):
    """One test per operation (``test_<operationId>``), each against ``build_world()``'s rows."""

    @classmethod
    def setUpTestData(cls) -> None:
        cls.world = build_world()
        from fleet.tokens import create_token

        user = User.objects.get(username="procurement")
        cls.key = cls.world.key = create_token(user, name="procurement-script", scope="write", days=90).key

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        shutil.rmtree(BILL_DIR, ignore_errors=True)
        if RECORD and RECORDED:
            examples = {**json.loads(EXAMPLES_FILE.read_text()), **RECORDED}
            EXAMPLES_FILE.write_text(json.dumps(dict(sorted(examples.items())), indent=1, ensure_ascii=False) + "\n")
            load_examples.cache_clear()

    def setUp(self) -> None:
        from django.core.cache import cache

        cache.clear()  # throttles count in the cache

    def run_call(self, call: Call) -> None:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {self.key}")
        values = {k: self.world.ids[k[1:]] for k in re.findall(r"\{(#\w+)\}", call.path)}
        values["key"] = _resolve(self.world, call.key) if call.key else ""
        if call.setup is not None:
            values.update(call.setup(self.world) or {})
        path = call.path
        for name, value in values.items():
            path = path.replace("{" + name + "}", str(value))
        query = _concrete(call.query or {})
        body = _concrete(call.body)
        if call.multipart:
            upload = SimpleUploadedFile(body["file"], bill_csv(), content_type="text/csv")
            response = client.generic(call.method, path, **_multipart(client, {**body, "file": upload}))
            sent = {**body, "file": bill_csv().decode()}
        else:
            url = path + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")
            response = client.generic(call.method, url, json.dumps(body) if body is not None else "",
                                      content_type="application/json")  # fmt: skip
            sent = body
        content_type = response.get("Content-Type", "").split(";")[0]
        answer = response.json() if content_type == "application/json" else response.content.decode()
        assert response.status_code == call.status, (call.operation, response.status_code, answer)
        example = {
            "summary": call.summary or f"{call.method} {path}",
            "method": call.method,
            "path": path,
            "query": query,
            "request": sent,
            "request_content_type": "multipart/form-data" if call.multipart else "application/json",
            "status": call.status,
            "response": cut(answer) if content_type == "application/json" else "\n".join(answer.splitlines()[:40]),
            "response_content_type": content_type or None,
        }
        if RECORD:
            RECORDED[call.operation] = example
            return
        recorded = load_examples().get(call.operation)
        assert recorded is not None, f"{call.operation}: no example recorded (FLEETCAP_RECORD_EXAMPLES=1)"
        assert recorded["status"] == call.status and recorded["method"] == call.method
        assert undated(recorded["request"]) == undated(sent), f"{call.operation}: the example's request is stale"
        assert undated(recorded["query"]) == undated(query), f"{call.operation}: the example's query is stale"
        assert shapes_agree(shape(recorded["response"]), shape(example["response"])), (
            f"{call.operation}: the answer's shape changed since the example was recorded"
        )


def _multipart(client: APIClient, data: dict[str, Any]) -> dict[str, Any]:
    from django.test.client import MULTIPART_CONTENT, encode_multipart

    boundary = "fleetcap-example"
    return {"data": encode_multipart(boundary, data), "content_type": f"{MULTIPART_CONTENT[:19]}; boundary={boundary}"}


def _test_for(call: Call) -> Callable[[Examples], None]:
    def test(self: Examples) -> None:
        self.run_call(call)

    test.__doc__ = f"{call.method} {call.path}: its example still runs as recorded."
    return test


for _call in CALLS:
    setattr(Examples, f"test_{_call.operation}", _test_for(_call))


def test_every_operation_has_one_example_and_the_schema_shows_it(client, settings):
    """The schema's operations, the calls above and the recorded examples are the same set, and the schema
    served to a script carries each recorded example (request, answer and path values)."""
    settings.API_SCHEMA_PUBLIC = True
    schema = client.get("/api/v1/schema/?format=json").json()
    operations = {
        op["operationId"]: (path, method, op)
        for path, item in schema["paths"].items()
        for method, op in item.items()
        if method in ("get", "post", "put", "patch", "delete")
    }
    examples = load_examples()
    assert set(operations) == {c.operation for c in CALLS} == set(examples)
    for name, (_path, _method, op) in operations.items():
        example = examples[name]
        if "requestBody" in op:
            content = op["requestBody"]["content"][example["request_content_type"]]
            assert content["examples"]["k3"]["value"] == example["request"], name
        answer = op["responses"][str(example["status"])]
        if example["response_content_type"]:
            shown = answer["content"][example["response_content_type"]]["examples"]["k3"]["value"]
            assert shown == example["response"], name
        for parameter in op.get("parameters", []):
            if parameter["in"] == "path":
                assert "example" in parameter, (name, parameter["name"])
