"""Stored breakevens per workload and reviews of decisions (planner.reviews): figures the breakeven
service gives for the same request, a hand-checked rent, observed volumes from polls, flips."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from fleet.models import ApiPrice, DailyPollCount, GpuQuote, Workload
from fleet.poll_store import count_poll
from planner.breakeven import BreakevenRequest, compare
from planner.decisions import record_decision
from planner.models import Decision, DecisionReview, WorkloadBreakeven
from planner.reviews import flipped_decisions, mark_stale, observed_volumes, refresh_breakevens, review_decisions


@pytest.mark.django_db
def test_declared_breakeven_is_what_compare_gives(chat_served):
    workload, _deployment, _price = chat_served
    summary = refresh_breakevens()
    assert summary == {"computed": 1, "unavailable": 0, "failed": 0, "batches": 1}
    stored = WorkloadBreakeven.objects.get(workload=workload)
    expected = compare(BreakevenRequest(deployment="llama", workload="chat", api_price="llama-api")).figures
    assert stored.figures["declared"] == expected
    # Hand-checked: 8 GPUs x 2.50 USD/GPU-hour x 24 h x 30 days = 14,400 USD; the API: 1.5 B output x 20
    # + 3 B prompt x (0.5 x 1 + 0.5 x 5) USD per million = 30,000 + 9,000 = 39,000 USD: renting is cheaper.
    side = stored.figures["declared_side"]
    assert side == {
        "cheaper": "rent",
        "monthly_rent_usd": "14400.00",
        "monthly_api_usd": "39000.00",
        "breakeven_output_tokens_per_month": 553_846_154,  # 14,400 / (20 + 2 x 3) USD per M output tokens
        "monthly_output_tokens": 1_500_000_000,
    }
    assert stored.declared_monthly_output_tokens == 1_500_000_000
    assert stored.observed_monthly_output_tokens is None and stored.figures["observed"] is None
    assert stored.inputs["deployment"] == "llama" and stored.inputs["api_price"] == "llama-api"
    assert stored.inputs["quotes"] == [GpuQuote.objects.get(sku__slug="h100-sxm-80gb", provider__name="acme").pk]
    assert stored.state() == "current"
    # Idempotent: a second run stores the same.
    first = (stored.figures, stored.inputs)
    refresh_breakevens([workload.pk])
    stored.refresh_from_db()
    assert (stored.figures, stored.inputs) == first
    assert WorkloadBreakeven.objects.count() == 1


@pytest.mark.django_db
def test_the_cheapest_current_price_is_used_and_an_older_one_ignored(chat_served):
    workload, deployment, _price = chat_served
    today = timezone.now().date()
    # The same provider's newer price supersedes the old one (cheaper, but not current); another
    # provider's is current beside it, and dearer for this volume.
    ApiPrice.objects.create(
        slug="llama-api-old", provider="acme", model_name="llama-70b", model=deployment.model,
        input_cache_hit_usd_per_mtok="0", input_cache_miss_usd_per_mtok="0", output_usd_per_mtok="1",
        quoted_on=today - timedelta(days=40),
    )  # fmt: skip
    ApiPrice.objects.create(
        slug="other-api", provider="other", model_name="llama", model=deployment.model,
        input_cache_hit_usd_per_mtok="1", input_cache_miss_usd_per_mtok="5", output_usd_per_mtok="25",
        quoted_on=today - timedelta(days=1),
    )  # fmt: skip
    refresh_breakevens()
    stored = WorkloadBreakeven.objects.get(workload=workload)
    assert stored.inputs["api_price"] == "llama-api"
    assert stored.inputs["api_prices_considered"] == ["llama-api", "other-api"]


@pytest.mark.django_db
def test_without_a_deployment_or_a_price_the_reason_is_stored(chat_served):
    workload, _deployment, price = chat_served
    figures = {name: getattr(workload, name) for name in Workload.FIGURES}
    lonely = Workload.objects.create(slug="lonely", name="Lonely", team="web", **figures)
    summary = refresh_breakevens()
    assert summary["unavailable"] == 1 and summary["computed"] == 1
    row = WorkloadBreakeven.objects.get(workload=lonely)
    assert row.unavailable.startswith("No enabled deployment serves Lonely")
    assert row.figures == {} and row.state() == "current"
    price.delete()
    refresh_breakevens([workload.pk])
    row = WorkloadBreakeven.objects.get(workload=workload)
    assert row.unavailable == "No current API price is linked to Llama-3.1-70B-Instruct (the model llama serves)."


def _hours(deployment, count: int, gen: float, prompt: float | None) -> None:
    """``count`` hours at ``gen`` output and ``prompt`` prompt tokens/s, on a day 8 days ago, as the
    poller's daily counters keep them (rate x seconds covered)."""
    day = (timezone.now() - timedelta(days=8)).date()
    seconds = count * 3600.0
    DailyPollCount.objects.create(
        deployment=deployment, day=day, polls=count * 360, output_tokens=gen * seconds, output_seconds=seconds,
        prompt_tokens=(prompt or 0) * seconds, prompt_seconds=seconds if prompt is not None else 0,
    )  # fmt: skip


@pytest.mark.django_db
def test_observed_volume_from_the_daily_counters_the_poller_keeps(chat_served):
    _workload, deployment, _price = chat_served
    _hours(deployment, 10, 100.0, 200.0)  # 10 h at 100 output, 200 prompt tokens/s
    today = timezone.now().date()
    for _ in range(360):  # an hour of polls today, every 10 s, at 100 output and 200 prompt tokens/s
        count_poll(deployment.pk, today, 1.0, up=True, rates=(100.0, 200.0, 10.0))
    old = (timezone.now() - timedelta(days=31)).date()  # outside the 30 days
    DailyPollCount.objects.create(deployment=deployment, day=old, output_tokens=1e12, output_seconds=3600)
    v = observed_volumes([deployment.pk], timezone.now())[deployment.pk]
    # 10 h + 1 h (360 polls x 10 s) = 11 h of 100 tokens/s.
    assert v["covered_hours"] == pytest.approx(11)
    assert v["output_tokens"] == 3_960_000  # 100 x 39,600 s
    assert v["input_tokens"] == 7_920_000
    assert v["monthly_output_tokens"] == 259_200_000  # 100 tokens/s x 720 h x 3,600 s (scaled from 11 h)
    assert v["scaled"] is True


@pytest.mark.django_db
def test_observed_volume_is_compared_too(chat_served):
    workload, deployment, _price = chat_served
    _hours(deployment, 10, 100.0, 200.0)
    refresh_breakevens()
    stored = WorkloadBreakeven.objects.get(workload=workload)
    # 100 tokens/s over a 30-day month = 259.2 M output tokens, 518.4 M prompt: below the breakeven, so the
    # API is cheaper at the observed volume: 259.2 x 20 + 518.4 x 3 = 6,739.20 USD against 14,400 renting.
    assert stored.observed_monthly_output_tokens == 259_200_000
    observed = stored.figures["observed_side"]
    assert observed["cheaper"] == "api" and observed["monthly_api_usd"] == "6739.20"
    assert stored.figures["declared_side"]["cheaper"] == "rent"
    assert stored.figures["observed_volume"]["deployments"]["llama"]["covered_hours"] == 10


def _decide(tier: int = Decision.Tier.RENT) -> Decision:
    return record_decision(
        workload="chat",
        tier=tier,
        comparison=BreakevenRequest(deployment="llama", api_price="llama-api"),
        note="rent: we are above the breakeven",
    )


@pytest.mark.django_db
def test_an_unchanged_decision_still_holds(chat_served):
    decision = _decide()
    assert decision.figures["cheaper"] == "rent"
    assert review_decisions() == {"holds": 1, "flipped": 0, "unchecked": 0, "batches": 1}
    review = DecisionReview.objects.get(decision=decision)
    assert review.still_holds is True and review.moved == []
    assert review.reason == "Still holds: renting is cheaper (rent 14,400.00 against API 39,000.00 USD/month)."
    assert list(flipped_decisions()) == []
    first = (review.figures, review.reason, review.moved)
    review_decisions()
    review.refresh_from_db()
    assert (review.figures, review.reason, review.moved) == first  # idempotent
    assert DecisionReview.objects.count() == 1


@pytest.mark.django_db
def test_a_dearer_gpu_quote_flips_the_decision(chat_served):
    workload, deployment, _price = chat_served
    decision = _decide()
    # 8.00 USD/GPU-hour from today: 8 GPUs x 8.00 x 720 h = 46,080 USD a month, more than the API's 39,000.
    GpuQuote.objects.create(
        sku=deployment.cluster.sku, provider=deployment.cluster.provider, usd_per_gpu_hour=Decimal("8.00"),
        quoted_on=timezone.now().date(),
    )  # fmt: skip
    assert review_decisions([workload.pk])["flipped"] == 1
    review = DecisionReview.objects.get(decision=decision)
    assert review.still_holds is False
    today = timezone.now().date().isoformat()
    assert review.reason == (
        "API is now cheaper: rent 14,400.00 -> 46,080.00 USD/month, API 39,000.00 -> 39,000.00 USD/month. "
        f"Prices moved: GPU price 2.50 -> 8.00 USD/GPU-hour (acme quote of {today})."
    )
    moved = {m["name"]: (m["was"], m["now"]) for m in review.moved}
    assert moved["cheaper"] == ("rent", "api")
    assert moved["monthly_rent_usd"] == ("14400.00", "46080.00")
    assert "monthly_api_usd" not in moved
    # The breakeven moves with the rent: 46,080 / 26 USD per M output tokens = 1,772.3 M.
    assert moved["breakeven_output_tokens_per_month"] == (553_846_154, 1_772_307_692)
    assert review.favours == "api"
    assert list(flipped_decisions()) == [decision]


@pytest.mark.django_db
def test_an_observed_volume_below_the_breakeven_flips_it(chat_served):
    _workload, deployment, _price = chat_served
    decision = _decide()
    _hours(deployment, 10, 100.0, 200.0)
    review_decisions()
    review = DecisionReview.objects.get(decision=decision)
    assert review.still_holds is False
    assert review.reason == (
        "The observed volume 259.2 M output tokens/month crossed the breakeven 553.8 M: at it the API is "
        "cheaper, not renting."
    )
    assert {"name": "monthly_output_tokens", "was": 1_500_000_000, "now": 259_200_000, "observed": True} in review.moved


@pytest.mark.django_db
def test_a_comparison_that_cannot_be_recomputed_is_unchecked(chat_served):
    _workload, _deployment, price = chat_served
    decision = _decide()
    price.delete()
    assert review_decisions()["unchecked"] == 1
    review = DecisionReview.objects.get(decision=decision)
    assert review.still_holds is None
    assert review.reason.startswith("The comparison cannot be recomputed on today's inputs:")
    assert "api_price" in review.reason


@pytest.mark.django_db
def test_mark_stale_and_a_superseded_decision_is_not_reviewed(chat_served):
    workload, _deployment, _price = chat_served
    old = _decide()
    refresh_breakevens()
    review_decisions()
    now = timezone.now()
    mark_stale([workload.pk], "GPU quote changed", now)
    assert WorkloadBreakeven.objects.get().state(now) == "stale"
    assert DecisionReview.objects.get(decision=old).state(now) == "stale"
    # A newer decision supersedes it: only the newer one is reviewed (a tier chosen against the cheaper
    # side holds as long as the cheaper side is unchanged: the review checks the figures, not the choice).
    new = _decide(Decision.Tier.API)
    checked = DecisionReview.objects.get(decision=old).checked_at
    assert review_decisions() == {"holds": 1, "flipped": 0, "unchecked": 0, "batches": 1}
    assert DecisionReview.objects.filter(decision=new).exists()
    assert DecisionReview.objects.get(decision=old).checked_at == checked
    # A recomputation clears the mark it was made before.
    refresh_breakevens()
    assert WorkloadBreakeven.objects.get().state() == "current"


@pytest.mark.django_db
def test_a_failed_recomputation_keeps_the_previous_figures(chat_served):
    _workload, deployment, _price = chat_served
    refresh_breakevens()
    before = WorkloadBreakeven.objects.get().figures
    # No quote in force for the SKU any more: the breakeven service cannot price the rent.
    GpuQuote.objects.filter(sku=deployment.cluster.sku).delete()
    assert refresh_breakevens(batch=1) == {"computed": 0, "unavailable": 0, "failed": 1, "batches": 1}
    row = WorkloadBreakeven.objects.get()
    assert row.figures == before and "cluster is unpriced on" in row.error
    assert row.state() == "stale" and row.failed_at is not None


@pytest.mark.django_db
def test_batches_store_every_workload(chat_served):
    workload, _deployment, _price = chat_served
    figures = {name: getattr(workload, name) for name in Workload.FIGURES}
    for i in range(3):
        Workload.objects.create(slug=f"w{i}", name=f"W{i}", team="web", **figures)
    assert refresh_breakevens(batch=2) == {"computed": 1, "unavailable": 3, "failed": 0, "batches": 2}
    assert WorkloadBreakeven.objects.count() == 4


@pytest.mark.django_db
def test_without_an_observed_prompt_rate_the_declared_ratio_is_kept(chat_served):
    _workload, deployment, _price = chat_served
    _hours(deployment, 10, 100.0, None)  # hours rolled up before the rollups kept the prompt rate
    refresh_breakevens()
    stored = WorkloadBreakeven.objects.get()
    # 259.2 M output tokens at the declared 2:1 prompt ratio: 518.4 M prompt, the same 6,739.20 USD bill.
    assert stored.figures["observed"]["monthly_api_usd"] == "6739.20"
    assert "keeps the declared ratio (2.00:1)" in " ".join(stored.figures["observed_volume"]["assumptions"])


@pytest.mark.django_db
def test_breakevens_and_reviews_read_a_fixed_handful_of_queries_per_batch(chat_served):
    """Issue 17, scale: the queries of a batch do not grow with its workloads (planner.breakeven.Preloaded)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from fleet.models import Cluster, Deployment

    workload, deployment, _price = chat_served

    def counted(call) -> int:
        with CaptureQueriesContext(connection) as ctx:
            call()
        return len(ctx.captured_queries)

    refresh_breakevens()
    _decide()
    review_decisions()
    one = (counted(refresh_breakevens), counted(review_decisions))
    for i in range(5):
        w = Workload.objects.get(pk=workload.pk)
        w.pk, w.slug, w.name = None, f"chat-{i}", f"Chat {i}"  # a copy of the fixture's workload
        w.save()
        c = Cluster.objects.create(
            slug=f"c{i}",
            name=f"C{i}",
            sku=deployment.cluster.sku,
            nodes=1,
            provider=deployment.cluster.provider,
            team="t",
        )
        Deployment.objects.create(slug=f"llama-{i}", cluster=c, model=deployment.model, tp=4, replicas=2, workload=w)
        record_decision(
            workload=w.slug, tier=1, comparison=BreakevenRequest(deployment=f"llama-{i}", api_price="llama-api")
        )
    refresh_breakevens()
    review_decisions()  # the first runs create their rows; then, as for one:
    six = (counted(refresh_breakevens), counted(review_decisions))
    assert six == one, (one, six)
    assert WorkloadBreakeven.objects.filter(computed_at__isnull=False).count() == 6
    assert DecisionReview.objects.count() == 6


@pytest.mark.django_db
def test_a_new_cheaper_api_price_flips_the_decision_and_is_named(chat_served):
    """Issue 24: the review compares with today's current API price of the same model, not the row the
    decision was recorded with: a new provider's cheaper price (2.50 USD/M output, 0.10 / 0.50 input)
    makes the API cheaper, and the review says which price moved, from what, to what, since when."""
    workload, deployment, _price = chat_served
    decision = _decide()
    assert decision.figures["cheaper"] == "rent"
    today = timezone.now().date()
    ApiPrice.objects.create(
        slug="cheap-llama", provider="cheapco", model_name="llama-3.1-70b", model=deployment.model,
        input_cache_hit_usd_per_mtok="0.10", input_cache_miss_usd_per_mtok="0.50", output_usd_per_mtok="2.50",
        quoted_on=today,
    )  # fmt: skip
    assert review_decisions([workload.pk])["flipped"] == 1
    review = DecisionReview.objects.get(decision=decision)
    assert review.still_holds is False and review.reason.startswith("API is now cheaper")
    # 1.5 B output x 2.50 + 3 B input at half hits x (0.10 + 0.50) / 2 = 3,750 + 900 = 4,650 USD/month.
    assert "API 39,000.00 -> 4,650.00 USD/month" in review.reason
    assert f"API output price 20.00 -> 2.50 USD/M tokens (cheapco llama-3.1-70b, {today.isoformat()})" in review.reason
    moved = {m["name"]: (m["was"], m["now"]) for m in review.moved}
    assert moved["api_output_usd_per_mtok"] == ("20.0000", "2.5000")
    assert moved["cheaper"] == ("rent", "api")
    # The recorded decision itself is unchanged: it keeps the price it was made on.
    decision.refresh_from_db()
    assert decision.inputs["api_price"]["output_usd_per_mtok"] == "20.0000"


@pytest.mark.django_db
def test_a_review_prices_today_not_a_picked_assumption(chat_served):
    """A decision made on a picked GPU quote (the seeds' assumption) is reviewed at today's price in force
    of its deployment's cluster: here acme's quote, also 2.50, so nothing moved and it holds."""
    workload, deployment, _price = chat_served
    seeds = GpuQuote.objects.get(sku=deployment.cluster.sku, provider__isnull=True)
    record_decision(
        workload=workload.slug, tier=1,
        comparison=BreakevenRequest(deployment=deployment.slug, api_price="llama-api", gpu_quote=seeds.pk),
    )  # fmt: skip
    decision = Decision.objects.get()
    assert decision.inputs["quotes_used"][0]["basis"] == "assumption"
    assert review_decisions([workload.pk])["holds"] == 1
    review = DecisionReview.objects.get(decision=decision)
    assert not [m for m in review.moved if m["name"] == "usd_per_gpu_hour"]
    assert review.figures["price_basis"] == "own"
