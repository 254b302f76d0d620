"""The role groups a test database needs (imported by tests/conftest.py and the tests that set up their own
world), in a module of its own: ``from conftest import ...`` would find whichever conftest was imported first."""

from __future__ import annotations


def ensure_role_groups() -> None:
    """The migrations create the role groups with their permissions, but a transactional test's
    flush deletes them (post_migrate recreates only the permissions): grant them again if so."""
    from django.apps import apps
    from django.contrib.auth.models import Group

    from fleet import permissions as fleet_permissions
    from planner import permissions as planner_permissions

    granted = Group.objects.filter(name__in=fleet_permissions.ROLES, permissions__isnull=False).distinct()
    if granted.count() < len(fleet_permissions.ROLES):
        fleet_permissions.grant(apps, "fleet", fleet_permissions.GRANTS)
        fleet_permissions.grant(apps, "planner", planner_permissions.GRANTS)
