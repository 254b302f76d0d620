"""``manage.py metrics [--output FILE]``: the ``/metrics`` page from the shell."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand

from planner.metrics import exposition, fleet_figures


class Command(BaseCommand):
    help = "Our figures in the Prometheus text format (mirrors GET /metrics; docs/grafana/README.md)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--output",
            default=None,
            help="Write to this file instead of stdout, atomically (a node_exporter textfile collector's *.prom).",
        )

    def handle(self, *args, **options):
        text = exposition(fleet_figures())
        if not options["output"]:
            self.stdout.write(text.decode(), ending="")
            return
        target = Path(options["output"])
        # A collector reading the file mid-write would see half a page: write beside it, then rename.
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(text)
            os.chmod(temporary, 0o644)  # (mkstemp's 0600 would hide it from a collector running as another user)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
