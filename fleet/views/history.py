"""A record's audit trail as a page (fleet/audit.py): whoever may view the record may read it."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Model
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse

from fleet import audit, inputs
from fleet.models import ApiPrice, Cluster, Deployment, GpuQuote, HardwareSku, ModelSpec, Workload

#: Entries on a record's page (its history section); the history page shows them all, paginated.
SECTION_ENTRIES = 10
ENTRIES_PER_PAGE = 50

#: ``/history/<kind>/<key>/``: the record types of fleet and the field their key is.
KINDS: dict[str, tuple[type[Model], str]] = {
    "sku": (HardwareSku, "slug"),
    "cluster": (Cluster, "slug"),
    "deployment": (Deployment, "slug"),
    "model": (ModelSpec, "slug"),
    "workload": (Workload, "slug"),
    "gpu-quote": (GpuQuote, "pk"),
    "api-price": (ApiPrice, "slug"),
}


def may_view(user, model: type[Model]) -> bool:
    """The record's own ``view_<model>`` permission (the project's one permission system)."""
    return user.has_perm(f"{model._meta.app_label}.view_{model._meta.model_name}")


def history_section(record: Model, kind: str | None = None) -> dict:
    """Context for ``_history.html`` on a record's page: its newest entries and the full page's URL."""
    url = reverse("history", args=[kind, record.slug]) if kind else None
    return {"history": audit.recent(record, SECTION_ENTRIES), "history_url": url}


def history_page(request: HttpRequest, record: Model, back: str | None = None) -> HttpResponse:
    """The record's whole audit trail, newest first, paginated (the caller has checked access)."""
    page = Paginator(audit.history_of(record), ENTRIES_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "record": record,
        "kind_label": f"Changes to this {record._meta.verbose_name}",
        "history": audit.entries(page.object_list),
        "page": page,
        "back": back,
    }
    return render(request, "history.html", context)


@login_required
def record_history(request: HttpRequest, kind: str, key: str) -> HttpResponse:
    if kind not in KINDS:
        raise Http404("No such kind of record.")
    model, field = KINDS[kind]
    if not may_view(request.user, model):
        raise PermissionDenied
    lookup = inputs.whole_number(key) if field == "pk" else key
    if lookup is None:
        raise Http404("No such record.")
    record = get_object_or_404(model, **{field: lookup})
    return history_page(request, record, back=_page_of(kind, record))


def _page_of(kind: str, record: Model) -> str | None:
    """The record's own page, where it has one; else the list page it is managed on."""
    names = {"cluster": "cluster", "deployment": "deployment", "model": "model"}
    lists = {"sku": "skus", "workload": "workloads", "gpu-quote": "gpu-quotes", "api-price": "api-prices"}
    if kind in names:
        return reverse(names[kind], args=[record.slug])
    return reverse(lists[kind]) if kind in lists else None
