"""Filter backends that refuse what they cannot use (400 naming the parameter) instead of
ignoring it: an invalid filter value (django-filter's form errors), an unknown query parameter
on a list, an ordering on a field the list does not sort by."""

from __future__ import annotations

from django_filters import BooleanFilter
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework import filters
from rest_framework.exceptions import ValidationError
from rest_framework.settings import api_settings

#: What a boolean filter takes (django-filter's NullBooleanField reads anything else as "no filter").
BOOLEANS = frozenset({"true", "false", "1", "0", "yes", "no"})
#: Query parameters every list takes besides its filters.
COMMON_PARAMETERS = frozenset({"page", "page_size", "ordering", api_settings.URL_FORMAT_OVERRIDE or "format"})


class FilterBackend(DjangoFilterBackend):
    """django-filter (invalid values raise, as ``raise_exception`` says) + unknown names refused."""

    def filter_queryset(self, request, queryset, view):
        if getattr(view, "action", None) == "list":
            filterset = self.get_filterset(request, queryset, view)
            known = set(filterset.filters) if filterset is not None else set()
            unknown = sorted(set(request.query_params) - known - COMMON_PARAMETERS)
            if unknown:
                allowed = ", ".join(sorted(known | COMMON_PARAMETERS))
                raise ValidationError({name: [f"Unknown parameter; this list takes {allowed}."] for name in unknown})
            not_boolean = [
                name
                for name, spec in (filterset.filters.items() if filterset is not None else ())
                if isinstance(spec, BooleanFilter)
                and name in request.query_params
                and request.query_params[name].strip().lower() not in BOOLEANS
            ]
            if not_boolean:
                raise ValidationError({name: ["Give true or false."] for name in not_boolean})
        return super().filter_queryset(request, queryset, view)


class OrderingFilter(filters.OrderingFilter):
    """``?ordering=`` on a field the list does not sort by is a 400 (DRF ignores it)."""

    def get_ordering(self, request, queryset, view):
        params = request.query_params.get(self.ordering_param)
        if params:
            fields = [param.strip() for param in params.split(",")]
            valid = {item[0] for item in self.get_valid_fields(queryset, view, {"request": request})}
            wrong = [f for f in fields if f.lstrip("-") not in valid]
            if wrong:
                raise ValidationError(
                    {self.ordering_param: [f"Cannot sort by {', '.join(wrong)}; sort by {', '.join(sorted(valid))}."]}
                )
        return super().get_ordering(request, queryset, view)
