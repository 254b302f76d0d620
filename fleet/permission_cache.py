"""Each user's permissions read from the cache, not from two queries per request.

Django's ``ModelBackend`` reads a user's permissions (their own and their groups') with two queries the
first time a request checks one, and keeps them on that request's user object only. Every page and API
request here checks at least one (``perms_required``, DRF's model permissions), so those two queries
were about 2 ms of CPU per request (docs/benchmarks.md, "Load"). ``CachedModelBackend`` is the same
backend, keeping the set in the cache under the user, whether they are a superuser, and a *generation*
that every change to who holds which permission moves (``bump`` on ``m2m_changed`` of a user's groups or
permissions and of a group's permissions, and on saving or deleting a group or a permission): a change
made through the admin, a page or ``ensure_demo_users`` is seen at the next request, in every process
sharing the cache. ``PERMISSION_CACHE_S`` bounds the rest (a change made with raw SQL).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.core.cache import cache

#: Seconds a user's permission set is kept at most (a backstop: changes through the ORM move the generation).
PERMISSION_CACHE_S = 300
GENERATION_KEY = "permissions:generation"


def generation() -> int:
    """The current generation of who holds which permission (one cache read)."""
    value = cache.get(GENERATION_KEY)
    if value is None:
        cache.add(GENERATION_KEY, 1, timeout=None)
        value = cache.get(GENERATION_KEY) or 1
    return int(value)


def bump(*_args: Any, **_kwargs: Any) -> None:
    """A permission or membership changed: every cached permission set is stale (signal receiver)."""
    try:
        cache.incr(GENERATION_KEY)
    except ValueError:  # not set yet: nothing is cached under a generation
        cache.add(GENERATION_KEY, 2, timeout=None)


class CachedModelBackend(ModelBackend):
    """``ModelBackend`` whose ``get_all_permissions`` is kept in the cache (module docstring)."""

    def get_all_permissions(self, user_obj: Any, obj: Any = None) -> set[str]:
        if not user_obj.is_active or user_obj.is_anonymous or obj is not None:
            return set()
        if not hasattr(user_obj, "_perm_cache"):
            key = f"permissions:{generation()}:{user_obj.pk}:{int(user_obj.is_superuser)}"
            perms = cache.get(key)
            if perms is None:
                perms = set(super().get_all_permissions(user_obj))
                cache.set(key, perms, timeout=PERMISSION_CACHE_S)
            user_obj._perm_cache = perms
        return user_obj._perm_cache


def connect() -> None:
    """Connect ``bump`` to every change of who holds which permission (``FleetConfig.ready``)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group, Permission
    from django.db.models.signals import m2m_changed, post_delete, post_save

    user = get_user_model()
    for through in (user.groups.through, user.user_permissions.through, Group.permissions.through):
        m2m_changed.connect(bump, sender=through, dispatch_uid=f"permission-cache-{through._meta.label}")
    for model in (Group, Permission):
        post_save.connect(bump, sender=model, dispatch_uid=f"permission-cache-save-{model._meta.label}")
        post_delete.connect(bump, sender=model, dispatch_uid=f"permission-cache-delete-{model._meta.label}")
