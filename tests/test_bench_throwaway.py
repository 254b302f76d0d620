"""bench/throwaway.py: each benchmark run's own database and Redis keys, created fresh and removed only
if this run made them (issue 30; docs/benchmarks.md, "Pages" and "Load"). Fakes only: no server, no run."""

from __future__ import annotations

import fnmatch
import importlib.util
import os
import re
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
_spec = importlib.util.spec_from_file_location("bench_throwaway", BENCH / "throwaway.py")
throwaway = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(throwaway)


def test_each_run_gets_a_name_of_its_own():
    names = {throwaway.run_name("pages") for _ in range(50)}
    assert len(names) == 50
    for name in names:
        assert throwaway.RUN_NAME.fullmatch(name) and name.startswith(f"fleetcap_bench_pages_{os.getpid()}_")
        assert len(name) <= 63  # PostgreSQL's identifier limit
    with pytest.raises(ValueError):
        throwaway.run_name("pages; DROP DATABASE x")


class Server:
    """A PostgreSQL server as the admin connection sees it: CREATE fails on an existing name."""

    def __init__(self, existing=()):
        self.databases, self.sql = set(existing), []

    def __call__(self, sql: str) -> None:
        self.sql.append(sql)
        name = re.search(r'"([^"]+)"', sql).group(1)
        if sql.startswith("CREATE DATABASE"):
            if name in self.databases:
                raise RuntimeError(f'database "{name}" already exists')
            self.databases.add(name)
        elif sql.startswith("DROP DATABASE"):
            self.databases.discard(name)


def test_a_database_is_created_fresh_and_dropped_once_only_by_the_run_that_created_it():
    server = Server(existing={"fleetcap", "someone_elses"})
    db = throwaway.ThrowawayDatabase("pages", admin=server)
    assert db.url == f"postgres://postgres@127.0.0.1:5432/{db.name}"
    assert db.drop() is False and server.sql == []  # nothing created yet: nothing dropped
    db.create()
    assert server.sql == [f'CREATE DATABASE "{db.name}"']  # no DROP first
    assert db.drop() is True and db.drop() is False
    assert server.sql[1:] == [f'DROP DATABASE IF EXISTS "{db.name}" WITH (FORCE)']
    assert server.databases == {"fleetcap", "someone_elses"}


def test_a_name_already_taken_fails_the_run_and_is_never_dropped():
    server = Server()
    db = throwaway.ThrowawayDatabase("load", admin=server)
    server.databases.add(db.name)  # another run's (or anyone's) database of that name
    with pytest.raises(RuntimeError, match="already exists"):
        db.create()
    assert db.drop() is False
    assert server.databases == {db.name} and not any(s.startswith("DROP") for s in server.sql)


class FakeRedis:
    """The commands RedisKeys uses, on one db (keys as bytes, as redis-py returns them)."""

    def __init__(self, keys=()):
        self.data = {k.encode(): b"x" for k in keys}

    def set(self, key, value, nx=False):
        if nx and key.encode() in self.data:
            return None
        self.data[key.encode()] = value.encode()
        return True

    def scan_iter(self, match, count=None):
        return [k for k in list(self.data) if fnmatch.fnmatchcase(k.decode(), match)]

    def delete(self, *keys):
        for k in keys:
            self.data.pop(k.encode() if isinstance(k, str) else k, None)

    def flushdb(self):  # pragma: no cover: must never be called
        raise AssertionError("flushed the whole db")


def test_the_load_tests_redis_keys_are_claimed_and_only_they_are_deleted():
    others = ["celery", "_kombu.binding.celery", ":1:throttle_user_1", "fleetcap_bench_load_1_00000000:celery"]
    client = FakeRedis(others)
    name = throwaway.run_name("load")
    keys = throwaway.RedisKeys(name, db=11, client=client)
    assert keys.release() == 0  # not claimed: nothing deleted
    keys.claim()
    with pytest.raises(throwaway.PrefixTaken):
        throwaway.RedisKeys(name, db=11, client=client).claim()
    for suffix in ("celery", "_kombu.binding.celery", "unacked", "cache:1:throttle_user_7"):
        client.set(f"{name}:{suffix}", "v")
    assert sorted(k.decode() for k in keys.present()) == sorted(
        f"{name}:{s}" for s in ("celery", "_kombu.binding.celery", "unacked", "cache:1:throttle_user_7", "claimed")
    )
    assert keys.release() == 5 and keys.release() == 0
    assert sorted(k.decode() for k in client.data) == sorted(others)


def test_the_benchmarks_drop_and_flush_only_through_these_helpers():
    """No script drops a database by a fixed name or flushes a Redis db (the old behaviour)."""
    for path in [*BENCH.glob("*.py"), *BENCH.glob("load/*.py")]:
        text = path.read_text()
        assert "flushdb" not in text.lower() or path.name == "throwaway.py", path
        assert "DROP DATABASE" not in text or path.name == "throwaway.py", path
