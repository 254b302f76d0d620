"""Runtime reserve per GPU: memory a serving engine needs besides weights and cache.

Units: bytes (``int``); overrides in GiB (binary, like the engines' own reserves).
Components and documented defaults (docs/sizing.md, "Runtime reserve"), taken from NVIDIA
aiconfigurator's memory model (``sdk/backends/*_backend.py: _get_memory_usage`` and the
``misc`` section of ``systems/*.yaml``):

* **framework** (CUDA context, cuBLAS/attention workspaces, allocator slack, CUDA graph
  pools): 3.5 GiB per GPU, aiconfigurator's ``other_mem`` = 3,758,096,384 bytes ("increase
  from 551MB to 3.5GB for safer deployment").
* **CUDA graphs**: 0 by default, because the framework allowance above already covers them;
  set ``cuda_graph_gib`` to budget them separately.
* **communication buffers** (NCCL) by tensor-parallel size: tp 1: 0; tp 2: 342 MiB
  (358,612,992 bytes); tp 4 and above: 392 MiB (411,041,792 bytes) (aiconfigurator
  ``nccl_mem``).
* **activations** for the batch token budget: ``2 bytes x batch_tokens x hidden_size x
  c(tp)`` with aiconfigurator's coefficients ``c = {1: 22, 2: 13, 4: 10, 8: 10}`` for MoE
  models and ``{1: 10, 2: 6, 4: 5, 8: 5}`` for dense ones (the largest key not above tp is
  used), and a floor of 70 MiB.
* **batch token budget**: vLLM's default ``max_num_batched_tokens`` for its OpenAI server:
  8192 on GPUs with at least 70 GiB, 2048 below (``vllm/engine/arg_utils.py``).

``runtime_reserve_gib`` replaces the whole sum with a single figure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import EngineInputError
from ..limits import MAX_CONTEXT_TOKENS, MAX_GIB, float_error, int_error
from ..spec import Accelerator, Layout, ModelArch
from ..units import GIB, MIB, gib_to_bytes

FRAMEWORK_GIB: float = 3.5
CUDA_GRAPH_GIB: float = 0.0
NCCL_BYTES_BY_TP: dict[int, int] = {1: 0, 2: 358_612_992, 4: 411_041_792, 8: 411_041_792}
ACTIVATION_COEFF_MOE: dict[int, float] = {1: 22, 2: 13, 4: 10, 8: 10}
ACTIVATION_COEFF_DENSE: dict[int, float] = {1: 10, 2: 6, 4: 5, 8: 5}
ACTIVATION_BYTES_PER_ELEMENT: int = 2
MIN_ACTIVATION_BYTES: int = 70 * MIB
BATCH_TOKENS_LARGE_GPU: int = 8192
BATCH_TOKENS_SMALL_GPU: int = 2048
LARGE_GPU_BYTES: int = 70 * GIB


def _tp_key(tp: int) -> int:
    """The largest of 1, 2, 4, 8 that is not above ``tp``."""
    if tp >= 8:
        return 8
    if tp >= 4:
        return 4
    return 2 if tp >= 2 else 1


def default_batch_tokens(accelerator: Accelerator) -> int:
    """vLLM's default per-step token budget for this GPU's memory size."""
    return BATCH_TOKENS_LARGE_GPU if accelerator.hbm_bytes >= LARGE_GPU_BYTES else BATCH_TOKENS_SMALL_GPU


def nccl_bytes(tp: int) -> int:
    """Communication buffer bytes per GPU for a tensor-parallel group of size ``tp``."""
    return NCCL_BYTES_BY_TP[_tp_key(tp)]


def activation_bytes(model: ModelArch, tp: int, batch_tokens: int) -> int:
    """Activation bytes per GPU for one forward step of ``batch_tokens`` tokens."""
    table = ACTIVATION_COEFF_MOE if model.is_moe else ACTIVATION_COEFF_DENSE
    raw = ACTIVATION_BYTES_PER_ELEMENT * batch_tokens * model.hidden_size * table[_tp_key(tp)]
    return max(int(raw), MIN_ACTIVATION_BYTES)


@dataclass(frozen=True, slots=True)
class RuntimeReserve:
    """Per-GPU runtime reserve in bytes, by component, and what it assumed."""

    framework_bytes: int
    cuda_graph_bytes: int
    nccl_bytes: int
    activation_bytes: int
    batch_tokens: int
    total_bytes: int
    overridden: bool
    assumptions: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "framework_bytes": self.framework_bytes,
            "cuda_graph_bytes": self.cuda_graph_bytes,
            "nccl_bytes": self.nccl_bytes,
            "activation_bytes": self.activation_bytes,
            "batch_tokens": self.batch_tokens,
            "total_bytes": self.total_bytes,
            "overridden": self.overridden,
        }


def runtime_errors(
    runtime_reserve_gib: float | None,
    batch_tokens: int | None,
    framework_gib: float = FRAMEWORK_GIB,
    cuda_graph_gib: float = CUDA_GRAPH_GIB,
) -> dict[str, list[str]]:
    """Field errors for the runtime overrides (empty when they are valid)."""
    errors: dict[str, list[str]] = {}
    for name, value in (
        ("runtime_reserve_gib", runtime_reserve_gib),
        ("framework_gib", framework_gib),
        ("cuda_graph_gib", cuda_graph_gib),
    ):
        if value is None:
            continue
        message = float_error(value, MAX_GIB, what="of GiB")
        if message:
            errors[name] = [message]
    if batch_tokens is not None:
        message = int_error(batch_tokens, 1, MAX_CONTEXT_TOKENS, "of tokens")
        if message:
            errors["batch_tokens"] = [message]
    return errors


def runtime_reserve(
    model: ModelArch,
    accelerator: Accelerator,
    layout: Layout | None = None,
    batch_tokens: int | None = None,
    runtime_reserve_gib: float | None = None,
    framework_gib: float = FRAMEWORK_GIB,
    cuda_graph_gib: float = CUDA_GRAPH_GIB,
) -> RuntimeReserve:
    """Per-GPU runtime reserve for ``model`` on ``accelerator`` under ``layout``.

    ``runtime_reserve_gib`` (GiB) overrides the computed sum; ``batch_tokens`` overrides the
    per-step token budget that sizes activations.
    """
    errors = runtime_errors(runtime_reserve_gib, batch_tokens, framework_gib, cuda_graph_gib)
    if errors:
        raise EngineInputError(errors)
    tp = (layout or Layout()).tp
    tokens = batch_tokens if batch_tokens is not None else default_batch_tokens(accelerator)
    if runtime_reserve_gib is not None:
        total = gib_to_bytes(runtime_reserve_gib)
        return RuntimeReserve(
            framework_bytes=total,
            cuda_graph_bytes=0,
            nccl_bytes=0,
            activation_bytes=0,
            batch_tokens=tokens,
            total_bytes=total,
            overridden=True,
            assumptions=(f"Runtime reserve overridden: {runtime_reserve_gib:g} GiB per GPU.",),
        )
    framework = gib_to_bytes(framework_gib)
    graphs = gib_to_bytes(cuda_graph_gib)
    comm = nccl_bytes(tp)
    act = activation_bytes(model, tp, tokens)
    return RuntimeReserve(
        framework_bytes=framework,
        cuda_graph_bytes=graphs,
        nccl_bytes=comm,
        activation_bytes=act,
        batch_tokens=tokens,
        total_bytes=framework + graphs + comm + act,
        overridden=False,
        assumptions=runtime_assumptions(model, tp, tokens, framework_gib, cuda_graph_gib),
    )


def runtime_assumptions(
    model: ModelArch, tp: int, batch_tokens: int, framework_gib: float, cuda_graph_gib: float
) -> tuple[str, ...]:
    """What the computed runtime reserve assumed (aiconfigurator's memory model)."""
    kind = "MoE" if model.is_moe else "dense"
    table = ACTIVATION_COEFF_MOE if model.is_moe else ACTIVATION_COEFF_DENSE
    graphs = (
        f"CUDA graphs {cuda_graph_gib:g} GiB"
        if cuda_graph_gib
        else "CUDA graph pools assumed inside the framework allowance"
    )
    return (
        f"Runtime reserve per GPU (aiconfigurator's model): framework {framework_gib:g} GiB; {graphs}; "
        f"NCCL buffers {nccl_bytes(tp) / MIB:.0f} MiB at tp={tp}; activations 2 bytes x {batch_tokens} "
        f"batch tokens x hidden {model.hidden_size} x {table[_tp_key(tp)]:g} ({kind} coefficient), "
        f"at least 70 MiB.",
    )
