"""Workloads: the traffic a team expects to serve and the latency it promises."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.urls import reverse

from fleet.validators import fraction, positive
from planner.engine import DEFAULT_DAYS_PER_MONTH

from .base import SlugField, TimeStamped


class Workload(TimeStamped):
    """A request class with its volume, shape, cache behaviour and SLOs."""

    #: Its volume, shape and SLOs (the API, the forms and decision snapshots list these).
    FIGURES = (
        "requests_per_day",
        "mean_prompt_tokens",
        "mean_output_tokens",
        "p95_context_tokens",
        "prefix_cache_hit_rate",
        "peak_concurrency",
        "ttft_slo_ms",
        "tpot_slo_ms",
    )

    slug = SlugField()
    name = models.CharField(max_length=100)
    team = models.CharField(max_length=100)
    requests_per_day = models.PositiveBigIntegerField(validators=[MinValueValidator(1)])
    mean_prompt_tokens = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    mean_output_tokens = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    p95_context_tokens = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    prefix_cache_hit_rate = models.FloatField(default=0.0, validators=[fraction])
    peak_concurrency = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    ttft_slo_ms = models.FloatField("TTFT SLO (ms)", validators=[positive])
    tpot_slo_ms = models.FloatField("TPOT SLO (ms)", validators=[positive])

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("api:workload-detail", kwargs={"slug": self.slug})

    def clean(self) -> None:
        if self.p95_context_tokens and self.mean_prompt_tokens and self.p95_context_tokens < self.mean_prompt_tokens:
            raise ValidationError(
                {"p95_context_tokens": "The 95th-percentile context cannot be shorter than the mean prompt."}
            )

    @property
    def monthly_output_tokens(self) -> int:
        """Output tokens in a 30-day month (``MONTH_LABEL``: the month rent vs API prices)."""
        return self.requests_per_day * self.mean_output_tokens * DEFAULT_DAYS_PER_MONTH

    @property
    def monthly_input_tokens(self) -> int:
        """Prompt tokens in a 30-day month (``MONTH_LABEL``)."""
        return self.requests_per_day * self.mean_prompt_tokens * DEFAULT_DAYS_PER_MONTH
