"""Decision reviews and stored breakevens as the API and the pages show them: the ``review`` field, the
"no longer holds" flag with its one-click supersede (finance may, a viewer may not), and the rent-vs-API
page's stored breakeven with its "Recompute now" button (an outbox message)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import timezone

from fleet.models import GpuQuote, OutboxMessage, Provider
from planner.breakeven import BreakevenRequest
from planner.decisions import record_decision
from planner.models import Decision
from planner.reviews import refresh_breakevens, review_decisions


def _decide() -> Decision:
    return record_decision(
        workload="chat", tier=Decision.Tier.RENT, comparison=BreakevenRequest(deployment="llama", api_price="llama-api")
    )


def _flip(deployment) -> None:
    """8.00 USD/GPU-hour from today: 46,080 USD a month renting against the API's 39,000."""
    GpuQuote.objects.create(
        sku=deployment.cluster.sku, provider=Provider.objects.ensure("acme"), usd_per_gpu_hour=Decimal("8.00"),
        quoted_on=timezone.now().date(),
    )  # fmt: skip
    review_decisions()


@pytest.mark.django_db
def test_the_api_gives_each_decision_its_review(viewer_api, chat_served):
    _workload, deployment, _price = chat_served
    decision = _decide()
    (item,) = viewer_api.get("/api/v1/decisions/").json()["results"]
    assert item["review"] == {
        "checked": False, "checked_at": None, "still_holds": None, "reason": "", "moved": [], "state": "pending",
    }  # fmt: skip
    _flip(deployment)
    item = viewer_api.get(f"/api/v1/decisions/{decision.pk}/").json()
    review = item["review"]
    assert review["checked"] is True and review["still_holds"] is False and review["state"] == "current"
    assert review["reason"].startswith("API is now cheaper: rent 14,400.00 -> 46,080.00 USD/month")
    assert {"name": "monthly_rent_usd", "was": "14400.00", "now": "46080.00"} in review["moved"]
    assert review["checked_at"] is not None


@pytest.mark.django_db
def test_finance_supersedes_a_flipped_decision_in_one_click(client, make_user, chat_served):
    _workload, deployment, _price = chat_served
    old = _decide()
    _flip(deployment)
    client.force_login(make_user("f", "finance"))
    page = client.get("/decisions/").content.decode()
    assert 'data-review="flipped"' in page and "no longer holds" in page
    assert f'action="/decisions/{old.pk}/supersede/"' in page
    r = client.post(f"/decisions/{old.pk}/supersede/", {"favours": "api"})
    assert r.status_code == 302 and r["Location"] == "/decisions/"
    new = Decision.objects.get(supersedes=old)
    assert new.tier == Decision.Tier.API and new.decided_by_name == "f"
    assert new.note.startswith("Superseded after review: API is now cheaper")
    assert new.figures["cheaper"] == "api" and new.figures["monthly_rent_usd"] == "46080.00"
    # Superseded already: a second click records nothing.
    assert client.post(f"/decisions/{old.pk}/supersede/", {"favours": "api"}).status_code == 400
    assert Decision.objects.count() == 2


@pytest.mark.django_db
def test_a_viewer_sees_the_flag_but_no_button_and_is_refused(client, make_user, chat_served):
    _workload, deployment, _price = chat_served
    old = _decide()
    _flip(deployment)
    client.force_login(make_user("v", "viewer"))
    page = client.get("/decisions/").content.decode()
    assert "no longer holds" in page and "/supersede/" not in page
    assert client.post(f"/decisions/{old.pk}/supersede/", {"favours": "api"}).status_code == 403
    assert Decision.objects.count() == 1


@pytest.mark.django_db
def test_a_decision_that_still_holds_cannot_be_superseded_from_the_button(client, make_user, chat_served):
    old = _decide()
    review_decisions()
    client.force_login(make_user("f", "finance"))
    assert "/supersede/" not in client.get("/decisions/").content.decode()
    r = client.post(f"/decisions/{old.pk}/supersede/", {"favours": "rent"})
    assert r.status_code == 400 and "nothing to supersede" in r.content.decode()
    assert Decision.objects.count() == 1


@pytest.mark.django_db
def test_rent_vs_api_shows_the_stored_breakeven_and_queues_a_recompute(client, make_user, chat_served):
    workload, _deployment, _price = chat_served
    client.force_login(make_user("v", "viewer"))
    url = "/rent-vs-api/?workload=chat&deployment=llama&api_price=llama-api"
    page = client.get(url).content.decode()
    assert 'id="stored-breakeven"' in page and "Not computed yet" in page
    refresh_breakevens()
    page = client.get(url).content.decode()
    assert 'data-state="current"' in page
    declared = page[page.index('id="declared-volume"') : page.index('id="observed-volume"')]
    assert "1,500,000,000" in declared and "14,400.00" in declared and "39,000.00" in declared and "rent" in declared
    assert "No polls of its deployments saw a volume" in page
    # Without script: a POST, then the page again with the same inputs, saying it is queued.
    OutboxMessage.objects.all().delete()  # the fixture's own recomputations (never sent: a test's transaction)
    r = client.post("/rent-vs-api/recompute/", {"workload": "chat", "deployment": "llama", "api_price": "llama-api"})
    assert r.status_code == 302 and r["Location"].startswith("/rent-vs-api/?") and "workload=chat" in r["Location"]
    message = OutboxMessage.objects.get()
    assert message.task == "planner.refresh_answers"
    assert message.kwargs == {"deployments": [], "workloads": [workload.pk]}
    assert "queued" in client.get(r["Location"]).content.decode()
    # With htmx: the partial alone, saying so.
    r = client.post("/rent-vs-api/recompute/", {"workload": "chat"}, HTTP_HX_REQUEST="true")
    body = r.content.decode()
    assert r.status_code == 200
    assert 'id="recompute-queued"' in body and "<html" not in body
    assert OutboxMessage.objects.filter(task="planner.refresh_answers").count() == 2
    assert client.post("/rent-vs-api/recompute/", {"workload": "nope"}).status_code == 400
