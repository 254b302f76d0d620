"""The env-driven settings helpers and the defaults that let `make run` work anywhere."""

import os
import subprocess
import sys

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


def _settings_in_subprocess(env: dict[str, str], expr: str) -> str:
    code = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'fleet.project.settings'; django.setup(); "
        f"from django.conf import settings as s; print({expr})"
    )
    clean = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL"}}
    out = subprocess.run([sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_defaults_need_no_services(tmp_path):
    env = {"FLEETCAP_VAR_DIR": str(tmp_path)}
    expr = "s.DATABASES['default']['ENGINE'], s.CELERY_BROKER_URL, s.DEBUG, len(s.SECRET_KEY) > 40"
    assert _settings_in_subprocess(env, expr) == "django.db.backends.sqlite3 filesystem:// False True"
    key_file = tmp_path / "secret_key"
    assert key_file.exists() and oct(key_file.stat().st_mode & 0o777) == "0o600"
    # The generated key is stable across restarts.
    assert _settings_in_subprocess(env, "s.SECRET_KEY") == key_file.read_text().strip()


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


def test_a_sqlite_url_gets_wal_and_a_busy_timeout(tmp_path):
    env = {"FLEETCAP_VAR_DIR": str(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path}/x.sqlite3"}
    out = _settings_in_subprocess(env, "s.DATABASES['default']['OPTIONS']")
    assert "'timeout': 20" in out and "journal_mode=WAL" in out


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
