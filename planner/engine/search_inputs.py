"""``search()``'s inputs, checked and resolved: every input problem at once, and each SKU offer priced.

Pure Python, no Django. Errors are keyed by the REST API's field names (``EngineInputError``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from .errors import EngineInputError
from .formats import DTYPE_BYTES
from .precompute import check_model, model_constants
from .search_space import gpu_counts, replica_layouts
from .search_types import MODES, SkuOffer, Workload
from .spec import Accelerator, ModelArch
from .throughput import parse_usd
from .throughput_options import ThroughputOptions


class _Offer:
    """One SKU offer, resolved: price, per-SKU options, GPU counts and the layouts that fit the cap."""

    __slots__ = ("acc", "cap", "counts", "label", "layouts", "options", "price", "price_f")

    def __init__(self, offer: SkuOffer, options: ThroughputOptions, max_nodes: int, max_gpus: int | None, model):
        acc = offer.accelerator
        self.acc, self.label = acc, offer.label
        self.price = parse_usd(offer.usd_per_gpu_hour, "usd_per_gpu_hour")
        self.price_f = float(self.price)
        changes: dict[str, Any] = {}
        if offer.scaleup_domain_gpus is not None:
            changes["scaleup_domain_gpus"] = offer.scaleup_domain_gpus
        if offer.network_gbps is not None:
            changes["network_gbps"] = offer.network_gbps
        self.options = replace(options, **changes) if changes else options
        self.options.check()
        self.counts = gpu_counts(max(1, acc.gpus_per_node), max_nodes, max_gpus)
        self.cap = max(self.counts) if self.counts else 0
        self.layouts = replica_layouts(model, self.cap) if self.cap else []


def _coerce_offers(offers: Iterable[SkuOffer | tuple[Accelerator, Any]]) -> list[SkuOffer]:
    out = []
    for item in offers:
        if isinstance(item, SkuOffer):
            out.append(item)
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], Accelerator):
            out.append(SkuOffer(item[0], item[1]))
        else:
            raise EngineInputError.single("offers", "Each offer must be a SkuOffer or (Accelerator, USD per GPU-hour).")
    if not out:
        raise EngineInputError.single("offers", "Give at least one SKU with its price per GPU-hour.")
    return out


def _check(model: ModelArch, workload: Workload, modes, kv_dtypes, options, max_nodes, max_gpus, top_n, examples):
    check_model(model_constants(model))
    errors = {**workload.errors(), **options.errors()}
    limit = model.max_context_tokens
    if limit and "p95_context_tokens" not in errors and workload.p95_context_tokens > limit:
        errors["p95_context_tokens"] = [f"The model's maximum context is {limit} tokens."]
    if not modes or any(m not in MODES for m in modes):
        errors["modes"] = [f"Use one or both of {', '.join(MODES)}."]
    if not kv_dtypes or any(k not in DTYPE_BYTES for k in kv_dtypes):
        errors["kv_cache_dtypes"] = [f"Use KV dtypes among {', '.join(DTYPE_BYTES)}."]
    for name, value, low in (("max_nodes", max_nodes, 1), ("max_gpus", max_gpus, 1), ("top_n", top_n, 1)):
        if name == "max_gpus" and value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            errors[name] = ["Must be a positive whole number."]
    if isinstance(examples, bool) or not isinstance(examples, int) or examples < 0:
        errors["examples_per_reason"] = ["Must be a whole number, zero or more."]
    if errors:
        raise EngineInputError(errors)
