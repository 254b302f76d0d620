"""The hardware catalogue and workloads as pages: list (workloads: searched, sorted, a page at a time),
add, edit, delete (refused, naming what depends on the record), each row linking to its change history."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.vary import vary_on_headers

from fleet import prices
from fleet.forms import HardwareSkuForm, WorkloadForm
from fleet.models import HardwareSku, Workload
from fleet.tables import WorkloadTableForm, table_context

from .access import (
    HtmxHttpRequest,
    add_or_change_required,
    is_partial,
    perms_required,
    record_delete_page,
    record_form_page,
)


@perms_required("fleet.view_hardwaresku")
def sku_list(request: HttpRequest) -> HttpResponse:
    """Every SKU with its figures and, where the user may read quotes, its on-demand price in force."""
    skus = list(HardwareSku.objects.all())
    price = {}
    if request.user.has_perm("fleet.view_gpuquote"):
        today = timezone.now().date()
        book = prices.PriceBook.load(until=today, kind="on-demand")
        price = {s.pk: book.for_sku(s.slug, today) for s in skus}
    rows = [{"sku": s, "price": price.get(s.pk)} for s in skus]
    return render(request, "fleet/skus.html", {"rows": rows})


@add_or_change_required("fleet", "hardwaresku")
def sku_form(request: HttpRequest, slug: str | None = None) -> HttpResponse:
    sku = get_object_or_404(HardwareSku, slug=slug) if slug else None
    return record_form_page(
        request,
        HardwareSkuForm,
        sku,
        title=f"Edit {sku.name}" if sku else "Add a hardware SKU",
        saved=lambda s: (f"SKU {s.name} saved.", reverse("skus")),
        cancel="skus",
    )


@perms_required("fleet.delete_hardwaresku")
def sku_delete(request: HttpRequest, slug: str) -> HttpResponse:
    sku = get_object_or_404(HardwareSku, slug=slug)
    return record_delete_page(request, sku, back=reverse("skus"), done=reverse("skus"))


@perms_required("fleet.view_workload")
@vary_on_headers("HX-Request")
def workload_list(request: HtmxHttpRequest) -> HttpResponse:
    """Workloads, searched, sorted and paginated (``WorkloadTableForm``); the table alone for HTMX."""
    form = WorkloadTableForm(request.GET)
    page = form.paginate(form.apply(Workload.objects.all()))
    context = table_context(form, page, page.object_list)
    if is_partial(request):
        return render(request, "fleet/_workloads_table.html", context)
    return render(request, "fleet/workloads.html", context)


@add_or_change_required("fleet", "workload")
def workload_form(request: HttpRequest, slug: str | None = None) -> HttpResponse:
    workload = get_object_or_404(Workload, slug=slug) if slug else None
    return record_form_page(
        request,
        WorkloadForm,
        workload,
        title=f"Edit {workload.name}" if workload else "Add a workload",
        saved=lambda w: (f"Workload {w.name} saved.", reverse("workloads")),
        cancel="workloads",
    )


@perms_required("fleet.delete_workload")
def workload_delete(request: HttpRequest, slug: str) -> HttpResponse:
    workload = get_object_or_404(Workload, slug=slug)
    return record_delete_page(request, workload, back=reverse("workloads"), done=reverse("workloads"))
