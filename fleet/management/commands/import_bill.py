"""``manage.py import_bill FILE [--tag-key KEY]``: import a FOCUS cost and usage CSV in this process, as
``POST /api/v1/bills/`` does on a worker (``fleet.bills``): all or nothing, idempotent on the file's rows."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from fleet.audit import AuditedCommandMixin
from fleet.bills import import_path as import_file
from fleet.bills import run_import
from fleet.errors import FIELD_ERRORS, describe


class Command(AuditedCommandMixin, BaseCommand):
    help = (
        "Import a FOCUS 1.0-1.2 cost and usage CSV: rows matched to clusters by ResourceId or by a tag, "
        "stored once however often the file is imported (mirrors POST /api/v1/bills/)."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="The FOCUS CSV file.")
        parser.add_argument(
            "--tag-key", default=None, help="The tag naming a row's cluster (default FLEETCAP_BILL_CLUSTER_TAG)."
        )

    def handle(self, *args, **options):
        path = Path(options["file"])
        if not path.is_file():
            raise CommandError(f"No file {path}.")
        shown = [-10]

        def progress(pct: int) -> None:
            if pct >= shown[0] + 10:
                shown[0] = pct
                self.stderr.write(f"  {pct} %")

        try:
            bill = import_file(path, tag_key=options["tag_key"], run=lambda pk: run_import(pk, on_progress=progress))
        except FIELD_ERRORS as exc:
            raise CommandError(describe(exc)) from exc
        if bill.status != "done":
            raise CommandError(f"{path.name} {bill.status}, nothing of it stored: {bill.refusal}")
        months = f"{bill.first_month:%Y-%m} to {bill.last_month:%Y-%m}" if bill.first_month else "no month"
        self.stdout.write(
            f"{path.name}: bill {bill.pk}, {months}; {bill.rows_read} rows read: {bill.rows_new} new, "
            f"{bill.rows_duplicate} already stored; {bill.rows_matched} matched to clusters, "
            f"{bill.rows_unmatched} unmatched (tag key {bill.tag_key!r})."
        )
