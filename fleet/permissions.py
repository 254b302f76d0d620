"""Roles are Django groups holding Django model permissions; this module is fleet's table of them.

* ``viewer``: view every record.
* ``finance``: view; add, change and delete GPU quotes and API prices, cloud bills (upload a FOCUS
  file), exchange rates and an owned cluster's costs (running costs, purchases, electricity prices)
  (planner: record decisions, start and cancel plans).
* ``platform``: view; add, change and delete the inventory (SKUs, clusters, deployments, models,
  workloads), an owned cluster's costs, and poll a deployment now (planner: start and cancel plans).
* ``admin``: every permission of both apps except those nothing honours (planner: changing or
  deleting a decision), and of API tokens only ``view_apitoken`` and ``delete_apitoken`` (list and
  revoke anybody's: fleet/tokens.py). Everybody manages their own tokens without a permission.
  Superusers hold every permission, as Django makes them.

The migrations (``fleet/migrations/0002_roles.py``, ``planner/migrations/0002_role_permissions.py``)
apply these tables with :func:`grant`, and the tests read them; ``planner/permissions.py`` holds
planner's table. Nothing else decides who may do what: the API, the pages, the templates and the
admin all ask ``user.has_perm()``. A change to a table needs a new migration calling :func:`grant`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

ROLES: tuple[str, ...] = ("viewer", "finance", "platform", "admin")

#: Every fleet model (lower-case model names, as in permission codenames).
MODELS: tuple[str, ...] = (
    "hardwaresku",
    "cluster",
    "clusterstate",
    "deployment",
    "endpointpoll",
    "endpointpollhourly",
    "dailypollcount",
    "gpuquote",
    "apiprice",
    "modelspec",
    "workload",
    "workerheartbeat",
    "outboxmessage",
    "capacitysnapshot",
    "provider",
    "scheduledrun",
    "cloudbill",
    "billrow",
    "exchangerate",
    "ownedcosts",
    "clusterpurchase",
    "electricityprice",
)
#: Records a person keeps for themselves (API tokens; the first answers kept for their API retries,
#: ``fleet.idempotency``): in no role's view-everything; the admin role lists and revokes everybody's tokens
#: (nobody adds or changes another's: a token is made by its owner).
PERSONAL: tuple[str, ...] = ("apitoken", "idempotentrequest")
TOKEN_ADMIN: frozenset[str] = frozenset({"view_apitoken", "delete_apitoken"})
#: Records the platform team writes (a cluster names its provider: platform may add one).
INVENTORY: tuple[str, ...] = ("hardwaresku", "cluster", "deployment", "modelspec", "workload", "provider")
#: Records finance writes (a quote names its provider: finance may add one).
PRICING: tuple[str, ...] = ("gpuquote", "apiprice", "provider")
#: Records finance writes about what was billed (a bill's rows are the import's: admin alone edits them).
BILLING: tuple[str, ...] = ("cloudbill", "exchangerate")
#: An owned cluster's costs (its running costs, purchases, the sites' electricity prices): the platform team
#: writes them beside the cluster, finance beside the quotes and bills.
OWNED: tuple[str, ...] = ("ownedcosts", "clusterpurchase", "electricityprice")
#: Declared in ``Deployment.Meta.permissions``: ``POST /api/v1/deployments/<slug>/poll/``.
POLL = "poll_deployment"


def codenames(actions: Iterable[str], models: Iterable[str]) -> frozenset[str]:
    """``{action}_{model}`` for every pair, e.g. ``codenames(["view"], ["cluster"])``."""
    models = tuple(models)
    return frozenset(f"{action}_{model}" for action in actions for model in models)


WRITE = ("add", "change", "delete")


def _table(models: tuple[str, ...]) -> dict[str, frozenset[str]]:
    view_all = codenames(["view"], models)
    pricing = [m for m in (*PRICING, *BILLING, *OWNED) if m in models]
    inventory = [m for m in (*INVENTORY, *OWNED) if m in models]
    return {
        "viewer": view_all,
        "finance": view_all | codenames(WRITE, pricing),
        "platform": view_all | codenames(WRITE, inventory) | {POLL},
        "admin": codenames(["view", *WRITE], models) | {POLL},
    }


VIEW_ALL = codenames(["view"], MODELS)


def _without(*later: str) -> dict[str, frozenset[str]]:
    """The table before the models ``later`` existed."""
    return _table(tuple(m for m in MODELS if m not in later))


#: The models migration 0022 added (cloud bills): in no table before it.
LATER_0022 = ("cloudbill", "billrow", "exchangerate")
#: The models migration 0024 added (owned clusters), granted by 0025: in no table before it.
LATER_0025 = OWNED
#: The table as migration 0002 applied it, before the outbox existed (0007 applies ``GRANTS_0007``).
GRANTS_0002: dict[str, frozenset[str]] = _without(
    "outboxmessage", "capacitysnapshot", "provider", "scheduledrun", *LATER_0022, *LATER_0025
)
#: The table as migration 0007 applied it, before capacity snapshots existed (0014 applies ``GRANTS_0014``).
GRANTS_0007: dict[str, frozenset[str]] = _without(
    "capacitysnapshot", "provider", "scheduledrun", *LATER_0022, *LATER_0025
)
#: The table as migration 0014 applied it, before providers were records (0018 applies ``GRANTS_0018``).
GRANTS_0014: dict[str, frozenset[str]] = _without("provider", "scheduledrun", *LATER_0022, *LATER_0025)
#: The table as migration 0018 applied it, before scheduled runs were recorded (0020 applies ``GRANTS_0020``).
GRANTS_0018: dict[str, frozenset[str]] = _without("scheduledrun", *LATER_0022, *LATER_0025)
#: The table as migration 0020 applied it, before cloud bills (0023 applies ``GRANTS_0023``).
GRANTS_0020: dict[str, frozenset[str]] = _without(*LATER_0022, *LATER_0025)
#: The table as migration 0023 applied it, before owned clusters (0025_owned_roles applies ``GRANTS_0025``).
GRANTS_0023: dict[str, frozenset[str]] = _without(*LATER_0025)
#: The table as migration 0025_owned_roles applied it, before API tokens (0026_api_tokens applies ``GRANTS``).
GRANTS_0025: dict[str, frozenset[str]] = _table(MODELS)
#: role -> fleet permission codenames.
GRANTS: dict[str, frozenset[str]] = {**GRANTS_0025, "admin": GRANTS_0025["admin"] | TOKEN_ADMIN}


def create_permissions_now(apps: Any, app_label: str) -> None:
    """Create ``app_label``'s content types and permissions inside a migration.

    Django creates them after ``migrate`` (post_migrate), too late for a data migration on a fresh
    database; the historical app config has no models module, which ``create_permissions`` skips.
    """
    from django.contrib.auth.management import create_permissions

    config = apps.get_app_config(app_label)
    config.models_module = True
    create_permissions(config, apps=apps, verbosity=0)


def grant(apps: Any, app_label: str, table: Mapping[str, Iterable[str]]) -> None:
    """Create the role groups and give each exactly ``table[role]`` among ``app_label``'s permissions.

    ``apps`` is a migration's app registry or ``django.apps.apps``; permissions of other apps are
    left alone. An unknown codename is an error (KeyError), not a silent no-op.
    """
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    existing = {p.codename: p for p in Permission.objects.filter(content_type__app_label=app_label)}
    for role in ROLES:
        group, _ = Group.objects.get_or_create(name=role)
        wanted = {existing[codename] for codename in table.get(role, ())}
        held = set(group.permissions.filter(content_type__app_label=app_label))
        group.permissions.remove(*(held - wanted))
        group.permissions.add(*(wanted - held))
