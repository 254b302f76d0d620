"""The price book's pages: GPU quotes and hosted-API prices, listed with the price in force marked,
added (a changed price is a new dated row, prefilled from the one it supersedes), ended or
annotated, deleted when mistaken; each row links to its change history."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone

from fleet import inputs, prices
from fleet.filters import ApiPriceFilter, GpuQuoteFilter
from fleet.forms import ApiPriceForm, ApiPriceNoteForm, GpuQuoteEndForm, GpuQuoteForm, labelled_errors
from fleet.models import ApiPrice, GpuQuote, HardwareSku

from .access import add_or_change_required, perms_required, record_delete_page, record_form_page


@perms_required("fleet.view_gpuquote", "fleet.view_hardwaresku")
def quote_list(request: HttpRequest) -> HttpResponse:
    """Every quote, filtered as the API filters them (``GpuQuoteFilter``: ``?sku=<slug>``,
    ``provider``, ``pricing_kind``, ``list_price``...), with its status today; per SKU the price in force."""
    today = timezone.now().date()
    skus = list(HardwareSku.objects.all())
    chosen = next((s for s in skus if s.slug == request.GET.get("sku")), None)
    found = GpuQuoteFilter(request.GET, queryset=GpuQuote.objects.all())
    quotes = found.qs
    rows = prices.quote_rows(
        quotes.order_by("sku__vendor", "sku__hbm_gb", "sku__name", "-quoted_on", "provider__name"), today
    )
    in_force = {(r.quote.sku_id, r.quote.pricing_kind): r.quote for r in rows if r.status == "price"}
    listed = {}
    for r in rows:
        if r.status == "list-price":
            listed.setdefault(r.quote.sku_id, []).append(r.quote.usd_per_gpu_hour)
    summary = [
        {
            "sku": s,
            "on_demand": in_force.get((s.pk, "on-demand")),
            "reserved": in_force.get((s.pk, "reserved")),
            "list_low": min(listed[s.pk]) if s.pk in listed else None,
            "list_high": max(listed[s.pk]) if s.pk in listed else None,
        }
        for s in skus
        if chosen is None or s == chosen
    ]
    context = {"rows": rows, "summary": summary, "skus": skus, "chosen": chosen, "today": today}
    return render(request, "fleet/quotes.html", context | {"filter_errors": labelled_errors(found.form)})


@add_or_change_required("fleet", "gpuquote")
def quote_form(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    """A new quote (``?from=<id>``: superseding that one, prefilled), or ending/annotating one."""
    quote = get_object_or_404(GpuQuote, pk=pk) if pk else None
    initial = None
    if quote is None and (previous := inputs.whole_number(request.GET.get("from"))) is not None:
        old = GpuQuote.objects.filter(pk=previous).first()
        initial = prices.superseding_quote(old, timezone.now().date()) if old else None
    elif quote is None and request.GET.get("sku"):
        initial = {"sku": HardwareSku.objects.filter(slug=request.GET["sku"]).values_list("pk", flat=True).first()}
    return record_form_page(
        request,
        GpuQuoteEndForm if quote else GpuQuoteForm,
        quote,
        title=f"End or annotate {quote}" if quote else "Add a GPU quote",
        saved=lambda q: (f"Quote saved: {q}.", f"{reverse('gpu-quotes')}?sku={q.sku.slug}"),
        cancel="gpu-quotes",
        initial=initial,
    )


@perms_required("fleet.delete_gpuquote")
def quote_delete(request: HttpRequest, pk: int) -> HttpResponse:
    quote = get_object_or_404(GpuQuote, pk=pk)
    return record_delete_page(request, quote, back=reverse("gpu-quotes"), done=reverse("gpu-quotes"))


@perms_required("fleet.view_apiprice")
def api_price_list(request: HttpRequest) -> HttpResponse:
    found = ApiPriceFilter(request.GET, queryset=ApiPrice.objects.all())
    rows = prices.api_price_rows(found.qs.order_by("provider", "model_name", "-quoted_on"), timezone.now().date())
    return render(request, "fleet/api_prices.html", {"rows": rows, "filter_errors": labelled_errors(found.form)})


@add_or_change_required("fleet", "apiprice")
def api_price_form(request: HttpRequest, slug: str | None = None) -> HttpResponse:
    """A new API price (``?from=<slug>``: superseding that one, prefilled), or annotating one."""
    price = get_object_or_404(ApiPrice, slug=slug) if slug else None
    initial = None
    if price is None and request.GET.get("from"):
        old = ApiPrice.objects.filter(slug=request.GET["from"]).first()
        initial = prices.superseding_api_price(old, timezone.now().date()) if old else None
    return record_form_page(
        request,
        ApiPriceNoteForm if price else ApiPriceForm,
        price,
        title=f"Annotate {price}" if price else "Add an API price",
        saved=lambda p: (f"API price saved: {p}.", reverse("api-prices")),
        cancel="api-prices",
        initial=initial,
    )


@perms_required("fleet.delete_apiprice")
def api_price_delete(request: HttpRequest, slug: str) -> HttpResponse:
    price = get_object_or_404(ApiPrice, slug=slug)
    return record_delete_page(request, price, back=reverse("api-prices"), done=reverse("api-prices"))
