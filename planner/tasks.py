"""Celery tasks of the planner. Thin: the work is in planner.plans. Named ``<app>.<job>`` like
fleet's (``fleet/tasks.py``)."""

from __future__ import annotations

from celery import shared_task

from fleet.tasks import RETRY_ON_TRANSIENT


# Retried on a database blip only (RETRY_ON_TRANSIENT): the plan is claimed by a conditional UPDATE
# (planner.plans.claim), so a retry, or a redelivery, never runs a plan twice. A search that fails
# otherwise is stored on the plan as failed, not retried.
@shared_task(
    name="planner.run_plan",
    bind=True,
    acks_late=True,
    ignore_result=True,
    soft_time_limit=600,
    time_limit=660,
    **RETRY_ON_TRANSIENT,
)
def run_plan(self, plan_id: str) -> str:
    """Run a queued plan (task id = plan id; a redelivered task finds it claimed and returns)."""
    from planner.plans import execute_plan

    return execute_plan(plan_id).status
