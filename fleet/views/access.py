"""Access helpers used at the top of every page view: one place decides who may do what."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django_htmx.middleware import HtmxDetails

from fleet.roles import can_write


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def role_required(area: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Login required, and a role that may write ``area`` (else 403): for pages that change data."""

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @login_required
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not can_write(request.user, area):
                raise PermissionDenied(f"Your role may not change {area}.")
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


def is_partial(request: HtmxHttpRequest) -> bool:
    """An HTMX request for a fragment (not a boosted navigation): render the partial only."""
    return bool(getattr(request, "htmx", False)) and not request.htmx.boosted
