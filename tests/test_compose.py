"""compose.yaml and the Dockerfile, checked without Docker: the services, their environment against
what the settings read, their commands against the commands that exist (docs/operations.md, "Production")."""

from __future__ import annotations

import re
import runpy
import shlex
from pathlib import Path

import dj_database_url
import pytest
import yaml
from django.core.management import get_commands

ROOT = Path(__file__).resolve().parent.parent
APP_SERVICES = ("migrate", "web", "worker", "beat")
#: Interpolation as compose does it, with every required variable set (``${X:?message}``, ``${X:-default}``).
INTERPOLATION = re.compile(r"\$\{(\w+)(?::([?-])([^}]*))?\}")
ENV = {"POSTGRES_PASSWORD": "pw", "FLEETCAP_SECRET_KEY": "s" * 50, "FLEETCAP_FIELD_ENCRYPTION_KEYS": "k" * 40}


def interpolate(text: str, env: dict[str, str]) -> str:
    def value(m: re.Match) -> str:
        name, op, arg = m.groups()
        if name in env:
            return env[name]
        if op == "?":
            raise KeyError(f"{name}: {arg}")
        return arg if op == "-" else ""

    return INTERPOLATION.sub(value, text.replace("$$", "\0")).replace("\0", "$")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(interpolate((ROOT / "compose.yaml").read_text(), ENV))


def settings_reads() -> set[str]:
    """Every environment variable fleet/project/settings.py and gunicorn.conf.py read, by literal name."""
    names = set()
    for path in (ROOT / "fleet/project/settings.py", ROOT / "gunicorn.conf.py"):
        names |= set(re.findall(r"""(?:environ\.get|env\w*)\(\s*"([A-Z][A-Z0-9_]+)\"""", path.read_text()))
    return names


def test_the_five_services_and_a_migrate_step(compose):
    assert set(compose["services"]) == {"web", "worker", "beat", "postgres", "redis", "migrate"}
    for name in ("postgres", "redis"):
        assert compose["services"][name]["healthcheck"]["test"], name
    used = {v.split(":")[0] for s in compose["services"].values() for v in s.get("volumes", [])}
    # bills: uploaded cloud bills, shared by web (stores) and worker (imports).
    assert used == set(compose["volumes"]) == {"pgdata", "redisdata", "bills"}
    for name in ("web", "worker"):
        assert "bills:/var/lib/fleetcap/bills" in compose["services"][name]["volumes"], name


def test_required_secrets_fail_loudly_when_unset():
    text = (ROOT / "compose.yaml").read_text()
    for name in ENV:
        with pytest.raises(KeyError, match=name):
            interpolate(text, {k: v for k, v in ENV.items() if k != name})


@pytest.mark.parametrize("service", APP_SERVICES)
def test_app_environment_is_what_the_settings_read(compose, service):
    env = compose["services"][service]["environment"]
    unknown = set(env) - settings_reads()
    assert not unknown, f"{service} sets variables nothing reads: {unknown}"
    for needed in ("DATABASE_URL", "CELERY_BROKER_URL", "FLEETCAP_SECRET_KEY", "FLEETCAP_FIELD_ENCRYPTION_KEYS"):
        assert env.get(needed), (service, needed)
    db = dj_database_url.parse(env["DATABASE_URL"])
    assert db["ENGINE"].endswith("postgresql") and db["HOST"] == "postgres" and db["PASSWORD"] == "pw"
    assert env["CELERY_BROKER_URL"].startswith("redis://redis:6379/")
    assert "localhost" in env["FLEETCAP_ALLOWED_HOSTS"].split(",")  # the web health check's Host


def test_commands_exist(compose):
    services = compose["services"]
    migrate = shlex.split(services["migrate"]["command"][-1])
    ran = [migrate[i + 1] for i, word in enumerate(migrate) if word == "manage.py"]
    assert ran == ["migrate", "load_catalog"] and set(ran) <= set(get_commands())
    web = services["web"]["command"]
    assert web[0] == "gunicorn" and web[web.index("-c") + 1] == "gunicorn.conf.py" and web[-1] == "fleet.project.wsgi"
    assert (ROOT / "gunicorn.conf.py").exists() and (ROOT / "fleet/project/wsgi.py").exists()
    for name, verb in (("worker", "worker"), ("beat", "beat")):
        cmd = services[name]["command"]
        assert cmd[:3] == ["celery", "-A", "fleet.project"] and cmd[3] == verb
    assert "--hostname" in services["worker"]["command"]  # distinct per container (WorkerHeartbeat rows)
    assert "deploy" not in services["beat"] and "scale" not in services["beat"]  # exactly one beat


def test_start_order_and_health(compose):
    services = compose["services"]
    for name in ("web", "worker", "beat"):
        after = services[name]["depends_on"]
        assert after["migrate"]["condition"] == "service_completed_successfully"
        assert after["postgres"]["condition"] == after["redis"]["condition"] == "service_healthy"
    assert services["migrate"]["restart"] == "no"
    probe = " ".join(services["web"]["healthcheck"]["test"])
    assert "http://127.0.0.1:8000/healthz" in probe
    assert services["web"]["environment"]["FLEETCAP_BIND"].endswith(":8000")
    assert services["web"]["ports"] == ["8000:8000"]
    assert "worker@$HOSTNAME" in services["worker"]["healthcheck"]["test"][-1]


def test_dockerfile_builds_from_python_3_11_slim_with_the_requirements():
    text = (ROOT / "Dockerfile").read_text()
    assert text.splitlines()[1] == "FROM python:3.11-slim"
    assert "pip install -r requirements.txt" in text and "collectstatic" in text
    assert "postgresql-client" in text  # pg_dump / pg_restore for scripts/backup.sh, restore.sh
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert ".venv" in ignored and "var" in ignored and ".git" in ignored


def test_gunicorn_does_not_recycle_workers_by_default(monkeypatch):
    """A gthread worker recycling after max_requests drops held connections (gunicorn#3038, #3380):
    the load test lost a request at each recycle, so recycling is opt-in."""
    monkeypatch.delenv("FLEETCAP_WEB_MAX_REQUESTS", raising=False)
    conf = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    assert conf["worker_class"] == "gthread" and conf["max_requests"] == 0 and conf["max_requests_jitter"] == 0
    monkeypatch.setenv("FLEETCAP_WEB_MAX_REQUESTS", "2000")
    conf = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    assert conf["max_requests"] == 2000 and conf["max_requests_jitter"] == 200
