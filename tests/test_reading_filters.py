"""The reading filters (planner/templatetags/reading.py): byte counts in binary units with the exact
bytes in the title (one unit family for bytes: no decimal GB or TB filter, issue 24), thousands
separators, layer groups as labelled rows, sources without internal paths (issue 15, "Reading")."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.template import Context, Template

from planner.templatetags.reading import (
    binary_bytes,
    bytes_text,
    gib_bytes,
    grouped,
    has_internal_path,
    in_gib,
    layer_group_rows,
    source_html,
)

UNKNOWN = "\u2013"  # an en dash

GIB = 1024**3


@pytest.mark.parametrize(
    ("n", "shown"),
    [
        (0, "0 B"),
        (512, "512 B"),
        (1024, "1.00 KiB"),
        (27_648, "27.00 KiB"),
        (1536 * 1024, "1.50 MiB"),
        (GIB, "1.00 GiB"),
        (int(44.59 * GIB), "44.59 GiB"),
        (1_600_974_405_632, "1.46 TiB"),
        (-3 * GIB, "-3.00 GiB"),
    ],
)
def test_bytes_in_the_largest_binary_unit_they_reach(n, shown):
    assert bytes_text(n) == shown
    assert f">{shown}</span>" in binary_bytes(n)


def test_the_exact_bytes_and_the_unit_are_in_the_title():
    html = binary_bytes(449_372_160)
    assert html == (
        '<span class="bytes" title="449,372,160 bytes (binary units: 1 MiB = 1,048,576 bytes)">428.55 MiB</span>'
    )
    assert 'title="512 bytes"' in binary_bytes(512)


def test_figures_in_gib_round_to_whole_bytes_and_none_is_a_dash():
    assert 'title="75,161,927,680 bytes' in gib_bytes(70.0)
    assert binary_bytes(None) == UNKNOWN and gib_bytes("") == UNKNOWN and bytes_text(None) == UNKNOWN
    assert ">1.5 GiB<" in binary_bytes(int(1.5 * GIB), 1)


def test_no_decimal_memory_filter_is_left_and_in_gib_writes_gib_with_the_same_title():
    """Issue 24: memory and bytes in one unit family; a page cannot write "141 GB" or "1.601 TB" as a figure."""
    from planner.templatetags import reading

    assert not hasattr(reading, "gb_bytes") and not hasattr(reading, "tb_bytes")
    assert in_gib(1_500 * GIB) == (
        '<span class="bytes" title="1,610,612,736,000 bytes (binary units: 1 GiB = 1,073,741,824 bytes)">'
        "1,500.0 GiB</span>"
    )
    assert in_gib(None) == UNKNOWN


def test_values_are_escaped():
    assert "<script>" not in binary_bytes("<script>")  # not a number: a dash


@pytest.mark.parametrize(
    ("value", "digits", "shown"),
    [
        (1234567, None, "1,234,567"),
        (1234.5, None, "1,234.5"),
        (Decimal("14400.00"), None, "14,400.00"),
        ("95040.5", None, "95,040.5"),
        (1234.5678, 2, "1,234.57"),
        (None, None, UNKNOWN),
        ("n/a", None, "n/a"),
        (12, None, "12"),
    ],
)
def test_grouped_puts_thousands_separators(value, digits, shown):
    assert (grouped(value) if digits is None else grouped(value, digits)) == shown


def test_filters_load_in_a_template():
    out = Template("{% load reading %}{{ n|binary_bytes }} {{ m|grouped }}").render(Context({"n": GIB, "m": 10**6}))
    title = "1,073,741,824 bytes (binary units: 1 GiB = 1,073,741,824 bytes)"
    assert out == f'<span class="bytes" title="{title}">1.00 GiB</span> 1,000,000'


def test_layer_groups_as_labelled_rows_not_field_names():
    rows = layer_group_rows(
        [
            {"kind": "linear", "count": 69, "key_heads": 96, "value_heads": 96, "key_dim": 128, "value_dim": 128,
             "conv_kernel": 4, "variant": "kda"},
            {"kind": "mla", "count": 24, "kv_lora_rank": 512, "qk_rope_head_dim": 64},
            {"kind": "sliding", "count": 18, "kv_heads": 8, "head_dim": 64, "window": 128},
        ]
    )  # fmt: skip
    assert [r["kind"] for r in rows] == ["Linear attention", "Multi-head latent attention (MLA)",
                                         "Sliding-window attention"]  # fmt: skip
    assert rows[0]["figures"][0] == {"label": "Key heads", "value": "96"}
    assert rows[0]["figures"][-1] == {"label": "Kernel", "value": "KDA"}
    assert rows[2]["figures"][-1] == {"label": "Window", "value": "128 tokens"}
    labels = " ".join(f["label"] for r in rows for f in r["figures"])
    assert "_" not in labels


def test_sources_link_web_addresses_and_leave_internal_paths_out():
    text = (
        "config.json (fleet/catalog/hf-configs/x_config.json, shipped; see /work/shared/DESIGN.md) and "
        "huggingface.co/Qwen/Qwen3-32B config.json, https://example.org/a."
    )
    html = source_html(text)
    assert not has_internal_path(html) and "DESIGN.md" not in html and "fleet/" not in html
    assert (
        '<a href="https://huggingface.co/Qwen/Qwen3-32B" rel="noopener noreferrer">huggingface.co/Qwen/Qwen3-32B</a>'
        in html
    )
    assert '<a href="https://example.org/a"' in html and html.endswith("</a>.")
    assert "config.json (shipped;" in html
    assert source_html("<b>x</b>") == "&lt;b&gt;x&lt;/b&gt;"


def test_money_has_cents_and_its_currency_and_rates_keep_sub_cent_digits():
    from planner.templatetags.reading import usd

    assert usd(14400) == "14,400.00 USD" and usd("14400.00") == "14,400.00 USD"
    assert usd("2.5000", "GPU-h") == "2.50 USD/GPU-h" and usd("0.5725", "Mtok") == "0.5725 USD/Mtok"
    assert usd(Decimal("1234.5")) == "1,234.50 USD" and usd(None) == UNKNOWN


def test_fractions_durations_and_short_numbers_carry_their_unit():
    from planner.templatetags.reading import ms, percent, seconds, seconds_ms, short_number

    assert percent(0.5) == "50.0 %" and percent(2.8209) == "282.1 %" and percent(None) == UNKNOWN
    assert ms(42.76311925502523) == "42.8 ms" and seconds_ms(0.0001234, 3) == "0.123 ms"
    assert seconds(12.3456, 2) == "12.35 s"
    assert short_number(24.0) == "24" and short_number(0.123456) == "0.1235" and short_number(5191.3893) == "5,191.4"


@pytest.mark.parametrize(
    ("value", "key", "shown"),
    [
        (0.5, "cache_hit_rate", "50.0 %"),
        (0.9, "gpu_memory_utilization", "90.0 %"),
        ("2.5000", "usd_per_gpu_hour", "2.50 USD/GPU-h"),
        ("20.0000", "output_usd_per_mtok", "20.00 USD/Mtok"),
        (85_018_877_624, "hbm_bytes_reported", "79.18 GiB"),
        (3_000_000_000, "monthly_input_tokens", "3,000,000,000 tokens"),
        (42.76311925502523, "tpot_ms", "42.8 ms"),
        (5191.389306193141, "tokens_per_s_replica", "5,191.4 tokens/s per replica"),
        ("24", "hours_per_day", "24 h/day"),
        (222, "batch", "222"),
        ("fp8", "kv_cache_dtype", "fp8"),
        (None, "max_model_len", UNKNOWN),
        (True, "enable_prefix_caching", "yes"),
    ],
)
def test_a_recorded_figure_is_written_with_the_unit_its_name_says(value, key, shown):
    from planner.templatetags.reading import figure

    assert figure(value, key) == shown
