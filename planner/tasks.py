"""Celery tasks of the planner. Thin: the work is in planner.plans and planner.corrections. Named ``<app>.<job>`` like
fleet's (``fleet/tasks.py``)."""

from __future__ import annotations

from celery import shared_task
from celery.utils.time import get_exponential_backoff_interval

from fleet.tasks import RETRY_ON_TRANSIENT


# Retried on a database blip only (RETRY_ON_TRANSIENT): the plan is claimed by a conditional UPDATE
# (planner.plans.claim), so a retry, or a redelivery, never runs a plan twice. A blip mid-run is
# retried with the run's lease token, so the retry takes its own plan back at once instead of finding
# it held. A search that fails otherwise is stored on the plan as failed, not retried.
@shared_task(
    name="planner.run_plan",
    bind=True,
    acks_late=True,
    ignore_result=True,
    soft_time_limit=600,
    time_limit=660,
    **RETRY_ON_TRANSIENT,
)
def run_plan(self, plan_id: str, token: str | None = None) -> str:
    """Run a queued plan (task id = plan id; a redelivered task finds it held by a live run, or
    finished, and returns; one whose run died is taken over; a deleted plan is "gone")."""
    from planner.plans import RunInterrupted, execute_plan

    try:
        plan = execute_plan(plan_id, token=token)
    except RunInterrupted as exc:
        wait = get_exponential_backoff_interval(2, self.request.retries, 60, full_jitter=True)
        raise self.retry(args=[plan_id], kwargs={"token": exc.token}, exc=exc, countdown=wait) from exc
    return "gone" if plan is None else plan.status


# No retries: beat sends it every 30 s, and each run looks at every plan afresh.
@shared_task(
    name="planner.recover_plans",
    bind=True,
    acks_late=True,
    ignore_result=True,
    soft_time_limit=60,
    time_limit=75,
    max_retries=0,
)
def recover_plans_task(self) -> dict[str, list[str]]:
    """Send again the plans whose worker died (lease expired) or whose task the broker lost."""
    from planner.plans import recover_plans

    return recover_plans().as_dict()


# Retried on a database blip only (RETRY_ON_TRANSIENT). Idempotent: a run's fits share one window end
# (the start of the hour it runs in) and a fit of the same window replaces the one stored, so a retry
# or a redelivery within the hour stores each deployment's fit once (one after the hour stores that
# hour's). Beat sends it hourly; a run that gives up after its retries is redone by the next hour's,
# which reads nearly the same polls (the window is 24 h), so no fit is lost for long.
@shared_task(
    name="planner.fit_speed_corrections",
    bind=True,
    acks_late=True,
    ignore_result=True,
    soft_time_limit=900,
    time_limit=960,
    **RETRY_ON_TRANSIENT,
)
def fit_speed_corrections(self, window_end: str | None = None) -> dict[str, int]:
    """Fit the speed correction of every deployment with enough busy polls (``planner.corrections``).

    ``window_end`` (ISO time): the end of the polls' window; default, the start of the current hour,
    which a retry of the same run shares."""
    from datetime import datetime

    from django.utils import timezone

    from planner.answers import coalesced
    from planner.corrections import fit_all

    if window_end is None:
        now = timezone.now()
        window_end_at = now.replace(minute=0, second=0, microsecond=0)
    else:
        window_end_at = datetime.fromisoformat(window_end)
    with coalesced("Live speed corrections refitted"):  # one recomputation for every fit, not one each
        return fit_all(window_end_at)


# Retried on a database blip only (RETRY_ON_TRANSIENT). Idempotent: each run recomputes from the
# records as they are and stores the same figures for the same inputs (planner.snapshots), so a retry,
# a redelivery or the sweeper's second send of the same outbox message only repeats the work.
@shared_task(
    name="planner.refresh_answers",
    bind=True,
    acks_late=True,
    ignore_result=True,
    soft_time_limit=600,
    time_limit=660,
    **RETRY_ON_TRANSIENT,
)
def refresh_answers(
    self, deployments: list[int] | None = None, workloads: list[int] | None = None, served: bool = True
) -> dict:
    """Recompute stored answers: the capacity snapshots of ``deployments``, and the breakevens and
    decision reviews of ``workloads`` and (``served``) of the workloads those deployments serve.
    Without arguments (beat), the whole fleet, fanned out as one message per batch through the outbox."""
    from planner.answers import fan_out, refresh

    if deployments is None and workloads is None:
        return fan_out()
    return refresh(deployments or [], workloads or [], served)


# No retries: beat sends it every SPEND_STORED_S, and each run computes the month afresh (idempotent: the
# same records and day store the same report).
@shared_task(
    name="planner.refresh_spend",
    bind=True,
    acks_late=True,
    ignore_result=True,
    soft_time_limit=600,
    time_limit=660,
    max_retries=0,
)
def refresh_spend(self) -> dict[str, object]:
    """Store this month's spend report (``planner.spend.refresh_spend``): the spend page, its API and the
    budgets then read it made instead of computing the fleet's month on a request."""
    from planner.spend import refresh_spend as store

    snapshot = store()
    return {"month": snapshot.month, "clusters": snapshot.clusters, "lines": snapshot.lines}


# No retries: beat sends it every BUDGET_CHECK_S (an hour), and each run looks at every budget afresh;
# what a run could not deliver stays on its alert and is delivered by the next (planner.budgets).
# Saving a budget sends one for that budget through the outbox.
@shared_task(
    name="planner.check_budgets",
    bind=True,
    acks_late=True,
    ignore_result=True,
    soft_time_limit=600,
    time_limit=660,
    max_retries=0,
)
def check_budgets(self, budget_ids: list[int] | None = None) -> dict[str, int]:
    """Project every budget's month end and alert once per budget and month (``planner.budgets``)."""
    from planner.budgets import check_budgets as check

    return check(budget_ids=budget_ids).as_dict()
