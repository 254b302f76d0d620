"""Per-token attention cache (KV cache) by layer group. Units: bytes (``int``).

Per layer and per token (docs/sizing.md, "KV cache"):

* ``full``:    2 x kv_heads x head_dim x bytes per element (K and V).
* ``sliding``: the same per token, but a sequence never holds more than ``window`` tokens.
* ``mla``:     (kv_lora_rank + qk_rope_head_dim) x bytes per element: one compressed latent
  per token (SGLang ``get_cell_size_per_token``; vLLM treats MLA as one KV head).
* ``linear``:  nothing per token (a fixed state per sequence, see ``state.py``).

A GPU's share under tensor parallelism ``tp`` and pipeline parallelism ``pp``:

* ``full``/``sliding``: ``max(1, kv_heads // tp)`` heads per rank: heads are split by tp down
  to one head and replicated beyond that (vLLM ``ModelConfig.get_num_kv_heads``).
* ``mla``: **not split**; every tp rank holds the full latent (vLLM returns 1 KV head for
  MLA whatever the tp size; SGLang's MLA pool ignores attention tp).
* layers are split by ``pp``; the busiest stage holds ``ceil(count / pp)`` layers of each group.

The "logical" figures (``tp = pp = 1``) are one sequence across all layers. Data-parallel
attention ranks each hold only their own sequences, so dp never changes per-sequence bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import EngineInputError
from ..formats import DEFAULT_KV_CACHE_DTYPE, DTYPE_BYTES
from ..spec import LayerGroup, ModelArch
from ..units import ceil_div


def kv_dtype_bytes(kv_cache_dtype: str) -> int:
    """Bytes per cached element of ``kv_cache_dtype``; ``EngineInputError`` if unknown."""
    try:
        return int(DTYPE_BYTES[kv_cache_dtype])
    except (KeyError, TypeError):
        raise EngineInputError.single(
            "kv_cache_dtype",
            f"Unknown KV cache dtype {kv_cache_dtype!r}; use one of {', '.join(DTYPE_BYTES)}.",
        ) from None


def kv_heads_per_rank(kv_heads: int, tp: int) -> int:
    """KV heads held by one tensor-parallel rank: split down to one, replicated beyond."""
    return max(1, kv_heads // tp)


def group_bytes_per_token(group: LayerGroup, element_bytes: int, tp: int = 1) -> int:
    """Cache bytes per token for **one layer** of ``group`` on one tp rank."""
    if group.kind in ("full", "sliding"):
        return 2 * kv_heads_per_rank(group.kv_heads, tp) * group.head_dim * element_bytes
    if group.kind == "mla":
        return (group.kv_lora_rank + group.qk_rope_head_dim) * element_bytes
    return 0


@dataclass(frozen=True, slots=True)
class KvGeometry:
    """Per-token cache bytes of a model for one KV dtype and one GPU's (tp, pp) share.

    ``unbounded`` counts layers whose cache grows with every token (full attention, MLA);
    ``windowed`` lists ``(bytes_per_token, window_tokens)`` for sliding-window layers. The
    ``*_per_gpu`` fields are one GPU's share; the others are the logical whole (tp = pp = 1).
    """

    kv_cache_dtype: str
    tp: int
    pp: int
    unbounded_bytes_per_token: int
    windowed: tuple[tuple[int, int], ...]
    unbounded_bytes_per_token_per_gpu: int
    windowed_per_gpu: tuple[tuple[int, int], ...]

    @property
    def bytes_per_token(self) -> int:
        """One token of one sequence across all layers (sliding layers counted while in window)."""
        return self.unbounded_bytes_per_token + sum(b for b, _ in self.windowed)

    @property
    def bytes_per_token_per_gpu(self) -> int:
        """One GPU's share of ``bytes_per_token``."""
        return self.unbounded_bytes_per_token_per_gpu + sum(b for b, _ in self.windowed_per_gpu)

    def bytes_per_sequence(self, context_tokens: int) -> int:
        """Cache bytes of one sequence holding ``context_tokens`` tokens (all layers)."""
        total = self.unbounded_bytes_per_token * context_tokens
        for per_token, window in self.windowed:
            total += per_token * min(context_tokens, window)
        return total

    def bytes_per_sequence_per_gpu(self, context_tokens: int) -> int:
        """One GPU's share of ``bytes_per_sequence(context_tokens)``."""
        total = self.unbounded_bytes_per_token_per_gpu * context_tokens
        for per_token, window in self.windowed_per_gpu:
            total += per_token * min(context_tokens, window)
        return total


def _collect(model: ModelArch, element_bytes: int, tp: int, pp: int) -> tuple[int, tuple[tuple[int, int], ...]]:
    unbounded = 0
    windows: dict[int, int] = {}
    for group in model.layer_groups:
        if group.kind == "linear":
            continue
        layers = ceil_div(group.count, pp) if pp > 1 else group.count
        per_token = group_bytes_per_token(group, element_bytes, tp) * layers
        if group.kind == "sliding":
            windows[group.window] = windows.get(group.window, 0) + per_token
        else:
            unbounded += per_token
    return unbounded, tuple((b, w) for w, b in sorted(windows.items()))


def kv_geometry(model: ModelArch, kv_cache_dtype: str = DEFAULT_KV_CACHE_DTYPE, tp: int = 1, pp: int = 1) -> KvGeometry:
    """Per-token cache bytes of ``model`` (logical and one GPU's share under tp/pp)."""
    element_bytes = kv_dtype_bytes(kv_cache_dtype)
    unbounded, windowed = _collect(model, element_bytes, 1, 1)
    unbounded_gpu, windowed_gpu = _collect(model, element_bytes, tp, pp)
    return KvGeometry(
        kv_cache_dtype=kv_cache_dtype,
        tp=tp,
        pp=pp,
        unbounded_bytes_per_token=unbounded,
        windowed=windowed,
        unbounded_bytes_per_token_per_gpu=unbounded_gpu,
        windowed_per_gpu=windowed_gpu,
    )


def kv_bytes_per_token(model: ModelArch, kv_cache_dtype: str = DEFAULT_KV_CACHE_DTYPE, tp: int = 1, pp: int = 1) -> int:
    """Cache bytes per token of one sequence: the logical whole with tp = pp = 1, else one GPU's share."""
    geometry = kv_geometry(model, kv_cache_dtype, tp, pp)
    return geometry.bytes_per_token_per_gpu


def kv_bytes_per_sequence(
    model: ModelArch, context_tokens: int, kv_cache_dtype: str = DEFAULT_KV_CACHE_DTYPE, tp: int = 1, pp: int = 1
) -> int:
    """Cache bytes of one sequence at ``context_tokens`` (sliding layers capped at their window)."""
    return kv_geometry(model, kv_cache_dtype, tp, pp).bytes_per_sequence_per_gpu(context_tokens)
