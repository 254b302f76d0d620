"""The fleet table's rows and the headroom bar, rendered in Python.

The fleet table is re-rendered every 5 s by every open fleet page (HTMX), a row per deployment:
as Django template markup (a row with an ``{% include %}`` of the bar) 125 rows cost about 60 ms
of CPU, more than everything else on the page; built as strings they cost a few
(docs/benchmarks.md, "Load"). The markup is the same as the templates had; every value is escaped
(``html.escape`` with quotes) before it is joined in.
"""

from __future__ import annotations

from datetime import datetime
from html import escape

from django import template
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from fleet.models.polls import CALIBRATION_RANGE
from planner.headroom import Headroom

register = template.Library()

RATIO_FLAG_TITLE = (
    "Observed over predicted KV-cache tokens, outside {:g}\u2013{:g}: check the registered memory, release, "
    "KV dtype and served model".format(*CALIBRATION_RANGE)
)


def _number(value: float | int | None) -> str:
    """A figure as the template printed it: whole floats without their ``.0`` in labels, with
    thousands separators."""
    return "?" if value is None else f"{round(value):,}"


def _e(value: object) -> str:
    """Escaped text of ``value`` (``html.escape`` with quotes: safe inside attributes too)."""
    return escape(str(value), quote=True)


def _bar(h: Headroom) -> str:
    if h.state == "pending" and h.capacity is None:
        return '<span class="muted">capacity not computed yet</span>'
    if h.error:
        return f'<span class="error" title="{_e(h.error)}">layout does not size</span>'
    if not h.fits:
        return '<span class="error">does not fit</span>'
    observed, percent, capacity = h.observed, h.used_percent, _e(h.capacity)
    shown_capacity = _e(_number(h.capacity))
    hot = " hot" if percent and percent >= 90 else ""
    return (
        f'<div class="bar" role="meter" data-deployment="{_e(h.deployment.slug)}" data-admitted="{capacity}" '
        f'aria-valuemin="0" aria-valuemax="{capacity}" '
        f'aria-valuenow="{_e(0 if observed is None else observed)}" '
        f'aria-label="{_e("unknown" if observed is None else observed)} running of {capacity} predicted">'
        f'<span class="fill{hot}" data-percent="{_e(percent or 0)}"></span></div>'
        f'<span class="bar-label">{_e(_number(observed))} / {shown_capacity}</span>'
    )


@register.simple_tag
def headroom_bar(h: Headroom) -> SafeString:
    """The bar of running sequences against predicted capacity (or why there is none)."""
    return mark_safe(_bar(h))  # noqa: S308 (every value escaped by _e)


@register.simple_tag
def fleet_rows(rows: list[Headroom]) -> SafeString:
    """The ``<tr>`` of each deployment of a cluster on the fleet page."""
    prefix = reverse("deployment", kwargs={"slug": "-"})[:-2]  # "/deployments/": one reverse per table
    now = timezone.now()  # one clock for the table: every row's staleness against the same time
    return mark_safe("".join(_row(h, prefix, now) for h in rows))  # noqa: S308 (every value escaped by _e)


def _row(h: Headroom, prefix: str, now: datetime) -> str:
    d = h.deployment
    slug, status = _e(d.slug), _e(d.shown_status(now))
    title = d.shown_status_title(now)
    status_title = f' title="{_e(title)}"' if title else ""
    flag = ""
    if d.calibration_flagged:
        flag = (
            f' <span class="badge down ratio-flag" role="alert" title="{_e(RATIO_FLAG_TITLE)}">'
            f"capacity ratio {d.calibration_ratio:.2f}</span>"
        )
    if h.state != "current" and h.state != "pending":
        # The stored snapshot is shown, and said not to be current (planner/snapshots.py).
        flag += f' <span class="badge {_e(h.state)} snapshot-flag" title="{_e(h.state_reason)}">{_e(h.state)}</span>'
    free = "\u2013" if h.free is None else _e(_number(h.free))  # an en dash, as the table shows for unknown
    return (
        f'<tr data-deployment="{slug}"><td><a href="{_e(prefix)}{slug}/">{slug}</a></td><td>{_e(d.model.name)}</td>'
        f'<td><span class="badge {status}"{status_title}>{status}</span>{flag}</td><td>{_bar(h)}</td>'
        f'<td class="num">{free}</td>'
        f"{_cost(d)}</tr>"
    )


def _cost(d) -> str:
    """The deployment's cost an hour as its stored snapshot priced it (``planner.tables.with_snapshot_cost``),
    with the rate in data attributes; "unpriced" when the snapshot priced none."""
    rate = getattr(d, "snapshot_usd_per_gpu_hour", None)
    cost = getattr(d, "snapshot_usd_per_hour", None)
    return (
        f'<td class="num deployment-cost" data-deployment="{_e(d.slug)}" data-usd-per-gpu-hour="{_e(rate or "")}" '
        f'data-usd-per-hour="{_e(cost or "")}">{_e(cost) if cost else "unpriced"}</td>'
    )
