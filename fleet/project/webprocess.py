"""The web process's start-up, in one place: what a process serving pages sets before Django starts.

Called by ``fleet/project/wsgi.py`` (gunicorn's workers import it) and by the benchmarks that time
pages in a process of their own (``bench/pages_data.py``'s ``setup_django`` for ``bench/bench_pages.py``;
``bench/bench_answers.py`` and ``bench/bench_route.py`` import ``wsgi.py`` itself), so a benchmark
measures the collector settings production runs with, not CPython's defaults.

The garbage collector's thresholds (``tune_gc``): a fleet page of 1,000 rows or a gateway's routing call
allocates tens of thousands of objects that live for the request; with CPython 3.11's default
young-generation threshold (700) they are collected mid-request, promoted to the oldest generation and
make a full collection every few requests (a 60-80 ms pause on the fleet page, the routing call's tail).
Measured in bench/bench_answers.py and bench/bench_route.py (docs/benchmarks.md, "Garbage collector");
``FLEETCAP_GC_THRESHOLDS`` overrides (three integers).
"""

from __future__ import annotations

import gc
import os

#: gc.set_threshold() of a web process: young generation, middle, old (CPython's defaults: 700, 10, 10).
DEFAULT_GC_THRESHOLDS = (50_000, 20, 10)


def tune_gc() -> tuple[int, int, int]:
    """Apply ``FLEETCAP_GC_THRESHOLDS`` (``"50000,20,10"``) or ``DEFAULT_GC_THRESHOLDS``; the thresholds set."""
    raw = os.environ.get("FLEETCAP_GC_THRESHOLDS", "")
    try:
        values = tuple(int(v) for v in raw.split(",")) if raw else DEFAULT_GC_THRESHOLDS
    except ValueError:
        values = DEFAULT_GC_THRESHOLDS
    if len(values) != 3 or min(values) < 1:
        values = DEFAULT_GC_THRESHOLDS
    gc.set_threshold(*values)
    return values  # type: ignore[return-value]


def configure_web_process() -> tuple[int, int, int]:
    """Everything a web process sets before ``django.setup()``: the settings module (unless the
    environment names one) and the collector's thresholds; returns the thresholds set."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fleet.project.settings")
    return tune_gc()
