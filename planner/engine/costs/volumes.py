"""Token volumes observed by polls: tokens over a window from rate samples, scaled to a month.

A poll reads an engine's token counters and reports rates (tokens/s over the interval since the last
poll); the hourly rollups keep an hour's average rate. The tokens a deployment served over a window are
then the sum over the samples of rate (tokens/s) x the seconds the sample covers: 100 tokens/s for
10 hours is 100 x 36,000 s = 3.6 M tokens. Time without a sample (no polls, the endpoint down) is not
counted as zero traffic: the result says how much of the window the samples cover, and the monthly
figure scales the observed tokens to a 30-day month at the observed mean rate, saying so.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from planner.engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

from .money import DEFAULT_DAYS_PER_MONTH

#: A month as rent vs API prices it (days x seconds).
MONTH_S: float = DEFAULT_DAYS_PER_MONTH * SECONDS_PER_DAY


@dataclass(frozen=True)
class RateSample:
    """Token rates (tokens/s) over ``seconds`` of time; a rate of None was not observed."""

    seconds: float
    output_tokens_per_s: float | None
    input_tokens_per_s: float | None = None


def hour_coverage_s(polls: int, first_s: float, last_s: float) -> float:
    """Seconds of one hour that ``polls`` raw polls, the first at ``first_s`` and the last at ``last_s``
    (seconds), cover: from the first to the last plus one mean interval ((last - first) / (polls - 1)),
    at most an hour. A lone poll covers nothing measurable (0): no interval is known.

    360 polls every 10 s from :00:00 to :59:50: 3,590 s + 10 s = 3,600 s."""
    if polls < 2 or last_s <= first_s:
        return 0.0
    span = last_s - first_s
    return min(float(SECONDS_PER_HOUR), span + span / (polls - 1))


@dataclass(frozen=True)
class ObservedVolume:
    """Tokens observed over a window and the same rate over a month.

    ``output_tokens`` / ``input_tokens``: sum of rate x seconds over the samples that have that rate;
    ``output_covered_s`` / ``input_covered_s``: the seconds those samples cover; ``monthly_*``: the
    observed tokens x ``MONTH_S`` / covered seconds (None without coverage); ``scaled``: whether the
    samples covered less than a month (the monthly figure is then an extrapolation)."""

    window_s: float
    output_tokens: float
    input_tokens: float
    output_covered_s: float
    input_covered_s: float
    monthly_output_tokens: int | None
    monthly_input_tokens: int | None
    scaled: bool
    assumptions: list[str] = field(default_factory=list)

    @property
    def covered_hours(self) -> float:
        """Hours with an observed output rate."""
        return self.output_covered_s / SECONDS_PER_HOUR

    def to_dict(self) -> dict[str, Any]:
        return {
            "window_hours": self.window_s / SECONDS_PER_HOUR,
            "covered_hours": self.covered_hours,
            "input_covered_hours": self.input_covered_s / SECONDS_PER_HOUR,
            "output_tokens": round(self.output_tokens),
            "input_tokens": round(self.input_tokens),
            "monthly_output_tokens": self.monthly_output_tokens,
            "monthly_input_tokens": self.monthly_input_tokens,
            "scaled": self.scaled,
            "assumptions": list(self.assumptions),
        }


def _monthly(tokens: float, covered_s: float, month_s: float) -> int | None:
    return None if covered_s <= 0 else round(tokens * month_s / covered_s)


def observed_volume(samples: Iterable[RateSample], *, window_s: float, month_s: float = MONTH_S) -> ObservedVolume:
    """Tokens over a window from rate samples: sum of rate (tokens/s) x covered seconds, per direction,
    and the month (``month_s``, default 30 days) at the observed mean rate (tokens x month / covered).

    Samples of 100 output tokens/s covering 10 h: 3.6 M output tokens, 72 M a 30-day month (scaled from
    10 of 720 hours)."""
    out_tokens = in_tokens = out_s = in_s = 0.0
    for s in samples:
        if s.seconds <= 0:
            continue
        if s.output_tokens_per_s is not None:
            out_tokens += s.output_tokens_per_s * s.seconds
            out_s += s.seconds
        if s.input_tokens_per_s is not None:
            in_tokens += s.input_tokens_per_s * s.seconds
            in_s += s.seconds
    scaled = 0 < out_s < month_s
    assumptions = [
        f"Observed by the polls: {out_s / SECONDS_PER_HOUR:,.1f} of the window's {window_s / SECONDS_PER_HOUR:,.0f} "
        "hours had an output rate (tokens/s x the seconds each poll or hour covers); hours without polls are "
        "not counted as idle."
    ]
    if scaled:
        assumptions.append(
            f"Scaled to a {month_s / SECONDS_PER_DAY:g}-day month at the observed mean rate "
            f"({out_tokens / out_s:,.1f} output tokens/s)."
        )
    if out_s > 0 and in_s == 0:
        assumptions.append("No prompt rate was observed: the observed input volume is unknown.")
    return ObservedVolume(
        window_s=window_s,
        output_tokens=out_tokens,
        input_tokens=in_tokens,
        output_covered_s=out_s,
        input_covered_s=in_s,
        monthly_output_tokens=_monthly(out_tokens, out_s, month_s),
        monthly_input_tokens=_monthly(in_tokens, in_s, month_s),
        scaled=scaled,
        assumptions=assumptions,
    )
