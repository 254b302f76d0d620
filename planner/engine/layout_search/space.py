"""The layouts and GPU counts the layout search enumerates. Pure Python, no Django.

* GPU counts: whole nodes, ``1 .. max_nodes`` of the SKU's ``gpus_per_node``, capped at ``max_gpus``.
* Replica layouts: ``tp``, ``pp``, ``dp`` powers of two with ``tp x pp x dp`` at most the largest GPU
  count; ``pp`` up to ``MAX_PP``; for MoE models every power-of-two ``ep`` up to ``tp x dp``, each
  with its expert tensor parallel size ``etp = tp x dp / ep`` (``ep = 1``: experts sharded like dense
  weights; ``ep = tp x dp``: full expert parallelism over a stage; between: e.g. tp 4 x dp 2 as ep 2
  x etp 4); dense models use ``dp = ep = 1`` (a data-parallel rank of a dense model is just another
  replica). Every layout must
  pass the sizing engine's validation (``spec.layout_errors`` plus the KV/value-head rule).
* A configuration uses ``G`` GPUs as ``G / (tp x pp x dp)`` identical replicas (the layout's GPU
  count must divide ``G``).
"""

from __future__ import annotations

from ..sizing.memo import model_constants
from ..spec import Layout, ModelArch

MAX_PP: int = 8
DEFAULT_MAX_NODES: int = 8


def powers_of_two(limit: int) -> list[int]:
    """1, 2, 4, ... up to ``limit``."""
    out, v = [], 1
    while v <= limit:
        out.append(v)
        v *= 2
    return out


def gpu_counts(gpus_per_node: int, max_nodes: int = DEFAULT_MAX_NODES, max_gpus: int | None = None) -> list[int]:
    """Whole-node GPU counts ``n x gpus_per_node`` for ``n = 1 .. max_nodes``, at most ``max_gpus``."""
    counts = [n * gpus_per_node for n in range(1, max_nodes + 1)]
    return [g for g in counts if max_gpus is None or g <= max_gpus]


def replica_layouts(model: ModelArch, max_gpus: int) -> list[Layout]:
    """Every valid replica layout of at most ``max_gpus`` GPUs (see the module docstring)."""
    c = model_constants(model)
    moe = model.n_routed_experts > 1
    out: list[Layout] = []
    for pp in powers_of_two(min(MAX_PP, max_gpus, max(1, model.num_layers))):
        for tp in powers_of_two(max_gpus // pp):
            for dp in powers_of_two(max_gpus // (pp * tp)) if moe else [1]:
                eps = powers_of_two(tp * dp) if moe else [1]
                for ep in eps:
                    layout = Layout(tp=tp, pp=pp, dp=dp, ep=ep)
                    if not c.layout_errors(layout):
                        out.append(layout)
    return out
