"""Fixed per-sequence state of linear-attention layers (KDA, gated DeltaNet, Mamba-style).

Units: bytes (``int``). Per layer and per sequence (docs/sizing.md, "Recurrent state"):

* recurrent state: ``value_heads x value_dim x key_dim`` elements in ``state_dtype``
  (fp32 by default: SGLang's ``mamba_ssm_dtype`` defaults to float32 and vLLM keeps KDA
  state in fp32);
* short-convolution state: ``(conv_kernel - 1) x (2 x key_heads x key_dim + value_heads x
  value_dim)`` elements in ``conv_dtype`` (bf16 by default), the last ``kernel - 1`` inputs of
  the q, k and v convolutions.

This is SGLang's ``mamba_cache_per_req`` (``configs/mamba_utils.py``: ``KimiLinearStateShape``
for KDA, ``Mamba2StateShape`` for gated DeltaNet, temporal shape ``(heads / tp, value_dim,
key_dim)``). A GPU's share: heads split by ``tp`` (down to one head, replicated beyond), and
layers split by ``pp`` (the busiest stage holds ``ceil(count / pp)`` layers).

``state_slots_per_sequence`` models engines that keep extra state copies per running request:
SGLang with its radix cache reserves 3 state slots per running request
(``MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO``; 1 with the radix cache disabled), so that a
checkpoint can be copied before a continuation overwrites it.
"""

from __future__ import annotations

from ..formats import DTYPE_BYTES
from ..spec import GENERIC_CONV_DTYPE, GENERIC_STATE_DTYPE, LayerGroup, ModelArch
from ..units import ceil_div


def heads_per_rank(heads: int, tp: int) -> int:
    """Heads held by one tensor-parallel rank: split down to one, replicated beyond."""
    return max(1, heads // tp)


def recurrent_state_bytes(group: LayerGroup, tp: int = 1, dtype: str | None = None) -> int:
    """Recurrent state bytes of **one layer** of a linear group, for one sequence on one tp rank.

    ``dtype`` (default: the group's ``state_dtype``, else fp32) is the element type.
    """
    value_heads = heads_per_rank(group.value_heads, tp)
    dtype = dtype or group.state_dtype or GENERIC_STATE_DTYPE
    return value_heads * group.value_dim * group.key_dim * int(DTYPE_BYTES[dtype])


def conv_state_bytes(group: LayerGroup, tp: int = 1, dtype: str | None = None) -> int:
    """Short-convolution state bytes of **one layer** of a linear group, for one sequence on one tp rank.

    ``dtype`` (default: the group's ``conv_dtype``, else bf16) is the element type.
    """
    value_heads = heads_per_rank(group.value_heads, tp)
    key_heads = heads_per_rank(group.key_heads, tp)
    channels = 2 * key_heads * group.key_dim + value_heads * group.value_dim
    dtype = dtype or group.conv_dtype or GENERIC_CONV_DTYPE
    return (group.conv_kernel - 1) * channels * int(DTYPE_BYTES[dtype])


def layer_state_bytes(
    group: LayerGroup, tp: int = 1, state_dtype: str | None = None, conv_dtype: str | None = None
) -> int:
    """State bytes of **one layer** of ``group`` for one sequence on one tp rank (0 if not linear)."""
    if group.kind != "linear":
        return 0
    return recurrent_state_bytes(group, tp, state_dtype) + conv_state_bytes(group, tp, conv_dtype)


def state_bytes_per_sequence(model: ModelArch, tp: int = 1, pp: int = 1) -> int:
    """Linear-attention state of one sequence (generic dtypes): all layers with tp = pp = 1, else one GPU's share."""
    total = 0
    for group in model.layer_groups:
        if group.kind == "linear":
            layers = ceil_div(group.count, pp) if pp > 1 else group.count
            total += layer_state_bytes(group, tp) * layers
    return total


def has_linear_layers(model: ModelArch) -> bool:
    """True when the model keeps a per-sequence recurrent state."""
    return any(g.kind == "linear" for g in model.layer_groups)
