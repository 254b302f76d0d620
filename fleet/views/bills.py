"""Cloud bills' pages: the bills with the upload form (finance: ``fleet.add_cloudbill``), and a bill's
page with its import's progress (refreshed by htmx until it finishes), its refusal or counts, and its
unmatched rows."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from fleet import bills
from fleet.errors import FIELD_ERRORS
from fleet.forms import BillUploadForm, add_service_errors
from fleet.models import CloudBill
from fleet.views.access import is_partial, perms_required

#: Bills the list shows (newest first) and unmatched rows a bill's page shows; the API pages the rest.
LISTED = 50


@perms_required("fleet.view_cloudbill")
def bill_list(request: HttpRequest) -> HttpResponse:
    """The latest bills; finance's upload form above them."""
    form = BillUploadForm()
    return _list(request, form)


def _list(request: HttpRequest, form: BillUploadForm, status: int = 200) -> HttpResponse:
    context = {
        "form": form,
        "bills": CloudBill.objects.select_related("uploaded_by")[:LISTED],
        "tag_key": settings.BILL_CLUSTER_TAG,
        "max_bytes": settings.BILL_MAX_BYTES,
    }
    return render(request, "fleet/bills.html", context, status=status)


@perms_required("fleet.add_cloudbill")
def bill_upload(request: HttpRequest) -> HttpResponse:
    """POST: store the file and queue its import, then the bill's page; a refused upload (not FOCUS, too
    large) is shown beside its input (400) and nothing is kept."""
    if request.method != "POST":
        return redirect("bills")
    form = BillUploadForm(request.POST, request.FILES)
    if form.is_valid():
        try:
            submitted = bills.submit_bill(form.cleaned_data["file"], request.user, form.cleaned_data["tag_key"])
        except FIELD_ERRORS as exc:
            add_service_errors(form, exc)
        else:
            note = "" if submitted.sent else " The broker is unreachable: the import starts when it is back."
            messages.success(request, f"{submitted.bill.filename} stored; a worker is importing it.{note}")
            return redirect(submitted.bill.get_absolute_url())
    return _list(request, form, status=400)


@perms_required("fleet.view_cloudbill")
def bill_detail(request: HttpRequest, pk: str) -> HttpResponse:
    """A bill's import: progress until it finishes; its refusal, or its counts and unmatched rows."""
    bill = get_object_or_404(CloudBill.objects.select_related("uploaded_by"), pk=pk)
    unmatched = list(bills.unmatched_rows(bill)[:LISTED]) if bill.status == CloudBill.Status.DONE else []
    context = {"bill": bill, "unmatched": unmatched, "listed": LISTED}
    if is_partial(request):
        return render(request, "fleet/_bill_status.html", context)
    return render(request, "fleet/bill.html", context)
