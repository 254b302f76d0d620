"""A real Celery worker process runs the budget check (issue 26's acceptance): a budget whose month-end
projection is over it sends one email and one signed webhook; the next check of the month sends nothing.

Django's locmem email backend keeps its outbox in the memory of the process that sends, here the worker,
which this test cannot read; so the worker is started with the filebased backend writing into a
temporary folder of the test (``FLEETCAP_EMAIL_BACKEND``, ``FLEETCAP_EMAIL_FILE_PATH``), and the test
reads the messages from there. The webhook goes to an HTTP server of the test on 127.0.0.1 (the
outbound guard's default allowed network), which checks each request's signature.
"""

from __future__ import annotations

import time
import uuid
from datetime import date
from decimal import Decimal

import pytest
from celery_workers import start_worker, stop_worker, wait_for
from test_budgets import SECRET, Receiver

from fleet.models import Cluster, GpuQuote, HardwareSku, Provider


def _emails(folder) -> list[str]:
    return [p.read_text() for p in sorted(folder.iterdir())] if folder.exists() else []


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_alerts_once_by_email_and_signed_webhook(tmp_path, finance_api, monkeypatch):
    """POST /api/v1/budgets/ (finance) queues a check of the budget through the outbox; the worker runs
    planner.check_budgets: the month's end (8 H100s all month at 2.50 USD/GPU-hour, at least 13,000 USD)
    is over the 1,000 USD budget, so one email and one webhook. Then a check of every budget, as beat
    sends it: the crossed budget sends nothing more; a second budget crossed since is alerted (proof
    that the second run ran), with no channel, so nothing is sent at all."""
    from fleet.project.celery import app
    from planner.models import Budget, BudgetAlert

    today = date.today()
    h100 = HardwareSku.objects.create(
        slug="h100-sxm-80gb", name="H100 SXM 80GB", vendor="NVIDIA", hbm_gb=80, hbm_bandwidth_tbps=3.35,
        bf16_tflops=989, fp8_tflops=1979, interconnect_gbps=900, gpus_per_node=8,
    )  # fmt: skip
    acme = Provider.objects.ensure("acme")
    GpuQuote.objects.create(sku=h100, provider=acme, usd_per_gpu_hour=Decimal("2.50"), quoted_on=date(2020, 1, 1))
    pool = Cluster(slug="pool", name="Pool", sku=h100, nodes=1, provider=acme, team="ml")
    pool.save(effective_from=today.replace(day=1))
    queue = f"budgets-{uuid.uuid4().hex[:8]}"
    monkeypatch.setitem(app.conf, "task_default_queue", queue)
    mail_dir = tmp_path / "mail"
    with Receiver() as hook:
        body = {"team": "ml", "amount_usd": "1000", "emails": ["finance@example.com"], "webhook_url": hook.url,
                "webhook_secret": SECRET}  # fmt: skip
        r = finance_api.post("/api/v1/budgets/", body, format="json")
        assert r.status_code == 201, r.json()
        budget = Budget.objects.get()
        worker = start_worker(
            queue,
            FLEETCAP_EMAIL_BACKEND="django.core.mail.backends.filebased.EmailBackend",
            FLEETCAP_EMAIL_FILE_PATH=str(mail_dir),
        )
        try:
            alert = wait_for(lambda: BudgetAlert.objects.filter(budget=budget, outcome="sent").first(), worker, 90)
            assert alert is not None, "the worker sent no alert"
            assert len(_emails(mail_dir)) == 1 and len(hook.requests) == 1
            # The next check, as beat sends it (every budget); a second budget, crossed, shows it ran.
            other = Budget.objects.create(cluster=pool, amount_usd=Decimal("10"))
            app.send_task("planner.check_budgets", queue=queue)
            second = wait_for(lambda: BudgetAlert.objects.filter(budget=other, outcome="sent").first(), worker, 90)
            time.sleep(0.5)  # anything the run might still send (it has finished: its last write is above)
        finally:
            log = stop_worker(worker)
    assert second is not None, f"the second check did not run; log:\n{log}"
    assert alert.month == today.replace(day=1) and alert.budget_usd == Decimal("1000.00")
    assert alert.projected_usd > alert.budget_usd and alert.projected_usd >= Decimal("13000")
    assert set(alert.channels) == {"email", "webhook"} and all(c["attempts"] == 1 for c in alert.channels.values())
    emails = _emails(mail_dir)
    assert len(emails) == 1, emails  # the same month again: no second email
    assert "To: finance@example.com" in emails[0] and "over its budget" in emails[0]
    assert f"{alert.projected_usd:,}" in emails[0]
    assert len(hook.requests) == 1  # nor a second webhook
    request = hook.requests[0]
    assert request["valid"], "the webhook's signature does not verify with the budget's secret"
    assert request["headers"]["X-Fleetcap-Delivery"] == str(alert.pk)
    assert BudgetAlert.objects.filter(budget=budget).count() == 1
    assert second.channels == {}
