"""Every input a door takes is bounded before it is parsed or looked up (issue 29): each page form's
and FilterSet's fields, and each field of every API request body as the schema states it. A new
field without a bound fails here, naming it; tests/test_page_fuzz.py and tests/test_api_fuzz.py
then show the bounds hold under hostile input."""

from __future__ import annotations

import json
from importlib import import_module

import pytest
from django import forms
from django_filters import FilterSet

from fleet.filters import BoundedFilterSet
from fleet.forms import BoundedJSONField, BoundedModelForm, BoundedNumberText, UploadField
from fleet.tables import TableForm

FORM_MODULES = ("fleet.forms", "planner.forms", "fleet.tables")
FILTER_MODULES = ("fleet.filters", "planner.filters")


def classes(modules: tuple[str, ...], base: type) -> list[type]:
    found = []
    for name in modules:
        module = import_module(name)
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, base) and obj.__module__ == name:
                found.append(obj)
    return found


def field_problem(field: forms.Field) -> str | None:
    """What leaves a form field unbounded, or None."""
    if isinstance(field, (forms.IntegerField, forms.FloatField, forms.DecimalField)):
        if not isinstance(field, BoundedNumberText):
            return "a number field that parses text of any length (use fleet.forms.Bounded*Field)"
        if field.min_value is None or field.max_value is None:
            return f"a number without bounds ({field.min_value}, {field.max_value})"
    elif isinstance(field, forms.JSONField):
        if not isinstance(field, BoundedJSONField):
            return "JSON without its depth, digits and size checks (use fleet.forms.BoundedJSONField)"
    elif isinstance(field, forms.FileField) and not isinstance(field, UploadField):
        return "a clearable file input (use fleet.forms.UploadField)"
    elif isinstance(field, forms.CharField) and not isinstance(field, forms.UUIDField) and field.max_length is None:
        return "text without a max_length"
    return None


def page_forms() -> list[type]:
    return [f for f in classes(FORM_MODULES, forms.BaseForm) if f not in (BoundedModelForm, TableForm)]


@pytest.mark.django_db
@pytest.mark.parametrize("form_class", page_forms(), ids=lambda f: f.__name__)
def test_every_page_form_field_is_bounded(form_class):
    form = form_class()
    problems = {name: p for name, field in form.fields.items() if (p := field_problem(field))}
    assert not problems, problems


FILTERSETS = [f for f in classes(FILTER_MODULES, FilterSet) if f is not BoundedFilterSet]


@pytest.mark.django_db
@pytest.mark.parametrize("filterset", FILTERSETS, ids=lambda f: f.__name__)
def test_every_filter_is_bounded(filterset):
    assert issubclass(filterset, BoundedFilterSet), "a FilterSet of the apps is a fleet.filters.BoundedFilterSet"
    problems = {name: p for name, field in filterset().form.fields.items() if (p := field_problem(field))}
    assert not problems, problems


def request_body_problems() -> list[str]:
    """Every unbounded field of every JSON request body of the live schema (read-only fields, enums,
    dates, UUIDs and patterned strings such as decimals are bounded by their form)."""
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.renderers import OpenApiJsonRenderer

    schema = json.loads(OpenApiJsonRenderer().render(SchemaGenerator().get_schema(request=None, public=True)))
    components = schema["components"]["schemas"]
    problems: list[str] = []

    def resolve(node: dict) -> dict:
        if "$ref" in node:
            return components[node["$ref"].rsplit("/", 1)[-1]]
        if len(node.get("allOf", ())) == 1:
            return resolve(node["allOf"][0])
        return node

    def walk(where: str, node: dict) -> None:
        node = resolve(node)
        kind = node.get("type")
        if "enum" in node or node.get("readOnly"):
            return
        if kind == "object":
            for name, child in node.get("properties", {}).items():
                walk(f"{where}.{name}", child)
        elif kind in ("integer", "number") and ("minimum" not in node or "maximum" not in node):
            problems.append(f"{where}: a number without a minimum and a maximum")
        elif kind == "string" and not ({"maxLength", "pattern"} & node.keys() or node.get("format") in FORMATS):
            problems.append(f"{where}: text without a maxLength")
        elif kind == "array":
            if "maxItems" not in node:
                problems.append(f"{where}: a list without maxItems")
            walk(f"{where}[]", node.get("items", {}))

    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body:
                walk(f"{method.upper()} {path}", body["schema"])
    return problems


#: String formats whose parser bounds them.
FORMATS = ("date", "date-time", "uuid", "binary")


@pytest.mark.django_db
def test_every_api_request_field_is_bounded():
    """JSON-valued fields (layer groups, a config.json) have no schema bound: ``BoundedJSONField``
    bounds their size, the JSON parser their depth and digits (tests/test_bad_input.py)."""
    assert not request_body_problems()
