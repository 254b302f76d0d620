"""``manage.py load_catalog``: load or refresh the reference SKUs, models and prices."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from fleet.audit import AuditedCommandMixin
from fleet.catalog_loader import CATALOG_DIR, CatalogError, load_catalog


class Command(AuditedCommandMixin, BaseCommand):
    help = "Load the reference catalogue (SKUs, models, GPU quotes, API prices). Idempotent."

    def add_arguments(self, parser):
        parser.add_argument("--dir", type=Path, default=CATALOG_DIR, help="Folder with the catalogue JSON files.")

    def handle(self, *args, **options):
        try:
            report = load_catalog(options["dir"])
        except (CatalogError, FileNotFoundError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(self.style.SUCCESS(f"Catalogue loaded: {report.summary()}"))
