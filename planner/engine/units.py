"""Units used across the engine: bytes, time and tokens. The one home of every unit constant.

Every engine result is in bytes (``int``). Decimal units (``KB``, ``GB``, ``TB``) are what vendors
print on HBM and what the seeds use for weights ("1.4 TB", "80 GB"); binary units (``KIB``, ``MIB``,
``GIB``) are what serving engines use for their reserves and what the seeds use for KV cache
("128 KiB per token", "16 GiB per user"). Names in the engine carry their unit: ``_bytes``, ``_gb``
(decimal), ``_gib`` (binary), ``_s`` (seconds), ``_tbps``/``_gbps`` (decimal bytes per second).
"""

from __future__ import annotations

# --- bytes: decimal (vendors' HBM, weights, download bandwidth, volume prices) ---------------
KB: int = 10**3
GB: int = 10**9
TB: int = 10**12

# --- bytes: binary (serving engines' reserves, KV cache) -------------------------------------
KIB: int = 1 << 10
MIB: int = 1 << 20
GIB: int = 1 << 30

# --- time ------------------------------------------------------------------------------------
SECONDS_PER_MINUTE: int = 60
SECONDS_PER_HOUR: int = 3600
HOURS_PER_DAY: int = 24
SECONDS_PER_DAY: int = SECONDS_PER_HOUR * HOURS_PER_DAY  # 86,400

# --- tokens ----------------------------------------------------------------------------------
#: Tokens in one million tokens, the unit of API prices and of ``usd_per_mtok`` figures.
TOKENS_PER_MTOK: int = 10**6


def gib_to_bytes(gib: float) -> int:
    """Binary gibibytes to whole bytes (rounded to the nearest byte)."""
    return round(gib * GIB)


def gb_to_bytes(gb: float) -> int:
    """Decimal gigabytes (1e9 bytes) to whole bytes (rounded to the nearest byte)."""
    return round(gb * GB)


def ceil_div(a: int, b: int) -> int:
    """Integer ceiling of ``a / b`` for positive ``b``."""
    return -(-a // b)
