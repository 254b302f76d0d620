"""planner's share of the role table (see ``fleet/permissions.py`` for the roles and fleet's).

Decisions are append-only (the model refuses to save or delete an existing one), so nobody holds
``change_decision`` or ``delete_decision``. ``change_plan`` means cancelling a plan: plans are
written by their service, and the admin shows them read-only.
"""

from __future__ import annotations

from fleet.permissions import codenames

MODELS: tuple[str, ...] = ("decision", "plan")

VIEW_ALL = codenames(["view"], MODELS)
RUN_PLANS = frozenset({"add_plan", "change_plan"})

#: role -> planner permission codenames.
GRANTS: dict[str, frozenset[str]] = {
    "viewer": VIEW_ALL,
    "finance": VIEW_ALL | {"add_decision"} | RUN_PLANS,
    "platform": VIEW_ALL | RUN_PLANS,
    "admin": VIEW_ALL | {"add_decision", "delete_plan"} | RUN_PLANS,
}
