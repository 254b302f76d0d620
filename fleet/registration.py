"""Registering a deployment (the checks beyond plain field validation) and importing a model from
its Hugging Face config.json.

``Deployment.clean()`` holds the cheap, pure rules (layout against cluster and model). The checks
here cost more or reach outside, so they run where a person registers or edits a deployment (the
API serializer, the page form, the admin form, which is the page form) and never from
``full_clean()`` or on import:

* the endpoint guard: the poller must be allowed to reach ``base_url`` (resolves the host, at most
  ``min(POLL_TIMEOUT_S, 5)`` seconds);
* the sizing engine's own rules (e.g. tp against KV heads): a saved deployment must size.

Importing a model (``import_model``) converts a config.json with the engine's
``model_record_from_config`` and creates the ``ModelSpec`` through the same validation as the create
path (``full_clean``), storing the derived assumptions and the source.

Errors are ``fleet.errors.InputError`` (field -> messages), which each front door shows per field;
a slug already taken is a ``fleet.errors.ConflictError``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from fleet.egress import guard_kwargs
from fleet.errors import ConflictError, InputError
from fleet.models import Deployment, ModelSpec
from fleet.polling import UrlRefused, check_url
from planner.engine import GIB, EngineInputError, Layout, model_record_from_config, replica_layouts

#: The largest config.json (or hf_quant_config.json) an import takes, page or API: 2 MB (the biggest
#: real one in tests/fixtures/hf-configs is under 0.9 MB).
MAX_CONFIG_BYTES = 2 * 1000 * 1000
#: The longest endpoint API key a deployment stores (page and API).
MAX_API_KEY_CHARS = 500

#: Deployment fields the engine's messages are shown beside; others go to the whole form.
SIZING_FIELDS = {"tp", "pp", "dp", "ep", "replicas", "kv_cache_dtype", "gpu_memory_utilization"}


def check_endpoint(base_url: str) -> None:
    """Raise ``InputError({"base_url": [...]})`` when the poller may not reach ``base_url`` (the one
    guard, ``fleet.polling.check_url``, with ``fleet.egress``'s settings). An empty URL (no endpoint) passes."""
    if not base_url:
        return
    try:
        check_url(base_url, **guard_kwargs(), timeout_s=min(settings.POLL_TIMEOUT_S, 5.0))
    except UrlRefused as exc:
        if has_credentials(base_url):
            raise InputError.single(
                "base_url",
                "Credentials, a query string or a fragment are refused in the base URL: give the server's "
                "root only (e.g. http://10.0.0.5:8000) and put the key in the write-only API key field.",
            ) from None
        raise InputError.single("base_url", f"The poller may not reach this address: {exc.reason}") from None


def has_credentials(base_url: str) -> bool:
    """Whether ``base_url`` carries what may be a secret: user info (``user:pass@``), a query string
    or a fragment. No engine needs any of them (the poller appends its routes to the root)."""
    try:
        parts = urlsplit(base_url)
    except ValueError:
        return "@" in base_url or "?" in base_url or "#" in base_url
    return bool(parts.username or parts.password or "@" in parts.netloc or "?" in base_url or "#" in base_url)


def check_served_model(deployment: Deployment) -> None:
    """Every engine fleetcap polls lists its models (``GET /v1/models``): with an endpoint, the id
    it serves this model under is required, or a poll of another model's endpoint would look up."""
    if deployment.base_url and not (deployment.served_model_id or "").strip():
        raise InputError.single(
            "served_model_id",
            "Required with an endpoint: the model id it lists in GET /v1/models (e.g. moonshotai/Kimi-K3), "
            "so a poll can tell it serves this model and not another.",
        )


def check_sizes(deployment: Deployment) -> None:
    """Raise ``InputError`` when the sizing engine refuses the deployment's layout or context, or
    when the layout does not fit the GPUs' memory (with the deficit per GPU, from the deployment's
    own engine profile at its planning context)."""
    try:
        result = deployment.sizing()
    except EngineInputError as exc:
        errors: dict[str, list[str]] = {}
        for name, messages in exc.errors.items():
            key = name if name in SIZING_FIELDS else ("max_model_len" if name == "context_tokens" else "__all__")
            errors.setdefault(key, []).extend(messages)
        raise InputError(errors) from None
    if not result.fits:
        fitting = fitting_layouts(deployment)
        raise DoesNotFit({"tp": [does_not_fit_message(deployment, result.deficit_bytes, fitting)]}, fitting)


class DoesNotFit(InputError):
    """A layout that does not fit, with the smallest layouts that would on its cluster (``fitting``)."""

    def __init__(self, errors: dict[str, list[str]], fitting: list[Layout]) -> None:
        super().__init__(errors)
        self.fitting = fitting


#: The most layouts a refusal suggests, and the most it sizes to find them.
FITTING_SUGGESTED = 3
FITTING_TRIED = 200


def fitting_layouts(deployment: Deployment, limit: int = FITTING_SUGGESTED) -> list[Layout]:
    """The smallest replica layouts that fit ``deployment``'s model on its cluster (fewest GPUs first, then
    fewer pipeline stages, then wider tensor parallelism), sized by the deployment's own rule
    (``Deployment.sizing``, its engine profile at its planning context) over the layouts the layout search
    enumerates (``planner.engine.replica_layouts``) up to the cluster's GPUs."""
    gpus = deployment.cluster.total_gpus
    model = deployment.model.to_engine()
    candidates = sorted(replica_layouts(model, gpus), key=lambda lay: (lay.gpus, lay.pp, -lay.tp, lay.dp, -lay.ep))
    out: list[Layout] = []
    for layout in candidates[:FITTING_TRIED]:
        trial = copy.copy(deployment)
        trial.tp, trial.pp, trial.dp, trial.ep, trial.replicas = layout.tp, layout.pp, layout.dp, layout.ep, 1
        try:
            fits = trial.sizing(model=model).fits
        except EngineInputError:
            continue
        if fits:
            out.append(layout)
            if len(out) == limit:
                break
    return out


def layout_words(layout: Layout) -> str:
    """``tp 8 · pp 2 (16 GPUs)``: a suggested layout as a refusal names it."""
    parts = [f"{name} {getattr(layout, name)}" for name in ("tp", "pp", "dp", "ep") if getattr(layout, name) > 1]
    return f"{' · '.join(parts) or 'one GPU'} ({layout.gpus} GPU{'s' if layout.gpus > 1 else ''})"


def does_not_fit_message(deployment: Deployment, deficit_bytes: int, fitting: list[Layout] | None = None) -> str:
    """What a person registering a layout that does not fit is told (the deficit in GiB and bytes, and the
    smallest layouts that fit on the cluster, when any does)."""
    sku = deployment.cluster.sku
    text = (
        f"This layout does not fit: each GPU ({deployment.gpus_per_replica} x {sku.name} per replica) is "
        f"{deficit_bytes / GIB:,.1f} GiB ({deficit_bytes:,} bytes) short of the weights, runtime and one sequence "
        f"at {deployment.planning_context_tokens:,} tokens of context."
    )
    if fitting:
        return text + " Smallest layouts that fit on this cluster: " + "; ".join(map(layout_words, fitting)) + "."
    return text + (
        f" No layout of up to the cluster's {deployment.cluster.total_gpus} GPUs fits: use a larger GPU, fp8 KV "
        "cache, a shorter max model length or a smaller weight format."
    )


def check_deployment(deployment: Deployment, *, valid: bool = True) -> None:
    """Every registration check of a deployment that passed ``full_clean()``; all errors at once.

    ``valid=False`` (the plain validation already failed) runs only the endpoint check, as sizing
    an invalid layout says nothing new."""
    errors: dict[str, list[str]] = {}
    fitting: list[Layout] = []
    checks = [lambda: check_endpoint(deployment.base_url), lambda: check_served_model(deployment)]
    if valid and deployment.cluster_id and deployment.model_id:
        checks.append(lambda: check_sizes(deployment))
    for check in checks:
        try:
            check()
        except InputError as exc:
            fitting = getattr(exc, "fitting", fitting)
            for name, messages in exc.errors.items():
                errors.setdefault(name, []).extend(messages)
    if errors:
        raise DoesNotFit(errors, fitting) if fitting else InputError(errors)


#: A Hub id as ``_name_or_path`` gives it when it names one (not a local path).
HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*\Z")


@dataclass(frozen=True)
class ImportModelRequest:
    """Import a model from a parsed ``config.json``. Counts are plain integers (``None``: computed
    from the config); ``weight_format`` replaces the formats the config's quantisation gives;
    ``quant_config`` is a ModelOpt ``hf_quant_config.json``; ``hf_model_id`` (``owner/name``) and
    ``source`` default to what the config says (``_name_or_path``)."""

    slug: str
    name: str
    config: Any
    total_params: int | None = None
    active_params: int | None = None
    weight_format: str | None = None
    quant_config: Any = None
    source: str = ""
    hf_model_id: str = ""

    @classmethod
    def from_fields(cls, data: Mapping[str, Any]) -> ImportModelRequest:
        """From a form's ``cleaned_data`` or a serializer's ``validated_data`` (blanks mean the defaults)."""
        return cls(
            slug=data["slug"],
            name=data["name"],
            config=data["config"],
            total_params=data.get("total_params"),
            active_params=data.get("active_params"),
            weight_format=data.get("weight_format") or None,
            quant_config=data.get("quant_config"),
            hf_model_id=data.get("hf_model_id") or "",
            source=data.get("source") or "",
        )


def import_model(request: ImportModelRequest) -> ModelSpec:
    """Create a ``ModelSpec`` from a config.json (its first assumption names the architecture read).

    Raises ``InputError`` keyed by field (the engine's ``config.<key>`` paths for the config,
    ``slug``, ``name``, the counts, ``weight_format``, ``quant_config``, ``hf_model_id``) and
    ``ConflictError`` when the slug is taken.
    """
    try:
        imported = model_record_from_config(
            request.config,
            name=request.name,
            total_params=request.total_params,
            active_params=request.active_params,
            weight_format=request.weight_format or None,
            quant_config=request.quant_config,
        )
    except EngineInputError as exc:
        raise InputError(exc.errors) from None
    hf_model_id = (request.hf_model_id or "").strip()
    if not hf_model_id and HUB_ID.match(imported.hf_model_id):
        hf_model_id = imported.hf_model_id
    source = request.source.strip() or (
        f"config.json of {hf_model_id} (imported)" if hf_model_id else "config.json (imported)"
    )
    model = ModelSpec(
        slug=request.slug,
        hf_model_id=hf_model_id,
        source=source,
        assumptions=[f"Architecture: {imported.architecture}.", *imported.assumptions],
        **imported.record,
    )
    model.expert_weight_format = model.expert_weight_format or ""
    try:
        model.full_clean(validate_unique=False)
    except ValidationError as exc:
        raise InputError(exc.message_dict) from None
    if ModelSpec.objects.filter(slug=request.slug).exists():
        raise ConflictError(f"A model with the slug {request.slug!r} already exists.")
    try:
        with transaction.atomic():
            model.save()
    except IntegrityError:
        raise ConflictError(f"A model with the slug {request.slug!r} already exists.") from None
    return model
