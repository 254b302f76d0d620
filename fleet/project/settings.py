"""fleetcap settings: one env-driven module (in the style of Healthchecks).

Every setting a deployment may change is read from the environment:

* ``DATABASE_URL``: e.g. ``postgres://user@127.0.0.1:5432/fleetcap``; default a SQLite file
  under ``var/``.
* ``CELERY_BROKER_URL``: e.g. ``redis://127.0.0.1:6379/0``; default a filesystem broker under
  ``var/broker/`` that needs no server, so ``make run`` works anywhere.
* ``FLEETCAP_SECRET_KEY`` (or ``FLEETCAP_SECRET_KEY_FILE``): default ``var/secret_key``, which
  ``manage.py init_local`` generates (``make run`` and ``make test`` run it). Importing these
  settings never writes anything: a missing secret fails with a message saying how to make one.
* ``FLEETCAP_FIELD_ENCRYPTION_KEYS`` (or ``..._FILE``): keys for stored endpoint API keys, comma
  separated, newest first (``fleet/crypto.py``; ``manage.py rotate_endpoint_keys`` re-encrypts).
* ``FLEETCAP_DEBUG`` (default off), ``FLEETCAP_ALLOWED_HOSTS`` (comma separated).
* ``FLEETCAP_VAR_DIR``: where the SQLite file, broker folders and generated secret live
  (``manage.py init_local`` creates them).
* ``FLEETCAP_REQUIRE_SERVICES``: tests fail (instead of falling back) when the configured
  PostgreSQL or Redis is unreachable.
* Production security (the block "Production security" below; docs/operations.md, "Security"):
  ``FLEETCAP_HTTPS`` (HSTS, secure cookies, SSL redirect, the proxy's ``X-Forwarded-Proto``),
  ``FLEETCAP_HSTS_SECONDS``, ``FLEETCAP_CACHE_URL`` (Redis, shared by every web worker: throttle
  counters), ``FLEETCAP_API_THROTTLE_USER`` / ``_ANON``, ``FLEETCAP_THROTTLE_CALIBRATION`` /
  ``_MODEL_IMPORT`` / ``_PLAN`` / ``_PREFIX_CACHE`` (expensive requests per user, API and pages
  together), ``FLEETCAP_LOGIN_FAILURE_LIMIT``,
  ``FLEETCAP_LOGIN_COOLOFF_MINUTES``; ``FLEETCAP_POLL_ALLOWED_NETWORKS`` / ``_PORTS`` /
  ``FLEETCAP_POLL_LOOPBACK_REFUSED_PORTS`` (poller egress), ``FLEETCAP_BIND`` (the web server's port).
* Budget alerts (docs/operations.md, "Budgets and alerts"): ``FLEETCAP_BUDGET_CHECK_S``,
  ``FLEETCAP_BUDGET_WEBHOOK_TIMEOUT_S`` / ``_ALLOWED_NETWORKS`` / ``_ALLOWED_PORTS`` / ``_VERIFY_TLS``,
  ``FLEETCAP_BUDGET_ALERT_MAX_ATTEMPTS``; email: ``FLEETCAP_EMAIL_BACKEND``, ``_HOST``, ``_PORT``,
  ``_HOST_USER``, ``_HOST_PASSWORD`` (or ``..._FILE``), ``_USE_TLS``, ``_USE_SSL``, ``_TIMEOUT_S``,
  ``_FILE_PATH``, ``FLEETCAP_EMAIL_FROM``.
* ``FLEETCAP_API_TOKEN_MAX_DAYS``: the longest an API token may live (default 365 days).
* ``FLEETCAP_REDIS_KEY_PREFIX``: a prefix for every key in Redis (broker, Redis result backend, cache),
  so several installations or benchmark runs share one Redis db (default none).
"""

from __future__ import annotations

import os
import sys
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parents[2]


def envbool(name: str, default: bool = False) -> bool:
    """A boolean from the environment: 1/true/yes/on (any case) are true."""
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_tls_verify(name: str) -> bool | str:
    """TLS verification from the environment: true (default: the system's trust store), false, or
    the path of a CA bundle file or folder, which must exist (a typo fails at start-up, not at
    every poll)."""
    value = (os.environ.get(name) or "").strip()
    if value.lower() in {"", "1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off"}:
        return False
    if not os.path.exists(value):
        raise ImproperlyConfigured(f"{name}={value!r}: not true, false or an existing CA bundle path")
    return value


def envint(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else default


def envlist(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def envports(name: str, default: str = "") -> list[int]:
    """TCP port numbers from a comma-separated variable; a malformed entry stops start-up."""
    raw = envlist(name, default)
    ports = [int(port) for port in raw if port.isdigit()]
    if len(ports) != len(raw) or not all(0 < port < 65536 for port in ports):
        raise ImproperlyConfigured(f"{name}: comma-separated TCP port numbers (1-65535)")
    return ports


def envsecret(name: str) -> str | None:
    """A secret from ``NAME`` or from the file named by ``NAME_FILE`` (Docker/K8s secrets)."""
    if os.environ.get(name):
        return os.environ[name]
    path = os.environ.get(f"{name}_FILE")
    if path:
        return Path(path).read_text().strip()
    return None


VAR_DIR = Path(os.environ.get("FLEETCAP_VAR_DIR", BASE_DIR / "var"))
#: Where ``manage.py init_local`` writes the generated secret key (mode 600).
LOCAL_SECRET_KEY_FILE = VAR_DIR / "secret_key"
#: The one command that may run without a secret key: the one that generates it.
_INITIALISING = sys.argv[1:2] == ["init_local"]


def _local_secret_key() -> str:
    """The generated ``var/secret_key``; a clear error when there is none (nothing is written here)."""
    if LOCAL_SECRET_KEY_FILE.exists():
        return LOCAL_SECRET_KEY_FILE.read_text().strip()
    if _INITIALISING:
        return ""
    raise ImproperlyConfigured(
        f"No secret key: set FLEETCAP_SECRET_KEY (or FLEETCAP_SECRET_KEY_FILE), or run "
        f"`python manage.py init_local` to generate {LOCAL_SECRET_KEY_FILE} (make run and make test do)."
    )


SECRET_KEY = envsecret("FLEETCAP_SECRET_KEY") or _local_secret_key()
#: Keys for the stored endpoint API keys, newest first: the first encrypts, any decrypts, and a key
#: derived from SECRET_KEY is always tried last (data stored before any key was set). The single
#: ``FLEETCAP_FIELD_ENCRYPTION_KEY`` of older set-ups is still read, after the list.
FIELD_ENCRYPTION_KEYS = [
    key.strip() for key in (envsecret("FLEETCAP_FIELD_ENCRYPTION_KEYS") or "").split(",") if key.strip()
]
FIELD_ENCRYPTION_KEY = envsecret("FLEETCAP_FIELD_ENCRYPTION_KEY") or ""
DEBUG = envbool("FLEETCAP_DEBUG", False)
ALLOWED_HOSTS = envlist("FLEETCAP_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = envlist("FLEETCAP_CSRF_TRUSTED_ORIGINS", "")
REQUIRE_SERVICES = envbool("FLEETCAP_REQUIRE_SERVICES", False)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "django_celery_beat",
    "auditlog",
    "csp",
    "axes",
    "fleet.apps.FleetConfig",
    "planner.apps.PlannerConfig",
]

MIDDLEWARE = [
    # /healthz answers load balancers probing by IP, before any Host check (fleet/middleware.py).
    "fleet.middleware.HealthCheckAnyHost",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # The audit trail's user, source and address (fleet/audit.py); after authentication.
    "fleet.audit.AuditMiddleware",
    # A retried POST /api/v1/ with an Idempotency-Key gets its first answer again (fleet/idempotency.py).
    "fleet.idempotency.IdempotencyMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes requires: it turns a locked-out login into its lockout page.
    "axes.middleware.AxesMiddleware",
]

#: How long the first answer to a POST with an Idempotency-Key is replayed to its retries (seconds).
IDEMPOTENCY_TTL_S = int(os.environ.get("FLEETCAP_IDEMPOTENCY_TTL_S") or 86400)

ROOT_URLCONF = "fleet.project.urls"
WSGI_APPLICATION = "fleet.project.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
            # Numbers and byte counts read the same on every page (thousands separators: intcomma;
            # bytes in binary units with the exact bytes on hover: planner/templatetags/reading.py),
            # with no {% load %} to forget in a template.
            "builtins": ["django.contrib.humanize.templatetags.humanize", "planner.templatetags.reading"],
        },
    },
]

# Database: PostgreSQL (psycopg 3) when DATABASE_URL is set, else a SQLite file under var/.
#: SQLite shared by the web server, workers, beat and poll threads: WAL and a generous busy timeout,
#: or concurrent writers fail with "database is locked"; and transactions that take the write lock
#: when they begin (BEGIN IMMEDIATE, Django 5.1+), because a transaction that read first and then
#: writes cannot wait for the lock (SQLite answers it "database is locked" at once, whatever the
#: timeout): at `make run`'s start beat lost its poll-cycle entry so to the workers' first
#: recomputations, and the demo was never polled.
SQLITE_OPTIONS = {"timeout": 20, "init_command": "PRAGMA journal_mode=WAL;", "transaction_mode": "IMMEDIATE"}

DATABASE_URL = os.environ.get("DATABASE_URL", "")
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)}
    if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
        DATABASES["default"]["CONN_MAX_AGE"] = 0
        DATABASES["default"]["OPTIONS"] = {**SQLITE_OPTIONS, **DATABASES["default"].get("OPTIONS", {})}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "fleetcap.sqlite3",
            # WAL lets the web server, worker and beat share the file; a generous timeout
            # rides out short write locks instead of failing with "database is locked".
            "OPTIONS": SQLITE_OPTIONS,
            # A file (not :memory:) so that Celery workers started by the tests see the data.
            "TEST": {"NAME": str(VAR_DIR / "test-fleetcap.sqlite3")},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"  # created by `manage.py init_local`
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Serve static files from the app folders too, so tests and `make run` need no collectstatic.
WHITENOISE_USE_FINDERS = True

# The audit trail (fleet/audit.py, django-auditlog): changes stored as JSON values (a Decimal
# 2.49 and 2.4900 compare equal, so an unchanged save writes nothing), related records by name.
AUDITLOG_STORE_JSON_CHANGES = True
AUDITLOG_USE_FK_STRING_REPRESENTATION = True

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "fleet.api.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Django model permissions (the role groups hold them), reads needing view_<model> too.
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "fleet.api.permissions.ModelPermissions",
    ],
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_PAGINATION_CLASS": "fleet.api.pagination.Pagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "fleet.api.errors.exception_handler",
}
#: Whether the API's contract (``/api/v1/schema/`` and ``/api/v1/docs/``) is readable without a login or a
#: token (docs/api.md, "The contract"): it describes shapes and rules, never a record, so a script can start
#: from it; set FLEETCAP_API_SCHEMA_PUBLIC=0 to ask for a token or a session.
API_SCHEMA_PUBLIC = envbool("FLEETCAP_API_SCHEMA_PUBLIC", True)
#: The longest an API token may live, in days (fleet/tokens.py; /account/tokens/, POST /api/v1/tokens/ and
#: ``manage.py create_service_account`` refuse a later expiry; the 30/90/365-day choices above it are not offered).
API_TOKEN_MAX_DAYS = envint("FLEETCAP_API_TOKEN_MAX_DAYS", 365)
SPECTACULAR_SETTINGS = {
    "TITLE": "fleetcap API",
    "DESCRIPTION": "Capacity and cost planning for serving large mixture-of-experts models.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "WeightFormatEnum": "fleet.models.specs.WEIGHT_FORMAT_CHOICES",
        "ServingEngineEnum": "planner.engine.engine_choices",
        "EngineProfileEnum": "planner.engine.profile_names",
        "DispatchEnum": "fleet.outbox.DISPATCH",
        "PlanStatusEnum": "planner.models.plans.Plan.Status",
        "ProviderKindEnum": "fleet.models.providers.Provider.Kind",
        "PriceBasisEnum": "planner.engine.PRICE_BASES",
        # KV cache dtypes every computation takes, and the ones a plan searches (its request and its best
        # configuration) and its serving modes.
        "KvCacheDtypeEnum": "planner.engine.KV_CACHE_DTYPES",
        "KvCacheDtypesEnum": "planner.plans.PLAN_KV_CACHE_DTYPES",
        "ModesEnum": "planner.engine.MODES",
        "SpendLineKindEnum": "planner.api.costs.LINE_KINDS",
        "ApiTokenScopeEnum": "fleet.models.tokens.ApiToken.Scope",
        "ApiTokenStateEnum": "fleet.tokens.STATES",
    },
}

# Bad input (docs/api.md, "Errors"; docs/architecture.md, "Bad input"): control characters refused
# in URLs and page forms before any view runs, API bodies parsed with a depth cap and the same
# check, every API error one JSON shape, filters and page sizes checked, 4xx answers in the schema.
MIDDLEWARE.insert(
    MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1, "fleet.middleware.RefuseControlCharacters"
)
#: The largest request body (not counting uploaded files) Django reads: 12 MiB, deliberately above
#: the 5 MiB startup log a calibration takes, once JSON-escaped or form-encoded (a pasted log's
#: punctuation is %XX in a form body). The API answers 413 above it.
DATA_UPLOAD_MAX_MEMORY_SIZE = 12 * 1024 * 1024
REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"] = [
    "fleet.api.parsers.JSONParser",
    "fleet.api.parsers.FormParser",
    "fleet.api.parsers.MultiPartParser",
]
REST_FRAMEWORK["DEFAULT_FILTER_BACKENDS"] = [
    "fleet.api.filtering.FilterBackend",
    "fleet.api.filtering.OrderingFilter",
]
SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"] = [
    "drf_spectacular.hooks.postprocess_schema_enums",
    "fleet.api.schema.document_errors",
    "fleet.api.schema.attach_examples",
]

# Celery: Redis (or any broker) when CELERY_BROKER_URL is set; else a filesystem broker that
# needs no server, shared by every process of `make run` through var/broker/ (its folders are made
# by `manage.py init_local`: kombu makes none of them but the control folder).
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://")
#: Prepended to every key this installation keeps in Redis: the broker's queues, bindings and control
#: channels (kombu's ``global_keyprefix``), the Redis result backend's, and the cache's (``KEY_PREFIX``
#: below), so installations (or benchmark runs: bench/bench_load.py) can share one Redis db and each
#: delete only its own keys. Empty (the default): the keys are Celery's and Django's own names.
REDIS_KEY_PREFIX = os.environ.get("FLEETCAP_REDIS_KEY_PREFIX", "")
if CELERY_BROKER_URL.startswith("filesystem://"):
    _broker_dir = VAR_DIR / "broker"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND") or None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = TIME_ZONE
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
#: Seconds between the poll cycles beat sends; polls are reported stopped (the fleet page, /healthz)
#: when the last cycle started more than twice this long ago (fleet.models.ops.polling_state).
POLL_CYCLE_S = 5.0
#: Seconds an answer everyone reads alike (the fleet table, the month's spend, the API's deployment list)
#: is shared for at most, per version of its records (fleet/page_cache.py); 0: computed per request
#: (the pages benchmark measures that way).
PAGE_CACHE_S = float(os.environ.get("FLEETCAP_PAGE_CACHE_S", "5"))
#: How long a stored spend report (planner.spend.stored_spend) is read before it is computed again although no
#: record it rests on changed, in seconds: what changes it without a record (polls' utilisation, a quote coming
#: into force) shows within this. Beat's refresh_answers stores this month's as often, so pages find it made.
SPEND_STORED_S = float(os.environ.get("FLEETCAP_SPEND_STORED_S", "300"))
#: Seconds between the budget checks beat sends (planner.check_budgets): an hour by default.
BUDGET_CHECK_S = float(os.environ.get("FLEETCAP_BUDGET_CHECK_S", "3600"))
CELERY_BEAT_SCHEDULE = {
    # A cycle's message older than two intervals is superseded by a newer one: dropped, so a worker behind
    # on its queue (prefetched messages under load) cannot keep starting cycles long after beat stopped,
    # and /healthz says "stopped" within 2 x 2 intervals of beat's last send (fleet.models.ops.polling_state).
    "poll-cycle": {"task": "fleet.poll_cycle", "schedule": POLL_CYCLE_S, "options": {"expires": 2 * POLL_CYCLE_S}},
    "send-outbox": {"task": "fleet.send_outbox", "schedule": 10.0, "options": {"expires": 60}},
    # Every 5 s: a plan whose run died (silent for PLAN_SILENT_AFTER_S) is sent again within seconds.
    "recover-plans": {"task": "planner.recover_plans", "schedule": 5.0, "options": {"expires": 30}},
    "prune-polls": {"task": "fleet.prune_polls", "schedule": 3600.0},
    "apply-cluster-changes": {"task": "fleet.apply_cluster_changes", "schedule": 3600.0},
    "fit-speed-corrections": {"task": "planner.fit_speed_corrections", "schedule": 3600.0},
    # Every deployment's capacity snapshot, every workload's breakeven and every decision's review,
    # recomputed in batches (planner.snapshots); changes send their own recomputation at once.
    "refresh-answers": {"task": "planner.refresh_answers", "schedule": 300.0, "options": {"expires": 600}},
    # This month's spend report stored (planner.spend.stored_spend) as often as a stored one is read.
    "refresh-spend": {
        "task": "planner.refresh_spend",
        "schedule": max(60.0, SPEND_STORED_S),
        "options": {"expires": max(60.0, SPEND_STORED_S)},
    },
    # Every budget's month end projected from the month's spend; an alert once per budget and month
    # (planner.budgets, docs/operations.md, "Budgets and alerts").
    "check-budgets": {
        "task": "planner.check_budgets",
        "schedule": BUDGET_CHECK_S,
        "options": {"expires": BUDGET_CHECK_S},
    },
}
#: A capacity snapshot older than this is shown as stale (seconds): three beats of "refresh-answers".
SNAPSHOT_MAX_AGE_S = float(os.environ.get("FLEETCAP_SNAPSHOT_MAX_AGE_S", "900"))
#: Deployments (and workloads) per recomputation task: one query and one transaction per batch.
SNAPSHOT_BATCH = int(os.environ.get("FLEETCAP_SNAPSHOT_BATCH", "200"))
#: Each worker's main process records a beat this often (seconds); three missed beats = silent.
WORKER_HEARTBEAT_S = float(os.environ.get("FLEETCAP_WORKER_HEARTBEAT_S", "30"))
#: Enqueueing gives up after this many seconds when the broker is unreachable (the API answers 503):
#: connect attempts and publish retries together, so a request never hangs on a dead broker.
CELERY_BROKER_CONNECTION_TIMEOUT = 2.0
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}
#: Redis redelivers a message a worker took but never acknowledged (the worker was killed) after this
#: many seconds. Longer than the longest task (planner.fit_speed_corrections: 960 s hard limit) and
#: than any countdown (retries wait at most 60 s), or a task still running would be delivered again;
#: plans do not wait for it (their lease expires in PLAN_LEASE_S; docs/reliability.md).
CELERY_VISIBILITY_TIMEOUT_S = envint("FLEETCAP_CELERY_VISIBILITY_TIMEOUT_S", 3600)
if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT_S}
    if REDIS_KEY_PREFIX:
        CELERY_BROKER_TRANSPORT_OPTIONS["global_keyprefix"] = REDIS_KEY_PREFIX
if REDIS_KEY_PREFIX and (CELERY_RESULT_BACKEND or "").startswith(("redis://", "rediss://")):
    CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"global_keyprefix": REDIS_KEY_PREFIX}
#: The outbox (fleet/outbox.py): a message unsent this many seconds after it was recorded is the
#: sweeper's (the request that recorded it publishes at once); sent messages are kept this long (hours).
OUTBOX_GRACE_S = float(os.environ.get("FLEETCAP_OUTBOX_GRACE_S", "10"))
OUTBOX_RETENTION_HOURS = float(os.environ.get("FLEETCAP_OUTBOX_RETENTION_HOURS", "24"))
#: A plan's run holds its lease this long without renewing it (renewed every third of it while the
#: search reports progress); once expired, planner.recover_plans sends the plan again (planner/plans.py).
PLAN_LEASE_S = float(os.environ.get("FLEETCAP_PLAN_LEASE_S", "60"))
#: A plan's run beats its lease this often (seconds) from a thread of its own process; a run silent
#: for five beats died with its process (killed, out of memory) and its plan is taken over at once,
#: without waiting for PLAN_LEASE_S (docs/reliability.md, "Plan leases").
PLAN_HEARTBEAT_S = float(os.environ.get("FLEETCAP_PLAN_HEARTBEAT_S", "1"))

# Cloud bills (FOCUS files: fleet/bills.py, docs/operations.md "Cloud bills").
#: Where an uploaded bill waits for its worker (web and workers must share it: one volume in compose).
BILL_DIR = Path(os.environ.get("FLEETCAP_BILL_DIR", VAR_DIR / "bills"))
#: The largest FOCUS file accepted (bytes; the API answers 400 above it): a month of a large account.
BILL_MAX_BYTES = envint("FLEETCAP_BILL_MAX_BYTES", 1024 * 1024 * 1024)
#: The tag whose value names a bill row's cluster (by slug) when its ResourceId does not.
BILL_CLUSTER_TAG = os.environ.get("FLEETCAP_BILL_CLUSTER_TAG", "fleetcap-cluster")
#: Billed against modelled, per cluster and month: a variance beyond this many percent is flagged.
BILL_VARIANCE_PCT = float(os.environ.get("FLEETCAP_BILL_VARIANCE_PCT", "10"))
#: Rows read, checked and written per batch (one query to look up duplicates, one INSERT).
BILL_BATCH_ROWS = envint("FLEETCAP_BILL_BATCH_ROWS", 2000)
#: An import holds its bill this long without renewing (renewed every batch); past it, a redelivered
#: task takes the bill over (the worker died) and starts it again.
BILL_LEASE_S = float(os.environ.get("FLEETCAP_BILL_LEASE_S", "120"))

# Endpoint polling (fleet/polling, docs/polling.md). Every outbound request goes through the
# guard: only these networks (CIDR, comma separated) may be reached; link-local and cloud
# metadata addresses are always refused.
#: Default: loopback only (`make run`'s demo endpoint); production lists its serving networks.
POLL_ALLOWED_NETWORKS = envlist("FLEETCAP_POLL_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128")
#: TCP ports the poller may connect to (comma separated); empty (the default): any port in the
#: allowed networks. Production lists its engines' ports (e.g. ``8000,30000,443``).
POLL_ALLOWED_PORTS = envports("FLEETCAP_POLL_ALLOWED_PORTS")
#: Ports refused on loopback (this machine), whatever POLL_ALLOWED_PORTS says. None (unset): this
#: installation's own services, as ``fleet.egress.loopback_refused_ports`` reads them (the database's,
#: the broker's and the cache's ports, the web server's, and PostgreSQL's and Redis's defaults); a list
#: replaces that; ``none``: no port refused (docs/polling.md, "Guard rules").
_refused = os.environ.get("FLEETCAP_POLL_LOOPBACK_REFUSED_PORTS", "").strip()
POLL_LOOPBACK_REFUSED_PORTS: list[int] | None = (
    None if not _refused else [] if _refused.lower() == "none" else envports("FLEETCAP_POLL_LOOPBACK_REFUSED_PORTS")
)
#: Where this installation's web server listens (gunicorn.conf.py reads the same variable, with the same
#: default; ``manage.py runstack`` sets it for the processes it starts): its port is refused on loopback.
WEB_BIND = os.environ.get("FLEETCAP_BIND", "0.0.0.0:8000")
POLL_TIMEOUT_S = float(os.environ.get("FLEETCAP_POLL_TIMEOUT_S", "5"))
POLL_MAX_BYTES = envint("FLEETCAP_POLL_MAX_BYTES", 8 * 1024 * 1024)
POLL_VERIFY_TLS = env_tls_verify("FLEETCAP_POLL_VERIFY_TLS")
#: Endpoints polled at once in one cycle (one event loop, a socket each): enough that every poll of a
#: 500-endpoint fleet starts at once, so hanging endpoints time out together. Keep it times ~3 ms of
#: CPU per poll well under POLL_TIMEOUT_S, or replies queued behind the parsing could time out.
POLL_CONCURRENCY = envint("FLEETCAP_POLL_CONCURRENCY", 500)
#: Raw polls are kept this long, hourly rollups this long (days).
POLL_RETENTION_DAYS = envint("FLEETCAP_POLL_RETENTION_DAYS", 7)
POLL_ROLLUP_RETENTION_DAYS = envint("FLEETCAP_POLL_ROLLUP_RETENTION_DAYS", 400)
#: Live speed correction (planner/corrections.py, docs/throughput.md): hours of polls each fit reads,
#: the fewest usable polls a side is fitted from, and the oldest fit still applied (hours).
SPEED_CORRECTION_WINDOW_HOURS = float(os.environ.get("FLEETCAP_SPEED_CORRECTION_WINDOW_HOURS", "24"))
SPEED_CORRECTION_MIN_SAMPLES = envint("FLEETCAP_SPEED_CORRECTION_MIN_SAMPLES", 10)
SPEED_CORRECTION_MAX_AGE_HOURS = float(os.environ.get("FLEETCAP_SPEED_CORRECTION_MAX_AGE_HOURS", "168"))
#: Routing advisor (planner/routing.py, docs/routing.md): a deployment is stale, and never routed to,
#: when its last poll is older than max(ROUTE_STALE_POLL_INTERVALS x its poll interval, ROUTE_STALE_MIN_S)
#: seconds; a hosted API's prefix cache is assumed to match in blocks of ROUTE_API_CACHE_BLOCK_TOKENS.
ROUTE_STALE_POLL_INTERVALS = float(os.environ.get("FLEETCAP_ROUTE_STALE_POLL_INTERVALS", "3"))
ROUTE_STALE_MIN_S = float(os.environ.get("FLEETCAP_ROUTE_STALE_MIN_S", "120"))
ROUTE_API_CACHE_BLOCK_TOKENS = envint("FLEETCAP_ROUTE_API_CACHE_BLOCK_TOKENS", 128)

# Budget alerts (planner/budgets.py; docs/operations.md, "Budgets and alerts"). A webhook goes through the
# outbound guard like every outbound request: its own allowed networks (default: the poller's) and
# ports (default: any), the loopback ports the poller refuses, always-refused metadata addresses.
BUDGET_WEBHOOK_ALLOWED_NETWORKS = envlist("FLEETCAP_BUDGET_WEBHOOK_ALLOWED_NETWORKS", ",".join(POLL_ALLOWED_NETWORKS))
BUDGET_WEBHOOK_ALLOWED_PORTS = envports("FLEETCAP_BUDGET_WEBHOOK_ALLOWED_PORTS")
#: Seconds a webhook POST may take, connect to last byte of the answer.
BUDGET_WEBHOOK_TIMEOUT_S = float(os.environ.get("FLEETCAP_BUDGET_WEBHOOK_TIMEOUT_S", "5"))
BUDGET_WEBHOOK_VERIFY_TLS = env_tls_verify("FLEETCAP_BUDGET_WEBHOOK_VERIFY_TLS")
#: Deliveries of one channel of one alert tried at most this often (one per check) before it gives up.
BUDGET_ALERT_MAX_ATTEMPTS = envint("FLEETCAP_BUDGET_ALERT_MAX_ATTEMPTS", 24)
#: Email through Django's backends: SMTP by default; ``FLEETCAP_EMAIL_BACKEND`` names another (console,
#: filebased with ``FLEETCAP_EMAIL_FILE_PATH``). The password may come from ``..._FILE``.
EMAIL_BACKEND = os.environ.get("FLEETCAP_EMAIL_BACKEND") or "django.core.mail.backends.smtp.EmailBackend"
EMAIL_HOST = os.environ.get("FLEETCAP_EMAIL_HOST") or "localhost"
EMAIL_PORT = envint("FLEETCAP_EMAIL_PORT", 25)
EMAIL_HOST_USER = os.environ.get("FLEETCAP_EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = envsecret("FLEETCAP_EMAIL_HOST_PASSWORD") or ""
EMAIL_USE_TLS = envbool("FLEETCAP_EMAIL_USE_TLS", False)
EMAIL_USE_SSL = envbool("FLEETCAP_EMAIL_USE_SSL", False)
#: Seconds an SMTP connection may block (Django's default is forever).
EMAIL_TIMEOUT = float(os.environ.get("FLEETCAP_EMAIL_TIMEOUT_S", "10"))
if os.environ.get("FLEETCAP_EMAIL_FILE_PATH"):
    EMAIL_FILE_PATH = os.environ["FLEETCAP_EMAIL_FILE_PATH"]
DEFAULT_FROM_EMAIL = os.environ.get("FLEETCAP_EMAIL_FROM") or "fleetcap@localhost"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("FLEETCAP_LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

if not DEBUG:
    SESSION_COOKIE_HTTPONLY = True
    X_FRAME_OPTIONS = "DENY"
    SECURE_CONTENT_TYPE_NOSNIFF = True

# --------------------------------------------------------------------------------------------
# Production security (issue 14; docs/operations.md, "Security"). One block: HTTPS, the
# Content-Security-Policy, login lockout, API throttles and the cache they count in.
# --------------------------------------------------------------------------------------------
#: Served over HTTPS (behind a TLS-terminating proxy that sets X-Forwarded-Proto): HSTS, secure
#: cookies, a redirect of plain HTTP, and the proxy's header trusted for request.is_secure().
HTTPS = envbool("FLEETCAP_HTTPS", False)
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SECURE_SSL_REDIRECT = HTTPS
if HTTPS:
    # Only behind a proxy that always sets (overwrites) this header: otherwise a client could.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = envint("FLEETCAP_HSTS_SECONDS", 31_536_000)  # a year, in seconds
    SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("FLEETCAP_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = envbool("FLEETCAP_HSTS_PRELOAD", True)
#: /healthz answers the load balancer over plain HTTP inside the network.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]

#: django-csp 4: no inline scripts or styles anywhere (templates load static files only; htmx's
#: inline indicator styles are off via the htmx-config meta tag in base.html); Chart.js draws on
#: canvases (no style elements), Swagger UI's images are data: URIs.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}

#: django-axes: a login form locks a username from one IP address after this many failures, for
#: this long (then one more failure locks it again); the API's tokens are not logins.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    # Django's ModelBackend, each user's permission set kept in the cache (fleet/permission_cache.py).
    "fleet.permission_cache.CachedModelBackend",
]
#: Sessions read from the cache, written through to the database (Django's cached_db engine): a page
#: request reads its session without a query; a cache that loses it falls back to the database.
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
AXES_FAILURE_LIMIT = envint("FLEETCAP_LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=float(os.environ.get("FLEETCAP_LOGIN_COOLOFF_MINUTES") or 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
#: Not in the admin (whose every page is in tests/test_permissions_matrix.py): unlock with
#: ``manage.py axes_reset_username USERNAME`` (docs/operations.md).
AXES_ENABLE_ADMIN = False
# The address is REMOTE_ADDR (X-Forwarded-For can be forged): behind a proxy every client shares
# the proxy's, so a username is locked for everyone coming through it (docs/operations.md).

#: The cache API throttles count in. One per process (locmem) unless FLEETCAP_CACHE_URL names a
#: Redis every web worker shares (production: gunicorn's workers would each count alone).
CACHE_URL = os.environ.get("FLEETCAP_CACHE_URL", "")
if CACHE_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}}
    if REDIS_KEY_PREFIX:  # Django's keys are KEY_PREFIX:version:key
        CACHES["default"]["KEY_PREFIX"] = f"{REDIS_KEY_PREFIX}cache"
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "fleetcap"}}

#: API throttles: per user (token or session), and per IP address for anonymous requests; the
#: answer past the rate is 429 with Retry-After (seconds). Rates are "N/s", "N/min", "N/hour", "N/day".
REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"] = [
    "fleet.api.throttling.UserThrottle",
    "fleet.api.throttling.AnonThrottle",
    "fleet.api.throttling.ExpensiveThrottle",
]
#: Client addresses for anonymous throttling: REMOTE_ADDR, or behind the HTTPS proxy the address it
#: appended to X-Forwarded-For (DRF would otherwise trust the whole header, which clients can forge).
#: How many proxies in front of the app append to X-Forwarded-For (default: 1 behind the HTTPS proxy,
#: else 0: the header is ignored). The audit trail's address (fleet.audit.client_address) and the API
#: throttles read the client address the outermost trusted proxy appended, never the client's own.
TRUSTED_PROXIES = envint("FLEETCAP_TRUSTED_PROXIES", 1 if HTTPS else 0)
REST_FRAMEWORK["NUM_PROXIES"] = TRUSTED_PROXIES
REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] = {
    "user": os.environ.get("FLEETCAP_API_THROTTLE_USER") or "600/min",
    "anon": os.environ.get("FLEETCAP_API_THROTTLE_ANON") or "60/min",
}
#: Per-user limits on the expensive requests, the API and the page forms counted together
#: (fleet/rate_limits.py; issue 29): a calibration parses up to 5 MiB of log, a model import maps a
#: config.json, a plan runs a layout search on a worker, a prefix-cache analysis replays a trace of up
#: to 10,000 requests. "N/s", "N/min", "N/hour", "N/day", or "off"; past it 429 with Retry-After.
EXPENSIVE_REQUEST_RATES = {
    "calibration": os.environ.get("FLEETCAP_THROTTLE_CALIBRATION") or "10/min",
    "model_import": os.environ.get("FLEETCAP_THROTTLE_MODEL_IMPORT") or "10/min",
    "plan": os.environ.get("FLEETCAP_THROTTLE_PLAN") or "10/min",
    "prefix_cache": os.environ.get("FLEETCAP_THROTTLE_PREFIX_CACHE") or "30/min",
}
