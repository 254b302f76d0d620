"""``{% budget_rows_for spend as rows %}``: the spend page's budgets (``templates/planner/_budgets.html``)
for the month it shows, read by the partial itself so the spend view need not know of budgets."""

from __future__ import annotations

from typing import Any

from django import template

from planner.budgets import BudgetRow, budget_rows

register = template.Library()


@register.simple_tag(takes_context=True)
def budget_rows_for(context: template.Context, spend: dict[str, Any]) -> list[BudgetRow] | None:
    """Every budget against ``spend`` (a spend report's ``to_dict()``) with its alerts; None for a user
    who may not view budgets (the partial then shows nothing)."""
    request = context.get("request")
    if request is None or not request.user.has_perm("planner.view_budget"):
        return None
    return budget_rows(spend)
