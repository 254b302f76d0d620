"""Upper bounds of numeric inputs: far beyond any real cluster or model, and small enough that the
engine's integer, float and Decimal arithmetic represents every result (a 10**30 GPU count made
``decimal.InvalidOperation``; 1e308 GiB overflowed to infinity). The API's serializers and the
pages' forms both use them, so the schema shows them as ``maximum`` and a value above is a 400
naming the limit. Where the engine enforces a limit of its own (``planner/engine/limits.py``,
``planner/engine/costs/money.py``) these are the same or tighter, so an input the API accepts is
one the engine computes."""

from planner.engine import (
    GB,
    MAX_CONTEXT_TOKENS,
    MAX_DIMENSION,
    MAX_EXPERTS,
    MAX_GPUS,
    MAX_HBM_GB,
    MAX_PARAMS,
    MAX_PRICE_USD,
    MAX_RATE,
)

__all__ = ["MAX_GPUS", "MAX_PRICE_USD"]

# MAX_GPUS: GPUs of one cluster or comparison, the engine's (a million; this was 1 << 20, past it).
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
#: Tokens of one KV cache block (or SGLang page).
MAX_BLOCK_TOKENS = 1 << 16
#: Seconds between two polls of a deployment (a day).
MAX_POLL_INTERVAL_S = 86_400
#: Money of an owned cluster's purchase or running costs, in its currency (a hundred billion: a purchase
#: of whole nodes is hundreds of thousands each, far above ``MAX_PRICE_USD``, a price per GPU-hour).
MAX_OWNED_MONEY = 10**11
#: Bytes of GPU memory as a driver reports it: the engine's 100,000 GB.
MAX_HBM_BYTES = round(MAX_HBM_GB * GB)

#: Upper bounds of the records' number fields, by field name, for every door that writes a record (the
#: page forms' ``fleet.forms.BoundedModelForm``, the API's ``fleet.api.cleaning.ModelCleanMixin``) or
#: filters by one (``fleet.filters``): the engine's own limits where a record goes to it as it is (a
#: model's, a SKU's figures), else the bounds above. A number not named takes ``MAX_FIGURE`` (money
#: ``MAX_PRICE_USD``); fractions, utilisations and hours a day keep this loose bound, as their models'
#: validators already say the tighter rule in their own words.
RECORD_BOUNDS: dict[str, int | float] = {
    # HardwareSku: the engine's accelerator limits (a node or scale-up domain: one parallelism degree).
    "hbm_gb": MAX_HBM_GB,
    "hbm_bandwidth_tbps": MAX_RATE,
    "bf16_tflops": MAX_RATE,
    "fp8_tflops": MAX_RATE,
    "fp4_tflops": MAX_RATE,
    "interconnect_gbps": MAX_RATE,
    "gpus_per_node": MAX_DEGREE,
    "scaleup_domain_gpus": MAX_DEGREE,
    "hbm_bytes_reported": MAX_HBM_BYTES,
    # Cluster and Deployment.
    "nodes": MAX_GPUS,
    "replicas": MAX_GPUS,
    "tp": MAX_DEGREE,
    "pp": MAX_DEGREE,
    "dp": MAX_DEGREE,
    "ep": MAX_DEGREE,
    "block_size_tokens": MAX_BLOCK_TOKENS,
    "max_model_len": MAX_TOKENS,
    "poll_interval_s": MAX_POLL_INTERVAL_S,
    # ModelSpec: the engine's model limits.
    "total_params": MAX_PARAMS,
    "active_params": MAX_PARAMS,
    "expert_params": MAX_PARAMS,
    "n_routed_experts": MAX_EXPERTS,
    "n_active_experts": MAX_EXPERTS,
    "n_shared_experts": MAX_EXPERTS,
    "hidden_size": MAX_DIMENSION,
    "vocab_size": MAX_DIMENSION,
    "attention_heads": MAX_DIMENSION,
    "max_context_tokens": MAX_CONTEXT_TOKENS,
    # Workload and ApiPrice.
    "requests_per_day": MAX_REQUESTS_PER_DAY,
    "mean_prompt_tokens": MAX_TOKENS,
    "mean_output_tokens": MAX_TOKENS,
    "p95_context_tokens": MAX_TOKENS,
    "peak_concurrency": MAX_CONCURRENCY,
    "context_window": MAX_TOKENS,
    # An owned cluster's purchases and running costs (fleet/models/owned.py).
    "price": MAX_OWNED_MONEY,
    "residual_value": MAX_OWNED_MONEY,
    "usd_per_rack_month": MAX_OWNED_MONEY,
    "staff_usd_per_month": MAX_OWNED_MONEY,
    "racks": 100_000,
}


def record_bound(name: str, *, money: bool = False) -> int | float:
    """The upper bound of a record's number field ``name`` (``RECORD_BOUNDS``, else ``MAX_PRICE_USD``
    for money, else ``MAX_FIGURE``); a field without a lower bound of its own takes its negative."""
    return RECORD_BOUNDS.get(name, MAX_PRICE_USD if money else MAX_FIGURE)
