"""What the poller saw: one row per poll, and hourly rollups kept longer."""

from __future__ import annotations

from django.db import models


class EndpointPoll(models.Model):
    """One poll of a deployment's endpoint. ``outcome`` holds the full normalised result
    (``fleet.polling.PollOutcome.to_dict()``); the columns are what pages chart and filter on."""

    deployment = models.ForeignKey("fleet.Deployment", on_delete=models.CASCADE, related_name="polls")
    polled_at = models.DateTimeField(db_index=True)
    status = models.CharField(max_length=15)
    reason = models.TextField(blank=True)
    latency_ms = models.FloatField(null=True, help_text="GET /v1/models round trip.")
    requests_running = models.FloatField(null=True)
    requests_waiting = models.FloatField(null=True)
    kv_cache_usage = models.FloatField(null=True, help_text="0..1")
    prefix_cache_hit_rate = models.FloatField(null=True, help_text="0..1, over the interval since the last poll")
    prompt_tokens_per_s = models.FloatField(null=True)
    generation_tokens_per_s = models.FloatField(null=True)
    ttft_p50_ms = models.FloatField(null=True)
    ttft_p95_ms = models.FloatField(null=True)
    itl_p50_ms = models.FloatField(null=True, help_text="Time between tokens (time per output token).")
    itl_p95_ms = models.FloatField(null=True)
    counter_reset = models.BooleanField(default=False, help_text="The engine restarted since the last poll.")
    observed_cache_tokens = models.BigIntegerField(null=True, help_text="KV capacity the engine publishes.")
    predicted_cache_tokens = models.BigIntegerField(null=True, help_text="KV capacity the sizing engine predicts.")
    observed_num_blocks = models.BigIntegerField(null=True, help_text="vLLM cache_config_info num_gpu_blocks.")
    predicted_num_blocks = models.BigIntegerField(null=True, help_text="The vLLM profile's engine_num_blocks.")
    observed_block_size = models.PositiveIntegerField(null=True, help_text="vLLM cache_config_info block_size.")
    predicted_block_size = models.PositiveIntegerField(null=True, help_text="The vLLM profile's block size.")
    outcome = models.JSONField(default=dict)

    class Meta:
        ordering = ["-polled_at"]
        indexes = [models.Index(fields=["deployment", "-polled_at"]), models.Index(fields=["status"])]

    def __str__(self) -> str:
        return f"{self.deployment_id} {self.status} @ {self.polled_at:%Y-%m-%d %H:%M:%S}"

    def distrust(self, registered_model_id: str | None, poll_interval_s: float | None) -> str | None:
        """Why this stored poll is not trusted for a deployment registered as ``registered_model_id``
        polled every ``poll_interval_s`` (``poll_distrust``), or None."""
        outcome = self.outcome if isinstance(self.outcome, dict) else {}
        derived = outcome.get("derived") if isinstance(outcome.get("derived"), dict) else {}
        return poll_distrust(
            self.status,
            interval_s=derived.get("interval_s"),
            poll_interval_s=poll_interval_s,
            polled_model_id=outcome.get("served_model_id"),
            registered_model_id=registered_model_id,
        )

    #: Observed / predicted blocks (or block size) outside this range flags the deployment.
    BLOCK_CHECK_RANGE = (0.97, 1.03)

    @property
    def block_ratios(self) -> tuple[float, float] | None:
        """``(blocks, block size)`` observed over the vLLM profile's prediction; None without both."""
        if not (self.observed_num_blocks and self.predicted_num_blocks and self.observed_block_size):
            return None
        if not self.predicted_block_size:
            return None
        return (
            self.observed_num_blocks / self.predicted_num_blocks,
            self.observed_block_size / self.predicted_block_size,
        )

    @property
    def block_check_ok(self) -> bool | None:
        """True when both ratios are within ``BLOCK_CHECK_RANGE``; None when there is nothing to compare."""
        ratios = self.block_ratios
        if ratios is None:
            return None
        low, high = self.BLOCK_CHECK_RANGE
        return all(low <= r <= high for r in ratios)

    @property
    def calibration_ratio(self) -> float | None:
        """Observed over predicted KV-cache capacity (1.0 = the sizing model is exact)."""
        return cache_ratio(self.observed_cache_tokens, self.predicted_cache_tokens)

    @property
    def calibration_ok(self) -> bool | None:
        """The ratio within ``CALIBRATION_RANGE``; None when there is nothing to compare."""
        return ratio_ok(self.calibration_ratio)


#: Observed / predicted KV-cache tokens outside this range flags a deployment on the fleet and
#: deployment pages. The engine profiles match vLLM's own logged blocks to within 3% (the anchor
#: tests, docs/sizing.md), so beyond 10% the registration is wrong (memory, release, KV dtype, or
#: another model behind the endpoint), not the model of the allocator.
CALIBRATION_RANGE = (0.9, 1.1)


def cache_ratio(observed: int | None, predicted: int | None) -> float | None:
    """Observed over predicted KV-cache tokens; None without both."""
    if not observed or not predicted:
        return None
    return observed / predicted


def ratio_ok(ratio: float | None) -> bool | None:
    """Whether a predicted/observed ratio is within ``CALIBRATION_RANGE`` (None: no ratio)."""
    if ratio is None:
        return None
    low, high = CALIBRATION_RANGE
    return low <= ratio <= high


#: Why a poll is not trusted (the key stored and counted) and what pages say about the polls left out.
#: An untrusted poll is kept in the poll history and the live state, but never feeds utilisation, idle
#: cost, the observed volume or a speed correction (``poll_distrust``: the one rule).
UNTRUSTED_POLLS = {
    "misconfigured": "the endpoint serves another model (misconfigured: it does not list the registered "
    "served model id)",
    "wrong_model": "polled when the deployment was registered for another served model id",
    "stale": "its rates and latencies average over a gap since the previous scrape, not the moment polled",
}
#: A poll whose rates cover more than this many poll intervals (and at least ``STALE_MIN_S``) is stale:
#: its tokens/s and latency percentiles are averages over the gap (a worker down, the poller stopped).
STALE_POLL_INTERVALS = 10
STALE_MIN_S = 600.0


def poll_distrust(
    status: str,
    *,
    interval_s: float | None = None,
    poll_interval_s: float | None = None,
    polled_model_id: str | None = None,
    registered_model_id: str | None = None,
) -> str | None:
    """Why a poll is not trusted (a key of ``UNTRUSTED_POLLS``), or None when it is trusted.

    ``misconfigured``: the endpoint did not list the deployment's served model id (another model
    behind it, a wrong base URL, or a key that cannot be decrypted), so its metrics, if any, are
    another model's. ``wrong_model``: the poll was of another served model id than the deployment now
    registers (read back from a stored poll's outcome). ``stale``: its rates cover more than
    ``STALE_POLL_INTERVALS`` poll intervals (at least ``STALE_MIN_S``). The poller applies it when it
    counts a poll (``fleet.poll_store``: the daily counters count an untrusted poll only as left out)
    and speed corrections when they read raw polls (``EndpointPoll.distrust``)."""
    if status == "misconfigured":
        return "misconfigured"
    if polled_model_id is not None and registered_model_id is not None and polled_model_id != registered_model_id:
        return "wrong_model"
    gap = max(STALE_POLL_INTERVALS * float(poll_interval_s or 0), STALE_MIN_S)
    if interval_s is not None and poll_interval_s and interval_s > gap:
        return "stale"
    return None


def left_out_text(counts: dict[str, int]) -> str:
    """``{"misconfigured": 40}`` -> ``"40 polls left out: the endpoint serves another model (...)"``;
    empty when nothing was left out."""
    counts = {k: n for k, n in counts.items() if n}
    if not counts:
        return ""
    total = sum(counts.values())
    parts = "; ".join(f"{n:,} {UNTRUSTED_POLLS.get(k, k)}" for k, n in counts.items())
    return f"{total:,} poll{'s' if total != 1 else ''} left out ({parts})"


class EndpointPollHourly(models.Model):
    """Polls of one deployment in one hour, summarised before the raw rows are pruned."""

    deployment = models.ForeignKey("fleet.Deployment", on_delete=models.CASCADE, related_name="hourly_polls")
    hour = models.DateTimeField()
    polls = models.PositiveIntegerField()
    up_polls = models.PositiveIntegerField()
    busy_polls = models.PositiveIntegerField(help_text="Polls that saw at least one running request.")
    requests_running_avg = models.FloatField(null=True)
    requests_running_max = models.FloatField(null=True)
    kv_cache_usage_avg = models.FloatField(null=True)
    generation_tokens_per_s_avg = models.FloatField(null=True)
    prompt_tokens_per_s_avg = models.FloatField(
        null=True, help_text="Prompt tokens/s averaged over the hour's polls (None: none read)."
    )
    ttft_p95_ms_max = models.FloatField(null=True)
    itl_p95_ms_max = models.FloatField(null=True)

    class Meta:
        ordering = ["-hour"]
        constraints = [models.UniqueConstraint(fields=["deployment", "hour"], name="one_rollup_per_deployment_hour")]

    def __str__(self) -> str:
        return f"{self.deployment_id} {self.hour:%Y-%m-%d %H}:00 ({self.polls} polls)"


class DailyPollCount(models.Model):
    """Polls of one deployment on one day (UTC): how many, how many saw running requests, and the
    requests running summed (for utilisation = running / admitted capacity, planner.spend). Only trusted
    polls (``poll_distrust``) count towards busy, running and the token volumes; an untrusted one is
    counted in ``polls`` and in its reason's column (``LEFT_OUT_COLUMNS``), so pages can say what was left out.

    Kept beside the polls so that utilisation for spend, and the token volume a workload's breakeven
    compares, read a few thousand rows a month instead of scanning every raw poll (one deployment
    polled every 15 s writes 5,760 polls a day; 200 such deployments' week of raw polls took about 5 s
    to aggregate per recomputation batch, docs/benchmarks.md "Stored answers"). Rows
    counted before ``running_polls`` existed have 0 there: their utilisation is unknown, not zero.
    """

    deployment = models.ForeignKey("fleet.Deployment", on_delete=models.CASCADE, related_name="daily_polls")
    day = models.DateField()
    polls = models.PositiveIntegerField(default=0)
    busy_polls = models.PositiveIntegerField(default=0)
    running_polls = models.PositiveIntegerField(
        default=0,
        help_text="Polls that read a running-requests figure, or found the endpoint not up (0 running): "
        "the polls utilisation is averaged over.",
    )
    running_sum = models.FloatField(default=0, help_text="Requests running, summed over those polls.")
    # Token volumes (planner.reviews: a workload's observed volume): each poll's rate x the interval it
    # covers (since the previous poll), i.e. the engine counter's increase. Days counted before these
    # existed have 0 seconds: their volume is unknown, not zero. A database default too, so that a row
    # written without them (a bulk load, an older writer) counts no volume instead of failing.
    output_tokens = models.FloatField(
        default=0, db_default=0, help_text="Output tokens generated, over output_seconds."
    )
    output_seconds = models.FloatField(default=0, db_default=0, help_text="Seconds the polls' generation rates cover.")
    prompt_tokens = models.FloatField(
        default=0, db_default=0, help_text="Prompt tokens processed, over prompt_seconds."
    )
    prompt_seconds = models.FloatField(default=0, db_default=0, help_text="Seconds the polls' prompt rates cover.")
    # Polls left out of everything above (``poll_distrust``), per reason: counted in ``polls`` only.
    misconfigured_polls = models.PositiveIntegerField(
        default=0, db_default=0, help_text="Polls left out: the endpoint serves another model (misconfigured)."
    )
    stale_polls = models.PositiveIntegerField(
        default=0, db_default=0, help_text="Polls left out: their rates average over a gap since the previous scrape."
    )

    #: The column counting each reason's polls left out (``UNTRUSTED_POLLS``; ``wrong_model`` is only
    #: found reading stored polls back, never when a poll is counted).
    LEFT_OUT_COLUMNS = {"misconfigured": "misconfigured_polls", "stale": "stale_polls"}

    class Meta:
        ordering = ["-day"]
        constraints = [models.UniqueConstraint(fields=["deployment", "day"], name="one_count_per_deployment_day")]

    def __str__(self) -> str:
        return f"{self.deployment_id} {self.day}: {self.busy_polls}/{self.polls} busy"
