"""Calibrations: what a serving engine logged at startup beside what the sizing engine predicts."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse

#: The most of an uploaded log a calibration keeps (characters); the parser reads up to 5 MiB.
LOG_TEXT_MAX_CHARS: int = 256 * 1024
#: A ratio predicted / logged outside this band is highlighted on the pages.
RATIO_BAND: tuple[float, float] = (0.97, 1.03)


class Calibration(models.Model):
    """One startup log, parsed, and the engine's prediction for the same inputs.

    ``figures`` lists the logged figures in display order, each
    ``{"name", "label", "unit", "logged", "predicted", "ratio", "basis"}`` where
    ``ratio = predicted / logged`` (``None`` when either side is missing) and ``basis`` says which
    prediction it was read from (``logged_memory``: given the KV memory the engine logged;
    ``hardware``: from the SKU's memory). ``parsed`` is the parser's ``StartupLog.to_dict()``;
    ``prediction`` holds the engine inputs and outputs the figures were read from.
    """

    deployment = models.ForeignKey(
        "fleet.Deployment", on_delete=models.SET_NULL, null=True, blank=True, related_name="calibrations"
    )
    model = models.ForeignKey(
        "fleet.ModelSpec", on_delete=models.SET_NULL, null=True, blank=True, related_name="calibrations"
    )
    sku = models.ForeignKey(
        "fleet.HardwareSku", on_delete=models.SET_NULL, null=True, blank=True, related_name="calibrations"
    )
    created = models.DateTimeField(auto_now_add=True)
    measured_on = models.DateField(help_text="When the log was taken (default: the day it was uploaded).")
    engine = models.CharField(max_length=10, blank=True)
    engine_version = models.CharField(max_length=40, blank=True)
    logged_model = models.CharField(max_length=300, blank=True, help_text="The model id or path the log names.")
    parsed = models.JSONField(default=dict, help_text="Everything the parser read from the log.")
    prediction = models.JSONField(default=dict, blank=True, help_text="Engine inputs and its predicted figures.")
    figures = models.JSONField(default=list, blank=True, help_text="Per figure: logged, predicted, ratio.")
    unsupported_architecture = models.CharField(max_length=200, blank=True)
    log_text = models.TextField(
        blank=True, help_text=f"The uploaded log, secrets masked, first {LOG_TEXT_MAX_CHARS} chars."
    )
    log_truncated = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["-created", "-id"]
        indexes = [models.Index(fields=["deployment", "created"])]

    def __str__(self) -> str:
        where = self.deployment or self.model or "unmatched log"
        return f"Calibration of {where} ({self.engine} {self.engine_version}, {self.measured_on})"

    def get_absolute_url(self) -> str:
        return reverse("api:calibration-detail", kwargs={"pk": self.pk})

    @property
    def unsupported_message(self) -> str | None:
        return self.parsed.get("unsupported_message") if self.unsupported_architecture else None

    def rows(self) -> list[dict]:
        """The figures in display order, each with ``off_band`` (ratio outside ``RATIO_BAND``)."""
        low, high = RATIO_BAND
        out = []
        for figure in self.figures:
            ratio = figure.get("ratio")
            out.append({**figure, "off_band": ratio is not None and not low <= ratio <= high})
        return out

    @property
    def off_band_count(self) -> int:
        """Figures whose ratio is outside ``RATIO_BAND``."""
        return sum(1 for row in self.rows() if row["off_band"])
