"""Rent or API: monthly rent of a GPU cluster, hosted-API cost, breakeven volume, unit economics
and one-time costs (weights download, persistent volume). Pure functions over ``Decimal``.

Formulas, units and sources: docs/costs.md. Money is USD ``Decimal``; token counts are ``int``;
prices are per million tokens (``_per_mtok``). Primitive functions return exact Decimals; the
result dataclasses round (USD to the cent, per-Mtok rates to 4 decimals) and their ``to_dict()``
renders Decimals as strings (see ``cost_money``).

The seeds' numbers (30-day month, 2.50 USD per GPU-hour): 1 GPU always on = 720 GPU-hours =
1,800 USD; 8 GPUs 4 h a day = 960 h = 2,400 USD; 8 always on = 5,760 h = 14,400 USD; 32 always on
= 23,040 h = 57,600 USD. 14,400 USD buys 960M output tokens at 15 USD/Mtok (32M a day).
Downloading 1.5 TB at 1 GB/s takes 25 minutes of billed cluster time.

The code lives in ``cost_formulas`` (primitives), ``cost_results`` (rent, unit economics, download,
storage) and ``cost_breakeven`` (the comparison); this module is their public face.
"""

from .cost_breakeven import BreakevenResult, breakeven
from .cost_formulas import (
    api_cost_usd,
    blended_input_usd_per_mtok,
    breakeven_output_tokens,
    breakeven_output_tokens_mix,
    capacity_output_tokens,
    download_seconds,
    gpu_hours,
    idle_cost_usd,
    rent_usd,
)
from .cost_results import (
    DownloadResult,
    RentResult,
    StorageResult,
    UnitEconomics,
    monthly_rent,
    unit_economics,
    weights_download,
    weights_storage,
)

__all__ = [
    "BreakevenResult",
    "DownloadResult",
    "RentResult",
    "StorageResult",
    "UnitEconomics",
    "api_cost_usd",
    "blended_input_usd_per_mtok",
    "breakeven",
    "breakeven_output_tokens",
    "breakeven_output_tokens_mix",
    "capacity_output_tokens",
    "download_seconds",
    "gpu_hours",
    "idle_cost_usd",
    "monthly_rent",
    "rent_usd",
    "unit_economics",
    "weights_download",
    "weights_storage",
]
