"""``manage.py plan WORKLOAD [--model kimi-k3] [--sku ...]``: the plan search in the foreground."""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from fleet.errors import InputError, describe
from planner.engine import MODES, outcome_label
from planner.plans import PLAN_KV_CACHE_DTYPES, PlanRequest, RunInterrupted, create_plan, execute_plan


class Command(BaseCommand):
    help = "Search layouts for a workload (same search as POST /api/v1/plans/), with a progress bar."

    def add_arguments(self, parser):
        parser.add_argument("workload", help="Workload slug")
        parser.add_argument("--model", default="kimi-k3", help="Model slug (default kimi-k3)")
        parser.add_argument("--sku", action="append", dest="skus", help="Candidate SKU slug (repeat); default all")
        parser.add_argument("--max-nodes", type=int, default=8)
        parser.add_argument("--mode", action="append", dest="modes", choices=list(MODES))
        kv = list(PLAN_KV_CACHE_DTYPES)
        parser.add_argument("--kv-cache-dtype", action="append", dest="kv_cache_dtypes", choices=kv)
        parser.add_argument("--json", action="store_true", help="Print the stored result as JSON.")

    def handle(self, *args, **o):
        request = PlanRequest(
            workload=o["workload"],
            model=o["model"],
            max_nodes=o["max_nodes"],
            **{key: tuple(o[key]) for key in ("skus", "modes", "kv_cache_dtypes") if o.get(key)},
        )
        try:
            plan = create_plan(request, None)
        except InputError as exc:
            raise CommandError(describe(exc)) from exc
        bar = ProgressBar(self.stderr if o["json"] else self.stdout)
        try:
            plan = execute_plan(str(plan.pk), on_progress=bar.update)
        except RunInterrupted as exc:
            raise CommandError(f"{exc} ({type(exc.__cause__).__name__}: {exc.__cause__}).") from exc
        finally:
            bar.close()
        if plan.status != "done":
            raise CommandError(f"Plan {plan.pk} {plan.status}: {plan.error}")
        if o["json"]:
            self.stdout.write(json.dumps(plan.result, indent=2))
            return
        self._print(plan)

    def _print(self, plan) -> None:
        r = plan.result
        w = self.stdout.write
        w(
            f"Plan {plan.pk}: {r['candidates_evaluated']:,} candidates evaluated, {r['feasible']:,} feasible, "
            f"{r['wall_time_s']:.2f} s"
        )
        if not r.get("best"):
            w(self.style.ERROR("No configuration meets the SLOs."))
        w(f"{'SKU':<16}{'mode':<14}{'GPUs':>6}{'KV':>6}{'TPOT ms':>10}{'TTFT ms':>10}{'USD/Mtok':>10}{'USD/h':>9}")
        for c in r.get("top", []):
            speed = f"{c['tpot_ms']:>10.1f}{c['ttft_ms']:>10.0f}"
            cost = f"{c['usd_per_mtok']:>10.2f}{float(c['usd_per_hour']):>9.2f}"
            what = f"{c['sku']:<16}{c['mode']:<14}{c['gpus']:>6}{c['kv_cache_dtype']:>6}"
            w(f"{what}{speed}{cost}  {outcome_label(c.get('reason'))}")
        for reason, info in r.get("rejected", {}).items():
            w(f"  {outcome_label(reason)}: {info['count']:,}")


class ProgressBar:
    """A one-line text progress bar (only redrawn when the percentage changes)."""

    def __init__(self, out) -> None:
        self.out, self.last = out, -1
        self.tty = (hasattr(out, "isatty") and out.isatty()) or out is sys.stdout

    def update(self, done: int, total: int) -> None:
        pct = int(done * 100 / total) if total else 0
        if pct != self.last:
            self.last = pct
            filled = pct // 4
            self.out.write(f"\r[{'#' * filled}{'.' * (25 - filled)}] {pct:3d}%  {done:,}/{total:,}", ending="")
            self.out.flush()

    def close(self) -> None:
        self.out.write("")
