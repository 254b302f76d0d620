"""``manage.py spend --month 2026-07 [--csv]``: the spend API from the shell."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from fleet.errors import FIELD_ERRORS, describe
from planner.spend import spend_csv, spend_for


class Command(BaseCommand):
    help = (
        "GPU spend for a calendar month, actual and projected apart, per cluster with subtotals by team, "
        "provider and model (mirrors /api/v1/spend/)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--month", default=None, help="YYYY-MM (default: this month)")
        parser.add_argument("--csv", action="store_true", help="Print the CSV the API serves with ?format=csv.")
        parser.add_argument("--json", action="store_true", help="Print the API's JSON.")

    def handle(self, *args, **options):
        try:
            data = spend_for(options["month"], timezone.now().date()).to_dict()
        except FIELD_ERRORS as exc:
            raise CommandError(describe(exc)) from exc
        raw = f"{data['year']:04d}-{data['month']:02d}"
        if options["csv"]:
            self.stdout.write(spend_csv(data), ending="")
            return
        if options["json"]:
            self.stdout.write(json.dumps(data, indent=2))
            return
        self.stdout.write(
            f"GPU spend {raw} ({data['month_label']}, the calendar month: {data['days_in_month']} days, "
            f"{data['actual_days']} actual, "
            f"{data['projected_days']} projected; {data['status']})"
        )
        self.stdout.write(f"{'cluster':<24}{'team':<16}{'provider':<16}{'GPUs':>6}{'GPU-hours':>14}{'USD':>14}")
        for c in data["clusters"]:
            self.stdout.write(
                f"{c['cluster']:<24}{c['team']:<16}{c['provider']:<16}{c['gpus']:>6}{c['gpu_hours']:>14}{c['cost_usd']:>14}"
            )
        for title, key in (("by team", "by_team"), ("by provider", "by_provider")):
            self.stdout.write(f"-- {title}")
            for name, s in data[key].items():
                self.stdout.write(f"{name:<56}{'':>6}{s['gpu_hours']:>14}{s['cost_usd']:>14}")
        for label, hours, usd in (
            ("total (actual + projected)", "total_gpu_hours", "total_cost_usd"),
            ("  actual (spent)", "actual_gpu_hours", "actual_cost_usd"),
            ("  projected", "projected_gpu_hours", "projected_cost_usd"),
        ):
            self.stdout.write(f"{label:<62}{data[hours]:>14}{data[usd]:>14}")
        billed = data.get("billed") or {}
        if billed.get("clusters"):
            self.stdout.write(
                f"-- billed against modelled ({billed['bills']} FOCUS bill(s); "
                f"flagged beyond {billed['threshold_pct']} %)"
            )
            for r in billed["clusters"]:
                pct = f"{r['variance_pct']} %" if r["variance_pct"] is not None else "n/a"
                flag = "  FLAGGED" if r["flagged"] else ""
                self.stdout.write(
                    f"{r['cluster']:<24}billed {r['billed_usd']:>14} modelled {r['modelled_usd'] or 'unpriced':>14} "
                    f"variance {r['variance_usd'] or 'n/a':>12} ({pct}){flag}"
                )
            if billed["unmatched_rows"]:
                self.stdout.write(f"  unmatched: {billed['unmatched_usd']} USD in {billed['unmatched_rows']} row(s)")
        for w in data["warnings"]:
            self.stdout.write(f"  ! {w['message']}")
        for a in data["assumptions"]:
            self.stdout.write(f"  - {a}")
