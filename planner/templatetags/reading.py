"""Presentation filters every page shares: byte counts in binary units with the exact bytes on hover
(``binary_bytes``: the one formatter of memory and byte figures),
numbers with thousands separators, a model's layer groups as labelled rows, and a record's source
text with its web addresses linked and no internal paths.

They change how a figure is written, never the figure: every value comes from the engine or a
service as it was computed.
"""

from __future__ import annotations

import re
from decimal import Decimal
from html import escape
from typing import Any

from django import template
from django.utils.safestring import SafeString, mark_safe

from planner.engine import BINARY_UNITS, MONTH_LABEL
from planner.engine import binary_parts as engine_binary_parts

register = template.Library()

#: Binary (IEC) units (``planner.engine.units.BINARY_UNITS``). Every memory and byte figure a page, table or
#: command writes goes through ``binary_bytes`` (``bytes_text`` for plain text), and the engine's notes through
#: ``planner.engine.units.bytes_exact``: one rule, ``planner.engine.units.binary_parts``, for bytes everywhere.
#: Decimal GB and TB are not written as figures: a SKU's nominal "141GB" is in its name only, its GPU memory is
#: ``HardwareSku.memory_bytes`` (the driver's figure) in GiB.
__all__ = ["BINARY_UNITS"]

#: What a page shows for an unknown figure (an en dash, as the tables do).
UNKNOWN = "\u2013"


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _as_number(value: Any) -> float | int | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    try:
        return float(Decimal(str(value)))
    except (ArithmeticError, ValueError):
        return None


def binary_parts(value: Any, digits: int = 2, unit: str | None = None) -> tuple[str, str] | None:
    """``(number, unit)`` of a byte count in the largest binary unit it reaches (``("1.50", "GiB")``),
    or in ``unit`` when given (None: not a number)."""
    n = _as_number(value)
    return None if n is None else engine_binary_parts(n, digits, unit)


def exact_bytes(value: Any) -> str:
    """``1,073,741,824 bytes`` (rounded to a whole byte: figures derived in GiB carry float noise)."""
    n = _as_number(value)
    return "" if n is None else f"{round(n):,} bytes"


@register.filter
def bytes_text(value: Any, digits: int = 2) -> str:
    """A byte count as plain text in binary units (``1.50 GiB``), for attributes, titles and commands."""
    parts = binary_parts(value, int(digits))
    return UNKNOWN if parts is None else f"{parts[0]} {parts[1]}"


def _bytes_html(value: Any, digits: int, unit: str | None = None) -> SafeString:
    """The one markup of a byte count: its binary figure, the exact bytes in its title."""
    parts = binary_parts(value, digits, unit)
    if parts is None:
        return mark_safe(UNKNOWN)  # noqa: S308 (a constant)
    number, shown = parts
    title = exact_bytes(value)
    if shown != "B":
        title += f" (binary units: 1 {shown} = {1024 ** BINARY_UNITS.index(shown):,} bytes)"
    return mark_safe(f'<span class="bytes" title="{_e(title)}">{_e(number)} {_e(shown)}</span>')  # noqa: S308


@register.filter(is_safe=True)
def binary_bytes(value: Any, digits: int = 2) -> SafeString:
    """A byte count in binary units with the exact bytes in its title:
    ``<span class="bytes" title="1,610,612,736 bytes (binary units: 1 GiB = 1,073,741,824 bytes)">1.50 GiB</span>``.
    """
    return _bytes_html(value, int(digits))


@register.filter(is_safe=True)
def in_gib(value: Any, digits: int = 1) -> SafeString:
    """A byte count always in GiB (``1,398.5 GiB``), as the deficit messages of the services say it,
    with the exact bytes in its title."""
    return _bytes_html(value, int(digits), "GiB")


@register.filter(is_safe=True)
def gib_bytes(value: Any, digits: int = 2) -> SafeString:
    """A figure a service gives in GiB (an engine's logged KV cache memory) written as ``binary_bytes`` does."""
    n = _as_number(value)
    return binary_bytes(None if n is None else n * 1024**3, digits)


@register.filter
def grouped(value: Any, digits: int | None = None) -> str:
    """A number with thousands separators: ``1234567`` -> ``1,234,567``; ``digits`` fixes the decimals
    (``{{ x|grouped:2 }}`` -> ``14,400.00``). Text that is not a number is returned unchanged."""
    n = _as_number(value)
    if n is None:
        return UNKNOWN if value is None else str(value)
    if digits is not None:
        return f"{n:,.{int(digits)}f}"
    if isinstance(value, int | float):
        return f"{value:,}"
    return f"{Decimal(str(value)):,}"  # a Decimal or numeric text keeps its own decimals


#: What a layer group's keys mean (planner.engine.spec.LayerGroup), as a page says them.
LAYER_KINDS = {
    "full": "Full attention",
    "sliding": "Sliding-window attention",
    "mla": "Multi-head latent attention (MLA)",
    "linear": "Linear attention",
}
LAYER_FIGURES = {
    "kv_heads": ("KV heads", ""),
    "head_dim": ("Head dim", ""),
    "window": ("Window", " tokens"),
    "kv_lora_rank": ("KV latent rank", ""),
    "qk_rope_head_dim": ("RoPE head dim", ""),
    "key_heads": ("Key heads", ""),
    "value_heads": ("Value heads", ""),
    "key_dim": ("Key dim", ""),
    "value_dim": ("Value dim", ""),
    "conv_kernel": ("Convolution kernel", ""),
    "state_dtype": ("State dtype", ""),
    "conv_dtype": ("Convolution dtype", ""),
    "variant": ("Kernel", ""),
}


@register.filter
def layer_group_rows(groups: Any) -> list[dict[str, Any]]:
    """A model's layer groups (their JSON form) as rows: kind, layer count and labelled figures."""
    rows = []
    for group in groups or []:
        if not isinstance(group, dict):
            continue
        kind = str(group.get("kind", ""))
        figures = []
        # LAYER_FIGURES's order, then anything else by name: the same on every database (PostgreSQL's
        # jsonb keeps keys sorted by length, SQLite's JSON as written).
        order = {key: i for i, key in enumerate(LAYER_FIGURES)}
        for key in sorted(group, key=lambda k: (order.get(k, len(order)), k)):
            value = group[key]
            if key in ("kind", "count"):
                continue
            label, unit = LAYER_FIGURES.get(key, (key.replace("_", " ").capitalize(), ""))
            text = grouped(value) if isinstance(value, int) and not isinstance(value, bool) else str(value)
            if key == "variant":
                text = text.upper()
            figures.append({"label": label, "value": f"{text}{unit}"})
        rows.append({"kind": LAYER_KINDS.get(kind, kind), "count": group.get("count"), "figures": figures})
    return rows


#: Web addresses a source names, with or without their scheme (``huggingface.co/org/model``).
_URL = re.compile(r"(?:https?://|(?<![\w/.])(?=(?:huggingface\.co|github\.com)/))[^\s()<>\"']+[^\s()<>\"'.,;:]")
#: Paths of this repository or machine (``fleet/catalog/...``, ``/work/...``): never shown.
_INTERNAL_PATH = re.compile(
    r"(?<![\w.:/])(?:/(?:work|home|srv|opt|tmp|var|usr)/[^\s,;()\"']+|(?:fleet|planner|tests|docs|static|templates)"
    r"/[^\s,;()\"']+)"
)


@register.filter(is_safe=True)
def source_html(text: Any) -> SafeString:
    """A record's source as a page shows it: its web addresses as links, internal paths left out."""
    text = _INTERNAL_PATH.sub("", str(text or ""))
    text = re.sub(r"\(\s*,\s*", "(", re.sub(r"\s+,", ",", text))
    out, last = [], 0
    for match in _URL.finditer(text):
        out.append(_e(text[last : match.start()]))
        url = match.group(0)
        href = url if url.startswith(("http://", "https://")) else f"https://{url}"
        out.append(f'<a href="{_e(href)}" rel="noopener noreferrer">{_e(url)}</a>')
        last = match.end()
    out.append(_e(text[last:]))
    return mark_safe("".join(out))  # noqa: S308 (every piece escaped)


def has_internal_path(text: str) -> bool:
    """Whether ``text`` names a path of this repository or machine (the page tests' check)."""
    return bool(_INTERNAL_PATH.search(text))


@register.simple_tag
def month_convention() -> str:
    """The month every monthly figure outside spend is for: ``"30-day month, 720 h"``
    (``planner.engine.costs.money.MONTH_LABEL``); spend names its calendar month itself."""
    return MONTH_LABEL


def _decimals_between(n: float | int, low: int, high: int) -> str:
    """``n`` with thousands separators and between ``low`` and ``high`` decimals (trailing zeros past
    ``low`` dropped): ``2.5`` -> ``2.50``, ``0.5725`` -> ``0.5725`` (2, 4)."""
    text = f"{float(n):,.{high}f}"
    if high > low:
        whole, _, frac = text.partition(".")
        frac = frac.rstrip("0").ljust(low, "0")
        text = f"{whole}.{frac}" if frac else whole
    return text


@register.filter
def usd(value: Any, unit: str = "") -> str:
    """Money with cents and its currency: ``14400`` -> ``14,400.00 USD``; ``unit`` names what it is per
    (``{{ rate|usd:"GPU-h" }}`` -> ``2.50 USD/GPU-h``); a rate below a cent keeps up to 4 decimals
    (``0.0025 USD/token``). Unknown: an en dash."""
    n = _as_number(value)
    if n is None:
        return UNKNOWN
    per = f"/{unit}" if unit else ""
    high = 4 if unit and abs(n) < 1 else 2
    return f"{_decimals_between(n, 2, high)} USD{per}"


@register.filter
def usd_per_thousand(value: Any) -> str:
    """A cost per request per 1,000 requests, with cents: ``0.00104`` -> ``1.04 USD/1,000 requests``."""
    n = _as_number(value)
    return UNKNOWN if n is None else usd(n * 1000, "1,000 requests")


@register.filter
def percent(value: Any, digits: int = 1) -> str:
    """A fraction as a percentage: ``0.5`` -> ``50.0 %`` (``digits`` decimals); unknown: an en dash."""
    n = _as_number(value)
    return UNKNOWN if n is None else f"{float(n) * 100:,.{int(digits)}f} %"


@register.filter
def ms(value: Any, digits: int = 1) -> str:
    """Milliseconds: ``42.7631`` -> ``42.8 ms``; unknown: an en dash."""
    n = _as_number(value)
    return UNKNOWN if n is None else f"{float(n):,.{int(digits)}f} ms"


@register.filter
def seconds_ms(value: Any, digits: int = 1) -> str:
    """A duration in seconds written in milliseconds: ``0.0001234`` -> ``0.1 ms``."""
    n = _as_number(value)
    return UNKNOWN if n is None else ms(float(n) * 1000, digits)


@register.filter
def seconds(value: Any, digits: int = 1) -> str:
    """A duration in seconds: ``12.3456`` -> ``12.3 s``; unknown: an en dash."""
    n = _as_number(value)
    return UNKNOWN if n is None else f"{float(n):,.{int(digits)}f} s"


@register.filter
def short_number(value: Any) -> str:
    """A number as a person reads it: whole numbers grouped (``24.0`` -> ``24``, ``3000000`` ->
    ``3,000,000``), others to 4 significant digits (``0.123456`` -> ``0.1235``) or one decimal from 100."""
    n = _as_number(value)
    if n is None:
        return UNKNOWN if value is None else str(value)
    if float(n).is_integer():
        return f"{round(n):,}"
    return f"{n:,.1f}" if abs(n) >= 100 else f"{n:,.4g}"


#: How a recorded figure is written, by the end of its name (a frozen input's key): the first match wins.
#: ``(suffix, how)``: ``how`` a filter of this module applied to the value, or a unit after ``grouped``.
FIGURE_UNITS: tuple[tuple[str, str], ...] = (
    ("_bytes", "bytes"),
    ("_bytes_reported", "bytes"),
    ("usd_per_gpu_hour", "usd:GPU-h"),
    ("usd_per_mtok", "usd:Mtok"),
    ("usd_per_kwh", "usd:kWh"),
    ("_usd", "usd"),
    ("usd_per_month", "usd:month"),
    ("_ms", "ms"),
    ("hit_rate", "percent"),
    ("utilization", "percent"),
    ("utilisation", "percent"),
    ("_fraction", "percent"),
    ("tokens_per_s_replica", " tokens/s per replica"),
    ("tokens_per_s", " tokens/s"),
    ("_tokens", " tokens"),
    ("_params", " parameters"),
    ("_tflops", " TFLOPS"),
    ("_tbps", " TB/s"),
    ("_gbps", " GB/s"),
    ("hbm_gb", " GB (nominal)"),
    ("hours_per_day", " h/day"),
    ("days_per_month", " days/month"),
    ("requests_per_day", " requests/day"),
)


@register.filter
def figure(value: Any, key: str) -> str:
    """A recorded figure written with the unit its name says (``FIGURE_UNITS``): ``figure(0.5,
    "cache_hit_rate")`` -> ``50.0 %``; a number with no known unit gets thousands separators, text stays."""
    if value is None or value == "":
        return UNKNOWN
    if isinstance(value, bool):
        return "yes" if value else "no"
    for suffix, how in FIGURE_UNITS:
        if str(key).endswith(suffix) and _as_number(value) is not None:
            name, _, arg = how.partition(":")
            if how.startswith(" "):
                return f"{short_number(value)}{how}"
            if name == "bytes":
                return bytes_text(value)
            if name == "usd":
                return usd(value, arg)
            return {"ms": ms, "percent": percent}[name](value)
    if isinstance(value, int | float):
        return short_number(value)
    return str(value)
