"""Page helpers: Django's permission checks at the top of every view, HTMX helpers, and the one
create-or-edit page every record form uses."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.db.models import Model
from django.forms import ModelForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django_htmx.middleware import HtmxDetails

from fleet import rate_limits
from fleet.errors import InputError
from fleet.prices import delete_record

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


def add_or_change_required(app_label: str, model_name: str, key: str | None = None) -> Callable[[View], View]:
    """For a form page that creates (no ``slug`` or ``pk``) or edits (``slug`` or ``pk``) a record:
    ``add_<model>`` or ``change_<model>``, checked as :func:`perms_required` does. ``key``: the one URL
    argument that names the record edited (a purchase's ``pk`` under its cluster's ``slug``)."""

    def decorator(view: View) -> View:
        add = perms_required(f"{app_label}.add_{model_name}")(view)
        change = perms_required(f"{app_label}.change_{model_name}")(view)

        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            editing = kwargs.get(key) if key else kwargs.get("slug") or kwargs.get("pk")
            return (change if editing else add)(request, *args, **kwargs)

        return wrapped

    return decorator


def over_limit(request: HttpRequest, scope: str, form: Any = None) -> rate_limits.Refusal | None:
    """One request of ``scope`` counted against the user's limit (``fleet.rate_limits``, the API's
    too); past it the refusal, and the bound ``form`` is checked and given the refusal as a form
    error, so the page shows it above what the user typed (a chosen file must be chosen again)."""
    refusal = rate_limits.take(scope, request.user)
    if refusal is not None and form is not None:
        form.is_valid()
        again = " Files must be chosen again." if request.FILES else ""
        form.add_error(None, refusal.message + again)
    return refusal


def refused(response: HttpResponse, refusal: rate_limits.Refusal | None) -> HttpResponse:
    """``response`` as the 429 of ``refusal`` (its ``Retry-After`` in seconds), or as it is."""
    if refusal is not None:
        response.status_code = 429
        response["Retry-After"] = str(refusal.retry_after_s)
    return response


def is_partial(request: HtmxHttpRequest) -> bool:
    """An HTMX request for a fragment (not a boosted navigation, nor htmx restoring a pushed URL
    missing from its history cache, which needs the whole page): render the partial only."""
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.boosted and not htmx.history_restore_request


def record_form_page(
    request: HttpRequest,
    form_class: type[ModelForm],
    instance: Model | None,
    *,
    title: str,
    saved: Callable[[Model], tuple[str, str]],
    cancel: str,
    initial: dict[str, Any] | None = None,
    cancel_url: str | None = None,
) -> HttpResponse:
    """Create or edit one record on ``form_page.html``: errors beside the fields (400), and on success
    a message and a redirect. ``saved(record)`` gives the message and the URL to go to; ``cancel`` is a
    URL name, or ``cancel_url`` a URL (a record's page)."""
    form = form_class(request.POST or None, instance=instance, initial=initial)
    if request.method == "POST" and form.is_valid():
        record = form.save()
        message, url = saved(record)
        messages.success(request, message)
        return redirect(url)
    status = 400 if request.method == "POST" else 200  # a posted form shown again was refused
    context = {"form": form, "title": title, "cancel": cancel, "cancel_url": cancel_url}
    return render(request, "form_page.html", context, status=status)


def record_delete_page(request: HttpRequest, record: Model, *, back: str, done: str) -> HttpResponse:
    """Confirm (GET) and delete (POST) one record through ``fleet.prices.delete_record``: a record
    others depend on stays, with the reason on the page (never a 500). ``back``/``done``: URLs."""
    error = None
    if request.method == "POST":
        name = str(record)
        try:
            delete_record(record)
        except InputError as exc:
            error = " ".join(" ".join(m) for m in exc.errors.values())
        else:
            messages.success(request, f"{record._meta.verbose_name.capitalize()} {name} deleted.")
            return redirect(done)
    context = {"record": record, "kind": record._meta.verbose_name, "back": back, "error": error}
    return render(request, "confirm_delete.html", context, status=400 if error else 200)
