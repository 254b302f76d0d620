"""Byte units used across the engine. Every engine result is in bytes (``int``).

Decimal units (``GB``, ``TB``) are what vendors print on HBM and what the seeds use for
weights ("1.4 TB", "80 GB"); binary units (``GiB``, ``MiB``) are what serving engines use
for their reserves and what the seeds use for KV cache ("128 KiB per token", "16 GiB per
user"). Names in the engine carry their unit: ``_bytes``, ``_gb`` (decimal), ``_gib`` (binary).
"""

from __future__ import annotations

KB: int = 10**3
GB: int = 10**9
TB: int = 10**12

KIB: int = 1 << 10
MIB: int = 1 << 20
GIB: int = 1 << 30


def gib_to_bytes(gib: float) -> int:
    """Binary gibibytes to whole bytes (rounded to the nearest byte)."""
    return round(gib * GIB)


def gb_to_bytes(gb: float) -> int:
    """Decimal gigabytes (1e9 bytes) to whole bytes (rounded to the nearest byte)."""
    return round(gb * GB)


def ceil_div(a: int, b: int) -> int:
    """Integer ceiling of ``a / b`` for positive ``b``."""
    return -(-a // b)
