"""What a serving engine's allocator decides, in one shape for every engine profile.

Units: bytes (``int``), tokens (``int``), one GPU (the busiest pipeline stage) unless a name says
otherwise. A profile (``vllm.py``, ``sglang.py``) turns a model, a layout and the KV cache memory
the engine has per GPU into an ``EngineAllocation``: its cache groups, block size, number of
blocks, the token figure it logs and the concurrency it reports, and the assumptions behind them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ..errors import EngineInputError
from ..units import GIB, ceil_div


def parse_version(text: str) -> tuple[int, ...]:
    """``"0.11.0"`` -> ``(0, 11, 0)``; a suffix such as ``rc1``, ``.post1`` or ``+cu128`` is ignored.

    Raises ``ValueError`` for text that does not start with a dotted number.
    """
    parts: list[int] = []
    for piece in text.strip().lstrip("v").split("+")[0].split("."):
        digits = ""
        for char in piece:
            if not char.isdigit():
                break
            digits += char
        if not digits:
            break
        parts.append(int(digits))
        if len(digits) < len(piece):
            break
    if not parts:
        raise ValueError(f"not a version: {text!r}")
    return tuple(parts)


class Release(Protocol):
    """A row of a release table: the rules hold from ``since`` up to the next row."""

    @property
    def since(self) -> str: ...


R = TypeVar("R", bound=Release)


def choose_release(releases: Sequence[R], version: str | None, newest: str, engine: str, example: str) -> tuple[str, R]:
    """``(version, rules)``: the last row of ``releases`` (oldest first) whose ``since`` is not after
    ``version`` (default ``newest``). ``EngineInputError`` under ``engine_version`` for text that is not a
    version or a release older than the table."""
    version = version or newest
    try:
        wanted = parse_version(version)
    except ValueError:
        raise EngineInputError.single(
            "engine_version", f"Not {engine} version: {version!r} (e.g. {example})."
        ) from None
    first = releases[0].since
    if wanted < parse_version(first):
        raise EngineInputError.single(
            "engine_version", f"{engine} {version} predates the releases the app models ({first} to {newest})."
        )
    chosen = releases[0]
    for release in releases:
        if parse_version(release.since) <= wanted:
            chosen = release
    return version, chosen


@dataclass(frozen=True, slots=True)
class CacheGroup:
    """One KV cache group as the engine allocates it (vLLM ``KVCacheGroupSpec``; SGLang: one pool).

    ``layers`` is the number of layer slots in the group on one GPU (``padding_layers`` of them
    empty, vLLM pads groups to one size); ``page_bytes`` one layer's page of one block, after any
    padding; ``block_size_tokens`` tokens per block (0 for state groups, one state per block);
    ``window`` the sliding window (tokens, 0 for none); ``extra_blocks`` blocks a request holds
    beyond its tokens' (vLLM's sliding-window "+1", a state group's prefix-cache checkpoint).
    """

    kind: str
    layers: int
    block_size_tokens: int
    page_bytes: int
    window: int = 0
    extra_blocks: int = 0
    padding_layers: int = 0
    batch_tokens: int = 0
    #: ``"shared"``: drawn from the engine's one block pool (vLLM, SGLang's KV pool); ``"state"``: a
    #: separate pool of state slots (SGLang's mamba pool), counted by ``EngineAllocation.state_slots``;
    #: any other name: a separate token pool counted by ``EngineAllocation.pool_blocks`` (SGLang's
    #: sliding-window pool, ``"swa"``).
    pool: str = "shared"

    def blocks_per_request(self, tokens: int) -> int:
        """Blocks of this group one request of ``tokens`` tokens holds (vLLM ``max_memory_usage_bytes`` / page)."""
        if self.kind == "linear":
            return 1 + self.extra_blocks
        if self.kind == "sliding" and self.window:
            tokens = min(self.window - 1 + self.batch_tokens, tokens)
        return ceil_div(tokens, self.block_size_tokens) + self.extra_blocks

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "layers": self.layers,
            "padding_layers": self.padding_layers,
            "block_size_tokens": self.block_size_tokens,
            "page_bytes": self.page_bytes,
            "window": self.window,
            "extra_blocks": self.extra_blocks,
            "pool": self.pool,
        }


@dataclass(frozen=True, slots=True)
class EngineAllocation:
    """A serving engine's KV cache allocation on one GPU, and what it logs about it.

    ``kv_cache_tokens`` is the figure the engine logs ("GPU KV cache size: N tokens" for vLLM,
    ``max_total_num_tokens`` for SGLang); ``max_concurrency`` the float it reports for requests of
    ``max_model_len`` tokens ("Maximum concurrency for L tokens per request: X x"), per
    data-parallel rank. ``state_page_bytes`` is one linear layer's state for one sequence before
    padding (None without linear layers), ``page_padding_fraction`` the padding added to it so
    state and attention pages are equal (0 when none).
    """

    engine: str
    engine_version: str
    block_size_tokens: int
    num_blocks: int
    kv_cache_tokens: int
    max_concurrency: float
    max_model_len: int
    available_kv_cache_bytes: int
    groups: tuple[CacheGroup, ...]
    state_page_bytes: int | None
    page_padding_fraction: float
    state_dtype: str | None
    conv_dtype: str | None
    state_slots: int | None
    assumptions: tuple[str, ...]
    #: One sequence's linear-attention state in this engine's dtypes, unpadded: all layers (tp = pp = 1),
    #: and one GPU's share (bytes; 0 without linear layers).
    state_bytes_per_sequence: int = 0
    state_bytes_per_sequence_per_gpu: int = 0

    #: Blocks of the separate token pools, ``(pool name, blocks)`` (SGLang's ``("swa", pages)``).
    pool_blocks: tuple[tuple[str, int], ...] = ()
    #: The most requests the engine's scheduler runs at once per data-parallel rank, whatever the cache
    #: holds (vLLM's ``max_num_seqs``, SGLang's request pool; ``serving_engines.limit_running``). None: no cap.
    max_running_requests: int | None = None

    @property
    def available_kv_cache_gib(self) -> float:
        """``available_kv_cache_bytes`` in GiB (2^30 bytes), as the engines log it."""
        return self.available_kv_cache_bytes / GIB

    @property
    def page_padding_percent(self) -> float:
        """``page_padding_fraction`` in percent, as vLLM logs it ("Padding mamba page size by 1.49%")."""
        return self.page_padding_fraction * 100

    def blocks_per_request(self, tokens: int, pool: str = "shared") -> int:
        """Blocks one request of ``tokens`` tokens takes from ``pool`` (its groups summed)."""
        return sum(g.blocks_per_request(tokens) for g in self.groups if g.pool == pool)

    def concurrency(self, tokens: int) -> float:
        """Requests of ``tokens`` tokens held at once (float, as the engine reports it): shared blocks
        over blocks per request (vLLM ``get_max_concurrency_for_kv_cache_config``), capped by each
        separate token pool's blocks over its blocks per request, and by the state slots of a separate
        state pool over the slots a request holds (its state groups' blocks, at least 1)."""
        need = self.blocks_per_request(tokens)
        by_blocks = self.num_blocks / need if need else math.inf
        for pool, blocks in self.pool_blocks:
            pool_need = self.blocks_per_request(tokens, pool)
            if pool_need:
                by_blocks = min(by_blocks, blocks / pool_need)
        if self.state_slots is not None:
            per_request = max((g.blocks_per_request(tokens) for g in self.groups if g.pool == "state"), default=1)
            by_blocks = min(by_blocks, self.state_slots / per_request)
        return 0.0 if by_blocks == math.inf else by_blocks

    def sequences(self, tokens: int) -> int:
        """Requests of ``tokens`` tokens the engine admits at once: the whole requests the cache holds
        (``floor(concurrency)``), at most ``max_running_requests``, and none longer than ``max_model_len``
        (the engine refuses them)."""
        if tokens > self.max_model_len:
            return 0
        held = math.floor(self.concurrency(tokens) + 1e-9)
        return held if self.max_running_requests is None else min(held, self.max_running_requests)

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "engine_version": self.engine_version,
            "engine_block_size_tokens": self.block_size_tokens,
            "engine_num_blocks": self.num_blocks,
            "engine_kv_cache_tokens": self.kv_cache_tokens,
            "engine_max_concurrency": round(self.max_concurrency, 4),
            "max_model_len": self.max_model_len,
            "available_kv_cache_bytes": self.available_kv_cache_bytes,
            "state_page_bytes": self.state_page_bytes,
            "page_padding_fraction": round(self.page_padding_fraction, 6),
            "kv_cache_groups": [g.to_dict() for g in self.groups],
            "state_slots": self.state_slots,
            "max_running_requests": self.max_running_requests,
            **({"pool_blocks": dict(self.pool_blocks)} if self.pool_blocks else {}),
        }
