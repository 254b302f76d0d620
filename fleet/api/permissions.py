"""DRF permission classes: Django model permissions, reads included (see ``fleet/permissions.py``)."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission, DjangoModelPermissions

VIEW = "%(app_label)s.view_%(model_name)s"


class ModelPermissions(DjangoModelPermissions):
    """``DjangoModelPermissions`` with reads needing ``view_<model>`` (DRF lets anyone read).

    A method the view has no handler for (PUT on append-only decisions, say) is let through to
    DRF's 405: nothing can happen, and "not allowed for anybody" is the truer answer than 403.
    """

    perms_map = {**DjangoModelPermissions.perms_map, "GET": [VIEW], "OPTIONS": [VIEW], "HEAD": [VIEW]}

    def has_permission(self, request: Any, view: Any) -> bool:
        if request.user and request.user.is_authenticated and not hasattr(view, request.method.lower()):
            return True
        return super().has_permission(request, view)


def require(*perms: str) -> type[BasePermission]:
    """A permission class for a view or action that is not a model's CRUD: every one of ``perms``."""

    class Required(BasePermission):
        message = f"You need the permission {' and '.join(perms)}."

        def has_permission(self, request: Any, view: Any) -> bool:
            user = request.user
            return bool(user and user.is_authenticated and user.has_perms(perms))

    Required.__name__ = Required.__qualname__ = f"Require[{', '.join(perms)}]"
    return Required
