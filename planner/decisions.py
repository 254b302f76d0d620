"""Decision service: record a rent-versus-API decision on a comparison computed now.

The API (``POST /api/v1/decisions/``) and the rent-vs-API page both call ``record_decision``;
the comparison is frozen into the decision (``Decision.inputs``) as the breakeven service made it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from fleet.errors import FIELD_ERRORS, InputError
from fleet.models import Workload
from fleet.models.base import find_by_slug
from planner.breakeven import BreakevenRequest, compare
from planner.models import Decision

#: Longest note kept with a decision (characters).
NOTE_MAX_CHARS = 5000


def record_decision(
    *, workload: str, tier: int, comparison: BreakevenRequest, note: str = "", user: Any = None
) -> Decision:
    """Compare now and record the decision with that comparison's figures and inputs.

    The comparison is about the decision's workload unless it names one itself. Raises
    InputError: unknown workload, tier, a note too long, or the comparison's own problems as
    ``breakeven.<field>``.
    """
    errors: dict[str, list[str]] = {}
    record = find_by_slug(Workload.objects, workload, "workload", errors)
    if tier not in Decision.Tier.values:
        errors["tier"] = [f"Pick a tier: {', '.join(f'{v} ({label})' for v, label in Decision.Tier.choices)}."]
    elif tier == Decision.Tier.BUY and comparison.buy_usd_per_gpu is None:
        errors["tier"] = ["Buying was not costed: give the purchase figures (buy_usd_per_gpu and the site's) first."]
    if len(note) > NOTE_MAX_CHARS:
        errors["note"] = [f"Keep the note under {NOTE_MAX_CHARS:,} characters."]
    if errors:
        raise InputError(errors)
    if comparison.workload is None:
        comparison = replace(comparison, workload=workload)
    try:
        result = compare(comparison)
    except FIELD_ERRORS as exc:
        # Dotted paths, as everywhere: the API answers {"breakeven.gpus": [...]}.
        raise InputError({f"breakeven.{field}": messages for field, messages in exc.errors.items()}) from exc
    return Decision.record(
        workload=record, tier=tier, note=note, figures=result.figures, inputs=result.snapshot, user=user
    )
