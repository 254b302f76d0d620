"""API tokens people manage themselves (issue 27): create, look up a request's key, note its use, revoke.

A key is ``fct_`` and 43 characters of ``secrets.token_urlsafe(32)`` (256 random bits). It is returned
once, by :func:`create_token`; the row holds its SHA-256 (``digest``) and its first :data:`LOOKUP_CHARS`
characters (``lookup``, an index: the request's key finds its candidates in one query, then digests
are compared in constant time). A fast hash is enough: the secret is random, not a password a person
chose, so there is nothing to guess from a stolen digest (the reason Django's password hashers are
slow does not apply). Keys migrated from DRF's plaintext tokens (40 hex digits) follow the same rule.

Who may do what: everybody logged in manages their own tokens; ``fleet.view_apitoken`` (the admin
role, superusers) lists everybody's, ``fleet.delete_apitoken`` revokes anybody's. Nothing here knows
DRF or forms: the API (``fleet/api/tokens.py``, ``fleet/api/authentication.py``), the page
(``fleet/views/tokens.py``) and ``manage.py create_service_account`` turn these errors into theirs.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.utils import timezone

from fleet.errors import InputError
from fleet.models import ApiToken

KEY_PREFIX = "fct_"
LOOKUP_CHARS = 12
#: ``last_used`` is written at most this often per token: not one UPDATE per request.
LAST_USED_EVERY_S = 60
#: The expiries a person picks from (those above ``API_TOKEN_MAX_DAYS`` are not offered).
EXPIRY_DAYS: tuple[int, ...] = (30, 90, 365)
#: A token's states (``ApiToken.state``), as lists filter them.
STATES: tuple[str, ...] = ("active", "expired", "revoked")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
NAME_MAX_CHARS = ApiToken._meta.get_field("name").max_length
VIEW_ALL = "fleet.view_apitoken"
REVOKE_ANY = "fleet.delete_apitoken"


class TokenRefused(Exception):
    """A request's key is unknown, expired or revoked (the API answers 401 with this message)."""


def digest_of(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def max_days() -> int:
    return settings.API_TOKEN_MAX_DAYS


def expiry_choices() -> list[int]:
    """The day counts a person may pick: 30/90/365 up to the setting (the setting itself when lower)."""
    return [d for d in EXPIRY_DAYS if d <= max_days()] or [max_days()]


def _expiry(days: int | None, expires_on: date | None, now: datetime) -> datetime:
    if days is not None and expires_on is not None:
        raise InputError.single("expires_on", "Give a number of days or a date, not both.")
    if expires_on is not None:
        today = timezone.localdate(now)
        if expires_on <= today:
            raise InputError.single("expires_on", "Pick a date after today.")
        if expires_on > today + timedelta(days=max_days()):
            raise InputError.single(
                "expires_on",
                f"A token lives at most {max_days()} days: pick a date by {today + timedelta(days=max_days())}.",
            )
        # Valid through that day: it expires when the next one starts (the site's time zone).
        return timezone.make_aware(datetime.combine(expires_on + timedelta(days=1), time.min))
    if days is None:
        raise InputError.single("expires_in_days", "Pick how long the token lives, or a date.")
    if not 1 <= days <= max_days():
        raise InputError.single("expires_in_days", f"A token lives from 1 to {max_days()} days (got {days}).")
    return now + timedelta(days=days)


@dataclass(frozen=True)
class NewToken:
    token: ApiToken
    #: The key, to show once: never stored, logged or shown again.
    key: str


def create_token(
    user: Any,
    *,
    name: str,
    scope: str,
    days: int | None = None,
    expires_on: date | None = None,
    now: datetime | None = None,
) -> NewToken:
    """A new token of ``user``'s, expiring after ``days`` or at the end of ``expires_on``."""
    now = now or timezone.now()
    errors: dict[str, list[str]] = {}
    name = (name or "").strip()
    if not name:
        errors["name"] = ["Name the token (what will use it: a script, a dashboard)."]
    elif len(name) > NAME_MAX_CHARS:
        errors["name"] = [f"At most {NAME_MAX_CHARS} characters."]
    if scope not in ApiToken.Scope.values:
        errors["scope"] = [f"Pick {' or '.join(ApiToken.Scope.values)} (got {scope!r})."]
    try:
        expires = _expiry(days, expires_on, now)
    except InputError as exc:
        errors.update(exc.errors)
    if errors:
        raise InputError(errors)
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=name,
        scope=scope,
        lookup=key[:LOOKUP_CHARS],
        digest=digest_of(key),
        created=now,
        expires=expires,
    )
    return NewToken(token, key)


def authenticate_key(key: str, *, now: datetime | None = None) -> ApiToken:
    """The token whose key ``key`` is, with its user; :class:`TokenRefused` unless usable now."""
    now = now or timezone.now()
    digest = digest_of(key)
    token = next(
        (
            t
            for t in ApiToken.objects.select_related("user").filter(lookup=key[:LOOKUP_CHARS])
            if hmac.compare_digest(t.digest, digest)
        ),
        None,
    )
    if token is None:
        raise TokenRefused("Invalid token.")
    if token.revoked_at is not None:
        raise TokenRefused(f"This token ({token.name!r}) was revoked on {token.revoked_at:%Y-%m-%d %H:%M} UTC.")
    if token.expires <= now:
        raise TokenRefused(
            f"This token ({token.name!r}) expired on {token.expires:%Y-%m-%d %H:%M} UTC: "
            "create a new one at /account/tokens/."
        )
    if not token.user.is_active:
        raise TokenRefused("User inactive or deleted.")
    note_use(token, now)
    return token


def note_use(token: ApiToken, now: datetime) -> None:
    """Record ``last_used``, at most once a minute per token: the row as read decides, and a conditional
    UPDATE lets one of several concurrent requests write it."""
    since = now - timedelta(seconds=LAST_USED_EVERY_S)
    if token.last_used is not None and token.last_used > since:
        return
    ApiToken.objects.filter(Q(last_used__isnull=True) | Q(last_used__lte=since), pk=token.pk).update(last_used=now)
    token.last_used = now


def allows(token: ApiToken, method: str) -> bool:
    """A ``read`` token reads only; a ``write`` token leaves it to the user's permissions."""
    return token.scope == ApiToken.Scope.WRITE or method.upper() in SAFE_METHODS


def scope_refusal(token: ApiToken, method: str) -> str:
    return (
        f"This token's scope is {token.scope!r}: it may only read (GET, HEAD, OPTIONS), not {method.upper()}. "
        "Use a token of scope 'write'."
    )


def can_see_all(user: Any) -> bool:
    return user.has_perm(VIEW_ALL)


def visible_tokens(user: Any, *, owner: str | None = None, state: str | None = None) -> QuerySet[ApiToken]:
    """``user``'s own tokens; everybody's (optionally one ``owner``'s, by username) with ``fleet.view_apitoken``.
    ``state``: ``active``, ``expired`` or ``revoked``."""
    tokens = ApiToken.objects.select_related("user", "revoked_by")
    if can_see_all(user):
        if owner:
            tokens = tokens.filter(user__username=owner)
    else:
        tokens = tokens.filter(user=user)
    now = timezone.now()
    if state == "active":
        tokens = tokens.filter(revoked_at__isnull=True, expires__gt=now)
    elif state == "expired":
        tokens = tokens.filter(revoked_at__isnull=True, expires__lte=now)
    elif state == "revoked":
        tokens = tokens.filter(revoked_at__isnull=False)
    return tokens


def revoke_token(actor: Any, token: ApiToken, *, now: datetime | None = None) -> ApiToken:
    """Revoke ``token`` (once: revoking again changes nothing). Somebody else's needs ``fleet.delete_apitoken``."""
    if token.user_id != actor.pk and not actor.has_perm(REVOKE_ANY):
        raise PermissionDenied("You may revoke only your own tokens.")
    if token.revoked_at is None:
        token.revoked_at = now or timezone.now()
        token.revoked_by = actor
        token.save(update_fields=["revoked_at", "revoked_by"])
    return token


#: The roles a service account may hold: never admin (a script that may revoke everybody's tokens).
SERVICE_ROLES: tuple[str, ...] = ("viewer", "platform", "finance")
DEFAULT_SERVICE_DAYS = 90


def create_service_account(
    username: str, *, role: str, days: int | None = None, scope: str = ApiToken.Scope.READ
) -> NewToken:
    """A user who cannot log in with a password (a script's identity), in ``role``'s group, and one token of
    its own: ``days`` (default 90, at most the setting), ``scope``. All or nothing."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.db import transaction

    User = get_user_model()
    username = (username or "").strip()
    errors: dict[str, list[str]] = {}
    if not username:
        errors["name"] = ["Name the service account."]
    elif len(username) > 150:
        errors["name"] = ["At most 150 characters."]
    elif User.objects.filter(username=username).exists():
        errors["name"] = [f"A user named {username!r} exists already."]
    if role not in SERVICE_ROLES:
        errors["role"] = [f"Pick {', '.join(SERVICE_ROLES)} (got {role!r})."]
    group = Group.objects.filter(name=role).first()
    if role in SERVICE_ROLES and group is None:
        errors["role"] = ["The role groups are missing: run `manage.py migrate` first."]
    if errors:
        raise InputError(errors)
    with transaction.atomic():
        user = User(username=username)
        user.set_unusable_password()
        user.save()
        user.groups.add(group)
        default = min(DEFAULT_SERVICE_DAYS, max_days())
        return create_token(
            user, name=f"{username} (service account)", scope=scope, days=default if days is None else days
        )
