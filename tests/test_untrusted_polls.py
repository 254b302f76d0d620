"""Untrusted polls (fleet.models.polls.poll_distrust: misconfigured, wrong model, stale) never feed
utilisation, idle cost, the observed volume or speed corrections; the pages say which were left out.

Polls are stored the way the poller stores them (``fleet.poll_store.store_polls``), capacities are the
workers' snapshots (``planner.snapshots.refresh_snapshots``), and spend and the reviews are the real
services."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from fleet.models import Cluster, DailyPollCount, Deployment, GpuQuote, HardwareSku, ModelSpec, Provider
from fleet.models.polls import left_out_text, poll_distrust
from fleet.poll_store import Polled, store_polls
from fleet.polling import PollOutcome, PollStatus
from fleet.polling.metrics_derive import DerivedMetrics
from planner.breakeven import BreakevenRequest
from planner.decisions import record_decision
from planner.headroom import stored_headroom
from planner.models import Decision, DecisionReview, WorkloadBreakeven
from planner.reviews import observed_volumes, refresh_breakevens, review_decisions
from planner.snapshots import refresh_snapshots
from planner.spend import spend_for_month

SERVED = "meta-llama/Llama-3.1-70B-Instruct"


def outcome(status: PollStatus, running: float | None, gen: float | None = None, prompt: float | None = None,
            interval_s: float | None = 10.0, served: str = SERVED) -> PollOutcome:  # fmt: skip
    """A finished poll as ``fleet.polling.poll_endpoint`` returns it: a ``misconfigured`` one still
    carries the metrics it scraped (another model's engine answered)."""
    derived = DerivedMetrics(
        interval_s=interval_s,
        first_scrape=False,
        requests_running=running,
        generation_tokens_per_s=gen,
        prompt_tokens_per_s=prompt,
    )
    reason = "up" if status == PollStatus.UP else f"model {served!r} is not served (listed: some-org/another-model)"
    return PollOutcome(status=status, reason=reason, base_url="http://10.0.0.1:8000", engine="vllm",
                       served_model_id=served, http_status={"models": 200}, metrics_available=True,
                       derived=derived)  # fmt: skip


def store(deployment: Deployment, outcomes: list[PollOutcome], at: datetime) -> None:
    store_polls([Polled(deployment, o, at + timedelta(seconds=10 * i)) for i, o in enumerate(outcomes)])


def test_the_one_rule():
    assert poll_distrust("up", interval_s=15, poll_interval_s=15) is None
    assert poll_distrust("down") is None  # a down endpoint served nothing: a trusted 0
    assert poll_distrust("misconfigured", interval_s=15, poll_interval_s=15) == "misconfigured"
    assert poll_distrust("up", polled_model_id="a", registered_model_id="b") == "wrong_model"
    # Rates over more than 10 poll intervals and 600 s are averages over a gap: stale.
    assert poll_distrust("up", interval_s=600, poll_interval_s=15) is None
    assert poll_distrust("up", interval_s=601, poll_interval_s=15) == "stale"
    assert poll_distrust("up", interval_s=1200, poll_interval_s=120) is None
    assert poll_distrust("up", interval_s=1201, poll_interval_s=120) == "stale"
    assert left_out_text({}) == ""
    assert left_out_text({"misconfigured": 2}) == (
        "2 polls left out (2 the endpoint serves another model (misconfigured: it does not list the registered "
        "served model id))"
    )


@pytest.fixture
def june(db):
    """8 H100s from 1 June 2026 at acme's 2.50 USD/GPU-hour; two Llama 70B deployments of 4 GPUs each,
    ``good`` (its endpoint serves it) and ``bad`` (its endpoint serves another model), with their
    capacities computed as a worker does."""
    call_command("load_catalog", stdout=StringIO())
    GpuQuote.objects.all().delete()
    h100 = HardwareSku.objects.get(slug="h100-sxm-80gb")
    GpuQuote.objects.create(
        sku=h100, provider=Provider.objects.ensure("acme"), usd_per_gpu_hour=Decimal("2.50"), quoted_on=date(2026, 5, 1)
    )
    c = Cluster(slug="c8", name="C8", sku=h100, nodes=1, provider=Provider.objects.ensure("acme"), team="ml")
    c.save(effective_from=date(2026, 6, 1))
    model = ModelSpec.objects.get(slug="llama-3.1-70b")
    made = [
        Deployment.objects.create(slug=slug, cluster=c, model=model, tp=4, served_model_id=SERVED)
        for slug in ("good", "bad")
    ]
    Deployment.objects.update(created=datetime(2026, 6, 1, tzinfo=UTC))
    refresh_snapshots()
    return made


def test_misconfigured_polls_count_only_as_left_out(june):
    good, bad = june
    at = datetime(2026, 6, 3, 12, tzinfo=UTC)
    store(good, [outcome(PollStatus.UP, 8, gen=100.0, prompt=200.0), outcome(PollStatus.UP, 16, gen=100.0)], at)
    store(bad, [outcome(PollStatus.MISCONFIGURED, 500, gen=9000.0, prompt=9000.0)] * 3, at)
    store(good, [outcome(PollStatus.UP, 4, interval_s=3600.0, gen=50.0)], at + timedelta(minutes=5))  # stale
    g = DailyPollCount.objects.get(deployment=good)
    assert (g.polls, g.busy_polls, g.running_polls, g.running_sum) == (3, 2, 2, 24.0)
    assert (g.output_tokens, g.output_seconds, g.prompt_tokens, g.prompt_seconds) == (2000.0, 20.0, 2000.0, 10.0)
    assert (g.misconfigured_polls, g.stale_polls) == (0, 1)
    b = DailyPollCount.objects.get(deployment=bad)
    assert (b.polls, b.busy_polls, b.running_polls, b.running_sum, b.output_tokens, b.output_seconds) == (
        3, 0, 0, 0.0, 0.0, 0.0,
    )  # fmt: skip
    assert (b.misconfigured_polls, b.stale_polls) == (3, 0)
    # The polls themselves are kept (history, live state): the endpoint says misconfigured.
    assert bad.polls.count() == 3 and Deployment.objects.get(pk=bad.pk).last_status == "misconfigured"


def test_a_misconfigured_deployment_is_left_out_of_spends_utilisation_and_idle_cost(
    june, client, make_user, monkeypatch
):
    good, bad = june
    capacity = {h.deployment.slug: h.capacity for h in stored_headroom(june)}
    assert capacity["good"] and capacity["good"] == capacity["bad"]
    at = datetime(2026, 6, 3, 12, tzinfo=UTC)
    # good: 4 polls, its whole capacity running at two of them and none at the others: utilisation 0.5.
    # bad: 5 polls of another model's engine with 10x the capacity running (before: utilisation 1.0,
    # idle cost 0).
    full = capacity["good"]
    store(good, [outcome(PollStatus.UP, r) for r in (full, 0, full, 0)], at)
    store(bad, [outcome(PollStatus.MISCONFIGURED, capacity["bad"] * 10, gen=50_000.0)] * 5, at)
    report = spend_for_month(2026, 6, today=date(2026, 6, 10))
    lines = {x.name: x for x in report.spend.deployments}
    # 4 GPUs x 24 h x 10 days x 2.50 = 2,400 USD spent by each.
    assert lines["good"].actual.cost_usd == lines["bad"].actual.cost_usd == Decimal("2400.00")
    assert lines["good"].utilisation == Decimal("0.5000") and lines["good"].polls == 4
    assert lines["good"].idle_cost_usd == Decimal("1200.00")
    bad_line = lines["bad"]
    assert bad_line.utilisation is None and bad_line.idle_cost_usd is None and bad_line.polls is None
    assert bad_line.idle_unknown_usd == Decimal("2400.00")
    assert report.left_out == {"bad": {"misconfigured": 5}}
    data = report.to_dict()
    assert data["left_out_polls"]["bad"]["polls"] == 5
    assert data["left_out_polls"]["bad"]["reasons"] == {"misconfigured": 5}
    assert any(a.startswith("bad: 5 polls left out (5 the endpoint serves another model") for a in data["assumptions"])
    # The spend page says which polls were left out and why.
    client.force_login(make_user("f", "finance"))
    monkeypatch.setattr(timezone, "now", lambda: datetime(2026, 6, 10, 12, tzinfo=UTC))
    html = client.get("/spend/?month=2026-06").content.decode()
    section = html.split('id="spend-left-out"')[1].split("</div>")[0]
    assert ">bad</a>: 5 polls left out (5 the endpoint serves another model (misconfigured" in section
    assert "(5 left out)" in html


def test_a_misconfigured_deployment_is_left_out_of_the_observed_volume(chat_served, client, make_user):
    workload, llama, _price = chat_served
    llama.served_model_id = SERVED
    llama.save()
    other = Deployment.objects.create(
        slug="llama-other", cluster=llama.cluster, model=llama.model, tp=4, workload=workload, served_model_id=SERVED
    )
    start = timezone.now() - timedelta(hours=2)
    # llama: 360 trusted polls every 10 s at 100 output, 200 prompt tokens/s. Also 360 polls of its endpoint
    # serving another model at 1,000 tokens/s, and every poll of llama-other's is of another model.
    store(llama, [outcome(PollStatus.UP, 1, gen=100.0, prompt=200.0)] * 360, start)
    store(llama, [outcome(PollStatus.MISCONFIGURED, 50, gen=1000.0, prompt=2000.0)] * 360, start + timedelta(hours=1))
    store(other, [outcome(PollStatus.MISCONFIGURED, 50, gen=1000.0, prompt=2000.0)] * 10, start)
    volumes = observed_volumes([llama.pk, other.pk], timezone.now())
    v = volumes[llama.pk]
    assert v["covered_hours"] == pytest.approx(1)  # 360 x 10 s: the trusted hour only
    assert v["output_tokens"] == 360_000 and v["input_tokens"] == 720_000
    # 100 tokens/s over a 30-day month (2,592,000 s); with the other model's polls it would be 550 tokens/s.
    assert v["monthly_output_tokens"] == 259_200_000 and v["monthly_input_tokens"] == 518_400_000
    assert v["left_out_polls"] == {"misconfigured": 360}
    assert volumes[other.pk]["monthly_output_tokens"] is None and volumes[other.pk]["left_out_polls"] == {
        "misconfigured": 10
    }
    refresh_breakevens()
    stored = WorkloadBreakeven.objects.get(workload=workload)
    assert stored.observed_monthly_output_tokens == 259_200_000
    notes = stored.figures["observed_volume"]["assumptions"]
    assert any(n.startswith("llama: 360 polls left out (360 the endpoint serves another model") for n in notes)
    # The rent vs API page shows the stored breakeven with what was left out.
    client.force_login(make_user("v", "viewer"))
    page = client.get("/rent-vs-api/", {"workload": "chat"}).content.decode()
    stored_html = page.split('id="stored-breakeven"')[1].split("</section>")[0]
    assert "259,200,000" in stored_html and "360 polls left out" in stored_html
    # A decision's review compares at the same observed volume and says what it left out.
    decision = record_decision(
        workload="chat", tier=Decision.Tier.RENT, comparison=BreakevenRequest(deployment="llama", api_price="llama-api")
    )
    review_decisions()
    review = DecisionReview.objects.get(decision=decision)
    assert review.figures["observed_volume"]["monthly_output_tokens"] == 259_200_000
    assert [n.split(" (")[0] for n in review.figures["observed_left_out"]] == [
        "llama: 360 polls left out",
        "llama-other: 10 polls left out",
    ]
    log = client.get("/decisions/").content.decode()
    assert "llama-other: 10 polls left out" in log
    # The deployment page says it too; a deployment with none left out says nothing.
    page = client.get("/deployments/llama-other/").content.decode()
    note = page.split('id="polls-left-out"')[1].split("</p>")[0]
    assert "Last 30 days: 10 polls left out (10 the endpoint serves another model" in note
    Deployment.objects.create(slug="clean", cluster=llama.cluster, model=llama.model, tp=4)
    assert 'id="polls-left-out"' not in client.get("/deployments/clean/").content.decode()
