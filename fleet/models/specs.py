"""Model specifications: parameter counts, formats and the attention/state layout."""

from __future__ import annotations

import json

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models
from django.urls import reverse

from fleet.validators import modalities, positive
from planner.engine import (
    DEFAULT_WEIGHT_FORMAT,
    MODEL_RECORD_FIELDS,
    WEIGHT_FORMATS,
    EngineInputError,
    ModelArch,
    parse_layer_groups,
    parse_weight_parts,
    weight_parts_errors,
)

from .base import SlugField, Sourced, TimeStamped

WEIGHT_FORMAT_CHOICES = [(f, f) for f in WEIGHT_FORMATS]


def validate_layer_groups(value: object) -> None:
    """Field validator: the JSON must parse as layer groups (see planner.engine.spec)."""
    try:
        parse_layer_groups(value)
    except EngineInputError as exc:
        raise ValidationError([f"{path}: {' '.join(msgs)}" for path, msgs in exc.errors.items()]) from None


def validate_weight_parts(value: object) -> None:
    """Field validator: the JSON must parse as weight parts (see planner.engine.weight_parts)."""
    try:
        parse_weight_parts(value)
    except EngineInputError as exc:
        raise ValidationError([f"{path}: {' '.join(msgs)}" for path, msgs in exc.errors.items()]) from None


#: A Hugging Face Hub model id: ``owner/name`` (letters, digits, ``-``, ``_``, ``.``).
validate_hf_model_id = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*\Z",
    "Give the Hub id as owner/name, such as Qwen/Qwen3-32B.",
    "invalid",
)


class ModelSpec(TimeStamped, Sourced):
    """A language model as the planner sizes it. Parameter counts are plain integers."""

    #: The figures the engine models it by (the API, the forms and decision snapshots list these).
    FIGURES = MODEL_RECORD_FIELDS

    slug = SlugField()
    name = models.CharField(max_length=100)
    total_params = models.BigIntegerField("total parameters", validators=[positive])
    active_params = models.BigIntegerField(
        "active parameters", validators=[positive], help_text="Parameters used per token."
    )
    expert_params = models.BigIntegerField(
        "routed-expert parameters",
        null=True,
        blank=True,
        validators=[positive],
        help_text="Parameters inside all routed experts.",
    )
    n_routed_experts = models.PositiveIntegerField("routed experts", default=0)
    n_active_experts = models.PositiveIntegerField("active experts per token", default=0)
    n_shared_experts = models.PositiveIntegerField("shared experts", default=0)
    hidden_size = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    vocab_size = models.PositiveIntegerField("vocabulary size", validators=[MinValueValidator(1)])
    max_context_tokens = models.PositiveIntegerField("max context (tokens)", validators=[MinValueValidator(1)])
    attention_heads = models.PositiveIntegerField(
        "attention (query) heads",
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Query heads; tp must divide them.",
    )
    weight_format = models.CharField(max_length=8, choices=WEIGHT_FORMAT_CHOICES, default=DEFAULT_WEIGHT_FORMAT)
    expert_weight_format = models.CharField(
        "routed experts' weight format",
        max_length=8,
        choices=WEIGHT_FORMAT_CHOICES,
        blank=True,
        help_text="Routed experts' format, if different.",
    )
    layer_groups = models.JSONField(validators=[validate_layer_groups])
    weight_parts = models.JSONField(
        "weights by module class",
        default=list,
        blank=True,
        validators=[validate_weight_parts],
        help_text="The checkpoint's module classes, each with its format and bits per weight (scales included), "
        "as the config.json importer reads them; empty: weight_format (and the experts' format) for every weight.",
    )
    modalities = models.CharField(
        max_length=50,
        default="text",
        validators=[modalities],
        help_text="Input modalities it takes, comma-separated: text, image, audio, video (the routing advisor's "
        "eligibility).",
    )
    hf_model_id = models.CharField(
        "Hugging Face model id",
        max_length=200,
        blank=True,
        validators=[validate_hf_model_id],
        help_text="The Hub id, such as Qwen/Qwen3-32B (startup logs are matched to models by it).",
    )

    class Meta:
        ordering = ["name"]
        verbose_name = "model spec"

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("api:modelspec-detail", kwargs={"slug": self.slug})

    def clean(self) -> None:
        errors: dict[str, list[str]] = {}
        if self.total_params and self.active_params and self.active_params > self.total_params:
            errors.setdefault("active_params", []).append("Active parameters cannot exceed total parameters.")
        if self.total_params and self.expert_params and self.expert_params >= self.total_params:
            errors.setdefault("expert_params", []).append("Expert parameters must be fewer than total parameters.")
        if self.n_active_experts > self.n_routed_experts:
            errors.setdefault("n_active_experts", []).append("Cannot exceed the number of routed experts.")
        if self.n_routed_experts and not self.n_active_experts:
            errors.setdefault("n_active_experts", []).append("A mixture-of-experts model activates at least one.")
        if self.expert_params and not self.n_routed_experts:
            errors.setdefault("expert_params", []).append("Only a model with routed experts has expert parameters.")
        try:
            parts = parse_weight_parts(self.weight_parts)
        except EngineInputError:
            parts = ()  # the field's own validator names the bad item
        if not errors.keys() & {"total_params", "expert_params"}:
            for key, messages in weight_parts_errors(
                parts, self.total_params, self.expert_params, self.weight_format, self.expert_weight_format or None
            ).items():
                errors.setdefault(key, []).extend(messages)
        if errors:
            raise ValidationError(errors)

    @property
    def modality_list(self) -> tuple[str, ...]:
        """``modalities`` as a tuple of names (``("text",)``)."""
        return tuple(part.strip() for part in self.modalities.split(",") if part.strip())

    @property
    def is_moe(self) -> bool:
        return self.n_routed_experts > 0

    def to_engine(self) -> ModelArch:
        """The engine's view of this record (raises EngineInputError for invalid layer groups).

        The same figures give the same (frozen) ``ModelArch`` object, across requests too, so the
        engine's per-model memo (``size()`` and its constants) carries over from one page view to
        the next: the key is every figure itself, never a timestamp, so an edit is a new key."""
        # Only the figures the engine reads: a page that defers ``source`` must not load it here.
        record = {name: getattr(self, name) for name in ("name", *self.FIGURES)}
        key = json.dumps(record, sort_keys=True, default=str)
        hit = _ENGINE_MODELS.get(key)
        if hit is None:
            if len(_ENGINE_MODELS) >= MAX_ENGINE_MODELS:
                _ENGINE_MODELS.clear()
            hit = _ENGINE_MODELS[key] = ModelArch.from_record(record)
        return hit


#: Engine models by their figures (``ModelSpec.to_engine``); bounded like the engine's own memo.
MAX_ENGINE_MODELS = 256
_ENGINE_MODELS: dict[str, ModelArch] = {}
