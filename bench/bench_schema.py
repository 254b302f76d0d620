"""The API contract's serving time: ``GET /api/v1/schema/`` cold (first request of a process) and warm.

Run from the repository root (SQLite in a temporary folder; no server needed):

    .venv/bin/python bench/bench_schema.py            # --repeat N warm requests (default 50)

Each format (YAML, JSON) is asked for once cold in a fresh interpreter (``fleet/api/schema.py`` builds and
renders it then) and ``--repeat`` times warm; it prints the cold time and the warm median and p95 in ms,
with Django's test client (``DEBUG`` off), so the figures are the view's own, without a socket; the
anonymous rate limit is lifted for the run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    var = tempfile.mkdtemp(prefix="fleetcap-bench-schema-")
    os.environ.update(
        DJANGO_SETTINGS_MODULE="fleet.project.settings",
        FLEETCAP_VAR_DIR=var,
        DATABASE_URL=f"sqlite:///{var}/db.sqlite3",
        FLEETCAP_SECRET_KEY="bench-schema-not-secret",
        # Anonymous reads count against the per-address API rate (60/min by default): not what is measured.
        FLEETCAP_API_THROTTLE_ANON="1000000/min",
    )
    import django

    django.setup()
    from django.test import Client
    from django.test.utils import setup_test_environment

    setup_test_environment()
    client = Client()
    print(f"load average: {os.getloadavg()[0]:.2f}")
    print("| format | cold ms | warm median ms | warm p95 ms | bytes |")
    print("|---|---|---|---|---|")
    for fmt, url in (("YAML", "/api/v1/schema/"), ("JSON", "/api/v1/schema/?format=json")):
        start = time.perf_counter()
        first = client.get(url)
        cold = (time.perf_counter() - start) * 1e3
        assert first.status_code == 200, first.status_code
        warm = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            client.get(url)
            warm.append((time.perf_counter() - start) * 1e3)
        warm.sort()
        p95 = warm[max(0, round(0.95 * len(warm)) - 1)]
        print(f"| {fmt} | {cold:.0f} | {statistics.median(warm):.2f} | {p95:.2f} | {len(first.content):,} |")


if __name__ == "__main__":
    main()
