"""gunicorn settings for fleetcap's web process (``gunicorn -c gunicorn.conf.py fleet.project.wsgi``).

gunicorn reads ``./gunicorn.conf.py`` by default, so from the repository root (and in the image) plain
``gunicorn fleet.project.wsgi`` uses it; command-line options override it (``make run``'s ``runstack``
passes its own ``--workers``). Each value comes from the environment; docs/operations.md ("Production")
says why these defaults, docs/benchmarks.md ("Load") shows the measurements behind them.

* ``FLEETCAP_BIND`` (``0.0.0.0:8000``)
* ``FLEETCAP_WEB_WORKER_CLASS`` (``gthread``): threads share a process, so a request waiting on
  PostgreSQL or a slow client does not hold a whole process; pages are CPU-bound Python otherwise.
* ``FLEETCAP_WEB_WORKERS`` (two per core): processes. The GIL lets one thread run Python at a time in
  each, and a keep-alive connection stays with the process that accepted it, so with one process per
  core one process can hold most of the busy clients while the other idles; two per core, two threads
  each, measured better (docs/benchmarks.md, "Load": p95 100-120 against 140-260 ms for 2 x 4).
* ``FLEETCAP_WEB_THREADS`` (2): threads per process; each thread holds its own database connection
  (``CONN_MAX_AGE`` 60 s), so PostgreSQL needs ``workers x threads`` connections per machine.
* ``FLEETCAP_WEB_TIMEOUT_S`` (30): a request running longer restarts its worker (nothing a page or
  the API does should take more than a second; long work is a Celery task).
* ``FLEETCAP_WEB_MAX_REQUESTS`` (0: never): recycle a worker after about this many requests. Off by
  default: with ``gthread`` a recycling worker drops the connections its poller still holds, and the
  client sees a reset (gunicorn 23.0.0, benoitc/gunicorn#3038 and #3380, open; seen in the load test
  as one failed request per restart); the application's memory does not grow with requests
  (docs/benchmarks.md, "Load").
* ``FLEETCAP_ACCESS_LOG`` (``-``: stdout; empty: none).
"""

from __future__ import annotations

import os

bind = os.environ.get("FLEETCAP_BIND", "0.0.0.0:8000")
worker_class = os.environ.get("FLEETCAP_WEB_WORKER_CLASS", "gthread")
workers = int(os.environ.get("FLEETCAP_WEB_WORKERS") or 2 * (os.cpu_count() or 1))
threads = int(os.environ.get("FLEETCAP_WEB_THREADS", "2"))
timeout = int(os.environ.get("FLEETCAP_WEB_TIMEOUT_S", "30"))
graceful_timeout = 30
keepalive = 5
# No recycling by default (see the docstring: gthread drops connections when it recycles); when set,
# jittered by a tenth so the workers do not restart together.
max_requests = int(os.environ.get("FLEETCAP_WEB_MAX_REQUESTS", "0"))
max_requests_jitter = max_requests // 10
# Heartbeat files on tmpfs: a container's overlay filesystem can stall fsync and trip the timeout.
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None  # noqa: S108 (gunicorn's own advice)
accesslog = os.environ.get("FLEETCAP_ACCESS_LOG", "-") or None
errorlog = "-"
