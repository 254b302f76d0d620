"""Access helpers used at the top of every page view: Django's permission checks, HTMX helpers."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required, permission_required
from django.http import HttpRequest, HttpResponse
from django_htmx.middleware import HtmxDetails

View = Callable[..., HttpResponse]


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def perms_required(*perms: str) -> Callable[[View], View]:
    """Django's ``permission_required(perms, raise_exception=True)`` behind ``login_required``.

    Alone, ``raise_exception`` answers 403 to anonymous users too; this way they are sent to log
    in, and a logged-in user without every one of ``perms`` gets 403.
    """

    def decorator(view: View) -> View:
        return login_required(permission_required(perms, raise_exception=True)(view))

    return decorator


def add_or_change_required(app_label: str, model_name: str) -> Callable[[View], View]:
    """For a form page that creates (no ``slug``) or edits (``slug``) a record: ``add_<model>`` or
    ``change_<model>``, checked as :func:`perms_required` does."""

    def decorator(view: View) -> View:
        add = perms_required(f"{app_label}.add_{model_name}")(view)
        change = perms_required(f"{app_label}.change_{model_name}")(view)

        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            return (change if kwargs.get("slug") else add)(request, *args, **kwargs)

        return wrapped

    return decorator


def is_partial(request: HtmxHttpRequest) -> bool:
    """An HTMX request for a fragment (not a boosted navigation): render the partial only."""
    return bool(getattr(request, "htmx", False)) and not request.htmx.boosted
