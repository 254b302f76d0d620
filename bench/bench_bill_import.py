"""Bill import: a generated FOCUS export of ``--mb`` MB imported by a real Celery worker, with its
progress as the bill's page reads it and the worker's peak RSS (docs/benchmarks.md, "Bill import").

    .venv/bin/python bench/bench_bill_import.py --mb 200 [--mb 50 ...]

Each size runs in a throwaway folder of its own (``FLEETCAP_VAR_DIR``: its SQLite database, filesystem
broker and bill folder; removed at the end): ``manage.py migrate``, 20 clusters, the file generated
(rows of 20 clusters matched by ResourceId, by tag, and unmatched; credits and corrections among them),
the bill submitted through the outbox as ``POST /api/v1/bills/`` does, and a worker (``--pool solo``: the
import runs in the worker's own process) started to import it. The worker's peak RSS is its ``VmHWM``
(``/proc/<pid>/status``), against its ``VmRSS`` before the import began; then the same file is submitted
again (every row a duplicate) and timed.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

CLUSTERS = 20


def generate(path: Path, megabytes: float, seed: int = 26) -> int:
    """A FOCUS CSV of about ``megabytes`` MB (10^6 bytes): rows over June 2026, written as generated."""
    from focus_bills import COLUMNS, row

    rnd = random.Random(seed)
    target = int(megabytes * 1_000_000)
    rows = 0
    with path.open("w", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(COLUMNS)
        while out.tell() < target:
            day = 1 + rows % 30
            hour = rows // 30 % 24
            c = rnd.randrange(CLUSTERS + 2)
            extra: dict = {"ResourceName": f"gpu-node-{rows % 997}", "ConsumedQuantity": "1"}
            if c < CLUSTERS // 2:
                extra["ResourceId"] = f"arn:aws:ec2:eu-west-1:123456789012:instance/c-{c}"
            elif c < CLUSTERS:
                extra["ResourceId"] = f"i-{rows:012x}"
                extra["Tags"] = {"fleetcap-cluster": f"c-{c}", "team": "ml", "env": "prod"}
            else:
                extra["ResourceId"] = f"vol-{rows:012x}"
                extra["Tags"] = {"team": "research"}
            if rows % 50 == 49:
                extra["ChargeCategory"] = "Credit"
            if rows % 200 == 199:
                extra["ChargeClass"] = "Correction"
            cost = f"{rnd.uniform(-5 if extra.get('ChargeCategory') == 'Credit' else 0.5, 40):.6f}"
            start = f"2026-06-{day:02d}T{hour:02d}:00:00Z"
            end = f"2026-06-{day:02d}T{hour:02d}:59:59Z"
            r = row((2026, 6), "2026-06-01", "2026-06-02", cost, **extra)
            r["ChargePeriodStart"], r["ChargePeriodEnd"] = start, end
            writer.writerow([r.get(col, "") for col in COLUMNS])
            rows += 1
    return rows


def _status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in KiB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0])
    return out


def run(megabytes: float, keep: bool = False) -> dict:
    var = Path(tempfile.mkdtemp(prefix="fleetcap-bench-bill-"))
    env = {
        **os.environ,
        "FLEETCAP_VAR_DIR": str(var),
        "CELERY_BROKER_URL": "filesystem://",
        "DATABASE_URL": "",
        "FLEETCAP_PAGE_CACHE_S": "0",
    }
    env.pop("DATABASE_URL")
    os.environ.update({k: v for k, v in env.items() if k.startswith(("FLEETCAP_", "CELERY_"))})
    py = sys.executable
    subprocess.run([py, "manage.py", "init_local"], cwd=ROOT, env=env, check=True, capture_output=True)
    subprocess.run([py, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True, capture_output=True)
    worker = None
    try:
        import django

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fleet.project.settings")
        django.setup()
        from django.core.management import call_command

        from fleet import bills
        from fleet.models import CloudBill, Cluster, HardwareSku, Provider

        call_command("load_catalog", verbosity=0)
        sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
        for i in range(CLUSTERS):
            Cluster.objects.get_or_create(
                slug=f"c-{i}",
                defaults={"name": f"C{i}", "sku": sku, "nodes": 1, "provider": Provider.objects.ensure("acme")},
            )
        path = var / "export.csv"
        t0 = time.perf_counter()
        rows = generate(path, megabytes)
        size = path.stat().st_size
        print(
            f"{megabytes:g} MB: generated {size:,} bytes, {rows:,} rows in {time.perf_counter() - t0:.1f} s", flush=True
        )

        worker = subprocess.Popen(
            [py, "-m", "celery", "-A", "fleet.project", "worker", "--pool", "solo", "--loglevel", "WARNING",
             "--without-gossip", "--without-mingle", "--hostname", "bills@bench"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        time.sleep(8)  # started, Django loaded, waiting on the queue
        idle = _status(worker.pid)

        results = {}
        for attempt in ("first", "again"):

            class Upload:
                name = "export.csv"

                def __init__(self):
                    self.size = size

                def chunks(self):
                    with path.open("rb") as raw:
                        yield from iter(lambda: raw.read(1024 * 1024), b"")

            t0 = time.perf_counter()
            submitted = bills.submit_bill(Upload(), None)
            stored_s = time.perf_counter() - t0
            bill_id, seen, t_start = submitted.bill.pk, [], None
            while True:
                bill = CloudBill.objects.get(pk=bill_id)
                if bill.status != "queued" and t_start is None:
                    t_start = time.perf_counter()
                if not seen or seen[-1][1] != bill.progress:
                    seen.append((round(time.perf_counter() - t0, 1), bill.progress, bill.status))
                if bill.is_finished:
                    break
                if worker.poll() is not None:
                    raise SystemExit("the worker died")
                time.sleep(0.5)
            elapsed = time.perf_counter() - (t_start or t0)
            peak = _status(worker.pid)
            results[attempt] = {
                "status": bill.status,
                "rows_read": bill.rows_read,
                "rows_new": bill.rows_new,
                "rows_duplicate": bill.rows_duplicate,
                "rows_matched": bill.rows_matched,
                "rows_unmatched": bill.rows_unmatched,
                "upload_stored_s": round(stored_s, 1),
                "import_s": round(elapsed, 1),
                "rows_per_s": round(bill.rows_read / elapsed) if elapsed else None,
                "worker_rss_before_mib": round(idle["VmRSS"] / 1024, 1),
                "worker_peak_rss_mib": round(peak["VmHWM"] / 1024, 1),
                "progress_seen": len(seen),
                "progress": seen[:: max(1, len(seen) // 12)],
            }
            print(json.dumps({attempt: results[attempt]}), flush=True)
        return {"mb": megabytes, "bytes": size, "rows": rows, **results}
    finally:
        if worker is not None and worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(timeout=30)
        if not keep:
            shutil.rmtree(var, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=200, help="The export's size in MB (10^6 bytes).")
    parser.add_argument("--keep", action="store_true", help="Keep the throwaway folder.")
    args = parser.parse_args()
    print(json.dumps(run(args.mb, args.keep)))


if __name__ == "__main__":
    main()
