"""What an owned cluster cost and costs to run: its purchases (``ClusterPurchase``), its running costs
(``OwnedCosts``: site, node overhead, PUE, racks and colocation, support, staff) and the sites'
electricity prices by date (``ElectricityPrice``). ``fleet.owned`` turns them into the engine's
``OwnedCluster``; its price in force is its own cost (``planner.engine.owned_price``)."""

from __future__ import annotations

from decimal import Decimal

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from planner.engine import EngineInputError, Purchase, price_text

from .base import TimeStamped
from .inventory import Cluster

CURRENCY = RegexValidator(r"^[A-Z]{3}\Z", "An ISO 4217 code: three capital letters.")


class OwnedCosts(TimeStamped):
    """An owned cluster's running costs (one per cluster). Money is USD."""

    #: What a person enters (the page form and the API list these).
    FIGURES = (
        "site",
        "node_overhead_w",
        "pue",
        "racks",
        "usd_per_rack_month",
        "support_share_per_year",
        "staff_usd_per_month",
        "source",
    )

    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, related_name="owned_costs")
    site = models.CharField(
        max_length=100, help_text="The data centre or colocation site: its electricity prices are looked up by it."
    )
    node_overhead_w = models.FloatField(
        "node overhead (W per node)",
        default=0,
        validators=[MinValueValidator(0), MaxValueValidator(100_000)],
        help_text="CPUs, memory, NICs and fans besides the GPUs. NVIDIA's DGX H100 is rated 10.2 kW "
        "maximum, 8 x 700 W of it GPUs: up to 4,600 W.",
    )
    pue = models.DecimalField(
        "PUE",
        max_digits=4,
        decimal_places=2,
        validators=[MinValueValidator(Decimal(1)), MaxValueValidator(Decimal(5))],
        help_text="Power usage effectiveness of the site (facility energy / IT energy); 1.0 is perfect.",
    )
    racks = models.DecimalField(max_digits=8, decimal_places=2, default=0, validators=[MinValueValidator(0)])
    usd_per_rack_month = models.DecimalField(
        "colocation (USD per rack-month)", max_digits=12, decimal_places=2, default=0, validators=[MinValueValidator(0)]
    )
    support_share_per_year = models.DecimalField(
        "support (share of the purchase price a year)",
        max_digits=5,
        decimal_places=4,
        default=0,
        validators=[MinValueValidator(0), MaxValueValidator(1)],
        help_text="0.08 = 8% of the purchase price a year.",
    )
    staff_usd_per_month = models.DecimalField(
        "staff (USD per month)", max_digits=12, decimal_places=2, default=0, validators=[MinValueValidator(0)]
    )
    source = models.TextField(blank=True, help_text="Where the figures come from (a colocation contract, a bill).")

    class Meta:
        verbose_name = "owned cluster's costs"
        verbose_name_plural = "owned clusters' costs"

    def __str__(self) -> str:
        return f"{self.cluster}: running costs"


class ClusterPurchase(TimeStamped):
    """Nodes of an owned cluster bought on a day, at a price per node or per GPU in a currency,
    depreciated straight-line over ``useful_life_months`` to ``residual_value``."""

    class Per(models.TextChoices):
        NODE = "node", "per node"
        GPU = "gpu", "per GPU"

    #: What a person enters (the page form and the API list these).
    FIGURES = (
        "bought_on", "nodes", "price", "price_per", "currency", "useful_life_months", "residual_value", "source",
    )  # fmt: skip

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="purchases")
    bought_on = models.DateField()
    nodes = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    price = models.DecimalField(max_digits=14, decimal_places=2, validators=[MinValueValidator(Decimal("0.01"))])
    price_per = models.CharField(max_length=4, choices=Per.choices, default=Per.NODE)
    currency = models.CharField(max_length=3, default="USD", validators=[CURRENCY])
    useful_life_months = models.PositiveSmallIntegerField(
        default=48, validators=[MinValueValidator(1), MaxValueValidator(600)], help_text="48 = 4 years."
    )
    residual_value = models.DecimalField(
        max_digits=14,
        decimal_places=2,
        default=0,
        validators=[MinValueValidator(0)],
        help_text="What all these nodes are worth at the end of their life, in the purchase's currency.",
    )
    source = models.TextField(blank=True, help_text="The invoice or order it comes from.")

    class Meta:
        ordering = ["cluster", "bought_on", "pk"]

    def __str__(self) -> str:
        return f"{self.cluster}: {self.nodes} node(s) bought {self.bought_on}"

    def total_price(self, gpus_per_node: int) -> Decimal:
        """What the nodes cost in all, in ``currency``."""
        units = self.nodes * (gpus_per_node if self.price_per == self.Per.GPU else 1)
        return self.price * units

    def clean(self) -> None:
        """The purchase as the engine takes it (``planner.engine.Purchase``: a residual value at most the
        price, a life of 1-600 months), in its own currency: a rate scales the price and residual alike."""
        figures = (self.bought_on, self.nodes, self.price, self.useful_life_months, self.residual_value)
        if not self.cluster_id or any(v is None for v in figures) or self.nodes < 1 or self.price <= 0:
            return  # the field validators report these
        per_node = self.cluster.gpus_per_node or self.cluster.sku.gpus_per_node
        try:
            Purchase(self.bought_on, self.nodes, self.total_price(per_node), self.useful_life_months,
                     self.residual_value)  # fmt: skip
        except EngineInputError as exc:
            names = {"nodes": "nodes", "usd": "price", "useful_life_months": "useful_life_months"}
            names["residual_usd"] = "residual_value"
            raise ValidationError(
                {names.get(k.split(".")[-1], NON_FIELD_ERRORS): v for k, v in exc.errors.items()}
            ) from None


class ElectricityPrice(TimeStamped):
    """A site's electricity price from ``valid_from`` until the site's next one, USD per kWh."""

    site = models.CharField(max_length=100)
    valid_from = models.DateField()
    usd_per_kwh = models.DecimalField(
        "USD per kWh", max_digits=8, decimal_places=5, validators=[MinValueValidator(0), MaxValueValidator(100)]
    )
    source = models.TextField(blank=True, help_text="The utility's tariff or the colocation contract.")

    class Meta:
        ordering = ["site", "-valid_from"]
        constraints = [models.UniqueConstraint(fields=["site", "valid_from"], name="electricity_price_once_a_day")]

    def __str__(self) -> str:
        return f"{self.site}: {price_text(Decimal(self.usd_per_kwh))} USD/kWh from {self.valid_from}"
