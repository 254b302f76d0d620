"""Role x every write route (API, pages, admin): allowed or refused, and ``user.has_perm`` agrees.

Each route names the Django permissions it needs and, written out independently from the brief,
who may use it. A case checks the response (allowed: anything but 401/403 or a redirect to a
login page; a 400 for an empty body proves the permission check passed) and that
``user.has_perms(route.perms)`` gives the same answer, so the admin's idea of a user's powers is
the API's and the pages'. Closed routes (append-only decisions, read-only admin pages) are refused
to everybody, superusers included.

The records, users and logged-in clients are made once for the module inside a transaction rolled
back at its end; every case's own transaction (``django_db``) nests in it as a savepoint, so a
DELETE that got through is undone before the next case.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from typing import Any

import pytest
from api_keys import api_key
from django.apps import apps
from django.contrib import admin
from django.contrib.auth.models import Group, User
from django.db import transaction
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from fleet import permissions as fleet_permissions
from fleet.models import Provider
from fleet.tokens import create_token
from planner import permissions as planner_permissions

ROLES = ("anonymous", "none", "viewer", "finance", "platform", "admin", "superuser")

# Who may do what, as docs/api.md states it (not derived from the grant tables, so they are checked).
EVERYONE = frozenset({"viewer", "finance", "platform", "admin", "superuser"})
INVENTORY = frozenset({"platform", "admin", "superuser"})
PRICING = frozenset({"finance", "admin", "superuser"})
DECIDERS = frozenset({"finance", "admin", "superuser"})
BUDGETERS = frozenset({"finance", "admin", "superuser"})
PLANNERS = frozenset({"finance", "platform", "admin", "superuser"})
# An owned cluster's costs (running costs, purchases, electricity prices): the platform team and finance.
OWNED = INVENTORY | PRICING
POLLERS = frozenset({"platform", "admin", "superuser"})
ADMINS = frozenset({"admin", "superuser"})
SUPERUSER = frozenset({"superuser"})
NOBODY: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Route:
    kind: str  # api, page, admin
    method: str
    path: str  # formatted with the module's records (``{sku}``, ``{plan}``, ...)
    who: frozenset[str]
    perms: tuple[str, ...] = ()  # empty: a closed route, refused whatever the permissions

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.method}:{self.path}"


# API records: (URL prefix, detail key, app.model, who writes).
API_RECORDS = [
    ("skus", "{sku}", "fleet.hardwaresku", INVENTORY),
    ("clusters", "{cluster}", "fleet.cluster", INVENTORY),
    ("deployments", "{deployment}", "fleet.deployment", INVENTORY),
    ("models", "{model}", "fleet.modelspec", INVENTORY),
    ("workloads", "{workload}", "fleet.workload", INVENTORY),
    ("gpu-quotes", "{quote}", "fleet.gpuquote", PRICING),
    ("api-prices", "{api_price}", "fleet.apiprice", PRICING),
    # Clusters (platform) and quotes (finance) name a provider: both may add one.
    ("providers", "{provider}", "fleet.provider", INVENTORY | PRICING),
    # Budgets (issue 26): finance and admin manage them; every role reads them.
    ("budgets", "{budget}", "planner.budget", BUDGETERS),
    ("exchange-rates", "{exchange_rate}", "fleet.exchangerate", PRICING),
    ("owned-costs", "{owned_costs}", "fleet.ownedcosts", OWNED),
    ("cluster-purchases", "{purchase}", "fleet.clusterpurchase", OWNED),
    ("electricity-prices", "{electricity_price}", "fleet.electricityprice", OWNED),
]


def _perm(label: str, action: str) -> str:
    app_label, model = label.split(".")
    return f"{app_label}.{action}_{model}"


def api_routes() -> list[Route]:
    routes = []
    for prefix, key, label, who in API_RECORDS:
        detail = f"/api/v1/{prefix}/{key}/"
        routes += [
            Route("api", "post", f"/api/v1/{prefix}/", who, (_perm(label, "add"),)),
            Route("api", "put", detail, who, (_perm(label, "change"),)),
            Route("api", "patch", detail, who, (_perm(label, "change"),)),
            Route("api", "delete", detail, who, (_perm(label, "delete"),)),
        ]
    decision, plan = "/api/v1/decisions/{decision}/", "/api/v1/plans/{plan}/"
    calibration = "/api/v1/calibrations/{calibration}/"
    routes += [
        Route("api", "post", "/api/v1/deployments/{deployment}/poll/", POLLERS, ("fleet.poll_deployment",)),
        Route("api", "post", "/api/v1/models/import/", INVENTORY, ("fleet.add_modelspec",)),
        Route("api", "post", "/api/v1/decisions/", DECIDERS, ("planner.add_decision",)),
        # Cloud bills: finance uploads a FOCUS file and may delete a bill (its rows with it); never edited.
        Route("api", "post", "/api/v1/bills/", PRICING, ("fleet.add_cloudbill",)),
        Route("api", "delete", "/api/v1/bills/{bill}/", PRICING, ("fleet.delete_cloudbill",)),
        *(Route("api", method, "/api/v1/bills/{bill}/", NOBODY) for method in ("put", "patch")),
        *(Route("api", method, decision, NOBODY) for method in ("put", "patch", "delete")),
        Route("api", "post", "/api/v1/plans/", PLANNERS, ("planner.add_plan",)),
        # The world's plan was started by nobody in the world: only cancel_any_plan (admin) may cancel it;
        # its requester may too (tests/test_plans_api.py).
        Route(
            "api", "post", "/api/v1/plans/{plan}/cancel/", ADMINS, ("planner.change_plan", "planner.cancel_any_plan")
        ),
        # A ranked layout becomes a deployment: whoever may register deployments (and read plans, which
        # every role may).
        Route("api", "post", "/api/v1/plans/{plan}/deploy/", INVENTORY, ("fleet.add_deployment",)),
        *(Route("api", method, plan, NOBODY) for method in ("put", "patch", "delete")),
        # Calibrating from a startup log: whoever may change a deployment; stored calibrations are never edited.
        Route("api", "post", "/api/v1/calibrations/", INVENTORY, ("fleet.change_deployment",)),
        *(Route("api", method, calibration, NOBODY) for method in ("put", "patch", "delete")),
        # Computations: reads, whatever the method; anyone who may read their inputs may compute.
        Route("api", "post", "/api/v1/sizing/", EVERYONE, ("fleet.view_modelspec", "fleet.view_hardwaresku")),
        Route("api", "post", "/api/v1/estimate/", EVERYONE, ("fleet.view_modelspec", "fleet.view_hardwaresku")),
        Route("api", "post", "/api/v1/breakeven/", EVERYONE, ("fleet.view_gpuquote", "fleet.view_apiprice")),
        Route("api", "post", "/api/v1/prefix-cache/", EVERYONE, ("fleet.view_modelspec", "fleet.view_hardwaresku")),
        Route("api", "get", "/api/v1/spend/", EVERYONE, ("fleet.view_clusterstate", "fleet.view_gpuquote")),
        Route("api", "post", "/api/v1/route/", EVERYONE, ("fleet.view_deployment", "fleet.view_apiprice")),
    ]
    return routes


PAGE_ROUTES = [
    Route("page", "post", "/clusters/new/", INVENTORY, ("fleet.add_cluster",)),
    Route("page", "post", "/clusters/{cluster}/edit/", INVENTORY, ("fleet.change_cluster",)),
    # An owned cluster's costs (fleet/views/owned.py); its running costs exist: editing them is a change.
    Route("page", "post", "/clusters/{owned_cluster}/owned-costs/", OWNED, ("fleet.change_ownedcosts",)),
    Route("page", "post", "/clusters/{cluster}/owned-costs/", OWNED, ("fleet.add_ownedcosts",)),
    Route("page", "post", "/clusters/{owned_cluster}/purchases/new/", OWNED, ("fleet.add_clusterpurchase",)),
    Route(
        "page", "post", "/clusters/{owned_cluster}/purchases/{purchase}/edit/", OWNED, ("fleet.change_clusterpurchase",)
    ),
    Route(
        "page",
        "post",
        "/clusters/{owned_cluster}/purchases/{purchase}/delete/",
        OWNED,
        ("fleet.delete_clusterpurchase",),
    ),
    Route("page", "post", "/electricity-prices/new/", OWNED, ("fleet.add_electricityprice",)),
    Route("page", "post", "/electricity-prices/{electricity_price}/edit/", OWNED, ("fleet.change_electricityprice",)),
    Route("page", "post", "/electricity-prices/{electricity_price}/delete/", OWNED, ("fleet.delete_electricityprice",)),
    Route("page", "post", "/deployments/new/", INVENTORY, ("fleet.add_deployment",)),
    Route("page", "post", "/deployments/{deployment}/edit/", INVENTORY, ("fleet.change_deployment",)),
    Route("page", "post", "/models/new/", INVENTORY, ("fleet.add_modelspec",)),
    Route("page", "post", "/models/{model}/edit/", INVENTORY, ("fleet.change_modelspec",)),
    Route("page", "post", "/models/import/", INVENTORY, ("fleet.add_modelspec",)),
    Route("page", "post", "/plans/start/", PLANNERS, ("planner.add_plan",)),
    Route("page", "post", "/plans/{plan}/cancel/", ADMINS, ("planner.change_plan", "planner.cancel_any_plan")),
    Route("page", "post", "/plans/{plan}/deploy/", INVENTORY, ("planner.view_plan", "fleet.add_deployment")),
    Route("page", "post", "/rent-vs-api/decide/", DECIDERS, ("planner.add_decision",)),
    # Queues a recomputation and changes no record: whoever may view the rent-vs-API page.
    Route("page", "post", "/rent-vs-api/recompute/", EVERYONE, ("fleet.view_gpuquote", "fleet.view_apiprice")),
    Route("page", "post", "/decisions/{decision}/supersede/", DECIDERS, ("planner.add_decision",)),
    # The price book (finance) and the catalogue (platform): fleet/views/prices.py, catalogue.py.
    Route("page", "post", "/bills/upload/", PRICING, ("fleet.add_cloudbill",)),
    Route("page", "post", "/quotes/new/", PRICING, ("fleet.add_gpuquote",)),
    Route("page", "post", "/quotes/{quote}/edit/", PRICING, ("fleet.change_gpuquote",)),
    Route("page", "post", "/quotes/{quote}/delete/", PRICING, ("fleet.delete_gpuquote",)),
    Route("page", "post", "/api-prices/new/", PRICING, ("fleet.add_apiprice",)),
    Route("page", "post", "/api-prices/{api_price}/edit/", PRICING, ("fleet.change_apiprice",)),
    Route("page", "post", "/api-prices/{api_price}/delete/", PRICING, ("fleet.delete_apiprice",)),
    Route("page", "post", "/skus/new/", INVENTORY, ("fleet.add_hardwaresku",)),
    Route("page", "post", "/skus/{sku}/edit/", INVENTORY, ("fleet.change_hardwaresku",)),
    Route("page", "post", "/skus/{sku}/delete/", INVENTORY, ("fleet.delete_hardwaresku",)),
    Route("page", "post", "/workloads/new/", INVENTORY, ("fleet.add_workload",)),
    Route("page", "post", "/workloads/{workload}/edit/", INVENTORY, ("fleet.change_workload",)),
    Route("page", "post", "/workloads/{workload}/delete/", INVENTORY, ("fleet.delete_workload",)),
    # A computation (POST for its uploaded trace): whoever may read its inputs.
    Route("page", "post", "/prefix-cache/", EVERYONE, ("fleet.view_modelspec", "fleet.view_hardwaresku")),
    Route("page", "post", "/budgets/new/", BUDGETERS, ("planner.add_budget",)),
    Route("page", "post", "/budgets/{budget}/edit/", BUDGETERS, ("planner.change_budget",)),
    Route("page", "post", "/budgets/{budget}/delete/", BUDGETERS, ("planner.delete_budget",)),
    # API tokens: everybody logged in makes and revokes their own, with no permission. {token} is another
    # user's: a 404 to whoever lacks fleet.view_apitoken, revoked by admins (tests/test_api_tokens.py).
    Route("api", "post", "/api/v1/tokens/", EVERYONE | {"none"}),
    Route("api", "delete", "/api/v1/tokens/{token}/", EVERYONE | {"none"}),
    Route("page", "post", "/account/tokens/", EVERYONE | {"none"}),
    Route("page", "post", "/account/tokens/{token}/revoke/", EVERYONE | {"none"}),
]

BEAT_MODELS = ("periodictask", "clockedschedule", "crontabschedule", "solarschedule", "intervalschedule")
# Admin: who adds, changes and deletes each registered model (NOBODY: the admin refuses everybody).
ADMIN_WHO: dict[str, tuple[frozenset[str], frozenset[str], frozenset[str]]] = {
    **{f"fleet.{m}": (INVENTORY,) * 3 for m in fleet_permissions.INVENTORY},
    **{f"fleet.{m}": (PRICING,) * 3 for m in fleet_permissions.PRICING},
    "fleet.provider": (INVENTORY | PRICING,) * 3,
    "fleet.exchangerate": (PRICING,) * 3,
    **{f"fleet.{m}": (OWNED,) * 3 for m in fleet_permissions.OWNED},
    # System-written records: read-only in the admin; the admin role may delete (all permissions).
    **{
        f"fleet.{m}": (NOBODY, NOBODY, ADMINS)
        for m in ("clusterstate", "endpointpoll", "workerheartbeat", "outboxmessage")
    },
    "planner.plan": (NOBODY, NOBODY, ADMINS),
    "planner.decision": (NOBODY, NOBODY, NOBODY),  # append-only
    # The audit trail (django-auditlog's admin): read-only for everybody; listed for superusers only.
    "auditlog.logentry": (NOBODY, NOBODY, NOBODY),
    # Users and groups: no role holds auth's permissions, so a role cannot grant itself more.
    "auth.user": (SUPERUSER,) * 3,
    "auth.group": (SUPERUSER,) * 3,
    # The beat schedule is operations' business: superusers only too.
    **{f"django_celery_beat.{m}": (SUPERUSER,) * 3 for m in BEAT_MODELS},
}
ADMIN_KEYS = {"hardwaresku": "{sku_pk}", "modelspec": "{model_pk}", "workload": "{workload_pk}",
              "cluster": "{cluster_pk}", "deployment": "{deployment_pk}", "gpuquote": "{quote}",
              "provider": "{provider}", "exchangerate": "{exchange_rate}", "apiprice": "{api_price_pk}",
              "clusterstate": "{state}", "ownedcosts": "{owned_costs}", "clusterpurchase": "{purchase}",
              "electricityprice": "{electricity_price}",
              "endpointpoll": "{poll}",
              "workerheartbeat": "{heartbeat}",
              "outboxmessage": "{outbox}", "plan": "{plan}", "decision": "{decision}", "user": "{user}",
              "group": "{group}", "logentry": "{logentry}",
              **{m: f"{{{m}}}" for m in BEAT_MODELS}}  # fmt: skip


def admin_routes() -> list[Route]:
    routes = []
    for label, (add, change, delete) in ADMIN_WHO.items():
        app_label, model = label.split(".")
        base = f"/admin/{app_label}/{model}/"
        obj = f"{base}{ADMIN_KEYS[model]}/"

        def gated(who: frozenset[str], action: str, label: str = label) -> tuple[str, ...]:
            return (_perm(label, action),) if who else ()

        routes += [
            Route("admin", "post", f"{base}add/", add, gated(add, "add")),
            Route("admin", "post", f"{obj}change/", change, gated(change, "change")),
            # The confirmation page: the same permission check as the POST, and nothing is deleted.
            Route("admin", "get", f"{obj}delete/", delete, gated(delete, "delete")),
        ]
    return routes


ROUTES = api_routes() + PAGE_ROUTES + admin_routes()


@dataclass
class World:
    keys: dict[str, Any]
    users: dict[str, User | None]
    api: dict[str, APIClient]
    browser: dict[str, Client]


def _records() -> dict[str, Any]:
    from auditlog.models import LogEntry
    from django_celery_beat.models import (
        ClockedSchedule,
        CrontabSchedule,
        IntervalSchedule,
        PeriodicTask,
        SolarSchedule,
    )

    from fleet.models import (
        ApiPrice,
        CloudBill,
        Cluster,
        ClusterPurchase,
        ClusterState,
        Deployment,
        ElectricityPrice,
        EndpointPoll,
        ExchangeRate,
        GpuQuote,
        HardwareSku,
        ModelSpec,
        OutboxMessage,
        OwnedCosts,
        WorkerHeartbeat,
        Workload,
    )
    from planner.models import Budget, Calibration, Decision, Plan

    sku = HardwareSku.objects.create(
        slug="h100-sxm-80gb", name="H100 SXM 80GB", vendor="NVIDIA", hbm_gb=80, hbm_bandwidth_tbps=3.35,
        bf16_tflops=989, fp8_tflops=1979, interconnect_gbps=900, gpus_per_node=8,
    )  # fmt: skip
    cluster = Cluster.objects.create(
        slug="pool", name="Pool", sku=sku, nodes=2, provider=Provider.objects.ensure("acme"), team="ml"
    )
    model = ModelSpec.objects.create(
        slug="llama-3.1-70b", name="Llama 3.1 70B", total_params=70_600_000_000, active_params=70_600_000_000,
        hidden_size=8192, vocab_size=128256, max_context_tokens=131072, attention_heads=64, weight_format="bf16",
        layer_groups=[{"kind": "full", "count": 80, "kv_heads": 8, "head_dim": 128}],
    )  # fmt: skip
    workload = Workload.objects.create(
        slug="agent", name="Agent", team="dev", requests_per_day=1000, mean_prompt_tokens=1000,
        mean_output_tokens=100, p95_context_tokens=4000, peak_concurrency=8, ttft_slo_ms=2000, tpot_slo_ms=50,
    )  # fmt: skip
    # No endpoint: an allowed poll-now answers 400 instead of reaching out.
    deployment = Deployment.objects.create(slug="llama", cluster=cluster, model=model, tp=8, engine="vllm")
    quote = GpuQuote.objects.create(
        sku=sku, provider=Provider.objects.ensure("acme"), usd_per_gpu_hour="2.5", quoted_on=date(2026, 1, 1)
    )
    api_price = ApiPrice.objects.create(
        slug="acme-big", provider="acme", model_name="big", input_cache_hit_usd_per_mtok="0.1",
        input_cache_miss_usd_per_mtok="1", output_usd_per_mtok="4", quoted_on=date(2026, 1, 1),
    )  # fmt: skip
    plan = Plan.objects.create(model=model, workload=workload, options={})
    decision = Decision.record(workload=workload, tier=3, note="", figures={}, inputs={}, user=None)
    calibration = Calibration.objects.create(deployment=deployment, measured_on=date(2026, 1, 1))
    budget = Budget.objects.create(team="ml", amount_usd=100)
    poll = EndpointPoll.objects.create(deployment=deployment, polled_at=timezone.now(), status="up")
    heartbeat = WorkerHeartbeat.objects.create(worker="w1", last_seen=timezone.now())
    outbox_message = OutboxMessage.objects.create(task="fleet.poll_one", args=[1])
    someone = User.objects.create_user(username="someone")
    beat = {
        "intervalschedule": IntervalSchedule.objects.create(every=10, period="seconds"),
        "crontabschedule": CrontabSchedule.objects.create(),
        "solarschedule": SolarSchedule.objects.create(event="sunrise", latitude=0, longitude=0),
        "clockedschedule": ClockedSchedule.objects.create(clocked_time=timezone.now()),
    }
    beat["periodictask"] = PeriodicTask.objects.create(name="t", task="t", interval=beat["intervalschedule"])
    token = create_token(someone, name="someone's", scope="read", days=30).token
    bill = CloudBill.objects.create(
        filename="b.csv", size_bytes=1, sha256="-", tag_key="fleetcap-cluster", status="done"
    )
    rate = ExchangeRate.objects.create(currency="EUR", on=date(2026, 1, 1), usd_per_unit="1.1")
    owned_cluster = Cluster.objects.create(
        slug="bought", name="Bought", sku=sku, nodes=1, provider=Provider.objects.ensure("acme"), team="ml",
        ownership=Cluster.Ownership.OWNED,
    )  # fmt: skip
    owned_costs = OwnedCosts.objects.create(cluster=owned_cluster, site="dc1", pue="1.3")
    purchase = ClusterPurchase.objects.create(cluster=owned_cluster, bought_on=date(2026, 1, 15), nodes=1, price=250000)
    electricity = ElectricityPrice.objects.create(site="dc1", valid_from=date(2025, 1, 1), usd_per_kwh="0.12")
    return {
        "owned_cluster": owned_cluster.slug, "owned_costs": owned_costs.pk, "purchase": purchase.pk,
        "electricity_price": electricity.pk,
        "bill": bill.pk, "exchange_rate": rate.pk,
        "sku": sku.slug, "sku_pk": sku.pk, "cluster": cluster.slug, "cluster_pk": cluster.pk,
        "model": model.slug, "model_pk": model.pk, "workload": workload.slug, "workload_pk": workload.pk,
        "deployment": deployment.slug, "deployment_pk": deployment.pk, "quote": quote.pk,
        "provider": cluster.provider_id,
        "api_price": api_price.slug, "api_price_pk": api_price.pk, "plan": plan.pk, "decision": decision.pk,
        "calibration": calibration.pk, "budget": budget.pk,
        "state": ClusterState.objects.get(cluster=cluster).pk, "poll": poll.pk, "heartbeat": heartbeat.pk,
        "outbox": outbox_message.pk,
        "user": someone.pk, "token": token.pk, "group": Group.objects.get(name="viewer").pk,
        "logentry": LogEntry.objects.get_for_object(deployment).get().pk,
        **{name: obj.pk for name, obj in beat.items()},
    }  # fmt: skip


@pytest.fixture(autouse=True)
def fast_password_hashing() -> None:
    """No user here has a password (tokens and force_login): skip conftest's per-test override."""


@pytest.fixture(scope="module")
def quiet_refusals() -> Iterator[None]:
    """Hundreds of refusals: Django logs each 403 with its traceback, which costs more than the request."""
    logger = logging.getLogger("django.request")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


@pytest.fixture(scope="module")
def world(django_db_setup: None, django_db_blocker: Any, quiet_refusals: None) -> Iterator[World]:
    """Records, users and logged-in clients, once for the module, in a transaction rolled back at
    its end (like TestCase.setUpTestData); each case's own transaction nests inside it."""
    with django_db_blocker.unblock(), transaction.atomic():
        keys = _records()
        users: dict[str, User | None] = {"anonymous": None}
        api = {"anonymous": APIClient()}
        browser = {"anonymous": Client()}
        for role in ROLES[1:]:
            # Staff like the demo users, so the admin answers with permissions, not its login page.
            user = User.objects.create_user(username=f"matrix-{role}", is_staff=True, is_superuser=role == "superuser")
            if role in fleet_permissions.ROLES:
                user.groups.add(Group.objects.get(name=role))
            users[role] = user
            api[role] = APIClient()
            api[role].credentials(HTTP_AUTHORIZATION=f"Token {api_key(user)}")
            browser[role] = Client()
            browser[role].force_login(user)
        yield World(keys, users, api, browser)
        transaction.set_rollback(True)


def _send(world: World, role: str, route: Route) -> Any:
    path = route.path.format(**world.keys)
    if route.kind == "api":
        return getattr(world.api[role], route.method)(path, {}, format="json")
    return getattr(world.browser[role], route.method)(path, {})


def _refused(response: Any) -> bool:
    if response.status_code in (401, 403, 405):
        return True
    location = response.get("Location", "") if response.status_code == 302 else ""
    return location.startswith(("/accounts/login/", "/admin/login/"))


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.id)
def test_route(world: World, role: str, route: Route) -> None:
    response = _send(world, role, route)
    allowed = role in route.who
    assert _refused(response) != allowed, (response.status_code, response.get("Location"))
    if role == "anonymous":
        if route.kind == "api":
            assert response.status_code == 401  # token auth first: a challenge, not a 403
        else:
            assert response.status_code == 302
        return
    if not allowed:
        # Logged in: refused outright (never sent to log in); a closed API method is 405 for all.
        assert response.status_code in ({403} if route.perms else {403, 405})
    if route.perms:
        # The admin's view of the user (Django's permissions) agrees with what the route did.
        # (The module's user objects: Django caches their permissions after the first check.)
        assert world.users[role].has_perms(route.perms) == allowed


def test_every_write_route_is_in_the_matrix() -> None:
    """Each viewset's write methods and POST actions, and each admin model's pages, have a row."""
    from fleet.project.api_urls import router

    listed = {(r.method, r.path) for r in ROUTES if r.kind == "api"}
    for prefix, viewset, _basename in router.registry:
        root = f"/api/v1/{prefix}/"

        def methods(depth: int, root: str = root) -> set[str]:  # 4 slashes: the list, 5: a record
            return {m for m, p in listed if p.startswith(root) and p.count("/") == depth}

        writes = {"update": "put", "partial_update": "patch", "destroy": "delete"}
        assert ({"post"} if hasattr(viewset, "create") else set()) <= methods(4), prefix
        assert {m for name, m in writes.items() if hasattr(viewset, name)} <= methods(5), prefix
        for extra in viewset.get_extra_actions():
            if "post" in extra.mapping:
                assert any(m == "post" and p.startswith(root) and p.endswith(f"/{extra.url_path}/") for m, p in listed)
    for model in admin.site._registry:
        base = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        assert sum(r.path.startswith(base) for r in ROUTES) == 3, base


@pytest.mark.django_db
def test_the_groups_hold_exactly_the_tables() -> None:
    """The migrations applied fleet/permissions.py and planner/permissions.py, nothing more."""
    for role in fleet_permissions.ROLES:
        held = set(Group.objects.get(name=role).permissions.values_list("content_type__app_label", "codename"))
        wanted = {("fleet", c) for c in fleet_permissions.GRANTS[role]} | {
            ("planner", c) for c in planner_permissions.GRANTS[role]
        }
        assert held == wanted, role


def test_viewer_views_every_model_and_nobody_edits_decisions() -> None:
    for app_label, table in (("fleet", fleet_permissions), ("planner", planner_permissions)):
        models = {m._meta.model_name for m in apps.get_app_config(app_label).get_models()}
        personal = set(getattr(table, "PERSONAL", ()))  # API tokens: one's own, not everybody's to view
        assert set(table.MODELS) | personal == models
        assert table.GRANTS["viewer"] == {f"view_{m}" for m in models - personal}
    for grants in planner_permissions.GRANTS.values():
        assert not grants & {"change_decision", "delete_decision"}


@pytest.mark.django_db
def test_a_user_who_is_not_staff_is_sent_to_the_admin_login(client: Client) -> None:
    user = User.objects.create_user(username="platform-not-staff")
    user.groups.add(Group.objects.get(name="platform"))
    client.force_login(user)
    response = client.get("/admin/fleet/cluster/add/")
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


# Read pages need the view permissions of what they show, like the API's reads.
READ_PAGES = ["/", "/clusters/{cluster}/", "/deployments/{deployment}/", "/models/", "/models/{model}/",
              "/what-if/", "/prefix-cache/", "/plans/", "/plans/{plan}/", "/rent-vs-api/", "/spend/",
              "/decisions/", "/decisions/{decision}/inputs/", "/quotes/", "/api-prices/", "/skus/", "/workloads/",
              "/electricity-prices/", "/clusters/{owned_cluster}/"]  # fmt: skip


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["anonymous", "none", "viewer"])
@pytest.mark.parametrize("path", READ_PAGES)
def test_read_pages_need_view_permissions(world: World, role: str, path: str) -> None:
    response = world.browser[role].get(path.format(**world.keys))
    expected = {"anonymous": 302, "none": 403, "viewer": 200}[role]
    assert response.status_code == expected


# Actions a page offers, and the permission that hides them (the {% if perms.* %} in templates).
OFFERED = [
    ("/", "Register a cluster", INVENTORY),
    ("/", "Register a deployment", INVENTORY),
    ("/clusters/{cluster}/", "Add a deployment", INVENTORY),
    ("/deployments/{deployment}/", "/edit/", INVENTORY),
    ("/models/", "Add a model", INVENTORY),
    ("/models/{model}/", "/edit/", INVENTORY),
    ("/plans/", "/plans/start/", PLANNERS),
    ("/plans/{plan}/", "/cancel/", ADMINS),
    ("/decisions/", "Compare and decide", DECIDERS),
    ("/spend/", "Add a budget", BUDGETERS),
    ("/spend/", "/budgets/{budget}/edit/", BUDGETERS),
    ("/quotes/", "Add a quote", PRICING),
    ("/quotes/", "/quotes/{quote}/edit/", PRICING),
    ("/quotes/", "/quotes/{quote}/delete/", PRICING),
    ("/api-prices/", "Add an API price", PRICING),
    ("/api-prices/", "/api-prices/{api_price}/delete/", PRICING),
    ("/skus/", "Add a SKU", INVENTORY),
    ("/skus/", "/skus/{sku}/edit/", INVENTORY),
    ("/workloads/", "Add a workload", INVENTORY),
    ("/workloads/", "/workloads/{workload}/delete/", INVENTORY),
    ("/clusters/{owned_cluster}/", "Add a purchase", OWNED),
    ("/clusters/{owned_cluster}/", "/purchases/{purchase}/edit/", OWNED),
    ("/clusters/{owned_cluster}/", "/purchases/{purchase}/delete/", OWNED),
    ("/clusters/{owned_cluster}/", "Edit the running costs", OWNED),
    ("/electricity-prices/", "Add an electricity price", OWNED),
    ("/electricity-prices/", "/electricity-prices/{electricity_price}/edit/", OWNED),
]


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["viewer", "finance", "platform", "admin"])
def test_pages_offer_exactly_the_allowed_actions(world: World, role: str) -> None:
    for path, marker, who in OFFERED:
        page = world.browser[role].get(path.format(**world.keys)).content.decode()
        marker = marker.format(**world.keys)
        assert (marker in page) == (role in who), (path, marker)


@pytest.mark.django_db
def test_demo_users_are_staff_with_exactly_their_role(settings: Any, tmp_path: Any, client: Client) -> None:
    """The admin is usable by every demo login, and shows it what its role allows, no more."""
    from io import StringIO

    from django.core.management import call_command

    settings.VAR_DIR = tmp_path
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # tests only
    call_command("ensure_demo_users", stdout=StringIO())
    for role in fleet_permissions.ROLES:
        user = User.objects.get(username=f"demo-{role}")
        assert user.is_staff and not user.is_superuser
        assert [g.name for g in user.groups.all()] == [role]
    viewer = User.objects.get(username="demo-viewer")
    client.force_login(viewer)
    assert client.get("/admin/fleet/cluster/").status_code == 200  # read-only
    assert client.get("/admin/fleet/cluster/add/").status_code == 403
    assert not viewer.has_perm("fleet.add_cluster")
