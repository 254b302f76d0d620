"""fleet's records: inventory, prices and operational state."""

from .history import ClusterState
from .inventory import Cluster, Deployment, HardwareSku
from .ops import WorkerHeartbeat
from .polls import EndpointPoll, EndpointPollHourly
from .pricing import ApiPrice, GpuQuote

__all__ = [
    "ApiPrice",
    "Cluster",
    "ClusterState",
    "Deployment",
    "EndpointPoll",
    "EndpointPollHourly",
    "GpuQuote",
    "HardwareSku",
    "WorkerHeartbeat",
]
