"""Celery tasks of the planner. Thin: the work is in planner.plans."""

from __future__ import annotations

from celery import shared_task


@shared_task(bind=True, acks_late=True, max_retries=0, ignore_result=True, soft_time_limit=600, time_limit=660)
def run_plan(self, plan_id: str) -> str:
    """Run a queued plan (task id = plan id; a redelivered task finds it claimed and returns)."""
    from planner.plans import execute_plan

    return execute_plan(plan_id).status
