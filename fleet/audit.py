"""The audit trail: who created, changed or deleted a record, when, and each field before and after.

django-auditlog writes one ``LogEntry`` per create, update and delete of a registered record, with
its changes as JSON (``{field: [before, after]}``), from Django's model signals. An update that
changes nothing is not written, so the idempotent catalogue loader and the poller add nothing.

- **Who**: the request's user for pages, the admin and the API (read when the entry is written,
  so token-authenticated API requests, which DRF authenticates after every middleware, are
  recorded too); ``via`` says which door (``pages``, ``api``, ``admin``) or which command
  (``manage.py load_catalog``); a command has no user.
- **Secrets**: an endpoint's encrypted API key is never stored in an entry: its values are
  replaced by ``(set)`` / ``(none)``, so an entry says only that the key was set, changed or cleared.
- Writes that bypass model signals are not recorded: the poller's live state and leases (raw
  UPDATEs, and excluded fields anyway) and ``rotate_endpoint_keys`` (same key, re-encrypted).

Unlike ``fleet.models.history.ClusterState`` (the dated figures spend is computed from), this is
a record of edits, never read by a computation.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from auditlog.context import set_extra_data
from auditlog.middleware import AuditlogMiddleware
from auditlog.models import LogEntry
from auditlog.registry import auditlog
from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import FieldDoesNotExist
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject
from django.utils.text import capfirst

from fleet.polling import display_url

#: What an entry shows for a secret field's value (``mask_callable`` of the registrations).
SECRET_SET, SECRET_NONE = "(set)", "(none)"
#: Fields of every record never recorded: every save moves ``updated``.
UNTRACKED = ("created", "updated")
#: Fields shown under another name in the pages and the API (the stored name says "encrypted").
SHOWN_AS = {"api_key_encrypted": "api_key", "webhook_secret_encrypted": "webhook_secret"}
ACTIONS = {LogEntry.Action.CREATE: "create", LogEntry.Action.UPDATE: "update", LogEntry.Action.DELETE: "delete"}


def mask_secret(value: str) -> str:
    """Auditlog's mask for secret fields: whether a value is set, never any part of it."""
    # auditlog passes the text of the value: "None" for no value (a creation's "before").
    return SECRET_SET if value not in ("", "None") else SECRET_NONE


def register(model: type[Model], *, exclude: Iterable[str] = (), secrets: Iterable[str] = ()) -> None:
    """Record every create, update and delete of ``model``; ``exclude``: fields not recorded at all
    (``created`` and ``updated`` never are: every save moves ``updated``); ``secrets``: fields
    recorded only as set or not."""
    # Only the record's own columns: a creation would otherwise list its reverse relations and id.
    columns = [f.name for f in model._meta.concrete_fields if not f.primary_key]
    auditlog.register(
        model,
        include_fields=columns,
        exclude_fields=[*UNTRACKED, *exclude],
        mask_fields=list(secrets),
        mask_callable="fleet.audit.mask_secret" if secrets else None,
    )


def _via(path: str) -> str:
    if path.startswith("/api/"):
        return "api"
    if path.startswith("/admin/"):
        return "admin"
    return "pages"


def _ip(text: str | None) -> str | None:
    """``text`` as an IP address (an IPv4 ``host:port`` or a bracketed IPv6 ``[addr]:port`` without its
    port), or None when it is not one."""
    if not text:
        return None
    text = text.strip()
    if text.startswith("[") and "]" in text:
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:
        text = text.split(":", 1)[0]
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def client_address(request: HttpRequest) -> str | None:
    """The client's address: the socket's (``REMOTE_ADDR``), or behind ``TRUSTED_PROXIES`` proxies the
    address the outermost trusted one appended to ``X-Forwarded-For`` (Django REST framework's
    ``NUM_PROXIES`` pattern, which the API throttles use with the same setting). Entries a client
    wrote itself are never read; a value that is not an IP address falls back to the socket's; never
    raises (the audit log's address column refuses non-IP values on PostgreSQL)."""
    remote = _ip(request.META.get("REMOTE_ADDR"))
    proxies = settings.TRUSTED_PROXIES
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if proxies <= 0 or not forwarded:
        return remote
    hops = forwarded.split(",")
    return _ip(hops[-min(proxies, len(hops))]) or remote


class AuditMiddleware(AuditlogMiddleware):
    """Auditlog's middleware with the actor read when an entry is written, not when the request
    arrives: DRF authenticates a token in the view, after every middleware, and then sets the
    Django request's ``user``; the stock middleware would record nobody for such requests."""

    @staticmethod
    def _get_remote_addr(request: HttpRequest) -> str | None:
        # Not auditlog's own reading, which trusts the first X-Forwarded-For entry a client can forge and
        # passes non-IP text to an address column (a 500 on PostgreSQL).
        return client_address(request)

    @staticmethod
    def _get_actor(request: HttpRequest) -> Any:
        def actor() -> Any:
            user = getattr(request, "user", None)
            return user if user is not None and user.is_authenticated else None

        return SimpleLazyObject(actor)

    def get_extra_data(self, request: HttpRequest) -> dict[str, Any]:
        return {**super().get_extra_data(request), "additional_data": {"via": _via(request.path_info)}}


@contextlib.contextmanager
def audit_source(via: str) -> Iterator[None]:
    """Entries written inside are by no user, ``via`` the given source (``manage.py load_catalog``)."""
    with set_extra_data(context_data={"actor": None, "additional_data": {"via": via}}):
        yield


class AuditedCommandMixin:
    """For a management command: its writes are recorded as ``via manage.py <name>``."""

    def execute(self, *args: Any, **options: Any) -> Any:
        name = type(self).__module__.rsplit(".", 1)[-1]
        with audit_source(f"manage.py {name}"):
            return super().execute(*args, **options)  # type: ignore[misc]


def history_of(record: Model) -> QuerySet[LogEntry]:
    """The record's entries, newest first, with their users (one query)."""
    return LogEntry.objects.get_for_object(record).select_related("actor").order_by("-timestamp", "-id")


@dataclass(frozen=True)
class AuditEntry:
    """One entry as the pages and the API show it. ``changes``: field -> [before, after]
    (before is None for a creation, after None for a deletion)."""

    id: int
    timestamp: datetime
    action: str
    actor: str | None
    via: str | None
    changes: dict[str, list[Any]]
    #: field -> its verbose name ("GPUs per node"), what a page calls it.
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def changed(self) -> list[tuple[str, str, str]]:
        """``(field, before, after)`` as text, for pages (``(empty)`` for no value)."""
        return [(name, _text(before), _text(after)) for name, (before, after) in self.changes.items()]

    @property
    def shown(self) -> list[tuple[str, str, str]]:
        """``changed`` with each field's verbose name instead of its attribute name, and whole numbers
        with thousands separators."""
        return [
            (self.labels.get(name, name), _grouped(before), _grouped(after))
            for name, (before, after) in self.changes.items()
        ]

    @property
    def who(self) -> str:
        """The user, else the source (``manage.py load_catalog``), else ``system``."""
        return self.actor or self.via or "system"


def _grouped(value: Any) -> str:
    """``_text`` of a value, a whole number with thousands separators (``2,800,000,000,000``)."""
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else _text(value)


def _text(value: Any) -> str:
    if value is None:
        return "(empty)"
    return value if isinstance(value, str) else json.dumps(value, default=str)


def entry(log: LogEntry) -> AuditEntry:
    """A ``LogEntry`` as an :class:`AuditEntry` (its user must be selected with it)."""
    actor = log.actor.get_username() if log.actor_id and log.actor else None
    via = (log.additional_data or {}).get("via") if isinstance(log.additional_data, dict) else None
    changes = {SHOWN_AS.get(name, name): list(pair) for name, pair in sorted((log.changes or {}).items())}
    if "base_url" in changes:
        # A base URL stored before keys were refused in it may carry one: shown without it.
        changes["base_url"] = [display_url(v) if isinstance(v, str) and v not in ("", "None") else v
                               for v in changes["base_url"]]  # fmt: skip
    model = ContentType.objects.get_for_id(log.content_type_id).model_class()
    return AuditEntry(
        labels={name: _label(model, name) for name in changes},
        id=log.pk,
        timestamp=log.timestamp,
        action=ACTIONS.get(log.action, str(log.action)),
        actor=actor,
        via=via,
        changes=changes,
    )


def _label(model: type[Model] | None, name: str) -> str:
    """A field's verbose name as a page shows it ("GPUs per node"), from the record's model."""
    if name == "api_key":
        return "API key"
    try:
        return capfirst(model._meta.get_field(name).verbose_name) if model else name
    except FieldDoesNotExist:
        return capfirst(name.replace("_", " "))


def entries(logs: Iterable[LogEntry]) -> list[AuditEntry]:
    return [entry(log) for log in logs]


def recent(record: Model, limit: int) -> list[AuditEntry]:
    """The record's ``limit`` newest entries (one query): a page's history section."""
    return entries(history_of(record)[:limit])
