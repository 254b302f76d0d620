"""Per-model constants memoised for fast repeated sizing (HTMX recomputes on every keystroke).

``model_constants(model)`` returns a ``ModelConstants`` holding everything ``size()`` would
otherwise recompute on each call: model-level validation, weight components per format, cache
geometry per (kv dtype, tp, pp), layout validation per layout, and assumption strings. The
memo is keyed by object identity (``ModelArch`` is frozen) and holds a strong reference to
the model, so an id cannot be reused while its entry lives; it is cleared when it grows past
``MAX_MODELS`` entries. Pure Python, no Django.
"""

from __future__ import annotations

from typing import Any

from ..errors import EngineInputError
from ..spec import GENERIC_CONV_DTYPE, GENERIC_STATE_DTYPE, Layout, ModelArch, layout_errors, model_errors
from .kv_cache import KvGeometry, kv_dtype_bytes, kv_geometry
from .state import has_linear_layers, state_bytes_per_sequence
from .weights import resolve_formats, weight_assumptions, weight_components

MAX_MODELS: int = 256


class ModelConstants:
    """Memoised, per-model figures. Read-only for callers; filled lazily."""

    __slots__ = ("_geometry", "_layouts", "_results", "_text", "_weights", "errors", "has_linear", "model")

    def __init__(self, model: ModelArch):
        self.model = model
        self.errors = model_errors(model)
        self.has_linear = has_linear_layers(model)
        self._weights: dict[tuple[Any, bool], tuple[int, int, str, str, tuple[str, ...]]] = {}
        self._geometry: dict[tuple[str, int, int], tuple[KvGeometry, int, int, tuple[str, ...]]] = {}
        self._layouts: dict[tuple[Any, ...], dict[str, list[str]]] = {}
        self._text: dict[Any, Any] = {}
        self._results: dict[str, dict[Any, Any]] = {}

    def weights(
        self, weight_format: str | None, include_scale_overhead: bool
    ) -> tuple[int, int, str, str, tuple[str, ...]]:
        """``(expert_bytes, other_bytes, other_format, expert_format, assumptions)`` of one copy."""
        key = (weight_format, include_scale_overhead)
        hit = self._weights.get(key)
        if hit is None:
            other_fmt, expert_fmt = resolve_formats(self.model, weight_format)
            expert_bytes, other_bytes = weight_components(self.model, weight_format, include_scale_overhead)
            notes = weight_assumptions(
                self.model, other_fmt, expert_fmt, include_scale_overhead, by_parts=weight_format is None
            )
            hit = self._weights[key] = (expert_bytes, other_bytes, other_fmt, expert_fmt, notes)
        return hit

    def geometry(self, kv_cache_dtype: str, tp: int, pp: int) -> tuple[KvGeometry, int, int, tuple[str, ...]]:
        """``(kv_geometry, state_bytes_logical, state_bytes_per_gpu, assumptions)``."""
        key = (kv_cache_dtype, tp, pp)
        hit = self._geometry.get(key)
        if hit is None:
            geometry = kv_geometry(self.model, kv_cache_dtype, tp, pp)
            state = state_bytes_per_sequence(self.model)
            state_gpu = state_bytes_per_sequence(self.model, tp, pp)
            notes = _cache_assumptions(self.model, kv_cache_dtype, geometry, self.has_linear)
            hit = self._geometry[key] = (geometry, state, state_gpu, notes)
        return hit

    def layout_errors(self, layout: Layout) -> dict[str, list[str]]:
        """Field errors of ``layout`` for this model (spec rules plus the engine's own)."""
        key = (layout.tp, layout.pp, layout.dp, layout.ep, layout.etp, layout.redundant_experts)
        hit = self._layouts.get(key)
        if hit is None:
            hit = self._layouts[key] = _layout_errors(self.model, layout)
        return hit

    def result(self, kind: str, key: Any, build: Any) -> Any:
        """A memoised whole result of one ``kind`` (``"size"``, ``"estimate"``): ``build()`` once per
        ``key``. Each kind has its own bound (``MAX_RESULTS``), so estimates of ever new request
        classes (a gateway's) do not push out the sizings every one of them reuses, and a layout
        search sizing thousands of layouts once each does not push out the assumption texts and
        allocations every call reuses. An unhashable ``key`` (a caller's list) is built unmemoised
        (and refused or answered by ``build()``)."""
        memo = self._results.get(kind)
        if memo is None:
            memo = self._results[kind] = {}
        try:
            hit = memo.get(key)
        except TypeError:
            return build()
        if hit is None:
            if len(memo) >= MAX_RESULTS:
                memo.clear()
            hit = memo[key] = build()
        return hit

    def text(self, key: Any, build: Any) -> Any:
        """Memoised assumption text (and engine allocations): ``build()`` once per ``key``.

        Bounded: past ``MAX_TEXTS`` entries the memo starts again, so a long-lived worker sizing many
        distinct deployments does not grow without limit."""
        hit = self._text.get(key)
        if hit is None:
            if len(self._text) >= MAX_TEXTS:
                self._text.clear()
            hit = self._text[key] = build()
        return hit


_MEMO: dict[int, ModelConstants] = {}
#: Entries of one model's text memo before it is cleared (``ModelConstants.text``).
MAX_TEXTS: int = 4096
#: Whole results memoised per model (``ModelConstants.result``).
MAX_RESULTS: int = 2048


def model_constants(model: ModelArch) -> ModelConstants:
    """The memoised constants of ``model`` (built on first use)."""
    hit = _MEMO.get(id(model))
    if hit is not None and hit.model is model:
        return hit
    if len(_MEMO) >= MAX_MODELS:
        _MEMO.clear()
    hit = _MEMO[id(model)] = ModelConstants(model)
    return hit


def _layout_errors(model: ModelArch, layout: Layout) -> dict[str, list[str]]:
    errors = layout_errors(layout, model)
    sizes = (layout.tp, layout.pp, layout.dp, layout.ep)
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in sizes):
        return errors
    stage = layout.tp * layout.dp
    if layout.ep > 1 and stage % layout.ep:
        errors.setdefault("ep", []).append(
            f"Expert parallel size {layout.ep} must divide the {stage} GPUs of a pipeline stage (tp x dp)."
        )
    for group in model.layer_groups:
        if group.kind in ("full", "sliding"):
            heads, what = group.kv_heads, "KV heads"
        elif group.kind == "linear":
            heads, what = group.value_heads, "linear-attention value heads"
        else:
            continue
        if heads % layout.tp and layout.tp % heads:
            message = (
                f"Tensor parallel size {layout.tp} must divide the model's {heads} {what} "
                f"or be a multiple of them (heads are split evenly, or replicated)."
            )
            if message not in errors.get("tp", []):
                errors.setdefault("tp", []).append(message)
    return errors


def _cache_assumptions(
    model: ModelArch, kv_cache_dtype: str, geometry: KvGeometry, has_linear: bool
) -> tuple[str, ...]:
    kinds = {g.kind for g in model.layer_groups}
    size = kv_dtype_bytes(kv_cache_dtype)
    parts = [f"KV cache in {kv_cache_dtype} ({size} byte(s) per element)"]
    if kinds & {"full", "sliding"}:
        parts.append("attention KV heads split by tp down to one head per rank, replicated beyond (vLLM)")
    if "mla" in kinds:
        parts.append("MLA latent (kv_lora_rank + qk_rope_head_dim) replicated on every tp rank")
    for _, window in geometry.windowed:
        parts.append(f"sliding-window layers hold at most {window} tokens")
    out = ["; ".join(parts) + "; layers split by pp (busiest stage)."]
    if has_linear:
        dtypes = sorted(
            {
                (g.state_dtype or GENERIC_STATE_DTYPE, g.conv_dtype or GENERIC_CONV_DTYPE)
                for g in model.layer_groups
                if g.kind == "linear"
            }
        )
        names = ", ".join(f"state {s}, conv {c}" for s, c in dtypes)
        out.append(
            "Linear-attention layers keep a fixed state per sequence: value_heads x value_dim x key_dim "
            f"recurrent state plus (conv_kernel - 1) x (2 x key_heads x key_dim + value_heads x value_dim) "
            f"convolution state ({names} unless an engine profile keeps other dtypes, below); heads split by tp "
            "(SGLang mamba_cache_per_req)."
        )
    return tuple(out)


def check_model(constants: ModelConstants) -> None:
    """Raise the model-level errors, if any."""
    if constants.errors:
        raise EngineInputError(constants.errors)
