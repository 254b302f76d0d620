"""Speed corrections: a deployment's observed speed (from its polls) over the throughput model's."""

from __future__ import annotations

from django.db import models


class SpeedCorrection(models.Model):
    """One fit of ``planner.engine.fit_correction`` over a window of a deployment's polls.

    A factor above 1: the deployment is slower than the model (its times are multiplied by the
    factor). ``decode_*``: TPOT (median inter-token latency) at the observed running batch;
    ``prefill_*``: the prefill part of TTFT (median). A side with fewer usable polls than the
    minimum has factor 1 and 0 samples. Residual: RMS of the log ratios about the fitted factor.
    ``serving`` is the deployment's serving settings when fitted: a correction is only used while
    they are unchanged (``planner.corrections.latest_for``).
    """

    deployment = models.ForeignKey("fleet.Deployment", on_delete=models.CASCADE, related_name="speed_corrections")
    fitted_at = models.DateTimeField(help_text="End of the window of polls the fit read.")
    window_hours = models.FloatField(help_text="Hours of polls before fitted_at the fit read.")
    polls = models.PositiveIntegerField(help_text="Polls in the window.")
    ignored_polls = models.PositiveIntegerField(default=0, help_text="Polls with nothing running or no figures.")
    decode_factor = models.FloatField()
    decode_samples = models.PositiveIntegerField()
    decode_residual = models.FloatField(null=True, blank=True)
    prefill_factor = models.FloatField()
    prefill_samples = models.PositiveIntegerField()
    prefill_residual = models.FloatField(null=True, blank=True)
    serving = models.JSONField(default=dict, help_text="The deployment's serving settings the fit was made for.")
    assumptions = models.JSONField(default=list)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-fitted_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["deployment", "fitted_at"], name="one_speed_correction_per_window_end")
        ]

    def __str__(self) -> str:
        return f"{self.deployment_id} decode x{self.decode_factor:.3f} prefill x{self.prefill_factor:.3f}"

    @property
    def samples(self) -> int:
        return max(self.decode_samples, self.prefill_samples)
