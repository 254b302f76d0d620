"""fleet's records: inventory, prices and operational state."""

from .history import ClusterState
from .inventory import Cluster, Deployment, HardwareSku
from .ops import WorkerHeartbeat
from .polls import DailyPollCount, EndpointPoll, EndpointPollHourly
from .pricing import ApiPrice, GpuQuote

__all__ = [
    "ApiPrice",
    "Cluster",
    "ClusterState",
    "DailyPollCount",
    "Deployment",
    "EndpointPoll",
    "EndpointPollHourly",
    "GpuQuote",
    "HardwareSku",
    "WorkerHeartbeat",
]
