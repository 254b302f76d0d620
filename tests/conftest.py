"""Shared fixtures: users for every role (the migrations' groups and permissions), API clients,
and a few valid records.

With ``FLEETCAP_REQUIRE_SERVICES=1`` (CI), the run stops at once when the configured
PostgreSQL or Redis cannot be reached, instead of silently testing something else.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from api_keys import api_key
from priced import acme_quoting_the_seeds_rate
from rest_framework.test import APIClient

# Every response and log record of the session is searched for the tests' API keys (secret_scan.py).
from secret_scan import _no_secret_leaked, _secret_scan_session  # noqa: F401

from tests.roles import ensure_role_groups

KIMI_K3_GROUPS = [
    {
        "kind": "linear",
        "count": 69,
        "key_heads": 96,
        "value_heads": 96,
        "key_dim": 128,
        "value_dim": 128,
        "conv_kernel": 4,
    },
    {"kind": "mla", "count": 24, "kv_lora_rank": 512, "qk_rope_head_dim": 64},
]


def _check_services() -> None:
    """Fail fast when CI asked for real services and one is missing."""
    errors = []
    db_url = os.environ.get("DATABASE_URL", "")
    broker = os.environ.get("CELERY_BROKER_URL", "")
    if not db_url.startswith(("postgres://", "postgresql://")):
        errors.append("DATABASE_URL must point at PostgreSQL when FLEETCAP_REQUIRE_SERVICES=1")
    else:
        import psycopg

        try:
            # The server, not the database: pytest-django creates its own test database.
            psycopg.connect(db_url, dbname="postgres", connect_timeout=5).close()
        except psycopg.Error as exc:
            errors.append(f"PostgreSQL unreachable: {exc}")
    if not broker.startswith("redis://"):
        errors.append("CELERY_BROKER_URL must point at Redis when FLEETCAP_REQUIRE_SERVICES=1")
    else:
        import redis

        try:
            redis.Redis.from_url(broker, socket_connect_timeout=5).ping()
        except redis.RedisError as exc:
            errors.append(f"Redis unreachable: {exc}")
    if errors:
        pytest.exit("Required services missing: " + "; ".join(errors), returncode=3)


def pytest_sessionstart(session: pytest.Session) -> None:
    if os.environ.get("FLEETCAP_REQUIRE_SERVICES", "") in {"1", "true", "yes", "on"}:
        _check_services()


@pytest.fixture(scope="session", autouse=True)
def tests_publish_to_their_own_queue():
    """What the tests publish goes to a queue of this test process's own (tests that start a worker name
    their own queue as well), purged when the session ends: never to the default ``celery`` queue,
    where a ``make run`` in the same checkout, or another checkout's worker on the same Redis, would
    take it (a change's recomputation, ``planner.refresh_answers``, is published by every save)."""
    from fleet.project.celery import app

    queue = f"tests-{os.getpid()}"
    before = app.conf.task_default_queue
    app.conf.task_default_queue = queue
    yield queue
    app.conf.task_default_queue = before
    try:
        with app.connection_for_write() as conn:
            conn.default_channel.queue_purge(queue)
    except Exception as exc:  # a broker gone at the end must not fail the session
        print(f"test queue {queue} not purged: {exc}")


@pytest.fixture(autouse=True)
def fresh_cache():
    """API throttles and login lockouts count in the cache: each test starts from zero; so does the
    routing advisor's fleet snapshot (planner/routing.py)."""
    from django.core.cache import cache

    from planner.routing import clear_snapshot

    cache.clear()
    clear_snapshot()


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Tests create many users; full-strength PBKDF2 would cost ~0.3 s each. Tests only."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def make_user(db):
    from django.contrib.auth.models import Group, User

    def make(username: str, role: str | None = None, **extra: Any) -> User:
        user = User.objects.create_user(username=username, password="pw-for-tests-only", **extra)
        if role:
            ensure_role_groups()
            user.groups.add(Group.objects.get(name=role))
        return user

    return make


@pytest.fixture
def client_for(make_user):
    """An API client authenticated with an API token (scope write, fleet/tokens.py) for a new user of ``role``."""

    def make(role: str | None) -> APIClient:
        user = make_user(f"user-{role or 'none'}", role)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {api_key(user)}")
        client.user = user
        return client

    return make


@pytest.fixture
def platform_api(client_for) -> APIClient:
    return client_for("platform")


@pytest.fixture
def viewer_api(client_for) -> APIClient:
    return client_for("viewer")


@pytest.fixture
def finance_api(client_for) -> APIClient:
    return client_for("finance")


@pytest.fixture
def sku(db):
    """The catalogue's H100 SXM 80GB (the one home of its figures)."""
    from fleet.catalog.reference import sku_record
    from fleet.models import HardwareSku

    return HardwareSku.objects.create(**sku_record("h100-sxm-80gb"))


@pytest.fixture
def cluster(sku):
    from fleet.models import Cluster, Provider

    return Cluster.objects.create(
        slug="h100-pool",
        name="H100 pool",
        sku=sku,
        nodes=4,
        provider=Provider.objects.ensure("acme"),
        region="eu",
        team="platform",
    )


@pytest.fixture
def kimi_k3(db):
    """The catalogue's Kimi K3 (its published config: bf16 with MXFP4 routed experts)."""
    from fleet.catalog.reference import model_record
    from fleet.models import ModelSpec

    return ModelSpec.objects.create(**model_record("kimi-k3"))


@pytest.fixture
def llama70b(db):
    from fleet.models import ModelSpec

    return ModelSpec.objects.create(
        slug="llama-3.1-70b",
        name="Llama 3.1 70B",
        total_params=70_600_000_000,
        active_params=70_600_000_000,
        hidden_size=8192,
        vocab_size=128256,
        max_context_tokens=131072,
        attention_heads=64,
        weight_format="bf16",
        layer_groups=[{"kind": "full", "count": 80, "kv_heads": 8, "head_dim": 128}],
    )


@pytest.fixture
def deployment(cluster, kimi_k3):
    from fleet.models import Deployment

    d = Deployment(
        slug="k3-prod",
        cluster=cluster,
        model=kimi_k3,
        tp=8,
        pp=1,
        dp=4,
        ep=32,
        engine="sglang",
        base_url="http://127.0.0.1:30000",
        served_model_id="moonshotai/Kimi-K3",
    )
    d.set_api_key("sk-secret-do-not-leak-0123456789")
    d.save()
    return d


class BrokerDown:
    """The app's producer pool pointed at a Redis port nobody listens on (connection refused);
    ``restore()`` brings the configured broker back."""

    def __init__(self):
        from fleet.project.celery import app

        self.app, self.monkeypatch = app, pytest.MonkeyPatch()
        monkeypatch = self.monkeypatch
        # broker_write_url: what publishing uses (CELERY_BROKER_URL in the environment would win over broker_url).
        monkeypatch.setitem(app.conf, "broker_write_url", "redis://127.0.0.1:9/0")
        self.reset_pools()

    def reset_pools(self) -> None:
        self.app._pool = None
        self.app.amqp._producer_pool = None

    def restore(self) -> None:
        self.monkeypatch.undo()
        self.reset_pools()


@pytest.fixture
def broker_down():
    down = BrokerDown()
    yield down
    down.restore()


#: The coding-agent workload most plan tests search for (200k requests a day, 12k-token prompts).
AGENT_WORKLOAD = {
    "slug": "agent",
    "name": "Coding agent",
    "team": "dev",
    "requests_per_day": 200_000,
    "mean_prompt_tokens": 12_000,
    "mean_output_tokens": 600,
    "p95_context_tokens": 64_000,
    "prefix_cache_hit_rate": 0.9,
    "peak_concurrency": 256,
    "ttft_slo_ms": 2000,
    "tpot_slo_ms": 50,
}


@pytest.fixture
def catalog_and_agent(db):
    """The catalogue loaded and the ``agent`` workload (``AGENT_WORKLOAD``) registered."""
    from io import StringIO

    from django.core.management import call_command

    from fleet.models import Workload

    call_command("load_catalog", stdout=StringIO())
    return Workload.objects.create(**AGENT_WORKLOAD)


#: 100,000 requests a day of 1,000 prompt and 500 output tokens: 1.5 B output and 3 B prompt tokens a month.
CHAT_WORKLOAD = {
    "slug": "chat",
    "name": "Chat",
    "team": "web",
    "requests_per_day": 100_000,
    "mean_prompt_tokens": 1_000,
    "mean_output_tokens": 500,
    "p95_context_tokens": 4_000,
    "prefix_cache_hit_rate": 0.5,
    "peak_concurrency": 64,
    "ttft_slo_ms": 2000,
    "tpot_slo_ms": 50,
}


@pytest.fixture
def chat_served(db):
    """The catalogue, a chat workload served by 2 replicas of Llama 3.1 70B at tp 4 on H100s (8 GPUs at
    acme's own quote of the seeds' 2.50 USD/GPU-hour) and an API price for the same model (20 USD/M
    output, 1/5 input): the only one for Llama (the catalogue's own Llama prices are removed)."""
    from datetime import timedelta
    from io import StringIO

    from django.core.management import call_command
    from django.utils import timezone

    from fleet.models import ApiPrice, Cluster, Deployment, HardwareSku, ModelSpec, Workload

    call_command("load_catalog", stdout=StringIO())
    workload = Workload.objects.create(**CHAT_WORKLOAD)
    sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
    acme = acme_quoting_the_seeds_rate(sku)
    cluster = Cluster.objects.create(slug="c", name="C", sku=sku, nodes=1, provider=acme, team="t")
    model = ModelSpec.objects.get(slug="llama-3.1-70b")
    ApiPrice.objects.filter(model=model).delete()  # the catalogue's, so that acme's below is the one compared
    deployment = Deployment.objects.create(
        slug="llama", cluster=cluster, model=model, tp=4, replicas=2, kv_cache_dtype="fp8", workload=workload
    )
    price = ApiPrice.objects.create(
        slug="llama-api", provider="acme", model_name="llama-70b", model=model, input_cache_hit_usd_per_mtok="1",
        input_cache_miss_usd_per_mtok="5", output_usd_per_mtok="20",
        quoted_on=timezone.now().date() - timedelta(days=10),
    )  # fmt: skip
    return workload, deployment, price
