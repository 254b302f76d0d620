"""FOCUS bills written for tests and the benchmark: a header of FOCUS 1.2 columns (the ones fleetcap reads
and enough others to look like a provider's export) and rows from dicts."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from typing import Any

COLUMNS = (
    "BilledCost",
    "EffectiveCost",
    "ListCost",
    "ContractedCost",
    "BillingAccountId",
    "BillingAccountName",
    "BillingCurrency",
    "BillingPeriodStart",
    "BillingPeriodEnd",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargeFrequency",
    "ConsumedQuantity",
    "ConsumedUnit",
    "InvoiceIssuerName",
    "ProviderName",
    "PublisherName",
    "RegionId",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "ServiceCategory",
    "ServiceName",
    "SkuId",
    "SubAccountId",
    "Tags",
)

DEFAULTS = {
    "BillingAccountId": "123456789012",
    "BillingAccountName": "acme-payer",
    "BillingCurrency": "USD",
    "ChargeCategory": "Usage",
    "ChargeClass": "",
    "ChargeDescription": "GPU instance hours",
    "ChargeFrequency": "Usage-Based",
    "ConsumedUnit": "Hours",
    "InvoiceIssuerName": "Acme Cloud",
    "ProviderName": "Acme Cloud",
    "PublisherName": "Acme Cloud",
    "RegionId": "eu-west-1",
    "ResourceType": "Virtual Machine",
    "ServiceCategory": "Compute",
    "ServiceName": "Elastic Compute",
    "SkuId": "p5.48xlarge",
    "SubAccountId": "210987654321",
}


def month_period(year: int, month: int) -> tuple[str, str]:
    ny, nm = (year + 1, 1) if month == 12 else (year, month + 1)
    return f"{year:04d}-{month:02d}-01T00:00:00Z", f"{ny:04d}-{nm:02d}-01T00:00:00Z"


def row(billing: tuple[int, int], start: str, end: str, cost: str, **extra: Any) -> dict[str, str]:
    """A row billed in ``billing`` (year, month), charged over [start, end) (``YYYY-MM-DD`` days)."""
    bstart, bend = month_period(*billing)
    tags = extra.pop("Tags", None)
    out = {
        **DEFAULTS,
        "BillingPeriodStart": bstart,
        "BillingPeriodEnd": bend,
        "ChargePeriodStart": f"{start}T00:00:00Z",
        "ChargePeriodEnd": f"{end}T00:00:00Z",
        "BilledCost": cost,
        "EffectiveCost": cost,
        "ListCost": cost,
        "ContractedCost": cost,
        "Tags": json.dumps(tags) if tags is not None else "",
        **extra,
    }
    return out


def focus_csv(rows: Iterable[dict[str, str]], columns: Iterable[str] = COLUMNS) -> bytes:
    columns = list(columns)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for r in rows:
        writer.writerow([r.get(c, "") for c in columns])
    return out.getvalue().encode()
