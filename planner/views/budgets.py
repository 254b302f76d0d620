"""Budget pages: add, change and delete a budget (finance, admin). The budgets themselves, with this
month's figures and their alerts, are shown on the spend page (``templates/planner/_budgets.html``).

The form only types the input (its own module section here, beside its one view, so that the spend page's
other changes never meet it); ``planner.budgets.save_budget`` checks and stores, its errors shown beside
the inputs. The signing secret's input is a password field that never shows what is stored: its help
says only whether one is set."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from fleet.errors import FIELD_ERRORS
from fleet.forms import BoundedDecimalField, add_service_errors
from fleet.pickers import PickField
from fleet.views.access import add_or_change_required, perms_required, record_delete_page
from planner.budgets import MAX_AMOUNT, MAX_SECRET_CHARS, MAX_URL_CHARS, BudgetInput, save_budget
from planner.models import Budget


class BudgetForm(forms.Form):
    """A budget as the page takes it: a team or a cluster, the USD amount, where alerts go."""

    team = forms.CharField(required=False, max_length=100, help_text="The team whose clusters count.")
    cluster = PickField("clusters", required=False, placeholder="or one cluster (slug or name)")
    amount_usd = BoundedDecimalField(
        label="Budget (USD a month)", min_value=0.01, max_value=MAX_AMOUNT, max_digits=14, decimal_places=2
    )
    emails = forms.CharField(
        required=False,
        max_length=6000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Addresses an alert is emailed to, separated by commas or lines.",
    )
    webhook_url = forms.CharField(
        required=False,
        max_length=MAX_URL_CHARS,
        label="Webhook URL",
        help_text="Where an alert is POSTed (signed JSON).",
    )
    webhook_secret = forms.CharField(
        required=False,
        max_length=MAX_SECRET_CHARS,
        label="Webhook signing secret",
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )

    def __init__(self, *args: Any, budget: Budget | None = None, **kwargs: Any) -> None:
        if budget is not None and "initial" not in kwargs:
            kwargs["initial"] = {
                "team": budget.team,
                "cluster": budget.cluster.slug if budget.cluster_id else "",
                "amount_usd": budget.amount_usd,
                "emails": ", ".join(budget.emails),
                "webhook_url": budget.webhook_url,
            }
        super().__init__(*args, **kwargs)
        stored = budget is not None and budget.has_webhook_secret
        self.fields["webhook_secret"].help_text = (
            "Set. Leave empty to keep it, or type a new one." if stored else "Not set. Required with a webhook."
        )

    def to_input(self) -> BudgetInput:
        data = self.cleaned_data
        secret = data["webhook_secret"] or None  # an empty input keeps the stored secret
        return BudgetInput(
            amount_usd=data["amount_usd"],
            team=data["team"],
            cluster=data["cluster"],
            emails=data["emails"],
            webhook_url=data["webhook_url"],
            webhook_secret=secret,
        )


@add_or_change_required("planner", "budget")
def budget_form(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    """Add (no ``pk``) or change a budget; errors beside the inputs (400); saved: back to the spend page."""
    budget = get_object_or_404(Budget.objects.select_related("cluster"), pk=pk) if pk else None
    form = BudgetForm(request.POST or None, budget=budget)
    if request.method == "POST" and form.is_valid():
        try:
            saved = save_budget(form.to_input(), budget)
        except FIELD_ERRORS as exc:
            add_service_errors(form, exc)
        else:
            messages.success(request, f"Budget for {saved.scope_text} saved: {saved.amount_usd:,} USD a month.")
            return redirect(reverse("spend") + "#budgets")
    title = f"Change the {budget}" if budget else "Add a budget"
    status = 400 if request.method == "POST" else 200
    return render(request, "form_page.html", {"form": form, "title": title, "cancel": "spend"}, status=status)


@perms_required("planner.delete_budget")
def budget_delete(request: HttpRequest, pk: int) -> HttpResponse:
    """Confirm (GET) and delete (POST) a budget, its alerts with it."""
    budget = get_object_or_404(Budget.objects.select_related("cluster"), pk=pk)
    back = reverse("spend") + "#budgets"
    return record_delete_page(request, budget, back=back, done=back)
