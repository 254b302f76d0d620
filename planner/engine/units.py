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


#: Binary (IEC) units a byte count is written in: 1 KiB = 1,024 bytes, 1 GiB = 1,073,741,824 bytes.
BINARY_UNITS: tuple[str, ...] = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def binary_parts(n: float, digits: int = 2, unit: str | None = None) -> tuple[str, str]:
    """``(number, unit)`` of a byte count in the largest binary unit it reaches (``("1.50", "GiB")``), or
    in ``unit`` when given: the one rule every page, table and note writes bytes by."""
    size, index = abs(float(n)), 0
    if unit is not None:
        index = BINARY_UNITS.index(unit)
        size /= 1024**index
    else:
        while size >= 1024 and index < len(BINARY_UNITS) - 1:
            size /= 1024
            index += 1
    sign = "-" if n < 0 else ""
    if index == 0:
        return f"{sign}{round(size):,}", "B"
    return f"{sign}{size:,.{digits}f}", BINARY_UNITS[index]


def bytes_text(n: float, digits: int = 2) -> str:
    """A byte count in binary units: ``1610612736`` -> ``"1.50 GiB"``."""
    number, unit = binary_parts(n, digits)
    return f"{number} {unit}"


def bytes_exact(n: int) -> str:
    """A byte count for a derivation: in binary units, the exact bytes in brackets from a KiB on
    (``"19.13 MiB (20,054,016 B)"``; ``"512 B"``)."""
    text = bytes_text(n)
    return text if abs(n) < KIB else f"{text} ({n:,} B)"
