"""The largest (and smallest) inputs the engine accepts: its one home of input limits.

Each limit is far beyond any real model, cluster or workload, and keeps every figure the engine
derives representable: byte counts are exact ``int``; speeds and times are ``float`` and must stay
finite (a product of several maximal inputs stays below 1e100, far from float's 1.8e308); money
limits live in ``costs/money.py`` (``Decimal`` with 28 significant digits). A smallest non-zero
value exists where the engine divides by an input (a bandwidth, a rate, an efficiency): a
positive but denormal float would make a time infinite. docs/sizing.md, "Input limits", lists them.
"""

from __future__ import annotations

from typing import Any

from .errors import is_number

#: Parameters of a model (1e15): a thousand times the largest model served today.
MAX_PARAMS: int = 10**15
#: Any dimension of a model (heads, head and latent widths, hidden size, vocabulary, window): a
#: PostgreSQL ``integer``, the records' columns.
MAX_DIMENSION: int = 2**31 - 1
#: Layers of a model, all groups together; the importer walks each layer once.
MAX_LAYERS: int = 10_000
#: Routed, active or shared experts of a model, and redundant expert slots.
MAX_EXPERTS: int = 1 << 16
#: Tokens of a context, a prompt, an output, ``max_model_len`` or a batch of tokens (1e8): ten
#: times the longest context offered today (10M).
MAX_CONTEXT_TOKENS: int = 100_000_000
#: GPUs of a deployment or a search, and each of tp, pp, dp and ep.
MAX_GPUS: int = 1_000_000
#: Sequences decoding at once on one replica (``batch``, peak concurrency).
MAX_BATCH: int = 1_000_000
#: State slots per sequence (SGLang keeps 3 with its radix cache).
MAX_STATE_SLOTS: int = 1024
#: Memory of one accelerator, decimal GB: from 1 MB to 100 TB.
MIN_HBM_GB: float = 0.001
MAX_HBM_GB: float = 100_000.0
#: A runtime reserve or KV cache budget per GPU, GiB.
MAX_GIB: float = 100_000.0
#: HBM bandwidth TB/s, dense TFLOPS, interconnect GB/s, network GB/s: 0 (not stated) or within these.
MIN_RATE: float = 0.001
MAX_RATE: float = 1e7
#: ``state_pool_ratio`` (state pool : KV pool).
MIN_RATIO: float = 0.001
MAX_RATIO: float = 1000.0
#: An efficiency factor is a fraction from this up to 1.
MIN_EFFICIENCY: float = 1e-6
#: Latencies and overheads of one step (seconds), and an SLO (milliseconds: a day).
MAX_STEP_SECONDS: float = 60.0
MAX_SLO_MS: float = 86_400_000.0
#: Requests a day of a workload (1e12: ten million a second).
MAX_REQUESTS_PER_DAY: float = 1e12
#: Nodes per SKU a layout search may consider.
MAX_NODES: int = 1024
#: A request trace for the prefix-cache analysis (``prefix_cache.py``): rows, bytes of CSV text, the
#: longest request id or shared-prefix id (characters), and the block sizes one analysis compares.
#: Each row costs one prefill estimate per distinct (prompt, hit) pair and granularity, so 10,000 rows
#: x 16 granularities stay within a few seconds on one core.
MAX_TRACE_ROWS: int = 10_000
MAX_TRACE_BYTES: int = 2 * 1024 * 1024
MAX_TRACE_ID_CHARS: int = 200
MAX_GRANULARITIES: int = 16
#: An arrival time in a trace, seconds (a year).
MAX_ARRIVAL_S: float = 31_536_000.0


def int_error(value: Any, low: int, high: int, what: str = "") -> str | None:
    """The message for a whole number outside ``[low, high]`` (``None`` when it is inside)."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        unit = f" {what}" if what else ""
        return f"Must be a whole number{unit} from {low:,} to {high:,}."
    return None


def float_error(value: Any, high: float, low: float = 0.0, *, zero: bool = False, what: str = "") -> str | None:
    """The message for a number outside ``[low, high]`` (or not 0 when ``zero``); ``None`` when it is usable."""
    if is_number(value) and (low <= value <= high or (zero and value == 0)):
        return None
    unit = f" {what}" if what else ""
    span = f"from {low:g} to {high:,g}"
    return f"Must be a finite number{unit}, " + (f"0 or {span}." if zero else f"{span}.")
