"""The dated history of each cluster's size, schedule and status.

Spend for a past month must not change when a cluster is edited today, so every change to the
figures that cost money (nodes, GPUs per node, hours per day, status, SKU, team, provider) is
recorded as a new ``ClusterState`` effective from a date. Spend reads the states, never the
cluster's current row.
"""

from __future__ import annotations

from datetime import date

from django.db import models

#: The cluster fields whose changes are recorded.
TRACKED_FIELDS: tuple[str, ...] = ("sku_id", "nodes", "gpus_per_node", "hours_per_day", "status", "team", "provider_id")


class ClusterState(models.Model):
    """A cluster's figures from ``effective_from`` (inclusive) until the next state."""

    cluster = models.ForeignKey("fleet.Cluster", on_delete=models.CASCADE, related_name="states")
    effective_from = models.DateField()
    sku = models.ForeignKey("fleet.HardwareSku", on_delete=models.PROTECT, related_name="+")
    nodes = models.PositiveIntegerField()
    gpus_per_node = models.PositiveSmallIntegerField()
    hours_per_day = models.DecimalField(max_digits=4, decimal_places=2)
    status = models.CharField(max_length=10)
    team = models.CharField(max_length=100)
    provider = models.ForeignKey("fleet.Provider", on_delete=models.PROTECT, related_name="+")
    recorded = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["cluster", "effective_from", "recorded"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "effective_from"], name="one_state_per_cluster_and_day")
        ]

    def __str__(self) -> str:
        return f"{self.cluster_id} from {self.effective_from}: {self.gpus} GPUs, {self.hours_per_day} h/day"

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @classmethod
    def record(cls, cluster, effective_from: date) -> ClusterState:
        """Record the cluster's current figures from ``effective_from`` (same day: replaced)."""
        values = {name: getattr(cluster, name) for name in TRACKED_FIELDS}
        state, _ = cls.objects.update_or_create(cluster=cluster, effective_from=effective_from, defaults=values)
        return state
