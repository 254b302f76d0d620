"""The glossary: what the pages' terms mean (the decision tiers first, from ``Decision.TIER_MEANINGS``)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from planner.models import Decision


@login_required
def glossary(request: HttpRequest) -> HttpResponse:
    """Every logged-in user may read it: it shows no record."""
    tiers = [
        {"value": value, "label": label, "meaning": Decision.TIER_MEANINGS[value]}
        for value, label in Decision.Tier.choices
    ]
    return render(request, "planner/glossary.html", {"tiers": tiers})
