"""Start and stop real Celery worker processes for integration and browser tests."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
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


def isolated_broker(tmp: Path) -> dict[str, str]:
    """A broker no other process uses: Redis database 15, or a private filesystem broker."""
    url = settings.CELERY_BROKER_URL
    if url.startswith("redis://"):
        base = url.rsplit("/", 1)[0] if url.count("/") > 2 else url
        return {"CELERY_BROKER_URL": f"{base}/15"}
    return {"CELERY_BROKER_URL": "filesystem://", "FLEETCAP_VAR_DIR": str(tmp)}


def start_worker(queue: str) -> subprocess.Popen:
    env = {**os.environ, "DATABASE_URL": database_url(), "CELERY_BROKER_URL": settings.CELERY_BROKER_URL}
    cmd = [sys.executable, "-m", "celery", "-A", "fleet", "worker", "--pool", "solo", "--queues", queue,
           "--hostname", f"{queue}@test", "--loglevel", "WARNING", "--without-gossip", "--without-mingle"]  # fmt: skip
    return spawn(cmd, env)


def spawn(cmd: list[str], env: dict[str, str]) -> subprocess.Popen:
    """Start a Celery process in its own process group, so that stopping it also stops its children
    (the embedded beat of ``worker --beat`` is a child process holding a database connection)."""
    return subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )


def stop_worker(proc: subprocess.Popen) -> str:
    """Stop the worker and every process it started; return what it printed."""
    _signal_group(proc, signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        out, _ = proc.communicate()
    _signal_group(proc, signal.SIGKILL)  # children that outlived their parent
    return out


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
