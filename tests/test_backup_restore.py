"""scripts/backup.sh and scripts/restore.sh: a database with records, backed up, restored into a fresh
database, compared table by table and record by record (docs/operations.md, "Backups and restore").

Runs against the configured database: PostgreSQL (CI: pg_dump / pg_restore, custom format, restored
into a database this test creates) or SQLite (the default: sqlite3's .backup, restored into a new file).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from fleet import crypto
from fleet.models import Deployment
from planner.breakeven import BreakevenRequest
from planner.decisions import record_decision
from planner.models import Decision
from tests.celery_workers import database_url

ROOT = Path(__file__).resolve().parent.parent


def run(script: str, *args: str, url: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DATABASE_URL": url}
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / script), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


class Restored:
    """A fresh database for the restore, of the configured engine: a PostgreSQL database or a file."""

    def __init__(self, tmp_path: Path) -> None:
        self.postgres = connection.vendor == "postgresql"
        if self.postgres:
            self.name = f"{connection.settings_dict['NAME']}_restored"[:63]
            source = database_url()
            self.url = source.rsplit("/", 1)[0] + f"/{self.name}"
            self._admin(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
            self._admin(f'CREATE DATABASE "{self.name}"')
        else:
            self.path = tmp_path / "restored.sqlite3"
            self.url = f"sqlite:///{self.path}"

    def _admin(self, sql: str) -> None:
        import psycopg

        db = connection.settings_dict
        kwargs = {"user": db["USER"], "password": db["PASSWORD"] or None, "host": db["HOST"] or "127.0.0.1"}
        with psycopg.connect(dbname="postgres", port=db["PORT"] or 5432, autocommit=True, **kwargs) as conn:
            conn.execute(sql)

    def query(self, sql: str) -> list[tuple]:
        if self.postgres:
            import psycopg

            with psycopg.connect(self.url.replace("postgres://", "postgresql://", 1)) as conn:
                return conn.execute(sql).fetchall()
        with contextlib.closing(sqlite3.connect(self.path)) as conn:
            return conn.execute(sql).fetchall()

    def drop(self) -> None:
        if self.postgres:
            self._admin(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


def counts(query) -> dict[str, int]:
    return {t: query(f'SELECT count(*) FROM "{t}"')[0][0] for t in connection.introspection.table_names()}


@pytest.mark.django_db(transaction=True)
def test_backup_then_restore_into_a_fresh_database_keeps_every_row(tmp_path, make_user):
    call_command("load_catalog", stdout=StringIO())
    call_command("ensure_demo_fleet", "--endpoint", "http://127.0.0.1:8100", stdout=StringIO())
    deployment = Deployment.objects.get(slug="demo-llama-70b")
    deployment.set_api_key("sk-restore-me")
    deployment.save()
    decision = record_decision(
        workload="coding-agent",
        tier=Decision.Tier.API,
        note="kept across a restore",
        comparison=BreakevenRequest(gpus=8, sku="h100-sxm-80gb", api_price="kimi-k3-api"),
        user=make_user("finance-person", "finance"),
    )

    def source_query(sql: str) -> list[tuple]:
        with connection.cursor() as cursor:
            cursor.execute(sql)
            return cursor.fetchall()

    before = counts(source_query)
    assert before["fleet_deployment"] == 1 and before["planner_decision"] == 1 and before["fleet_hardwaresku"] > 5

    dump = tmp_path / "fleetcap.backup"
    made = run("backup.sh", str(dump), url=database_url())
    assert made.returncode == 0, made.stderr
    assert made.stdout.strip() == str(dump) and dump.stat().st_size > 10_000
    assert "FLEETCAP_FIELD_ENCRYPTION_KEYS" in made.stderr  # the keys are not in the backup: it says so

    restored = Restored(tmp_path)
    try:
        done = run("restore.sh", str(dump), url=restored.url)
        assert done.returncode == 0, done.stderr
        assert counts(restored.query) == before
        (row,) = restored.query(
            "SELECT slug, base_url, tp, replicas, api_key_encrypted FROM fleet_deployment WHERE slug = 'demo-llama-70b'"
        )
        assert row[:4] == ("demo-llama-70b", "http://127.0.0.1:8100", 4, 2)
        assert crypto.decrypt(row[4]) == "sk-restore-me"  # opens with the same keys
        (note, tier) = restored.query(f"SELECT note, tier FROM planner_decision WHERE id = {decision.pk}")[0]
        assert (note, tier) == ("kept across a restore", Decision.Tier.API)
        applied = restored.query("SELECT count(*) FROM django_migrations")[0][0]
        assert applied == source_query("SELECT count(*) FROM django_migrations")[0][0] > 10

        again = run("restore.sh", str(dump), url=restored.url)  # never over a database in use, unless --force
        assert again.returncode == 3 and "--force" in again.stderr
        forced = run("restore.sh", str(dump), "--force", url=restored.url)
        assert forced.returncode == 0, forced.stderr
        assert counts(restored.query) == before
    finally:
        restored.drop()


def test_backup_refuses_an_unknown_database_url(tmp_path):
    r = run("backup.sh", str(tmp_path / "x"), url="mysql://root@127.0.0.1/fleetcap")
    assert r.returncode == 2 and "postgres://" in r.stderr and not (tmp_path / "x").exists()
