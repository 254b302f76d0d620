"""``manage.py runstack``: the web server, a Celery worker, Celery beat and a fake demo endpoint.

Used by ``make run``. Prints the URL; Ctrl-C (or any process exiting) stops all three.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Run gunicorn, a Celery worker and Celery beat in the foreground; Ctrl-C stops all."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--web-workers", type=int, default=2)
        parser.add_argument("--concurrency", type=int, default=2, help="Celery worker processes.")
        parser.add_argument(
            "--demo-endpoint-port",
            type=int,
            default=8100,
            help="Start a fake vLLM endpoint on this port for the demo deployment (0: none).",
        )

    @staticmethod
    def demo_cache_args() -> list[str]:
        """``--num-gpu-blocks N --block-size B`` for the fake vLLM: the blocks vLLM's allocator gives
        the demo deployment (the engine profile's prediction, ``fleet.poll_store.predicted_cache_of``),
        so the demo's calibration reads as a real vLLM's would (the profiles match vLLM's logged
        blocks within 3%, docs/sizing.md) instead of being flagged against the fake's fixed 2,000
        blocks; empty when the demo deployment is missing or does not size."""
        from fleet.management.commands.ensure_demo_fleet import DEMO_DEPLOYMENT
        from fleet.models import Deployment
        from fleet.poll_store import predicted_cache_of

        deployment = Deployment.objects.filter(slug=DEMO_DEPLOYMENT).first()
        blocks = predicted_cache_of(deployment.sizing(), deployment.dp)["blocks"] if deployment else None
        return ["--num-gpu-blocks", str(blocks[0]), "--block-size", str(blocks[1])] if blocks else []

    def handle(self, *args, **options):
        python = sys.executable
        bind = f"{options['host']}:{options['port']}"
        commands = {
            "web": [
                python,
                "-m",
                "gunicorn",
                "fleet.project.wsgi",
                "--bind",
                bind,
                "--workers",
                str(options["web_workers"]),
                "--access-logfile",
                "-",
                "--timeout",
                "60",
            ],
            "worker": [
                python,
                "-m",
                "celery",
                "-A",
                "fleet.project",
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                str(options["concurrency"]),
                "--hostname",
                "worker@%h",
            ],
            "beat": [python, "-m", "celery", "-A", "fleet.project", "beat", "--loglevel", "INFO"],
        }
        if options["demo_endpoint_port"]:
            from fleet.management.commands.ensure_demo_fleet import DEMO_MODEL_ID

            commands["fake-vllm"] = [
                python,
                "-m",
                "fleet.polling.fakeserver",
                "--engine",
                "vllm",
                "--port",
                str(options["demo_endpoint_port"]),
                "--model",
                DEMO_MODEL_ID,
                *self.demo_cache_args(),
            ]
        # Every process knows where the web server listens: the poller refuses that port on loopback
        # (fleet.egress), whatever --port says.
        env = {**os.environ, "FLEETCAP_BIND": bind}
        procs = {name: subprocess.Popen(cmd, env=env) for name, cmd in commands.items()}  # noqa: S603
        self.stdout.write(self.style.SUCCESS(f"fleetcap is starting at http://{bind}/  (Ctrl-C stops everything)"))
        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            while not stopping:
                for name, proc in procs.items():
                    if proc.poll() is not None:
                        self.stderr.write(f"{name} exited with code {proc.returncode}; stopping the others.")
                        stopping = True
                time.sleep(0.5)
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.terminate()
            deadline = time.monotonic() + 10
            for proc in procs.values():
                try:
                    proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    proc.kill()
        self.stdout.write("fleetcap stopped.")
