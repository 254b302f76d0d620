"""Money: rent or API, unit economics, one-time costs, GPU quotes in force and monthly spend.

Pure functions over ``Decimal``. Formulas, units and sources: docs/costs.md. Money is USD ``Decimal``;
token counts are ``int``; prices are per million tokens (``_per_mtok``). Primitive functions return
exact Decimals; the result dataclasses round (USD to the cent, per-Mtok rates to 4 decimals) and their
``to_dict()`` renders Decimals as strings (see ``money``).

The seeds' numbers (30-day month, 2.50 USD per GPU-hour): 1 GPU always on = 720 GPU-hours =
1,800 USD; 8 GPUs 4 h a day = 960 h = 2,400 USD; 8 always on = 5,760 h = 14,400 USD; 32 always on
= 23,040 h = 57,600 USD. 14,400 USD buys 960M output tokens at 15 USD/Mtok (32M a day).
Downloading 1.5 TB at 1 GB/s takes 25 minutes of billed cluster time.

Modules, one concept each:

- ``money``: Decimal rounding and rendering, field-level validation (``Fields``), the seeds' month;
- ``formulas``: the primitives (GPU-hours, rent, API cost, breakeven volumes, capacity, idle cost,
  download time) and the exact forms and checks the results share;
- ``economics``: one cluster's results (``monthly_rent``, ``unit_economics``, ``weights_download``,
  ``weights_storage``);
- ``breakeven``: the rent-versus-API comparison (``breakeven``);
- ``quotes``: GPU quotes in force on a date (an owned cluster's own cost among them);
- ``owned``: what an owned cluster costs (depreciation, energy, colocation, support, staff) and the buy
  option of rent vs API;
- ``spend``: monthly spend from a dated cluster history;
- ``ledger``: a month's spend actual and projected apart, per deployment, with quote warnings;
- ``volumes``: token volumes observed by polls (rate x covered seconds over a window, scaled to a month).
"""

from .breakeven import BreakevenResult, Cheaper, breakeven
from .economics import (
    DownloadResult,
    RentResult,
    StorageResult,
    UnitEconomics,
    monthly_rent,
    unit_economics,
    weights_download,
    weights_storage,
)
from .formulas import (
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
from .ledger import (
    UNASSIGNED,
    DeploymentShare,
    MonthSpend,
    Rate,
    SpendLine,
    SpendPart,
    SpendWarning,
    spend_month,
    utilisation_from_polls,
)
from .money import MAX_PRICE_USD
from .owned import (
    DEFAULT_USEFUL_LIFE_MONTHS,
    BuyOption,
    ElectricityPrice,
    OwnedCluster,
    OwnedMonth,
    Power,
    Purchase,
    buy_option,
    cheapest_of_three,
)
from .quotes import (
    DEFAULT_PRICING_KIND,
    PRICE_BASES,
    PRICING_KINDS,
    PriceInForce,
    Quote,
    basis_of,
    next_quote_change,
    owned_price,
    price_in_force,
    rate_from_quotes,
    superseded,
)
from .spend import STATUSES, ClusterState
from .volumes import MONTH_S, ObservedVolume, RateSample, hour_coverage_s, observed_volume

__all__ = [
    "DEFAULT_PRICING_KIND",
    "DEFAULT_USEFUL_LIFE_MONTHS",
    "MAX_PRICE_USD",
    "MONTH_S",
    "PRICE_BASES",
    "PRICING_KINDS",
    "STATUSES",
    "UNASSIGNED",
    "BreakevenResult",
    "BuyOption",
    "Cheaper",
    "ClusterState",
    "DeploymentShare",
    "DownloadResult",
    "ElectricityPrice",
    "MonthSpend",
    "ObservedVolume",
    "OwnedCluster",
    "OwnedMonth",
    "Power",
    "PriceInForce",
    "Purchase",
    "Quote",
    "Rate",
    "RateSample",
    "RentResult",
    "SpendLine",
    "SpendPart",
    "SpendWarning",
    "StorageResult",
    "UnitEconomics",
    "api_cost_usd",
    "basis_of",
    "blended_input_usd_per_mtok",
    "breakeven",
    "breakeven_output_tokens",
    "breakeven_output_tokens_mix",
    "buy_option",
    "capacity_output_tokens",
    "cheapest_of_three",
    "download_seconds",
    "gpu_hours",
    "hour_coverage_s",
    "idle_cost_usd",
    "monthly_rent",
    "next_quote_change",
    "observed_volume",
    "owned_price",
    "price_in_force",
    "rate_from_quotes",
    "rent_usd",
    "spend_month",
    "superseded",
    "unit_economics",
    "utilisation_from_polls",
    "weights_download",
    "weights_storage",
]
