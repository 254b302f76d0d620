"""Roles as Django groups, and the one place that decides who may write what.

* ``viewer``: read everything.
* ``finance``: read; write GPU quotes, API prices and decisions.
* ``platform``: read; write inventory (SKUs, clusters, deployments, models, workloads).
* ``admin``: everything. Superusers count as admin.

Every API viewset and page names the *area* it writes (``inventory``, ``pricing``,
``decisions``, ``plans``); ``can_write(user, area)`` answers for both.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import HttpRequest
from rest_framework.permissions import SAFE_METHODS, BasePermission

ROLES: tuple[str, ...] = ("viewer", "finance", "platform", "admin")

#: Which roles may write each area.
WRITERS: dict[str, frozenset[str]] = {
    "inventory": frozenset({"platform", "admin"}),
    "pricing": frozenset({"finance", "admin"}),
    "decisions": frozenset({"finance", "admin"}),
    "plans": frozenset({"platform", "finance", "admin"}),
    "polls": frozenset({"platform", "admin"}),
}


def roles_of(user: AbstractBaseUser | AnonymousUser) -> frozenset[str]:
    """The user's roles (cached on the user object for the request)."""
    if not getattr(user, "is_authenticated", False):
        return frozenset()
    cached = getattr(user, "_fleetcap_roles", None)
    if cached is None:
        names = set(user.groups.values_list("name", flat=True)) & set(ROLES)
        if user.is_superuser:
            names.add("admin")
        cached = frozenset(names)
        user._fleetcap_roles = cached
    return cached


def can_write(user: AbstractBaseUser | AnonymousUser, area: str) -> bool:
    """True when one of the user's roles may write ``area``."""
    return bool(roles_of(user) & WRITERS[area])


class RolePermission(BasePermission):
    """Authenticated users read; writes need a role that may write the view's ``write_area``."""

    message = "Your role may not change these records."

    def has_permission(self, request: Any, view: Any) -> bool:
        if not request.user or not request.user.is_authenticated:
            return False
        if request.method in SAFE_METHODS:
            return True
        return can_write(request.user, getattr(view, "write_area", "admin-only"))


WRITERS["admin-only"] = frozenset({"admin"})


def roles_context(request: HttpRequest) -> dict[str, Any]:
    """Template context: ``roles`` and ``can`` (area -> bool) for showing only allowed actions."""
    user = getattr(request, "user", None)
    if user is None:
        return {}
    return {"roles": roles_of(user), "can": {area: can_write(user, area) for area in WRITERS}}
