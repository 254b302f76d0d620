"""Registering a deployment: the checks that go beyond plain field validation.

``Deployment.clean()`` holds the cheap, pure rules (layout against cluster and model). The checks
here cost more or reach outside, so they run where a person registers or edits a deployment (the
API serializer, the page form, the admin form, which is the page form) and never from
``full_clean()`` or on import:

* the endpoint guard: the poller must be allowed to reach ``base_url`` (resolves the host, at most
  ``min(POLL_TIMEOUT_S, 5)`` seconds);
* the sizing engine's own rules (e.g. tp against KV heads): a saved deployment must size.

Errors are ``fleet.errors.InputError`` (field -> messages), which each front door shows per field.
"""

from __future__ import annotations

from django.conf import settings

from fleet.errors import InputError
from fleet.models import Deployment
from fleet.polling import UrlRefused, check_url
from planner.engine import EngineInputError

#: Deployment fields the engine's messages are shown beside; others go to the whole form.
SIZING_FIELDS = {"tp", "pp", "dp", "ep", "replicas", "kv_cache_dtype", "gpu_memory_utilization"}


def check_endpoint(base_url: str) -> None:
    """Raise ``InputError({"base_url": [...]})`` when the poller may not reach ``base_url`` (the one
    guard, ``fleet.polling.check_url``). An empty URL (no endpoint) passes."""
    if not base_url:
        return
    try:
        check_url(base_url, settings.POLL_ALLOWED_NETWORKS, timeout_s=min(settings.POLL_TIMEOUT_S, 5.0))
    except UrlRefused as exc:
        raise InputError.single("base_url", f"The poller may not reach this address: {exc.reason}") from None


def check_sizes(deployment: Deployment) -> None:
    """Raise ``InputError`` when the sizing engine refuses the deployment's layout or context."""
    try:
        deployment.sizing()
    except EngineInputError as exc:
        errors: dict[str, list[str]] = {}
        for name, messages in exc.errors.items():
            key = name if name in SIZING_FIELDS else ("max_model_len" if name == "context_tokens" else "__all__")
            errors.setdefault(key, []).extend(messages)
        raise InputError(errors) from None


def check_deployment(deployment: Deployment, *, valid: bool = True) -> None:
    """Every registration check of a deployment that passed ``full_clean()``; all errors at once.

    ``valid=False`` (the plain validation already failed) runs only the endpoint check, as sizing
    an invalid layout says nothing new."""
    errors: dict[str, list[str]] = {}
    checks = [lambda: check_endpoint(deployment.base_url)]
    if valid and deployment.cluster_id and deployment.model_id:
        checks.append(lambda: check_sizes(deployment))
    for check in checks:
        try:
            check()
        except InputError as exc:
            for name, messages in exc.errors.items():
                errors.setdefault(name, []).extend(messages)
    if errors:
        raise InputError(errors)
