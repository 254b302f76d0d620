"""Per-user limits on the expensive requests (issue 29): the one rule, for the API and the pages alike.

A scope names one kind of expensive work: ``calibration`` (a startup log parsed, up to 5 MiB),
``model_import`` (a config.json mapped to a model), ``plan`` (a layout search on a worker),
``prefix_cache`` (a request trace replayed, up to 10,000 rows). Its rate is
``settings.EXPENSIVE_REQUEST_RATES[scope]`` (``FLEETCAP_THROTTLE_<SCOPE>``: ``N/s``, ``N/min``,
``N/hour``, ``N/day``, or ``off``), read at each request so tests and settings overrides apply.

``take(scope, user)`` counts one request of the user's against the scope and answers a
:class:`Refusal` (nothing counted) once the user has made ``N`` in the last period: a sliding window,
the timestamps of the requests within it kept in the ``default`` cache (Redis shared by every web
worker when ``FLEETCAP_CACHE_URL`` is set; docs/operations.md, "Security"), keyed by scope and user,
so the page form and the API draw on one allowance. The API answers a refusal 429 with
``Retry-After`` (``fleet.api.throttling.ExpensiveThrottle``), the pages an HTML 429 with the form as
it was sent and the refusal beside it (``fleet.views.access.over_limit``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core import checks
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured

#: scope -> (environment variable, what one request is, in the plural): the settings table of
#: docs/operations.md lists the same.
SCOPES: dict[str, tuple[str, str]] = {
    "calibration": ("FLEETCAP_THROTTLE_CALIBRATION", "calibrations from a startup log"),
    "model_import": ("FLEETCAP_THROTTLE_MODEL_IMPORT", "model imports from config.json"),
    "plan": ("FLEETCAP_THROTTLE_PLAN", "plans started"),
    "prefix_cache": ("FLEETCAP_THROTTLE_PREFIX_CACHE", "prefix-cache analyses of a request trace"),
}
#: Seconds per period, by the period's first letter (as DRF reads its rates).
_PERIODS: dict[str, tuple[int, str]] = {
    "s": (1, "second"),
    "m": (60, "minute"),
    "h": (3600, "hour"),
    "d": (86400, "day"),
}


@dataclass(frozen=True)
class Rate:
    """At most ``requests`` per ``seconds`` (``period`` names it: "minute")."""

    requests: int
    seconds: int
    period: str


def parse_rate(text: str) -> Rate | None:
    """``"10/min"`` -> Rate(10, 60, "minute"); ``"off"`` -> None. ValueError for anything else."""
    text = text.strip().lower()
    if text == "off":
        return None
    count, _, period = text.partition("/")
    if not count.isdigit() or int(count) < 1 or not period or period[0] not in _PERIODS:
        raise ValueError(f"{text!r} is not a rate: N/s, N/min, N/hour, N/day (N at least 1), or off")
    seconds, name = _PERIODS[period[0]]
    return Rate(int(count), seconds, name)


def rate_of(scope: str) -> Rate | None:
    """The scope's rate from the settings (None: not limited)."""
    try:
        return parse_rate(settings.EXPENSIVE_REQUEST_RATES[scope])
    except (KeyError, ValueError) as exc:
        raise ImproperlyConfigured(f"EXPENSIVE_REQUEST_RATES[{scope!r}]: {exc}") from None


@dataclass(frozen=True)
class Refusal:
    """A request over its scope's limit: what the limit is and when the next request may come."""

    scope: str
    rate: Rate
    retry_after_s: int

    @property
    def limit(self) -> str:
        """The limit, as a sentence (the API's ``detail``, which DRF follows with the wait)."""
        return f"Too many {SCOPES[self.scope][1]}: at most {self.rate.requests} a {self.rate.period} per user."

    @property
    def message(self) -> str:
        """The limit and the wait: what a page shows."""
        return f"{self.limit} Try again in {self.retry_after_s} second{'s' if self.retry_after_s != 1 else ''}."


def _key(scope: str, user: Any) -> str:
    return f"fleetcap:limit:{scope}:{user.pk}"


def take(scope: str, user: Any, now: float | None = None) -> Refusal | None:
    """Count one request of ``scope`` by ``user`` (None: allowed and counted), or the refusal when
    the user has already made the scope's number of requests within its period (then nothing is
    counted). Users who are not logged in are not counted here (every caller requires a login)."""
    rate = rate_of(scope)
    if rate is None or not getattr(user, "is_authenticated", False):
        return None
    now = time.time() if now is None else now
    key = _key(scope, user)
    recent = [at for at in cache.get(key, []) if at > now - rate.seconds]
    if len(recent) >= rate.requests:
        # The oldest request in the window leaves it first; then one more fits.
        return Refusal(scope, rate, max(1, math.ceil(min(recent) + rate.seconds - now)))
    cache.set(key, [*recent, now], rate.seconds)
    return None


@checks.register()
def check_rates(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """``manage.py check``: every scope has a rate that reads (a typo in FLEETCAP_THROTTLE_* stops
    the deploy instead of answering 500 at the first request)."""
    problems = []
    for scope, (variable, _) in SCOPES.items():
        try:
            rate_of(scope)
        except ImproperlyConfigured as exc:
            problems.append(
                checks.Error(str(exc), hint=f"Set {variable} to N/s, N/min, N/hour, N/day or off.", id="fleet.E029")
            )
    return problems
