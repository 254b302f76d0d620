"""The Celery app the drills' workers run: fleetcap's own, with the layout search slowed down by
``FLEETCAP_DRILL_SEARCH_DELAY_S`` seconds per progress report, so a drill can kill a worker in the
middle of a search. Test code only (``celery -A tests.drills.slow_search_app worker``)."""

from __future__ import annotations

import os
import time

from celery.signals import worker_init

from fleet.project.celery import app

__all__ = ["app"]


@worker_init.connect
def _slow_down_the_search(**kwargs) -> None:
    """In the worker's main process, before the pool forks: its children inherit the slowed search."""
    import django

    django.setup()
    from planner import plans

    delay = float(os.environ.get("FLEETCAP_DRILL_SEARCH_DELAY_S", "0"))
    real = plans.search

    def slowed_search(*args, progress=None, **kw):
        def slowed(done: int, total: int):
            time.sleep(delay)
            return progress(done, total)

        return real(*args, progress=slowed if progress else None, **kw)

    plans.search = slowed_search
