"""POST /api/v1/prefix-cache/: JSON and multipart (a CSV trace), 200s with hand-derived figures, 400s naming
the field (and for a bad trace its row and column), never a 500."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from planner.engine import MAX_TRACE_BYTES

URL = "/api/v1/prefix-cache/"
HEADER = "request_id,arrival_s,prompt_tokens,shared_prefix_id,shared_prefix_tokens\n"
TRACE = HEADER + "".join(f"r{i},{i},1500,sys,1000\n" for i in range(3))


@pytest.fixture
def catalog(db):
    call_command("load_catalog", stdout=StringIO())


def _csv(text: str | bytes, name: str = "trace.csv") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode() if isinstance(text, str) else text, content_type="text/csv")


@pytest.mark.django_db
def test_json_body_gives_the_block_and_padding(viewer_api, catalog):
    body = {"model": "qwen3-next-80b-a3b", "sku": "h200-141gb", "tp": 2}
    r = viewer_api.post(URL, body, format="json")
    assert r.status_code == 200, r.json()
    data = r.json()
    assert data["attention_block_size_tokens"] == 544
    assert data["state_page_bytes"] == 548_864
    assert data["padding_fraction"] == round(8_192 / 548_864, 6)
    assert data["cache_mode"] == "align" and data["engine_version"] == "0.33.0"
    assert data["checkpoint_bytes"] == 2 * 3 * 12 * 557_056
    assert data["trace"]["requests"] == 0 and data["assumptions"]


@pytest.mark.django_db
def test_multipart_trace_coarse_block_loses_reuse(viewer_api, catalog):
    body = {
        "model": "qwen3-next-80b-a3b",
        "sku": "h200-141gb",
        "tp": "2",
        "retention": "dense",
        "granularities": ["16", "1024"],
        "trace": _csv(TRACE),
    }
    r = viewer_api.post(URL, body, format="multipart")
    assert r.status_code == 200, r.json()
    data = r.json()
    assert data["reusable_token_fraction"] == {
        "16": round(1_984 / 4_500, 6),
        "544": round(1_088 / 4_500, 6),
        "1024": 0.0,
    }
    chosen = [g for g in data["granularities"] if g["engine_choice"]]
    assert [g["granularity_tokens"] for g in chosen] == [544]
    assert data["trace"]["ideal_reused_tokens"] == 2_000


@pytest.mark.django_db
def test_sglang_ratio_advice(viewer_api, catalog):
    body = {
        "model": "qwen3-next-80b-a3b",
        "sku": "h200-141gb",
        "tp": 2,
        "engine": "sglang",
        "available_kv_cache_gib": 40,
        "concurrency": 50,
    }
    data = viewer_api.post(URL, body, format="json").json()
    advice = data["state_pool_ratio"]
    assert advice["current_ratio"] == 0.9 and advice["fits"] is True
    assert advice["feasible_ratio_range"][0] <= advice["best_ratio"] <= advice["feasible_ratio_range"][1]
    assert data["hit_granularity_tokens"] == 64 and data["cache_mode"] == "extra_buffer"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("trace", "field_text"),
    [
        (HEADER + "r0,0,1500,sys,1000\nr1,0,abc,sys,1000\n", "Row 2 (line 3), column prompt_tokens"),
        (HEADER + "r0,0,100,sys,200\n", "Row 1 (line 2), column shared_prefix_tokens"),
        (HEADER + 'r0,0,"100\n', "not CSV"),
        ("id,prompt\n1,2\n", "missing column"),
        (HEADER, "no rows"),
        (b"\xff\xfe\x00bad", "not UTF-8"),
        (HEADER + "r0,0,1500,sys\x01x,1000\n", "control character"),
    ],
)
def test_bad_trace_is_a_400_naming_row_and_column(viewer_api, catalog, trace, field_text):
    body = {"model": "qwen3-next-80b-a3b", "sku": "h200-141gb", "tp": "2", "trace": _csv(trace)}
    r = viewer_api.post(URL, body, format="multipart")
    assert r.status_code == 400, r.content
    messages = r.json()["trace"]
    assert any(field_text in m for m in messages), messages


@pytest.mark.django_db
def test_oversized_trace_is_refused(viewer_api, catalog):
    big = HEADER + "x" * (MAX_TRACE_BYTES + 10)
    body = {"model": "qwen3-next-80b-a3b", "sku": "h200-141gb", "trace": _csv(big)}
    r = viewer_api.post(URL, body, format="multipart")
    assert r.status_code in (400, 413)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"model": "nope", "sku": "h200-141gb"}, "model"),
        ({"model": "qwen3-next-80b-a3b", "sku": "h200-141gb", "engine": "tgi"}, "engine"),
        ({"model": "qwen3-next-80b-a3b", "sku": "h200-141gb", "engine_version": "0.9.0"}, "engine_version"),
        ({"model": "qwen3-next-80b-a3b", "sku": "h200-141gb", "engine": "sglang", "cache_mode": "all"}, "cache_mode"),
        (
            {"model": "qwen3-next-80b-a3b", "sku": "h200-141gb", "tp": 2, "retention": "interval"},
            "checkpoint_interval_tokens",
        ),
        ({"model": "qwen3-next-80b-a3b", "sku": "h200-141gb", "granularities": [0]}, "granularities.0"),
        ({"model": "qwen3-next-80b-a3b", "sku": "h200-141gb", "context_tokens": 0}, "context_tokens"),
    ],
)
def test_bad_inputs_are_400s_with_the_field(viewer_api, catalog, body, field):
    r = viewer_api.post(URL, body, format="json")
    assert r.status_code == 400, r.content
    assert field in r.json(), r.json()


@pytest.mark.django_db
def test_anonymous_is_refused(client, catalog):
    r = client.post(URL, {"model": "qwen3-next-80b-a3b", "sku": "h200-141gb"}, content_type="application/json")
    assert r.status_code in (401, 403)
