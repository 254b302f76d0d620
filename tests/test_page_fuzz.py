"""Every page form under hostile input, as tests/test_api_fuzz.py puts the API under schemathesis.

The forms are found, not listed. Each page URL of ``fleet.urls`` and ``planner.urls`` (its arguments
a real record's) is asked once by GET and once by an empty POST, as the least-privileged role it
answers, recording every Django form the view makes and every query or body parameter it reads; a
probe (each such name sent with one marker value) then tells which names that method's data binds.
So a new form, field or parameter is fuzzed without a line here; ``test_every_page_form_is_found``
checks the search against the forms the modules define. (A name a view reads only from its own copy
of the query, ``dict(request.GET).pop(name)``, is not seen: views read parameters from the QueryDict.)

Each (page, method) gets a sweep of hostile values in every field at once (huge integers of 5,000 and
100,000 digits, NaN and infinities, negatives, values past the field's bounds, 1 MB strings, control
characters and NUL, deep and huge JSON, wrong types, files where text is expected and the reverse:
every field sees every kind) and ``MAX_EXAMPLES`` hypothesis examples that change a few of the page's
own starting values, so the services behind a valid form are reached too; requests alternate the HTMX
headers. Every answer is one of ``ALLOWED`` (never a 5xx; the test client re-raises a view's
exception); a refused input is named on the page with its message; no traceback or secret key shows;
and a page answers its invalid forms with one status, its own (a 200 re-rendering them or a 400).
Each request runs in a savepoint rolled back after it, inside a module-wide transaction holding the
records, so nothing one case saves or deletes is seen by the next.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from importlib import import_module
from typing import Any
from unittest import mock

import pytest
from django import forms
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import transaction
from django.http import HttpResponse, QueryDict
from django.test import Client
from django.urls import URLPattern, reverse
from django.utils.datastructures import MultiValueDict
from django.utils.html import escape
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from fleet.pickers import PickField

PAGE_URLCONFS = ("fleet.urls", "planner.urls")
#: Least-privileged first: each page is fuzzed as the first role it lets in.
ROLES = ("viewer", "finance", "platform", "admin")
#: What a page may answer hostile input with (302: a valid form saved, or a page's own redirect).
ALLOWED = frozenset({200, 302, 400, 403, 404, 405, 413, 429})
#: Hypothesis examples per (page, method), after the sweep: with the sweep, about 20 requests each.
MAX_EXAMPLES = 6
#: The marker value of the probe (no field has it as a choice or a default).
PROBE = "fuzz-probe-7f3a"
#: How a page marks an error it words itself: an alert beside the inputs, or an error message above.
ALERTS = ('role="alert"', 'class="message error"')
#: What must never reach a page (besides the endpoint keys tests/secret_scan.py looks for).
FORBIDDEN = ("Traceback (most recent call last)", 'File "/', "django.db.utils", "Exception Value")

HUGE = "9" * 5_000
HUGER = "9" * 100_000
MEGA = "x" * 1_000_000
LAYER = '{{"kind": "full", "count": {}, "kv_heads": 8, "head_dim": 128}}'
#: HTMX variants: a plain request, a fragment request, a boosted navigation, a history restore.
HTMX = (
    {},
    {"HX-Request": "true"},
    {"HX-Request": "true", "HX-Boosted": "true"},
    {"HX-Request": "true", "HX-History-Restore-Request": "true"},
)


@dataclass(frozen=True)
class Upload:
    """A file to send (made afresh per request: an uploaded file is read once)."""

    content: bytes
    name: str = "upload.txt"

    def file(self) -> SimpleUploadedFile:
        return SimpleUploadedFile(self.name, self.content)


@dataclass(frozen=True)
class Page:
    name: str
    route: str


def page_patterns() -> list[Page]:
    """Every page URL of the two apps (their URL confs are flat lists of ``path()``)."""
    found = []
    for conf in PAGE_URLCONFS:
        for pattern in import_module(conf).urlpatterns:
            assert isinstance(pattern, URLPattern), f"{conf}: {pattern!r} (an include: walk it here)"
            found.append(Page(pattern.name, str(pattern.pattern)))
    return found


PAGES = page_patterns()


# --- the records -------------------------------------------------------------------------------


@dataclass
class World:
    keys: dict[str, Any]
    clients: dict[str, Client]
    #: Per page name: what it was found to take (once for the module: the records do not change).
    looks: dict[str, dict[str, FirstLook]] = field(default_factory=dict)
    doors: dict[str, list[Door]] = field(default_factory=dict)


def _records() -> dict[str, Any]:
    from fleet.models import (
        ApiPrice,
        CloudBill,
        Cluster,
        ClusterPurchase,
        Deployment,
        ElectricityPrice,
        GpuQuote,
        HardwareSku,
        ModelSpec,
        Provider,
        Workload,
    )
    from planner.models import Budget, Decision, Plan

    call_command("load_catalog", verbosity=0)
    sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
    model = ModelSpec.objects.get(slug="llama-3.1-70b")
    workload = Workload.objects.create(
        slug="chat", name="Chat", team="web", requests_per_day=100_000, mean_prompt_tokens=1_000,
        mean_output_tokens=500, p95_context_tokens=4_000, prefix_cache_hit_rate=0.5, peak_concurrency=64,
        ttft_slo_ms=2000, tpot_slo_ms=50,
    )  # fmt: skip
    cluster = Cluster.objects.create(
        slug="pool", name="Pool", sku=sku, nodes=1, provider=Provider.objects.ensure("acme"), team="ml"
    )
    deployment = Deployment(
        slug="llama", cluster=cluster, model=model, tp=4, replicas=2, kv_cache_dtype="fp8", workload=workload,
        engine="vllm", base_url="http://127.0.0.1:30000",
    )  # fmt: skip
    deployment.set_api_key("sk-secret-do-not-leak-0123456789")
    deployment.save()
    GpuQuote.objects.create(sku=sku, provider=cluster.provider, usd_per_gpu_hour="2.5", quoted_on=date(2026, 1, 1))
    # A done plan with one ranked configuration: its page's "Register as deployment" form is reachable.
    top = {
        "sku": sku.slug, "mode": "aggregated", "kv_cache_dtype": "fp8", "gpus": 8, "nodes": 1, "tpot_ms": 20.0,
        "ttft_ms": 300.0, "tokens_per_s_per_gpu": 500.0, "usd_per_mtok": 1.0, "usd_per_hour": 20.0,
        "usd_per_gpu_hour": "2.5", "decode": {"layout": {"tp": 4}, "replicas": 2, "gpus": 8}, "prefill": None,
    }  # fmt: skip
    plan = Plan.objects.create(model=model, workload=workload, options={}, status="done", result={"top": [top]})
    decision = Decision.record(workload=workload, tier=3, note="", figures={}, inputs={}, user=None)
    budget = Budget.objects.create(team="ml", amount_usd=100, emails=["fin@example.com"])
    bill = CloudBill.objects.create(
        filename="b.csv", size_bytes=1, sha256="-", tag_key="fleetcap-cluster", status="done"
    )
    purchase = ClusterPurchase.objects.create(cluster=cluster, bought_on=date(2026, 1, 15), nodes=1, price=250000)
    electricity = ElectricityPrice.objects.create(site="dc1", valid_from=date(2026, 1, 1), usd_per_kwh="0.12")
    from django.contrib.auth.models import User

    from fleet.tokens import create_token

    token = create_token(User.objects.create_user("token-owner"), name="theirs", scope="read", days=30).token
    return {
        "bill": bill.pk, "token": token.pk, "purchase": purchase.pk, "electricity_price": electricity.pk,
        "sku": sku.slug, "cluster": cluster.slug, "deployment": deployment.slug, "model": model.slug,
        "workload": workload.slug, "quote": GpuQuote.objects.filter(sku=sku).first().pk,
        "api_price": ApiPrice.objects.first().slug, "plan": plan.pk, "decision": decision.pk,
        "budget": budget.pk,
    }  # fmt: skip


#: A real record for each URL argument, by the route's first segment. A page with arguments under a
#: new segment fails ``sample_path`` until it is given its record here.
SAMPLE_KWARGS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "clusters": lambda k: {"slug": k["cluster"], "pk": k["purchase"]},
    "electricity-prices": lambda k: {"pk": k["electricity_price"]},
    "deployments": lambda k: {"slug": k["deployment"]},
    "models": lambda k: {"slug": k["model"]},
    "skus": lambda k: {"slug": k["sku"]},
    "workloads": lambda k: {"slug": k["workload"]},
    "quotes": lambda k: {"pk": k["quote"]},
    "api-prices": lambda k: {"slug": k["api_price"]},
    "plans": lambda k: {"pk": k["plan"]},
    "decisions": lambda k: {"pk": k["decision"]},
    "bills": lambda k: {"pk": k["bill"]},
    "history": lambda k: {"kind": "deployment", "key": k["deployment"]},
    "budgets": lambda k: {"pk": k["budget"]},
    "account": lambda k: {"pk": k["token"]},
}


def sample_path(page: Page, keys: dict[str, Any]) -> str:
    if "<" not in page.route:
        return reverse(page.name)
    segment = page.route.split("/")[0]
    assert segment in SAMPLE_KWARGS, f"{page.name} ({page.route}): give its arguments in SAMPLE_KWARGS"
    kwargs = SAMPLE_KWARGS[segment](keys)  # those the route takes (a cluster's purchase: slug and pk)
    return reverse(page.name, kwargs={name: value for name, value in kwargs.items() if f":{name}>" in page.route})


@pytest.fixture(scope="module")
def quiet_refusals() -> Iterator[None]:
    """Thousands of 4xx: Django logs each one, which costs more than the request."""
    logger = logging.getLogger("django.request")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


@pytest.fixture(scope="module")
def world(django_db_setup: None, django_db_blocker: Any, quiet_refusals: None) -> Iterator[World]:
    """The records and a logged-in client per role, once for the module, in a transaction rolled back
    at its end; each test's own transaction (and each request's savepoint) nests inside it."""
    from planner.answers import coalesced
    from tests.roles import ensure_role_groups

    with django_db_blocker.unblock(), transaction.atomic():
        ensure_role_groups()
        with coalesced("the page fuzz's records"):
            keys = _records()
        clients = {}
        for role in ROLES:
            user = User.objects.create_user(username=f"fuzz-{role}")
            user.groups.add(Group.objects.get(name=role))
            clients[role] = Client()
            clients[role].force_login(user)
        yield World(keys, clients)
        transaction.set_rollback(True)


@pytest.fixture(autouse=True)
def fast_password_hashing() -> None:
    """No user here has a password (force_login): skip conftest's per-test override."""


# --- finding the forms -------------------------------------------------------------------------


@dataclass
class Seen:
    """What one request's view made and read: project forms, and the names it looked up in a
    QueryDict (with whether the value found was the probe's)."""

    forms: list[forms.BaseForm] = field(default_factory=list)
    read: set[str] = field(default_factory=set)
    probed: set[str] = field(default_factory=set)


MIDDLEWARE_FILE = "fleet/middleware.py"


@contextmanager
def watching() -> Iterator[Seen]:
    seen = Seen()
    init = forms.BaseForm.__init__

    def recording_init(self: forms.BaseForm, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        seen.forms.append(self)

    def note(key: Any, value: Any) -> None:
        # The control-character middleware reads every name sent: a view's reads are what count.
        if isinstance(key, str) and not sys._getframe(2).f_code.co_filename.endswith(MIDDLEWARE_FILE):
            seen.read.add(key)
            if value == PROBE or (isinstance(value, list) and PROBE in value):
                seen.probed.add(key)

    def get(self: QueryDict, key: Any, default: Any = None) -> Any:
        value = MultiValueDict.get(self, key, default)
        note(key, value)
        return value

    def getitem(self: QueryDict, key: Any) -> Any:
        value = MultiValueDict.__getitem__(self, key)
        note(key, value)
        return value

    def getlist(self: QueryDict, key: Any, default: Any = None) -> list:
        value = MultiValueDict.getlist(self, key, default)
        note(key, value)
        return value

    def contains(self: QueryDict, key: Any) -> bool:
        note(key, None)
        return dict.__contains__(self, key)

    with (
        mock.patch.object(forms.BaseForm, "__init__", recording_init),
        mock.patch.object(QueryDict, "get", get),
        mock.patch.object(QueryDict, "__getitem__", getitem),
        mock.patch.object(QueryDict, "getlist", getlist),
        mock.patch.object(QueryDict, "__contains__", contains),
    ):
        yield seen


def project_forms(seen: Seen) -> list[forms.BaseForm]:
    """The forms of the apps (their own and their FilterSets'), not Django's auth or admin ones."""
    return [f for f in seen.forms if not type(f).__module__.startswith("django.contrib")]


def send(client: Client, method: str, path: str, data: dict[str, Any], headers: dict[str, str]) -> HttpResponse:
    """One request in a savepoint rolled back after it."""
    with transaction.atomic():
        if method == "GET":
            response = client.get(path, data, headers=headers)
        else:
            body = {k: [v.file() if isinstance(v, Upload) else v for v in vs] for k, vs in as_lists(data).items()}
            response = client.post(path, body, headers=headers)
        transaction.set_rollback(True)
    return response


def as_lists(data: dict[str, Any]) -> dict[str, list[Any]]:
    return {k: list(v) if isinstance(v, (list, tuple)) else [v] for k, v in data.items()}


@dataclass
class Door:
    """One (page, method) that takes input: who may use it, what its data binds, its starting values."""

    page: str
    method: str
    path: str
    role: str
    fields: dict[str, forms.Field | None]  # None: a parameter the view reads itself
    baseline: dict[str, Any]
    forms: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.method} {self.path}"


def refused(response: HttpResponse) -> bool:
    return response.status_code == 403 or (response.status_code == 302 and settings.LOGIN_URL in response["Location"])


@dataclass
class FirstLook:
    """A page asked with no input by one method: the role it let in, the forms made, the names read."""

    role: str
    made: list[forms.BaseForm]
    read: set[str]


def first_look(world: World, page: Page) -> dict[str, FirstLook]:
    """Per method, the page asked with nothing, as the first role it lets in (none: no such method)."""
    if page.name in world.looks:
        return world.looks[page.name]
    path = sample_path(page, world.keys)
    looks = {}
    for method in ("GET", "POST"):
        for role in ROLES:
            with watching() as seen:
                response = send(world.clients[role], method, path, {}, {})
            if not refused(response):
                made = project_forms(seen)
                looks[method] = FirstLook(role, made, seen.read | {n for f in made for n in f.fields})
                break
    world.looks[page.name] = looks
    return looks


def discover(world: World, page: Page) -> list[Door]:
    """The page's doors: per method, the first role it lets in, the names its data binds (found by the
    probe: each name sent with ``PROBE``, bound when a form's data or the view's lookup returns it) and
    their starting values (the forms' data or initial values)."""
    if page.name in world.doors:
        return world.doors[page.name]
    path = sample_path(page, world.keys)
    doors = []
    for method, look in first_look(world, page).items():
        with watching() as probe:
            send(world.clients[look.role], method, path, dict.fromkeys(look.read, PROBE), {})
        bound_forms = [f for f in project_forms(probe) if f.is_bound and any(f.data.get(n) == PROBE for n in f.fields)]
        bound = set(probe.probed)
        for f in bound_forms:
            bound |= {n for n in f.fields if f.data.get(n) == PROBE}
        bound.discard("csrfmiddlewaretoken")
        if not bound:
            continue
        fields: dict[str, forms.Field | None] = {}
        for f in bound_forms:
            for name, fld in f.fields.items():
                if name in bound:
                    fields.setdefault(name, fld)
        for name in sorted(bound):
            fields.setdefault(name, None)
        baseline = starting_values([*look.made, *bound_forms], bound)
        names_of_forms = tuple(sorted({type(f).__name__ for f in bound_forms}))
        doors.append(Door(page.name, method, path, look.role, fields, baseline, names_of_forms))
    world.doors[page.name] = doors
    return doors


def starting_values(made: list[forms.BaseForm], names: set[str]) -> dict[str, Any]:
    """Each name's value as a form starts with it (its data when bound to one, else its initial),
    as a browser would send it back."""
    values: dict[str, Any] = {}
    for form in made:
        for name, fld in form.fields.items():
            if name not in names or name in values or isinstance(fld, forms.FileField):
                continue
            if form.is_bound and form.data.get(name) not in (None, "", PROBE):
                value = form.data.getlist(name) if isinstance(form.data, QueryDict) else form.data.get(name)
            else:
                value = fld.prepare_value(form.get_initial_for_field(fld, name))
            text = as_text(value)
            if text is not None:
                values[name] = text
    return values


def as_text(value: Any) -> Any:
    if value is None or value is False or value == "":
        return None
    if value is True:
        return "on"
    if isinstance(value, (list, tuple)):
        items = [as_text(v) for v in value]
        return [v for v in items if v is not None] or None
    return str(value)


# --- hostile values ----------------------------------------------------------------------------


def _number_text(value: float | int | Any) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def hostile_values(fld: forms.Field | None, method: str) -> list[Any]:
    """Values of every kind for one field: the same kinds for every field (so each sees all), with
    the field's own variants where it has them (numbers past its bounds, JSON of its shape, files)."""
    low = getattr(fld, "min_value", None)
    high = getattr(fld, "max_value", None)
    values: list[Any] = [
        HUGE,
        HUGER,
        "-" + HUGE,
        "NaN",
        "-Infinity",
        "1e309",
        "-1",
        _number_text(high) + "1" if high is not None else "1" + "0" * 40,
        _number_text(low - 1) if low is not None else "-1e40",
        MEGA,
        "a\x00b\x07\x1b[2J\x7f",
        "[" * 100_000 + "]" * 100_000,
        ["1", "two", ""],
        "",
        "\u202eÄ🙂\ufeff ١٢٣ <script>alert(1)</script>{{ 7|add:1 }}' OR '1'='1",
    ]
    if isinstance(fld, (forms.IntegerField, forms.FloatField, forms.DecimalField)):
        values.append("0" * 101 + "1")  # a small number in too many characters
    if not (fld is None or isinstance(fld, (forms.CharField, forms.JSONField, forms.FileField))):
        values.remove(MEGA)  # a number, a choice, a date: 100,000 digits are as long as it needs
    if isinstance(fld, forms.DateField):
        values += ["2026-02-30", "0001-01-01", "9999-12-31"]
    if isinstance(fld, forms.JSONField):
        values += [
            "[" + LAYER.format(HUGE) + "]",
            "[" + LAYER.format(HUGER) + "]",
            "[" + LAYER.format("NaN") + "]",
            "[" + LAYER.format("Infinity") + "]",
            "[" + LAYER.format("1e999") + "]",
            "[" + LAYER.format("-1") + "]",
            "[" + ",".join([LAYER.format(1)] * 20_000) + "]",
            '"' + MEGA + '"',
            '{"kind": "full"}',
            "[1, [2, [3]]]",
        ]
    if isinstance(fld, forms.FileField) and method == "POST":
        values = [
            Upload(('{"n": ' + HUGE + "}").encode(), "config.json"),
            Upload(b"[" * 100_000 + b"]" * 100_000, "config.json"),
            Upload(b"\x00" * 1000),
            Upload(b"\xff\xfe\xfa not utf-8"),
            Upload(b""),
            Upload(b"{" + b'"a": 1,' * 500_000 + b'"b": 2}', "config.json"),
            Upload(b"request_id,arrival_s,prompt_tokens\n" + b"r,1e309,NaN\n" * 10),
            Upload("\u202e🙂".encode()),
            *values[:4],
        ]
    elif method == "POST":
        values.append(Upload(b"a file where text was expected"))
    if isinstance(fld, forms.CharField) and isinstance(fld.widget, forms.PasswordInput):
        # Never echoed or stored readably: secret_scan.py then looks for each of these in every answer.
        values = [f"sk-fuzz-key-{i}-" + (v if isinstance(v, str) else "x") for i, v in enumerate(values)]
    return values


def valid_values(fld: forms.Field | None) -> list[Any]:
    """Values a browser would send that the field takes (so examples reach the services)."""
    if isinstance(fld, PickField):
        return list(fld.picker.records().order_by("slug").values_list("slug", flat=True)[:20])
    if isinstance(fld, forms.ChoiceField):
        choices = [str(v) for v, _ in fld.choices if str(v) != ""][:20]
        if isinstance(fld, forms.MultipleChoiceField):
            return [choices[:1], choices[:3]] if choices else []
        return choices
    if isinstance(fld, (forms.IntegerField, forms.FloatField, forms.DecimalField)):
        low = fld.min_value if fld.min_value is not None else 0
        high = fld.max_value if fld.max_value is not None else 10**6
        return [_number_text(low), _number_text(high), _number_text(low + 1), "8", "0.5"]
    if isinstance(fld, forms.BooleanField):
        return ["on"]
    if isinstance(fld, forms.DateField):
        return ["2026-01-01", "1900-01-01", "9999-12-31"]
    return ["8", "h100-sxm-80gb", "llama-3.1-70b"]


KEEP, OMIT = object(), object()


def examples(door: Door) -> st.SearchStrategy:
    """A mutation of the door's starting values: each name kept, left out, hostile or another valid value."""
    per_name = {}
    for name, fld in door.fields.items():
        options = [st.just(KEEP)] if name in door.baseline else []
        options += [st.just(OMIT), st.sampled_from(hostile_values(fld, door.method))]
        if valid := valid_values(fld):
            options.append(st.sampled_from(valid))
        per_name[name] = st.one_of(*options)
    return st.tuples(st.fixed_dictionaries(per_name), st.sampled_from(HTMX))


def body(door: Door, chosen: dict[str, Any]) -> dict[str, Any]:
    data = {}
    for name, value in chosen.items():
        if value is KEEP:
            data[name] = door.baseline[name]
        elif value is not OMIT:
            data[name] = value
    return data


def sweep(door: Door) -> Iterator[tuple[dict[str, Any], dict[str, str]]]:
    """Every field hostile at once, field ``j`` taking kind ``(i + j)`` of its list in request ``i``:
    over ``len(list)`` requests each field sees every kind, and no two fields move in lockstep."""
    lists = [(name, hostile_values(fld, door.method)) for name, fld in door.fields.items()]
    rounds = max(len(values) for _, values in lists)
    for i in range(rounds):
        yield {name: values[(i + j) % len(values)] for j, (name, values) in enumerate(lists)}, HTMX[i % len(HTMX)]


# --- what an answer must be --------------------------------------------------------------------


def summary(data: dict[str, Any]) -> dict[str, str]:
    """The request's values, shortened for a failure message."""

    def short(value: Any) -> str:
        text = repr(value)
        return text if len(text) <= 60 else f"{text[:40]}...({len(text):,} chars)"

    return {k: short(v) for k, v in data.items()}


@dataclass
class Verdicts:
    """Per (page, method, fragment or not): the statuses its invalid forms were answered with."""

    statuses: dict[tuple[str, bool], set[int]] = field(default_factory=dict)


def check(
    door: Door, data: dict[str, Any], headers: dict[str, str], response: HttpResponse, seen: Seen, verdicts: Verdicts
) -> None:
    where = f"{door.id} as {door.role} {headers} {summary(data)}"
    status = response.status_code
    assert status in ALLOWED, f"{status} for {where}"
    content = b"".join(response) if response.streaming else response.content
    text = content.decode("utf-8", "replace")
    for needle in (*FORBIDDEN, settings.SECRET_KEY):
        assert needle not in text, f"{needle[:30]!r} in the answer to {where}"
    invalid = [f for f in project_forms(seen) if f.is_bound and f._errors]  # validated by the view, refused
    if not invalid:
        if status == 400 and not project_forms(seen):
            # Refused before any view (the control-character middleware, a body too large): named.
            assert any(name in text for name in data) or "too large" in text.lower() or not data, where
        return
    assert status in (200, 400), f"{status} with form errors {invalid[0].errors.as_data()} for {where}"
    partial = headers.get("HX-Request") == "true" and len(headers) == 1
    verdicts.statuses.setdefault((door.id, partial), set()).add(status)
    for form in invalid:
        for name, errors in form.errors.items():
            if name == "__all__":
                continue
            messages = list(errors)
            # Its message, or the page's own words for it in an alert or an error message ("Pick a workload").
            shown = any(escape(m) in text or m in text for m in messages) or any(mark in text for mark in ALERTS)
            if isinstance(form.fields[name].widget, (forms.HiddenInput, forms.MultipleHiddenInput)):
                # Nobody typed it (the page wrote it): refused, said so, but not beside an input.
                assert shown, f"{type(form).__name__}.{name} {messages}: no error shown for {where}"
                continue
            named = name in text or escape(str(form[name].label or name)) in text
            assert named and shown, f"{type(form).__name__}.{name} {messages} not shown for {where}"


def ask(world: World, door: Door, data: dict[str, Any], headers: dict[str, str], verdicts: Verdicts) -> None:
    with watching() as seen:
        try:
            response = send(world.clients[door.role], door.method, door.path, data, headers)
        except Exception as exc:  # a view's exception (the test client re-raises it): a 500 in production
            raise AssertionError(f"500 ({type(exc).__name__}: {str(exc)[:200]}) for {door.id} {summary(data)}") from exc
    check(door, data, headers, response, seen, verdicts)


def fuzz(world: World, door: Door) -> Verdicts:
    verdicts = Verdicts()
    for data, headers in sweep(door):
        ask(world, door, data, headers, verdicts)

    @hypothesis_settings(
        max_examples=MAX_EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(examples(door))
    def mutated(example: tuple[dict[str, Any], dict[str, str]]) -> None:
        chosen, headers = example
        ask(world, door, body(door, chosen), headers, verdicts)

    mutated()
    return verdicts


# --- the tests ---------------------------------------------------------------------------------


def defined_forms() -> set[str]:
    """Every concrete form class the apps define for their pages."""
    names = set()
    for module in ("fleet.forms", "planner.forms", "fleet.tables"):
        for obj in vars(import_module(module)).values():
            if (
                isinstance(obj, type)
                and issubclass(obj, forms.BaseForm)
                and obj.__module__ == module
                and obj.__name__ not in ("BoundedModelForm", "TableForm")
            ):
                names.add(obj.__name__)
    return names


@pytest.mark.django_db
def test_every_page_form_is_found(world):
    doors = [door for page in PAGES for door in discover(world, page)]
    found = {name for door in doors for name in door.forms}
    assert doors and found
    # Every form the apps define is bound by some page's data (a form no page reaches is dead code).
    assert defined_forms() <= found, defined_forms() - found
    by_door = {(door.page, door.method): door for door in doors}
    for page, method, form, names in [
        ("cluster-new", "POST", "ClusterForm", {"nodes", "provider"}),
        ("model-new", "POST", "ModelSpecForm", {"layer_groups", "total_params"}),
        ("model-edit", "POST", "ModelSpecForm", {"layer_groups"}),
        ("model-import", "POST", "ModelImportForm", {"config_text", "config_file"}),
        ("what-if", "GET", "WhatIfForm", {"gpus", "context_tokens"}),
        ("route", "GET", "RouteForm", {"prompt_tokens"}),
        ("prefix-cache", "POST", "PrefixCacheForm", {"trace_file", "tp"}),
        ("prefix-cache", "GET", "PrefixCacheForm", {"tp", "deployment"}),
        ("rent-vs-api", "GET", "RentVsApiForm", {"gpus", "hours_per_day"}),
        ("record-decision", "POST", "DecisionForm", {"tier", "note", "gpus"}),
        ("spend", "GET", "SpendForm", {"month"}),
        ("bill-upload", "POST", "BillUploadForm", {"file", "tag_key"}),
        ("plan-start", "POST", "PlanForm", {"max_nodes"}),
        ("deployment-calibrate", "POST", "CalibrationForm", {"log", "upload"}),
        ("deployment", "GET", "PollRangeForm", {"range", "start"}),
        ("models", "GET", "ModelTableForm", {"q", "sort", "page", "min_total_params"}),
        ("gpu-quote-new", "GET", "", {"from", "sku"}),
    ]:
        door = by_door.get((page, method))
        assert door is not None, (page, method)
        assert not form or form in door.forms, (page, method, door.forms)
        assert names <= door.fields.keys(), (page, method, names - door.fields.keys())


@pytest.mark.django_db
@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_page_forms_under_hostile_input(world, page, settings):
    """Each of the page's doors fuzzed (a page that reads no input, such as a delete page's, has none).
    The per-user limits on expensive requests are off here: one user sends hundreds of a page's requests,
    and what is fuzzed is the form's refusal of each (tests/test_rate_limits.py tests the limits)."""
    settings.EXPENSIVE_REQUEST_RATES = dict.fromkeys(settings.EXPENSIVE_REQUEST_RATES, "off")
    for door in discover(world, page):
        verdicts = fuzz(world, door)
        for (door_id, partial), statuses in verdicts.statuses.items():
            # One answer to invalid input per page and kind of request: its own (200 or 400).
            assert len(statuses) == 1, f"{door_id} (fragment: {partial}) answered invalid forms with {statuses}"
