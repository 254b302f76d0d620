"""planner's share of the role table (see ``fleet/permissions.py`` for the roles and fleet's).

Decisions are append-only (the model refuses to save or delete an existing one), so nobody holds
``change_decision`` or ``delete_decision``. ``change_plan`` means cancelling a plan one started
(``cancel_any_plan``, admin only, cancels anyone's): plans are written by their service, and the
admin shows them read-only. Calibrations are written by their
service for whoever may change the deployment (``fleet.change_deployment``); every role reads them,
and nobody holds planner's add/change/delete on them. Speed corrections are written by the hourly
task (``planner.fit_speed_corrections``) only; every role reads them. Stored breakevens and decision
reviews are written by ``planner.reviews`` (the worker) only; every role reads them (0006). Budgets
are managed by finance and admin (add, change, delete); every role reads them and their alerts, which
the hourly check (``planner.budgets``) writes, nobody else (0010).
"""

from __future__ import annotations

from fleet.permissions import codenames

MODELS: tuple[str, ...] = (
    "decision",
    "plan",
    "calibration",
    "speedcorrection",
    "workloadbreakeven",
    "decisionreview",
    "budget",
    "budgetalert",
    "spendsnapshot",
    "spendsnapshotline",
)

RUN_PLANS = frozenset({"add_plan", "change_plan"})
MANAGE_BUDGETS = codenames(["add", "change", "delete"], ["budget"])


def _table(models: tuple[str, ...], extra: dict[str, frozenset[str]] | None = None) -> dict[str, frozenset[str]]:
    extra = extra or {}
    view_all = codenames(["view"], models)
    budgets = MANAGE_BUDGETS if "budget" in models else frozenset()
    return {
        "viewer": view_all,
        "finance": view_all | {"add_decision"} | RUN_PLANS | budgets,
        "platform": view_all | RUN_PLANS,
        "admin": view_all | {"add_decision", "delete_plan"} | RUN_PLANS | budgets | extra.get("admin", frozenset()),
    }


#: The table as migration 0002 applied it, before calibrations existed (0003 applies ``GRANTS``).
GRANTS_0002: dict[str, frozenset[str]] = _table(("decision", "plan"))
#: The table as migration 0003 applied it, before speed corrections existed (0004 applies ``GRANTS``).
GRANTS_0003: dict[str, frozenset[str]] = _table(("decision", "plan", "calibration"))
#: The table as migration 0004 applied it, before ``cancel_any_plan`` (0005 applied it with it).
GRANTS_0004: dict[str, frozenset[str]] = _table(MODELS[:4])
#: The table as migration 0005 applied it, before stored breakevens and reviews (0006 applies ``GRANTS``).
GRANTS_0005: dict[str, frozenset[str]] = _table(MODELS[:4], {"admin": frozenset({"cancel_any_plan"})})
#: The table as migration 0006 applied it, before budgets (0010 applies ``GRANTS``).
GRANTS_0006: dict[str, frozenset[str]] = _table(MODELS[:6], {"admin": frozenset({"cancel_any_plan"})})
#: The table as migration 0010 applied it, before stored spend reports (0012 applies ``GRANTS``).
GRANTS_0010: dict[str, frozenset[str]] = _table(MODELS[:8], {"admin": frozenset({"cancel_any_plan"})})
VIEW_ALL = codenames(["view"], MODELS)
#: role -> planner permission codenames.
GRANTS: dict[str, frozenset[str]] = _table(MODELS, {"admin": frozenset({"cancel_any_plan"})})
