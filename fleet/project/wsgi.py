"""WSGI entry point (gunicorn fleet.project.wsgi).

Importing it starts a web process: ``configure_web_process`` (fleet/project/webprocess.py: the settings
module and the garbage collector's thresholds, ``FLEETCAP_GC_THRESHOLDS``), then Django. The benchmarks
that time pages in their own process call the same function (docs/benchmarks.md, "Pages").
"""

from django.core.wsgi import get_wsgi_application

from .webprocess import configure_web_process

configure_web_process()
application = get_wsgi_application()
