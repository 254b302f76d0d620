"""Upper bounds of numeric inputs: far beyond any real cluster or model, and small enough that the
engine's integer, float and Decimal arithmetic represents every result (a 10**30 GPU count made
``decimal.InvalidOperation``; 1e308 GiB overflowed to infinity). The API's serializers and the
pages' forms both use them, so the schema shows them as ``maximum`` and a value above is a 400
naming the limit. Where the engine enforces a limit of its own (``planner/engine/limits.py``,
``planner/engine/costs/money.py``) these are the same or tighter, so an input the API accepts is
one the engine computes."""

from planner.engine import MAX_PRICE_USD

__all__ = ["MAX_PRICE_USD"]

#: GPUs of one cluster or comparison.
MAX_GPUS = 1 << 20
#: One parallelism degree (tp, pp, dp, ep, etp).
MAX_DEGREE = 4096
#: Tokens of one context, prompt or output (16.7 M; the longest contexts served are 10 M).
MAX_TOKENS = 1 << 24
#: Tokens (or bytes) per month; with prices of 14 digits the monthly bill stays inside Decimal's 28.
MAX_MONTHLY = 10**15
#: GiB per GPU (runtime reserve, KV cache budget): no GPU has 4 TiB.
MAX_GIB_PER_GPU = 4096
#: Any other float a record holds (GB, TB/s, TFLOPS, Gb/s): a billion of its unit.
MAX_FIGURE = 1e9
#: Requests a day of one workload (a billion): with MAX_TOKENS each, 31 days make 5.2e17 tokens a
#: month, inside the engine's 1e18, and the month's API bill stays inside Decimal's 28 digits.
MAX_REQUESTS_PER_DAY = 10**9
#: Sequences at once (a workload's peak, a batch).
MAX_CONCURRENCY = 1 << 30
#: A latency SLO in milliseconds (a day; the engine's own limit, ``MAX_SLO_MS`` in its limits).
MAX_SLO_MS = 86_400_000.0
