"""Budgets (issue 26): the month's end projected from the spend so far, an alert once per budget and
month when the projection is over the budget (email; a signed webhook through the outbound guard), a
failed webhook retried without emailing again; the service's checks; who may manage budgets; the
secret never shown; the spend page's section. The real worker's run is tests/test_budgets_worker.py."""

from __future__ import annotations

import json
import threading
import time
from datetime import date, timedelta
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO

import pytest
from django.conf import settings
from django.core import mail
from django.core.management import call_command

from fleet.errors import InputError
from fleet.models import Cluster, GpuQuote, HardwareSku, Provider
from planner import budgets
from planner.budgets import BudgetInput, check_budgets, figures_for, save_budget, sign, verify
from planner.models import Budget, BudgetAlert
from planner.spend import spend_report

JUNE_10 = date(2026, 6, 10)
SECRET = "whsec-test-0123456789"


@pytest.fixture
def june(db):
    """8 H100s of team ml from 1 June 2026 at 2.50 USD/GPU-hour: by 10 June 4,800 USD spent (8 x 24 h x 10
    days x 2.50), 9,600 projected for the 20 days to come, 14,400 at the month's end."""
    call_command("load_catalog", stdout=StringIO())
    GpuQuote.objects.all().delete()
    h100 = HardwareSku.objects.get(slug="h100-sxm-80gb")
    acme = Provider.objects.ensure("acme")
    GpuQuote.objects.create(sku=h100, provider=acme, usd_per_gpu_hour=Decimal("2.50"), quoted_on=date(2026, 5, 1))
    c = Cluster(slug="c8", name="C8", sku=h100, nodes=1, provider=acme, team="ml")
    c.save(effective_from=date(2026, 6, 1))
    return c


class Receiver:
    """A loopback webhook receiver: answers each POST with the next of ``statuses`` (then 200), keeps
    each request's headers and body, and checks its signature with ``SECRET``."""

    def __init__(self, statuses=()):
        self.statuses = list(statuses)
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                ts, sig = self.headers.get("X-Fleetcap-Timestamp", ""), self.headers.get("X-Fleetcap-Signature", "")
                outer.requests.append(
                    {"headers": dict(self.headers), "body": body, "valid": verify(SECRET, ts, body, sig, time.time())}
                )
                status = outer.statuses.pop(0) if outer.statuses else 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/budget"

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def test_the_projection_is_the_spend_reports_month_end(june):
    budget = Budget.objects.create(team="ml", amount_usd=Decimal("12000"))
    f = figures_for(budget, spend_report("2026-06", JUNE_10))
    assert (f.spent_usd, f.projected_usd) == (Decimal("4800.00"), Decimal("14400.00"))
    assert f.over and f.to_dict()["projected_fraction"] == "1.2000"
    cluster = figures_for(Budget(cluster=june, amount_usd=Decimal("20000")), spend_report("2026-06", JUNE_10))
    assert cluster.projected_usd == Decimal("14400.00") and not cluster.over


def test_a_projection_over_the_budget_alerts_once_by_email(june):
    """Spent 4,800 is under the 12,000 budget; the month's end projected at 14,400 is over it: one alert,
    one email; the next check of the month sends nothing."""
    budget = Budget.objects.create(team="ml", amount_usd=Decimal("12000"), emails=["fin@example.com"])
    first = check_budgets(today=JUNE_10)
    assert (first.over, first.alerts_created, first.delivered) == (1, 1, 1)
    alert = BudgetAlert.objects.get(budget=budget)
    assert (alert.month, alert.projected_usd, alert.spent_usd, alert.budget_usd) == (
        date(2026, 6, 1),
        Decimal("14400.00"),
        Decimal("4800.00"),
        Decimal("12000.00"),
    )
    assert alert.outcome == "sent" and alert.sent_at and alert.channels["email"]["status"] == "sent"
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["fin@example.com"]
    assert "14,400.00" in mail.outbox[0].body and "team ml" in mail.outbox[0].subject
    again = check_budgets(today=date(2026, 6, 11))
    assert (again.alerts_created, again.delivered) == (0, 0)
    assert len(mail.outbox) == 1 and BudgetAlert.objects.count() == 1


def test_a_projection_under_the_budget_sends_nothing(june):
    Budget.objects.create(team="ml", amount_usd=Decimal("14400"), emails=["fin@example.com"])  # equal: not over
    Budget.objects.create(cluster=june, amount_usd=Decimal("20000"), emails=["ops@example.com"])
    summary = check_budgets(today=JUNE_10)
    assert (summary.budgets, summary.over, summary.alerts_created) == (2, 0, 0)
    assert not mail.outbox and not BudgetAlert.objects.exists()


def test_a_new_month_alerts_again(june):
    budget = Budget.objects.create(cluster=june, amount_usd=Decimal("10000"), emails=["ops@example.com"])
    check_budgets(today=JUNE_10)
    check_budgets(today=date(2026, 7, 20))  # July: 31 days of 8 x 24 x 2.50 = 14,880 projected
    assert list(budget.alerts.values_list("month", flat=True)) == [date(2026, 7, 1), date(2026, 6, 1)]
    assert len(mail.outbox) == 2


def test_a_failed_webhook_is_retried_by_the_next_check_without_emailing_again(june):
    with Receiver(statuses=[500]) as hook:
        budget = save_budget(
            BudgetInput(
                amount_usd="12000", team="ml", emails="fin@example.com", webhook_url=hook.url, webhook_secret=SECRET
            )
        )
        check_budgets(today=JUNE_10)
        alert = BudgetAlert.objects.get(budget=budget)
        assert alert.outcome == "pending" and alert.sent_at is None
        assert alert.channels["email"]["status"] == "sent"
        assert alert.channels["webhook"] == {**alert.channels["webhook"], "status": "failed", "attempts": 1}
        assert "HTTP 500" in alert.channels["webhook"]["error"]
        check_budgets(today=JUNE_10)
    alert.refresh_from_db()
    assert alert.outcome == "sent" and alert.sent_at is not None
    assert alert.channels["webhook"]["status"] == "sent" and alert.channels["webhook"]["attempts"] == 2
    assert alert.channels["email"]["attempts"] == 1 and len(mail.outbox) == 1
    assert len(hook.requests) == 2 and all(r["valid"] for r in hook.requests)
    body = json.loads(hook.requests[-1]["body"])
    assert body["event"] == "budget.projected_over" and body["month"] == "2026-06"
    assert (body["projected_usd"], body["budget_usd"], body["budget"]["team"]) == ("14400.00", "12000.00", "ml")
    headers = hook.requests[-1]["headers"]
    assert headers["X-Fleetcap-Signature"].startswith("sha256=") and SECRET not in json.dumps(
        hook.requests[-1]["headers"]
    )


def test_a_webhook_gives_up_after_the_attempts_allowed(june, settings):
    settings.BUDGET_ALERT_MAX_ATTEMPTS = 2
    with Receiver(statuses=[503, 503, 503]) as hook:
        budget = save_budget(BudgetInput(amount_usd="100", team="ml", webhook_url=hook.url, webhook_secret=SECRET))
        for _ in range(3):
            check_budgets(today=JUNE_10)
    alert = BudgetAlert.objects.get(budget=budget)
    assert alert.outcome == "failed" and alert.channels["webhook"]["status"] == "gave_up"
    assert len(hook.requests) == 2


def test_two_checks_never_deliver_one_alert_at_once(june):
    """A check holds an alert while delivering it (a lease): another finds it held and sends nothing."""
    budget = Budget.objects.create(team="ml", amount_usd=Decimal("100"), emails=["fin@example.com"])
    alert = BudgetAlert.objects.create(
        budget=budget, month=date(2026, 6, 1), projected_usd=1, spent_usd=1, budget_usd=1,
        channels={"email": {"status": "pending", "attempts": 0}},
    )  # fmt: skip
    from django.utils import timezone

    BudgetAlert.objects.filter(pk=alert.pk).update(delivering_until=timezone.now() + timedelta(seconds=60))
    assert budgets.deliver(alert.pk) is None and not mail.outbox


def test_the_signature_covers_the_timestamp_and_the_body():
    body = b'{"a":1}'
    signature = sign("s3cret", 1_700_000_000, body)
    assert verify("s3cret", "1700000000", body, signature, now=1_700_000_100)
    assert not verify("s3cret", "1700000001", body, signature, now=1_700_000_100)  # another timestamp
    assert not verify("s3cret", "1700000000", b'{"a":2}', signature, now=1_700_000_100)
    assert not verify("s3cret", "1700000000", body, signature, now=1_700_000_000 + 301)  # too old


URL = {"amount_usd": "100", "team": "ml", "webhook_secret": "s"}


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (BudgetInput(amount_usd="100"), "team"),
        (BudgetInput(amount_usd="100", team="ml", cluster="c8"), "cluster"),
        (BudgetInput(amount_usd="100", team="nobody"), "team"),
        (BudgetInput(amount_usd="100", cluster="nope"), "cluster"),
        (BudgetInput(amount_usd="0", team="ml"), "amount_usd"),
        (BudgetInput(amount_usd="abc", team="ml"), "amount_usd"),
        (BudgetInput(amount_usd="1e20", team="ml"), "amount_usd"),
        (BudgetInput(amount_usd="100", team="ml", emails="fin@example.com, not-an-address"), "emails"),
        (BudgetInput(amount_usd="100", team="ml", webhook_url="http://127.0.0.1:9/x"), "webhook_secret"),
        # The outbound guard: cloud metadata is always refused, so is a query string (a secret's place).
        (BudgetInput(**URL, webhook_url="http://169.254.169.254/"), "webhook_url"),
        (BudgetInput(**URL, webhook_url="http://127.0.0.1:9/x?k=1"), "webhook_url"),
        (BudgetInput(**URL, webhook_url="ftp://127.0.0.1/"), "webhook_url"),
    ],
)  # fmt: skip
def test_the_service_refuses_with_field_names(june, data, field):
    with pytest.raises(InputError) as caught:
        save_budget(data)
    assert field in caught.value.errors, caught.value.errors


def test_one_budget_per_team_and_per_cluster(june):
    save_budget(BudgetInput(amount_usd="100", team="ml"))
    save_budget(BudgetInput(amount_usd="100", cluster="c8"))
    for data, field in (
        (BudgetInput(amount_usd="5", team="ml"), "team"),
        (BudgetInput(amount_usd="5", cluster="c8"), "cluster"),
    ):
        with pytest.raises(InputError) as caught:
            save_budget(data)
        assert field in caught.value.errors


def test_saving_a_budget_queues_its_check_through_the_outbox(june, django_capture_on_commit_callbacks):
    from fleet.models import OutboxMessage

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        budget = save_budget(BudgetInput(amount_usd="100", team="ml"))
    message = OutboxMessage.objects.get(task="planner.check_budgets")
    assert message.kwargs == {"budget_ids": [budget.pk]} and len(callbacks) == 1


def test_the_beat_schedule_checks_budgets_as_the_settings_say():
    entry = settings.CELERY_BEAT_SCHEDULE["check-budgets"]
    assert entry["task"] == "planner.check_budgets" and entry["schedule"] == settings.BUDGET_CHECK_S == 3600.0


# ------------------------------------------------------------------------------------------------
# API, pages, permissions
# ------------------------------------------------------------------------------------------------


def test_finance_creates_a_budget_and_the_secret_is_never_shown(june, finance_api, viewer_api):
    with Receiver() as hook:
        body = {"team": "ml", "amount_usd": "12000", "emails": ["fin@example.com"], "webhook_url": hook.url,
                "webhook_secret": SECRET}  # fmt: skip
        r = finance_api.post("/api/v1/budgets/", body, format="json")
    assert r.status_code == 201, r.json()
    data = r.json()
    assert data["has_webhook_secret"] is True and "webhook_secret" not in data and r["Location"] == data["url"]
    assert (data["scope"], data["team"], data["cluster"], data["amount_usd"]) == ("team", "ml", None, "12000.00")
    assert data["this_month"]["budget_usd"] == "12000.00" and data["alerts"] == []
    assert Budget.objects.get().decrypted_webhook_secret() == SECRET
    assert SECRET not in Budget.objects.get().webhook_secret_encrypted
    listed = viewer_api.get("/api/v1/budgets/")
    assert listed.status_code == 200 and listed.json()["count"] == 1
    history = viewer_api.get(f"/api/v1/budgets/{data['id']}/history/")
    for response in (r, listed, history):
        assert SECRET not in response.content.decode()
    assert history.json()["results"][0]["changes"]["webhook_secret"] == ["(none)", "(set)"]
    # PATCH without the secret keeps it; a new amount only.
    r = finance_api.patch(data["url"], {"amount_usd": "13000"}, format="json")
    assert r.status_code == 200 and r.json()["amount_usd"] == "13000.00" and r.json()["has_webhook_secret"]
    assert r.json()["webhook_url"] == hook.url


def test_the_api_answers_the_services_errors_by_field(june, finance_api):
    r = finance_api.post("/api/v1/budgets/", {"team": "nobody", "amount_usd": "10"}, format="json")
    assert r.status_code == 400 and "team" in r.json(), r.json()
    r = finance_api.post("/api/v1/budgets/", {"team": "ml"}, format="json")
    assert r.status_code == 400 and "amount_usd" in r.json()


@pytest.mark.parametrize("role", ["viewer", "platform"])
def test_who_may_not_manage_budgets_may_still_read_them(june, client_for, make_user, client, role):
    budget = Budget.objects.create(team="ml", amount_usd=Decimal("100"))
    api = client_for(role)
    assert api.post("/api/v1/budgets/", {"team": "ml", "amount_usd": "5"}, format="json").status_code == 403
    assert api.patch(f"/api/v1/budgets/{budget.pk}/", {"amount_usd": "5"}, format="json").status_code == 403
    assert api.delete(f"/api/v1/budgets/{budget.pk}/").status_code == 403
    assert api.get("/api/v1/budgets/").status_code == 200
    client.force_login(make_user(f"page-{role}", role))
    assert client.post("/budgets/new/", {"team": "ml", "amount_usd": "5"}).status_code == 403
    assert client.post(f"/budgets/{budget.pk}/delete/").status_code == 403
    page = client.get("/spend/?month=2026-06").content.decode()
    assert 'id="budgets"' in page and "Add a budget" not in page and f"/budgets/{budget.pk}/edit/" not in page
    assert Budget.objects.get().amount_usd == Decimal("100")


def test_the_page_form_saves_through_the_service_and_shows_its_errors(june, make_user, client):
    client.force_login(make_user("fin", "finance"))
    r = client.post("/budgets/new/", {"team": "nobody", "amount_usd": "10"})
    assert r.status_code == 400 and "No cluster has belonged to team" in r.content.decode()
    r = client.post("/budgets/new/", {"cluster": "c8", "amount_usd": "10000", "emails": "a@example.com\nb@example.com"})
    assert r.status_code == 302 and r["Location"] == "/spend/#budgets"
    budget = Budget.objects.get()
    assert (budget.cluster, budget.emails) == (june, ["a@example.com", "b@example.com"])
    edit = client.get(f"/budgets/{budget.pk}/edit/").content.decode()
    assert "Not set." in edit and 'value="10000.00"' in edit
    r = client.post(f"/budgets/{budget.pk}/delete/")
    assert r.status_code == 302 and not Budget.objects.exists()


def test_the_spend_page_shows_each_budget_with_its_alert_history(june, make_user, client):
    budget = Budget.objects.create(team="ml", amount_usd=Decimal("12000"), emails=["fin@example.com"])
    check_budgets(today=JUNE_10)
    client.force_login(make_user("fin", "finance"))
    page = client.get("/spend/?month=2026-06").content.decode()
    section = page[page.index('id="budgets"') :]
    assert f'data-budget="{budget.pk}"' in section and "team ml" in section
    assert "12,000.00" in section and "(over)" in section
    assert "2026-06: projected 14,400.00 against 12,000.00" in section and "email sent" in section
    assert "Add a budget" in section and f"/budgets/{budget.pk}/edit/" in section
