"""Permissions kept in the cache (fleet/permission_cache.py): read without a query once cached, and a
change to who holds which permission seen at the next request."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.db import connection
from django.test.utils import CaptureQueriesContext


def fresh(user: User) -> User:
    """The user as a new request loads it (no permission set on the object)."""
    return User.objects.get(pk=user.pk)


@pytest.mark.django_db
def test_a_second_request_reads_the_permissions_without_a_query(make_user):
    viewer = make_user("v", "viewer")
    assert fresh(viewer).has_perm("fleet.view_cluster")
    user = fresh(viewer)
    with CaptureQueriesContext(connection) as queries:
        assert user.has_perm("fleet.view_cluster") and not user.has_perm("fleet.add_cluster")
    assert queries.captured_queries == []


@pytest.mark.django_db
def test_joining_or_leaving_a_group_is_seen_at_once(make_user):
    user = make_user("u", "viewer")
    assert not fresh(user).has_perm("fleet.add_cluster")
    platform = Group.objects.get(name="platform")
    user.groups.add(platform)
    assert fresh(user).has_perm("fleet.add_cluster")
    user.groups.remove(platform)
    assert not fresh(user).has_perm("fleet.add_cluster")


@pytest.mark.django_db
def test_a_permission_taken_from_a_group_is_seen_at_once(make_user):
    user = make_user("u", "viewer")
    assert fresh(user).has_perm("fleet.view_cluster")
    viewer = Group.objects.get(name="viewer")
    viewer.permissions.remove(Permission.objects.get(codename="view_cluster", content_type__app_label="fleet"))
    assert not fresh(user).has_perm("fleet.view_cluster")


@pytest.mark.django_db
def test_a_deleted_group_takes_its_permissions_at_once(make_user):
    user = make_user("u", "viewer")
    assert fresh(user).has_perm("fleet.view_cluster")
    Group.objects.get(name="viewer").delete()
    assert not fresh(user).has_perm("fleet.view_cluster")


@pytest.mark.django_db
def test_superusers_inactive_users_and_object_checks_as_djangos_backend(make_user):
    user = make_user("u", "viewer")
    assert fresh(user).has_perm("fleet.view_cluster")
    User.objects.filter(pk=user.pk).update(is_superuser=True)
    assert fresh(user).has_perm("fleet.delete_cluster")
    User.objects.filter(pk=user.pk).update(is_superuser=False, is_active=False)
    assert not fresh(user).has_perm("fleet.view_cluster")
    User.objects.filter(pk=user.pk).update(is_active=True)
    assert fresh(user).get_all_permissions(obj=object()) == set()
