"""The env-driven settings helpers and the defaults that let `make run` work anywhere."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fleet.project.settings import envbool, envint, envlist


def test_env_helpers(monkeypatch):
    monkeypatch.setenv("X_BOOL", "Yes")
    monkeypatch.setenv("X_INT", "42")
    monkeypatch.setenv("X_LIST", "a.example, b.example,,")
    assert envbool("X_BOOL") is True and envbool("X_MISSING", True) is True
    monkeypatch.setenv("X_BOOL", "0")
    assert envbool("X_BOOL", True) is False
    assert envint("X_INT", 1) == 42 and envint("X_MISSING", 7) == 7
    assert envlist("X_LIST", "") == ["a.example", "b.example"]


ROOT = Path(__file__).resolve().parent.parent


def _clean_env(env: dict[str, str]) -> dict[str, str]:
    drop = {"DATABASE_URL", "CELERY_BROKER_URL", "FLEETCAP_SECRET_KEY", "FLEETCAP_SECRET_KEY_FILE"}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **env}


def _run(env: dict[str, str], code: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], env=_clean_env(env), capture_output=True, text=True, check=check, cwd=ROOT
    )


def _settings_in_subprocess(env: dict[str, str], expr: str) -> str:
    code = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'fleet.project.settings'; django.setup(); "
        f"from django.conf import settings as s; print({expr})"
    )
    return _run(env, code).stdout.strip()


def _init_local(env: dict[str, str]) -> str:
    out = subprocess.run(
        [sys.executable, "manage.py", "init_local"],
        env=_clean_env(env),
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return out.stdout


def test_importing_the_settings_writes_nothing_and_a_missing_secret_says_what_to_do(tmp_path):
    var = tmp_path / "var"
    env = {"FLEETCAP_VAR_DIR": str(var)}
    failed = _run(env, "import fleet.project.settings", check=False)
    assert failed.returncode != 0 and "manage.py init_local" in failed.stderr and "FLEETCAP_SECRET_KEY" in failed.stderr
    assert not var.exists()  # no folder, no key: importing settings has no side effect
    # With the secret given, importing (and setting Django up) still creates nothing.
    assert _settings_in_subprocess({**env, "FLEETCAP_SECRET_KEY": "k" * 50}, "s.DEBUG") == "False"
    assert not var.exists()


def test_init_local_makes_the_folders_and_a_stable_secret(tmp_path):
    var = tmp_path / "var"
    env = {"FLEETCAP_VAR_DIR": str(var)}
    out = _init_local(env)
    assert "generated" in out
    for folder in ("staticfiles", "broker/queue", "broker/processed", "broker/control"):
        assert (var / folder).is_dir(), folder
    key_file = var / "secret_key"
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    key = key_file.read_text().strip()
    assert len(key) > 40
    assert "generated" not in _init_local(env)  # idempotent: the key is kept
    assert key_file.read_text().strip() == key
    expr = "s.DATABASES['default']['ENGINE'], s.CELERY_BROKER_URL, s.DEBUG, s.SECRET_KEY"
    assert _settings_in_subprocess(env, expr) == f"django.db.backends.sqlite3 filesystem:// False {key}"


def test_init_local_generates_no_secret_when_one_is_given(tmp_path):
    var = tmp_path / "var"
    _init_local({"FLEETCAP_VAR_DIR": str(var), "FLEETCAP_SECRET_KEY": "k" * 50})
    assert var.is_dir() and not (var / "secret_key").exists()


def test_urls_switch_to_postgres_and_redis(tmp_path):
    env = {
        "FLEETCAP_VAR_DIR": str(tmp_path),
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/fleetcap",
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
        "FLEETCAP_SECRET_KEY": "k" * 50,
        "FLEETCAP_ALLOWED_HOSTS": "fleet.example.com",
    }
    expr = "s.DATABASES['default']['ENGINE'], s.DATABASES['default']['NAME'], s.CELERY_BROKER_URL, s.ALLOWED_HOSTS"
    out = _settings_in_subprocess(env, expr)
    assert out == "django.db.backends.postgresql fleetcap redis://127.0.0.1:6379/0 ['fleet.example.com']"
    assert not (tmp_path / "secret_key").exists()


def test_a_redis_key_prefix_reaches_the_broker_the_result_backend_and_the_cache(tmp_path):
    """FLEETCAP_REDIS_KEY_PREFIX: kombu's global_keyprefix, the Redis result backend's and the cache's
    KEY_PREFIX, so runs sharing one Redis db each own their keys (bench/bench_load.py); unset, nothing."""
    env = {
        "FLEETCAP_VAR_DIR": str(tmp_path),
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/11",
        "CELERY_RESULT_BACKEND": "redis://127.0.0.1:6379/11",
        "FLEETCAP_CACHE_URL": "redis://127.0.0.1:6379/11",
        "FLEETCAP_SECRET_KEY": "k" * 50,
    }
    expr = (
        "s.CELERY_BROKER_TRANSPORT_OPTIONS.get('global_keyprefix'), "
        "getattr(s, 'CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS', {}).get('global_keyprefix'), "
        "__import__('django.core.cache').core.cache.cache.make_key('throttle_user_1')"
    )
    out = _settings_in_subprocess({**env, "FLEETCAP_REDIS_KEY_PREFIX": "run_7_ab:"}, expr)
    assert out == "run_7_ab: run_7_ab: run_7_ab:cache:1:throttle_user_1"
    assert _settings_in_subprocess(env, expr) == "None None :1:throttle_user_1"


def test_a_sqlite_url_gets_wal_and_a_busy_timeout(tmp_path):
    env = {
        "FLEETCAP_VAR_DIR": str(tmp_path),
        "DATABASE_URL": f"sqlite:///{tmp_path}/x.sqlite3",
        "FLEETCAP_SECRET_KEY": "k" * 50,
    }
    out = _settings_in_subprocess(env, "s.DATABASES['default']['OPTIONS']")
    assert "'timeout': 20" in out and "journal_mode=WAL" in out
    assert "'transaction_mode': 'IMMEDIATE'" in out


def test_two_sqlite_writers_that_read_first_wait_for_each_other_instead_of_failing(tmp_path):
    """Two processes, each a transaction that reads and then writes, at once. With the default DEFERRED
    transactions the one whose read is older than the other's commit fails at once with "database is
    locked", whatever the busy timeout (what happened to beat's poll-cycle entry at make run's start);
    with BEGIN IMMEDIATE (the settings' ``transaction_mode``) the second waits for the first."""
    import sqlite3
    import subprocess
    import sys
    import textwrap

    db = tmp_path / "x.sqlite3"
    setup = sqlite3.connect(db)
    setup.execute("PRAGMA journal_mode=WAL")
    setup.execute("CREATE TABLE t (n INTEGER)")
    setup.commit()
    setup.close()
    script = textwrap.dedent(
        f"""
        import os, sqlite3, sys, time
        mode, me, other, pause = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
        def wait_for(name):
            while not os.path.exists(os.path.join({str(tmp_path)!r}, name)):
                time.sleep(0.01)
        c = sqlite3.connect({str(db)!r}, timeout=20, isolation_level=None)
        if mode == "IMMEDIATE":  # meet before BEGIN: the second BEGIN IMMEDIATE waits for the first's commit
            open(os.path.join({str(tmp_path)!r}, me), "w").close(); wait_for(other)
        try:
            c.execute(f"BEGIN {{mode}}")
            c.execute("SELECT count(*) FROM t").fetchone()
            if mode == "DEFERRED":  # meet after both read: both hold a snapshot from before either wrote
                open(os.path.join({str(tmp_path)!r}, me), "w").close(); wait_for(other)
            time.sleep(pause)
            c.execute("INSERT INTO t VALUES (1)")
            c.execute("COMMIT")
            print("ok")
        except sqlite3.OperationalError as exc:
            print(exc)
        """
    )
    for mode, expected in (("DEFERRED", ["database is locked", "ok"]), ("IMMEDIATE", ["ok", "ok"])):
        for marker in tmp_path.glob("m*"):
            marker.unlink()
        procs = [
            subprocess.Popen([sys.executable, "-c", script, mode, me, other, pause], stdout=subprocess.PIPE, text=True)
            for me, other, pause in (("m1", "m2", "0.8"), ("m2", "m1", "0"))
        ]
        results = sorted(p.communicate(timeout=60)[0].strip() for p in procs)
        assert results == expected, (mode, results)


def test_tls_verification_is_a_boolean_or_an_existing_ca_bundle(monkeypatch, tmp_path):
    from django.core.exceptions import ImproperlyConfigured

    from fleet.project.settings import env_tls_verify

    assert env_tls_verify("X_TLS") is True  # unset: the system's trust store
    monkeypatch.setenv("X_TLS", "off")
    assert env_tls_verify("X_TLS") is False
    bundle = tmp_path / "ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    monkeypatch.setenv("X_TLS", str(bundle))
    assert env_tls_verify("X_TLS") == str(bundle)
    monkeypatch.setenv("X_TLS", str(tmp_path / "typo.pem"))
    with pytest.raises(ImproperlyConfigured, match=r"typo\.pem"):
        env_tls_verify("X_TLS")


def test_init_local_sets_aside_a_sqlite_file_from_before_the_relaid_migrations(tmp_path):
    """Its migration rows share names with the new history, so `migrate` would skip them."""
    import sqlite3

    from fleet.management.commands.init_local import set_aside_stale_sqlite

    old, new = tmp_path / "old.sqlite3", tmp_path / "new.sqlite3"
    db = sqlite3.connect(old)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE planner_modelspec (id integer)")
    db.commit()
    db.close()
    db = sqlite3.connect(new)
    db.execute("CREATE TABLE fleet_modelspec (id integer)")
    db.commit()
    db.close()
    assert set_aside_stale_sqlite(new) is None and new.exists()
    aside = set_aside_stale_sqlite(old)
    assert aside == tmp_path / "old.sqlite3.before-relaid-migrations" and aside.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.sqlite3", "old.sqlite3.before-relaid-migrations"]
    assert set_aside_stale_sqlite(tmp_path / "missing.sqlite3") is None


def test_the_web_process_sets_its_garbage_collector_thresholds(monkeypatch):
    """fleet/project/webprocess.py (called by wsgi.py and the page benchmarks): fewer, later young
    collections in a web process (docs/benchmarks.md, "Garbage collector"); an override in the
    environment, and a malformed one ignored."""
    import gc

    from fleet.project.webprocess import DEFAULT_GC_THRESHOLDS, configure_web_process, tune_gc

    before = gc.get_threshold()
    try:
        monkeypatch.delenv("FLEETCAP_GC_THRESHOLDS", raising=False)
        assert tune_gc() == DEFAULT_GC_THRESHOLDS == gc.get_threshold() == (50_000, 20, 10)
        monkeypatch.setenv("FLEETCAP_GC_THRESHOLDS", "700,10,10")
        assert tune_gc() == (700, 10, 10) == gc.get_threshold()
        for bad in ("fast", "1,2", "0,10,10"):
            monkeypatch.setenv("FLEETCAP_GC_THRESHOLDS", bad)
            assert tune_gc() == DEFAULT_GC_THRESHOLDS
        monkeypatch.setenv("FLEETCAP_GC_THRESHOLDS", "1000,10,10")
        assert configure_web_process() == (1000, 10, 10) == gc.get_threshold()
    finally:
        gc.set_threshold(*before)


def test_the_poll_guards_ports_are_port_numbers_and_the_web_bind_matches_gunicorns(monkeypatch, tmp_path):
    """FLEETCAP_POLL_ALLOWED_PORTS and FLEETCAP_POLL_LOOPBACK_REFUSED_PORTS: port numbers, or a start-up
    error; the refused ports unset (None: the installation's own, fleet.egress), a list, or ``none``."""
    import runpy

    from django.core.exceptions import ImproperlyConfigured

    from fleet.project.settings import envports

    monkeypatch.setenv("X_PORTS", "8000, 30000")
    assert envports("X_PORTS") == [8000, 30000] and envports("X_MISSING") == []
    for bad in ("80x", "0", "70000"):
        monkeypatch.setenv("X_PORTS", bad)
        with pytest.raises(ImproperlyConfigured, match="X_PORTS: comma-separated TCP port numbers"):
            envports("X_PORTS")
    env = {"FLEETCAP_VAR_DIR": str(tmp_path), "FLEETCAP_SECRET_KEY": "k" * 50}
    expr = "s.POLL_LOOPBACK_REFUSED_PORTS, s.WEB_BIND"
    monkeypatch.delenv("FLEETCAP_BIND", raising=False)
    monkeypatch.delenv("FLEETCAP_POLL_LOOPBACK_REFUSED_PORTS", raising=False)
    assert _settings_in_subprocess(env, expr) == f"None {runpy.run_path(str(ROOT / 'gunicorn.conf.py'))['bind']}"
    assert _settings_in_subprocess({**env, "FLEETCAP_POLL_LOOPBACK_REFUSED_PORTS": "None"}, expr) == "[] 0.0.0.0:8000"
    listed = {**env, "FLEETCAP_POLL_LOOPBACK_REFUSED_PORTS": "5432,9000", "FLEETCAP_BIND": "127.0.0.1:8080"}
    assert _settings_in_subprocess(listed, expr) == "[5432, 9000] 127.0.0.1:8080"
    bad = {**env, "FLEETCAP_POLL_LOOPBACK_REFUSED_PORTS": "redis"}
    failed = _run(bad, "import fleet.project.settings", check=False)
    assert failed.returncode != 0 and "FLEETCAP_POLL_LOOPBACK_REFUSED_PORTS" in failed.stderr
