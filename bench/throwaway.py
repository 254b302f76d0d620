"""Each benchmark run's own PostgreSQL database and Redis keys, so runs sharing one server never touch
each other's (bench/bench_pages.py, bench/bench_load.py; docs/benchmarks.md, "Pages" and "Load").

* **Database**: ``fleetcap_bench_<kind>_<pid>_<8 hex digits>`` (``run_name``), made with a plain
  ``CREATE DATABASE``, which fails if the name exists (nothing is dropped first), and dropped at the end
  only if this run created it (``ThrowawayDatabase.created``), ``WITH (FORCE)`` since the run's own
  processes may still hold connections.
* **Redis** (the load test): every key the run's processes write starts with ``<run name>:``
  (``FLEETCAP_REDIS_KEY_PREFIX``: the broker's keys through kombu's ``global_keyprefix``, the cache's
  through its ``KEY_PREFIX``). The run claims the prefix with ``SET <prefix>claimed ... NX`` (refused if
  it is taken) and at the end deletes the keys matching ``<prefix>*`` (``SCAN``), the claim last. No db
  is flushed: other keys in the same db, anyone else's, stay.

Plain Python; psycopg and redis are imported when used (the unit tests pass fakes).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import secrets
import socket
import sys
from collections.abc import Callable
from typing import Any

SERVER_URL = "postgres://postgres@127.0.0.1:5432"
REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379

#: What ``run_name`` makes: a database name (and a Redis key prefix, with ``:``) no other run uses.
RUN_NAME = re.compile(r"fleetcap_bench_[a-z]+_[0-9]+_[0-9a-f]{8}")


def run_name(kind: str) -> str:
    """``fleetcap_bench_<kind>_<pid>_<8 hex digits>``: this process's id and 32 random bits."""
    if not re.fullmatch(r"[a-z]+", kind):
        raise ValueError(f"kind {kind!r}: lowercase letters only")
    return f"fleetcap_bench_{kind}_{os.getpid()}_{secrets.token_hex(4)}"


def _postgres(server_url: str) -> Callable[[str], None]:
    def execute(sql: str) -> None:
        import psycopg

        with psycopg.connect(f"{server_url}/postgres", autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql)

    return execute


class ThrowawayDatabase:
    """A database of this run's own: ``create()`` makes it (or fails), ``drop()`` drops it if it did."""

    def __init__(
        self,
        kind: str,
        server_url: str = SERVER_URL,
        admin: Callable[[str], None] | None = None,
        name: str | None = None,
    ):
        #: ``run_name(kind)``, or the name a caller was given (bench_answers.py's ``--database-url``).
        self.name = name or run_name(kind)
        self.server_url = server_url
        self.created = False
        self._admin = admin or _postgres(server_url)

    @property
    def url(self) -> str:
        return f"{self.server_url}/{self.name}"

    def create(self) -> None:
        """``CREATE DATABASE``: an existing database of that name is an error, never dropped."""
        self._admin(f'CREATE DATABASE "{self.name}"')
        self.created = True

    def drop(self) -> bool:
        """Drop the database if this run created it (this process's Django connections closed first);
        whether it dropped one. A second call, or one after a failed ``create()``, does nothing."""
        if not self.created:
            return False
        if "django" in sys.modules:
            with contextlib.suppress(Exception):
                from django.db import connections

                connections.close_all()
        self._admin(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
        self.created = False
        return True


class PrefixTaken(RuntimeError):
    """Another run holds this Redis key prefix."""


class RedisKeys:
    """The keys under ``<name>:`` in one Redis db: claimed at the start, deleted at the end."""

    def __init__(self, name: str, db: int, client: Any = None) -> None:
        self.prefix = f"{name}:"
        self.marker = f"{self.prefix}claimed"
        self.db = db
        self.claimed = False
        if client is None:
            import redis

            client = redis.Redis(host=REDIS_HOST, port=REDIS_PORT, db=db, socket_timeout=5)
        self.client = client

    def claim(self) -> None:
        """``SET <prefix>claimed NX``: this run's (its pid, host and start), or ``PrefixTaken``."""
        owner = f"pid {os.getpid()} on {socket.gethostname()} since {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M:%S} UTC"
        if not self.client.set(self.marker, owner, nx=True):
            raise PrefixTaken(f"Redis db {self.db}: the key prefix {self.prefix!r} is claimed by another run")
        self.claimed = True

    def present(self) -> list[bytes]:
        """The keys under the prefix (``SCAN MATCH``, the prefix's glob characters escaped)."""
        pattern = re.sub(r"([*?\[\]\\])", r"\\\1", self.prefix) + "*"
        return list(self.client.scan_iter(match=pattern, count=1000))

    def release(self) -> int:
        """Delete the keys under the prefix, the claim last, if this run claimed it; how many."""
        if not self.claimed:
            return 0
        marker = self.marker.encode()
        keys = [k for k in self.present() if k != marker]
        for start in range(0, len(keys), 500):
            self.client.delete(*keys[start : start + 500])
        self.client.delete(self.marker)
        self.claimed = False
        return len(keys) + 1
