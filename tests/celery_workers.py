"""Start and stop real Celery worker processes for integration and browser tests."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def database_url() -> str:
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def worker_env(**extra: str) -> dict[str, str]:
    """The environment of a worker process: this test's database, broker and secret key (the
    worker decrypts what this process encrypted), plus ``extra``."""
    return {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "FLEETCAP_SECRET_KEY": settings.SECRET_KEY,
        **extra,
    }


def isolated_broker(tmp: Path) -> dict[str, str]:
    """A broker for a worker that takes the default queue (beat's tasks): Redis, the configured
    database (every other test's worker takes its own queue only; a fixed other database could be
    another checkout's), or a private filesystem broker under ``tmp`` (its folders made by
    ``manage.py init_local``, as for ``make run``)."""
    url = settings.CELERY_BROKER_URL
    if url.startswith("redis://"):
        return {"CELERY_BROKER_URL": url}
    env = {"CELERY_BROKER_URL": "filesystem://", "FLEETCAP_VAR_DIR": str(tmp)}
    subprocess.run(
        [sys.executable, "manage.py", "init_local"], cwd=ROOT, env=worker_env(**env), check=True, capture_output=True
    )
    return env


def start_worker(queue: str, **extra_env: str) -> subprocess.Popen:
    cmd = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "fleet.project",
        "worker",
        "--pool",
        "solo",
        "--queues",
        queue,
        "--hostname",
        f"{queue}@test",
        "--loglevel",
        "WARNING",
        "--without-gossip",
        "--without-mingle",
    ]
    return spawn(cmd, worker_env(**extra_env))


def spawn(cmd: list[str], env: dict[str, str]) -> subprocess.Popen:
    """Start a Celery process in its own process group, so that stopping it also stops its children
    (the embedded beat of ``worker --beat`` is a child process holding a database connection)."""
    # Output goes to a file, not a pipe: a chatty worker can never block on a full pipe buffer.
    log = tempfile.TemporaryFile("w+")  # noqa: SIM115 (closed by stop_worker)
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    proc.log_file = log  # type: ignore[attr-defined]
    return proc


def stop_worker(proc: subprocess.Popen) -> str:
    """Stop the worker and every process it started; return what it printed."""
    _signal_group(proc, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        proc.wait()
    _signal_group(proc, signal.SIGKILL)  # children that outlived their parent
    log = proc.log_file  # type: ignore[attr-defined]
    log.seek(0)
    out = log.read()
    log.close()
    return out


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)


def wait_for(predicate, proc: subprocess.Popen, timeout_s: float = 60):
    """Poll ``predicate()`` until it is truthy, the process exits, or the timeout; its last value."""
    deadline = time.monotonic() + timeout_s
    value = None
    while time.monotonic() < deadline and proc.poll() is None:
        value = predicate()
        if value:
            break
        time.sleep(0.2)
    return value
