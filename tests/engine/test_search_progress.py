"""Progress reporting and cancellation of the layout search (what a Celery task relies on)."""

import pytest

from fleet.catalog import reference
from planner.engine.layout_search import SearchCancelled, SkuOffer, Workload, search

LLAMA_31_70B = reference.model("llama-3.1-70b")
H100 = reference.accelerator("h100-sxm-80gb")
H200 = reference.accelerator("h200-141gb")
W = Workload(20_000, 1000, 200, 4096, 0.0, 16, 2000, 80)
OFFERS = [SkuOffer(H100, "2.50"), SkuOffer(H200, "3.00")]


def test_progress_is_called_from_zero_to_total_and_never_goes_back():
    calls: list[tuple[int, int]] = []
    result = search(LLAMA_31_70B, W, OFFERS, progress=lambda d, t: calls.append((d, t)), progress_every=5)
    assert calls[0][0] == 0 and calls[-1][0] == calls[-1][1]
    totals = {t for _, t in calls}
    assert len(totals) == 1 and totals.pop() > 0
    done = [d for d, _ in calls]
    assert done == sorted(done)
    assert len(calls) > 3  # regular updates, not just start and end
    assert result.best is not None


def test_returning_false_cancels():
    seen: list[int] = []

    def stop_after_some(done: int, total: int) -> bool:
        seen.append(done)
        return done < 10

    with pytest.raises(SearchCancelled) as e:
        search(LLAMA_31_70B, W, OFFERS, progress=stop_after_some, progress_every=5)
    assert e.value.done >= 10 and e.value.total > e.value.done
    assert "cancelled" in str(e.value)


def test_returning_none_or_true_continues():
    assert search(LLAMA_31_70B, W, OFFERS, progress=lambda d, t: None).best is not None
    assert search(LLAMA_31_70B, W, OFFERS, progress=lambda d, t: True).best is not None


def test_cancel_at_start():
    with pytest.raises(SearchCancelled) as e:
        search(LLAMA_31_70B, W, OFFERS, progress=lambda d, t: False)
    assert e.value.done == 0
