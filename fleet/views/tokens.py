"""/account/tokens/: a user's API tokens (create, with the key shown once on the answer; revoke); an
admin (``fleet.view_apitoken``) sees everybody's with a filter and (``fleet.delete_apitoken``) revokes
any. The rules are ``fleet/tokens.py``'s."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from fleet import tokens
from fleet.errors import FIELD_ERRORS
from fleet.forms import ApiTokenFilterForm, ApiTokenForm, add_service_errors

#: Tokens the page lists (newest first); the API pages through the rest.
LISTED = 200


@login_required
def token_list(request: HttpRequest) -> HttpResponse:
    """GET: the list and the form; POST: create a token and show its key, this once."""
    new = None
    status = 200
    if request.method == "POST":
        form = ApiTokenForm(request.POST)
        if form.is_valid():
            try:
                new = tokens.create_token(request.user, **form.service_kwargs())
            except FIELD_ERRORS as exc:
                add_service_errors(form, exc)
        if new is None:
            status = 400
        else:
            form = ApiTokenForm()
    else:
        form = ApiTokenForm()
    see_all = tokens.can_see_all(request.user)
    filters = ApiTokenFilterForm(request.GET or None)
    owner = state = None
    if see_all and filters.is_valid():
        owner, state = filters.cleaned_data["user"] or None, filters.cleaned_data["state"] or None
    context = {
        "form": form,
        "filters": filters if see_all else None,
        "see_all": see_all,
        "tokens": tokens.visible_tokens(request.user, owner=owner, state=state)[:LISTED],
        "new": new,
        "max_days": tokens.max_days(),
    }
    response = render(request, "fleet/tokens.html", context, status=status)
    if new is not None:
        response["Cache-Control"] = "no-store"  # the key is in this page only
    return response


@require_POST
@login_required
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    """Revoke one token: one's own, or anybody's with ``fleet.delete_apitoken`` (404 for a token one cannot see)."""
    token = get_object_or_404(tokens.visible_tokens(request.user), pk=pk)
    tokens.revoke_token(request.user, token)
    messages.success(request, f"Token {token.name!r} of {token.user.username} revoked.")
    return redirect("api-tokens")
