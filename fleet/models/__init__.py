"""fleet's records: inventory, prices and operational state."""

from .history import ClusterState
from .inventory import Cluster, Deployment, HardwareSku
from .ops import WorkerHeartbeat
from .pricing import ApiPrice, GpuQuote

__all__ = ["ApiPrice", "Cluster", "ClusterState", "Deployment", "GpuQuote", "HardwareSku", "WorkerHeartbeat"]
