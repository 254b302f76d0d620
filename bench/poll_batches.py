"""Batch workers for bench/bench_poll.py ``--fan-out``: processes that stand in for the other
Celery worker processes of a prefork pool. Each is started (Django set up, connected) before the
cycle, as a pool's processes are; the cycle's ``start_poll_cycle()`` hands them batches of
deployment ids through a pipe instead of the broker, and each runs ``fleet.poller.poll_batch()``,
the function the ``poll_batch`` task runs. What is not measured: the broker's own latency.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _serve(conn, timeout_s: float, concurrency: int) -> None:
    """Child process: set Django up like the parent (same environment), then run batches until told
    to stop (``None``) or the parent goes away."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fleet.project.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    from fleet.poller import poll_batch

    settings.POLL_TIMEOUT_S, settings.POLL_CONCURRENCY = timeout_s, concurrency
    connection.ensure_connection()  # a pool process is connected before its first task
    conn.send(("ready", None))
    while True:
        try:
            ids = conn.recv()
        except EOFError:
            return
        if ids is None:
            return
        cpu = time.process_time()
        report = poll_batch(ids)
        conn.send(("done", (report.summary(), time.process_time() - cpu)))


class BatchWorkers:
    """``n`` batch worker processes; :meth:`dispatch` is ``start_poll_cycle()``'s ``dispatch``."""

    def __init__(self, n: int, timeout_s: float, concurrency: int) -> None:
        ctx = multiprocessing.get_context("spawn")  # a clean interpreter, like a pool process
        self._pipes, self._processes, self._next, self._sent = [], [], 0, []
        for i in range(n):
            parent, child = ctx.Pipe()
            process = ctx.Process(target=_serve, args=(child, timeout_s, concurrency), name=f"batch-{i}", daemon=True)
            process.start()
            child.close()
            self._pipes.append(parent)
            self._processes.append(process)

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        for pipe in self._pipes:
            if not pipe.poll(timeout_s) or pipe.recv()[0] != "ready":
                raise RuntimeError("a batch worker did not start")

    def dispatch(self, ids: list[int]) -> None:
        """Send one batch to the next worker (round robin)."""
        index = self._next % len(self._pipes)
        self._pipes[index].send(ids)
        self._sent.append(index)
        self._next += 1

    def collect(self, timeout_s: float) -> list[tuple[dict, float]]:
        """Every dispatched batch's (summary, CPU seconds), in dispatch order."""
        results = []
        for index in self._sent:
            pipe = self._pipes[index]
            if not pipe.poll(timeout_s):
                raise TimeoutError(f"batch worker {index} did not finish within {timeout_s:g} s")
            results.append(pipe.recv()[1])
        self._sent = []
        return results

    def stop(self) -> None:
        for pipe in self._pipes:
            with contextlib.suppress(OSError):
                pipe.send(None)
        for process in self._processes:
            process.join(10)
            if process.is_alive():
                process.kill()
