"""Bad input never gives a 500: NUL and control characters, huge numbers, months out of range,
deep JSON, and the one JSON error shape of every API error (docs/api.md, "Errors")."""

from __future__ import annotations

import json
import re

import pytest
from django.db import OperationalError

NUL = "\x00"


#: An error body: ``detail`` and ``code`` always; field errors as ``field: [messages]`` beside them.
def assert_error_shape(body: dict, status: int) -> None:
    assert isinstance(body, dict), body
    assert isinstance(body.get("detail"), str) and body["detail"], body
    assert isinstance(body.get("code"), str) and body["code"], body
    for key, value in body.items():
        if key not in ("detail", "code"):
            assert isinstance(value, list) and all(isinstance(m, str) for m in value), (key, value)


@pytest.fixture
def admin_api(client_for):
    return client_for("admin")


@pytest.fixture
def catalog(db):
    from django.core.management import call_command

    call_command("load_catalog", verbosity=0)


# --- NUL and control characters ---------------------------------------------------------------


@pytest.mark.parametrize(
    "url, body",
    [
        ("/api/v1/sizing/", {"model": f"kimi{NUL}k3", "sku": "h100-sxm-80gb"}),
        ("/api/v1/breakeven/", {"gpus": 8, "sku": f"h100{NUL}", "api_price": "x"}),
        (
            "/api/v1/clusters/",
            {"slug": "c", "name": "c", "sku": f"h100{NUL}", "nodes": 1, "team": "t", "provider": "p"},
        ),
        ("/api/v1/plans/", {"model": f"k{NUL}", "workload": "w"}),
        ("/api/v1/decisions/", {"workload": f"w{NUL}", "tier": 1, "breakeven": {}}),
    ],
)
def test_nul_in_a_body_slug_is_a_400_naming_the_field(admin_api, catalog, url, body):
    r = admin_api.post(url, body, format="json")
    assert r.status_code == 400, r.content
    assert_error_shape(r.json(), 400)
    fields = [k for k in r.json() if k not in ("detail", "code")]
    assert any(NUL not in k for k in fields)
    assert any("control character" in " ".join(r.json()[k]) for k in fields), r.json()


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/decisions/?workload=%00",
        "/api/v1/calibrations/?deployment=%00",
        "/api/v1/clusters/?sku=a%00b",
        "/api/v1/clusters/h100%00pool/",
        "/api/v1/models/k%00/",
        "/api/v1/spend/?month=2026-0%001",
    ],
)
def test_nul_in_a_url_is_a_400_naming_the_parameter(admin_api, catalog, url):
    r = admin_api.get(url)
    assert r.status_code == 400, r.content
    assert r["Content-Type"].startswith("application/json")
    assert_error_shape(r.json(), 400)


def test_control_character_in_free_text_is_refused_but_tabs_and_newlines_pass(admin_api, sku):
    from fleet.models import Provider

    Provider.objects.ensure("p")
    body = {"slug": "c1", "name": "bell\x07", "sku": sku.slug, "nodes": 1, "team": "t", "provider": "p"}
    r = admin_api.post("/api/v1/clusters/", body, format="json")
    assert r.status_code == 400 and "name" in r.json(), r.content
    body["name"] = "tab\there"
    assert admin_api.post("/api/v1/clusters/", body, format="json").status_code == 201


def test_nul_in_a_page_query_is_a_400_not_a_500(client, make_user, catalog):
    client.force_login(make_user("v", "viewer"))
    r = client.get("/what-if/?model=k%00")
    assert r.status_code == 400
    assert "control character" in r.content.decode()


# --- numbers ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url, body, field",
    [
        (
            "/api/v1/sizing/",
            {"model": "kimi-k3", "sku": "h100-sxm-80gb", "runtime_reserve_gib": 1e308},
            "runtime_reserve_gib",
        ),
        ("/api/v1/sizing/", {"model": "kimi-k3", "sku": "h100-sxm-80gb", "gpus": 10**30}, "gpus"),
        ("/api/v1/breakeven/", {"gpus": 10**30, "usd_per_gpu_hour": "2", "api_price": "x"}, "gpus"),
        (
            "/api/v1/breakeven/",
            {"gpus": 8, "usd_per_gpu_hour": "2", "monthly_input_tokens": 10**30},
            "monthly_input_tokens",
        ),
        ("/api/v1/plans/", {"model": "kimi-k3", "workload": "w", "max_nodes": 10**30}, "max_nodes"),
        ("/api/v1/skus/", {"slug": "s", "name": "s", "vendor": "v", "hbm_gb": 1e308}, "hbm_gb"),
    ],
)
def test_numbers_beyond_the_engine_are_a_400_naming_the_limit(admin_api, catalog, url, body, field):
    r = admin_api.post(url, body, format="json")
    assert r.status_code == 400, r.content
    assert field in r.json()
    assert "less than or equal to" in " ".join(r.json()[field])


# --- months -------------------------------------------------------------------------------------


@pytest.mark.parametrize("month", ["0000-01", "9999-12", "0001-01"])
def test_months_out_of_range_are_a_400(admin_api, make_user, client, month):
    r = admin_api.get(f"/api/v1/spend/?month={month}")
    assert r.status_code == 400 and "month" in r.json(), r.content
    r = admin_api.get(f"/api/v1/spend/?month={month}&format=csv")
    assert r.status_code == 400, r.content
    client.force_login(make_user("f", "finance"))
    r = client.get(f"/spend/?month={month}")
    assert r.status_code in (200, 400) and "between" in r.content.decode()


# --- deep JSON and body size --------------------------------------------------------------------


def test_deep_json_is_a_400(admin_api):
    deep = "[" * 100_000 + "]" * 100_000
    r = admin_api.generic("POST", "/api/v1/sizing/", deep, content_type="application/json")
    assert r.status_code == 400
    assert_error_shape(r.json(), 400)
    assert "deep" in r.json()["detail"]


def test_deep_json_in_the_layer_groups_textarea_is_a_field_error(client, make_user):
    client.force_login(make_user("p", "platform"))
    deep = "[" * 100_000 + "]" * 100_000
    r = client.post("/models/new/", {"name": "x", "slug": "x", "layer_groups": deep})
    assert r.status_code in (200, 400)
    assert "nested more than" in r.content.decode()


def test_an_oversized_body_is_a_413(admin_api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    r = admin_api.post("/api/v1/sizing/", {"model": "x" * 2000}, format="json")
    assert r.status_code == 413
    assert_error_shape(r.json(), 413)


# --- one error shape ----------------------------------------------------------------------------


def test_every_kind_of_api_error_has_the_shape(admin_api, client, catalog):
    cases = [
        (admin_api.get("/api/v1/no-such-endpoint/"), 404),
        (admin_api.get("/api/v1/clusters/no-such-cluster/"), 404),
        (admin_api.delete("/api/v1/decisions/1/"), 405),
        (admin_api.generic("POST", "/api/v1/sizing/", "model=x", content_type="text/plain"), 415),
        (admin_api.generic("POST", "/api/v1/sizing/", "{not json", content_type="application/json"), 400),
        (admin_api.post("/api/v1/sizing/", {"model": "nope", "sku": "h100-sxm-80gb"}, format="json"), 400),
        (client.get("/api/v1/clusters/"), 401),
    ]
    for response, status in cases:
        assert response.status_code == status, (response.status_code, response.content[:200])
        assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
        assert_error_shape(response.json(), status)


def test_an_uncaught_error_on_the_api_is_a_json_500(admin_api, monkeypatch):
    from planner.api import sizing

    def boom(*args, **kwargs):
        raise RuntimeError("secret detail that must not leak")

    monkeypatch.setattr(sizing, "size_layout", boom)
    admin_api.raise_request_exception = False
    r = admin_api.post("/api/v1/sizing/", {"model": "a", "sku": "b"}, format="json")
    assert r.status_code == 500
    assert r["Content-Type"].startswith("application/json")
    assert_error_shape(r.json(), 500)
    assert "secret" not in r.content.decode()


def test_a_database_outage_on_the_api_is_a_503_with_retry_after(admin_api, monkeypatch):
    from planner.api import sizing

    def down(*args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(sizing, "size_layout", down)
    admin_api.raise_request_exception = False
    r = admin_api.post("/api/v1/sizing/", {"model": "a", "sku": "b"}, format="json")
    assert r.status_code == 503
    assert r["Retry-After"]
    assert_error_shape(r.json(), 503)


def test_pages_keep_html_error_pages(client, make_user):
    client.force_login(make_user("v", "viewer"))
    r = client.get("/no-such-page/")
    assert r.status_code == 404 and not r["Content-Type"].startswith("application/json")


# --- filters and pagination ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "url, field",
    [
        ("/api/v1/gpu-quotes/?quoted_after=2026-13-01", "quoted_after"),
        ("/api/v1/skus/?page_size=false", "page_size"),
        ("/api/v1/skus/?page_size=0", "page_size"),
        ("/api/v1/skus/?page_size=501", "page_size"),
        ("/api/v1/deployments/?enabled=maybe", "enabled"),
        ("/api/v1/plans/?status=nope", "status"),
        ("/api/v1/gpu-quotes/?valid_on=2026-13-01", "valid_on"),
        ("/api/v1/skus/?no_such_filter=1", "no_such_filter"),
        ("/api/v1/skus/?ordering=secret", "ordering"),
    ],
)
def test_invalid_filter_values_are_a_400(admin_api, url, field):
    r = admin_api.get(url)
    assert r.status_code == 400, r.content
    assert field in r.json(), r.json()
    assert_error_shape(r.json(), 400)


def test_deep_json_in_the_admin_layer_groups_is_a_field_error(client, make_user):
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    deep = "[" * 100_000 + "]" * 100_000
    r = client.post("/admin/fleet/modelspec/add/", {"name": "x", "slug": "x", "layer_groups": deep})
    assert r.status_code == 200
    assert "nested more than" in r.content.decode()


def test_a_control_character_in_a_page_form_is_a_400_naming_the_field(client, make_user, sku):
    client.force_login(make_user("p", "platform"))
    body = {"name": "bell\x07", "slug": "c1", "sku": sku.pk, "nodes": 1, "provider": "p", "team": "t"}
    r = client.post("/clusters/new/", body)
    assert r.status_code == 400
    page = r.content.decode()
    assert "name" in page and "control character (U+0007)" in page
    from fleet.models import Cluster

    assert not Cluster.objects.exists()


WORKLOAD = {
    "slug": "w1",
    "name": "w",
    "team": "t",
    "requests_per_day": 10**9,
    "mean_prompt_tokens": 1 << 24,
    "mean_output_tokens": 1 << 24,
    "p95_context_tokens": 1 << 24,
    "peak_concurrency": 1 << 30,
    "ttft_slo_ms": 1e9,
    "tpot_slo_ms": 1e9,
}


@pytest.mark.parametrize("field", ["requests_per_day", "mean_prompt_tokens", "peak_concurrency"])
def test_a_workload_beyond_the_limits_is_a_400(admin_api, field):
    r = admin_api.post("/api/v1/workloads/", {**WORKLOAD, field: WORKLOAD[field] + 1}, format="json")
    assert r.status_code == 400 and "less than or equal to" in r.json()[field][0]


def test_the_largest_workload_still_compares_with_the_api(admin_api):
    """At every limit at once the month's API bill still fits Decimal's precision (was a 500:
    decimal.InvalidOperation for 9e18 requests a day)."""
    assert admin_api.post("/api/v1/workloads/", WORKLOAD, format="json").status_code == 201
    body = {
        "workload": "w1",
        "gpus": 8,
        "usd_per_gpu_hour": "2",
        "input_cache_hit_usd_per_mtok": "10000",
        "input_cache_miss_usd_per_mtok": "10000",
        "output_usd_per_mtok": "10000",
    }
    r = admin_api.post("/api/v1/breakeven/", body, format="json")
    assert r.status_code == 200, r.content
    # One cent above the engine's price limit is a 400 naming it, at the API's own check.
    r = admin_api.post("/api/v1/breakeven/", {**body, "output_usd_per_mtok": "10000.01"}, format="json")
    assert r.status_code == 400 and "10000" in r.json()["output_usd_per_mtok"][0].replace(",", "")


@pytest.mark.parametrize("path, json_body", [("/api/v1/skus/", True), ("/clusters/x/", False)])
def test_a_database_outage_outside_a_view_is_a_503(rf, path, json_body):
    """Django's handler500 runs inside its ``except``: an outage raised by middleware (a session
    lookup) is a 503 with Retry-After, JSON on the API, plain text on pages."""
    from fleet.views.errors import server_error

    try:
        raise OperationalError("server closed the connection unexpectedly")
    except OperationalError:
        response = server_error(rf.get(path))
    assert response.status_code == 503 and response["Retry-After"] == "10"
    assert response["Content-Type"].startswith("application/json") == json_body
    if json_body:
        assert_error_shape(json.loads(response.content), 503)


@pytest.mark.parametrize("url", ["/models/new/", "/admin/fleet/modelspec/add/"])
def test_a_huge_integer_in_the_layer_groups_is_a_field_error_not_a_500(client, make_user, url):
    """Issue 29: an integer of more than 4,300 digits makes Python's JSON parser raise a ValueError
    that Django's JSONField does not catch (a 500 on the page and admin forms; the API said 400)."""
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    huge = '[{"kind": "full", "count": ' + "9" * 5000 + ', "kv_heads": 8, "head_dim": 128}]'
    r = client.post(url, {"name": "x", "slug": "x", "layer_groups": huge})
    assert r.status_code in (200, 400)
    assert "more than 100 digits" in r.content.decode()
    # A long string is not a number: only digits outside strings count.
    assert not __import__("fleet.inputs").inputs.has_long_number('[{"note": "' + "9" * 5000 + '"}]')


# --- issue 29, round two: what tests/test_page_fuzz.py found -------------------------------------


def test_a_ticked_clear_box_beside_an_upload_is_no_500(client, make_user, deployment):
    """Django's default file input reads a ``<name>-clear`` checkbox; ticked, the field was ``False``
    and the calibration and prefix-cache forms asked it for ``.size`` (an AttributeError, a 500)."""
    client.force_login(make_user("p", "platform"))
    r = client.post(f"/deployments/{deployment.slug}/calibrate/", {"upload-clear": "on"})
    assert r.status_code == 400 and "Paste the log or upload its file." in r.content.decode()
    body = {"model": "kimi-k3", "sku": "h100-sxm-80gb", "engine": "sglang", "tp": "8", "trace_file-clear": "on"}
    assert client.post("/prefix-cache/", body).status_code == 200


@pytest.mark.parametrize("key", ["9" * 5000, "²", "١٢"])
def test_a_record_id_that_is_not_ascii_digits_is_no_500(client, make_user, key):
    """``str.isdigit()`` holds for "²" and for 5,000 digits, and ``int()`` of either raised a ValueError:
    the quote to supersede (``?from=``) and the history page's key are read by ``fleet.inputs.whole_number``."""
    client.force_login(make_user("f", "finance"))
    assert client.get(f"/quotes/new/?from={key}").status_code == 200
    assert client.get(f"/history/gpu-quote/{key}/").status_code == 404


def test_a_filter_too_long_for_sqlite_is_refused_on_the_page_and_the_api(client, make_user, admin_api, catalog):
    """A text filter's value is at most ``fleet.filters.MAX_FILTER_CHARS``: SQLite refuses a LIKE pattern
    of more than 50,000 characters (``iexact``) with an OperationalError once a row is compared, a 500 on
    the page and, taken for an outage, a 503 "database unreachable" on the API."""
    long = "[" * 60_000
    client.force_login(make_user("v", "viewer"))
    for path in ("/api-prices/", "/quotes/"):
        r = client.get(path, {"provider": long})
        assert r.status_code == 200, path
        assert re.search(r"Provider( name)?: Ensure this value has at most 200 characters", r.content.decode()), path
    r = admin_api.get("/api/v1/api-prices/", {"provider": long})
    assert r.status_code == 400 and "provider" in r.json()


def test_refused_filters_are_said_on_list_pages_and_their_csv_is_a_400(client, make_user, catalog):
    """A list page's refused filter was dropped silently (django-filter's way): it is said above the
    table, beside a refused search, and the list's CSV answers 400."""
    client.force_login(make_user("v", "viewer"))
    page = client.get("/models/", {"min_total_params": "lots"}).content.decode()
    assert "Total parameters is greater than or equal to: Enter a number." in page  # its label, not its name
    r = client.get("/models/export.csv", {"min_total_params": "9" * 5000})
    assert r.status_code == 400 and "Total parameters is greater than or equal to" in r.content.decode()
    assert "Status: Select a valid choice." in client.get("/", {"status": "gone"}).content.decode()
    assert client.get("/fleet.csv", {"status": "gone"}).status_code == 400
    assert "Pricing kind: Select a valid choice." in client.get("/quotes/", {"pricing_kind": "free"}).content.decode()


def test_a_number_of_thousands_of_digits_is_refused_before_it_is_parsed(client, make_user, admin_api, catalog):
    """Every page number field is a ``fleet.forms.Bounded*Field``: more than 100 characters is an error
    beside the field, never given to ``int()``; a JSON body's number of more than 100 digits is a 400 too."""
    from fleet.models import HardwareSku

    client.force_login(make_user("p", "platform"))
    sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
    body = {"name": "c", "slug": "c1", "sku": sku.pk, "nodes": "9" * 5000, "provider": "acme", "team": "t"}
    page = client.post("/clusters/new/", body).content.decode()
    assert "More than 100 characters: no figure here has that many digits." in page
    page = client.get("/what-if/", {"model": "kimi-k3", "sku": "h200-141gb", "gpus": "9" * 5000}).content.decode()
    assert "More than 100 characters" in page
    r = admin_api.generic(
        "POST", "/api/v1/sizing/", '{"model": "kimi-k3", "gpus": ' + "9" * 150 + "}", content_type="application/json"
    )
    assert r.status_code == 400 and "more than 100 digits" in r.json()["detail"]


def test_records_past_the_engines_limits_are_refused_by_the_pages_and_the_api(client, make_user, platform_api):
    """A SKU's and a model's figures go to the engine as they are, so their forms and serializers take
    the engine's limits (``fleet.limits.RECORD_BOUNDS``). A SKU saved with 1e9 GB (the old bound) made
    every model page a 500 (each sizes every SKU); a model with a 2**40 hidden size, the model list."""
    client.force_login(make_user("p", "platform"))
    sku = {"name": "Big", "slug": "big", "vendor": "X", "hbm_gb": 1e9, "hbm_bandwidth_tbps": 3, "bf16_tflops": 9,
           "interconnect_gbps": 9, "gpus_per_node": 8, "hbm_bytes_reported": 10**15}  # fmt: skip
    page = client.post("/skus/new/", sku).content.decode()
    assert "less than or equal to 100000" in page and "less than or equal to 100000000000000" in page
    r = platform_api.post("/api/v1/skus/", sku, format="json")
    assert r.status_code == 400 and {"hbm_gb", "hbm_bytes_reported"} <= r.json().keys()
    model = {"name": "Big", "slug": "big", "total_params": 10, "active_params": 10, "hidden_size": 2**40,
             "vocab_size": 10, "max_context_tokens": 2 * 10**8, "weight_format": "bf16",
             "layer_groups": '[{"kind": "full", "count": 1, "kv_heads": 1, "head_dim": 8}]'}  # fmt: skip
    page = client.post("/models/new/", model).content.decode()
    assert "less than or equal to 2147483647" in page and "less than or equal to 100000000" in page
    body = {**model, "layer_groups": json.loads(model["layer_groups"])}
    r = platform_api.post("/api/v1/models/", body, format="json")
    assert r.status_code == 400 and {"hidden_size", "max_context_tokens"} <= r.json().keys()
    from fleet.models import HardwareSku, ModelSpec

    assert not HardwareSku.objects.filter(slug="big").exists() and not ModelSpec.objects.filter(slug="big").exists()


def test_json_and_text_fields_are_bounded_on_the_pages_and_the_api(client, make_user, platform_api):
    """Layer groups take at most ``fleet.inputs.MAX_JSON_FIELD_CHARS`` of JSON (page and API); a JSON
    field sent in a multipart API body is checked before DRF parses it (100,000 brackets were a
    RecursionError there); a source note takes at most ``fleet.inputs.MAX_TEXT_CHARS``."""
    client.force_login(make_user("p", "platform"))
    groups = "[" + ", ".join(['{"kind": "full", "count": 1, "kv_heads": 1, "head_dim": 8}'] * 2000) + "]"
    page = client.post("/models/new/", {"name": "x", "slug": "x", "layer_groups": groups}).content.decode()
    assert "More than 65,536 characters of JSON" in page
    r = platform_api.post("/api/v1/models/", {"slug": "x", "layer_groups": "[" * 100_000}, format="multipart")
    assert r.status_code == 400 and "nested more than 64" in " ".join(r.json()["layer_groups"])
    r = platform_api.post("/api/v1/models/", {"slug": "x", "layer_groups": json.loads(groups)}, format="json")
    assert r.status_code == 400 and "65,536" in " ".join(r.json()["layer_groups"])
    r = platform_api.post("/api/v1/skus/", {"slug": "s", "source": "x" * 10_001}, format="json")
    assert r.status_code == 400 and "10000 characters" in " ".join(r.json()["source"])
    r = platform_api.post("/api/v1/sizing/", {"model": "k" * 65, "sku": "h100-sxm-80gb"}, format="json")
    assert r.status_code == 400 and "64 characters" in " ".join(r.json()["model"])


def test_a_refused_recompute_or_supersede_says_why_on_the_whole_page(client, make_user, catalog_and_agent):
    """A refused "Recompute now" without HTMX showed the rent-vs-API page without the recompute's error;
    a refused supersede asked by HTMX answered the table alone, its message lost."""
    from planner.models import Decision

    client.force_login(make_user("f", "finance"))
    r = client.post("/rent-vs-api/recompute/", {"workload": "no-such-workload"})
    assert r.status_code == 400 and "Pick a workload to recompute." in r.content.decode()
    decision = Decision.record(workload=catalog_and_agent, tier=3, note="", figures={}, inputs={}, user=None)
    r = client.post(f"/decisions/{decision.pk}/supersede/", {"favours": "neither"}, headers={"HX-Request": "true"})
    assert r.status_code == 400 and "Supersede from the decision log" in r.content.decode()
