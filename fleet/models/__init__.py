"""fleet's records: inventory, models, workloads, prices, polls and operational state."""

from .bills import BillRow, CloudBill, ExchangeRate
from .history import ClusterState
from .inventory import Cluster, Deployment, HardwareSku
from .ops import IdempotentRequest, OutboxMessage, ScheduledRun, WorkerHeartbeat
from .owned import ClusterPurchase, ElectricityPrice, OwnedCosts
from .polls import DailyPollCount, EndpointPoll, EndpointPollHourly
from .pricing import ApiPrice, GpuQuote
from .providers import Provider
from .snapshots import CapacitySnapshot
from .specs import ModelSpec
from .tokens import ApiToken
from .workloads import Workload

__all__ = [
    "ApiPrice",
    "ApiToken",
    "BillRow",
    "CapacitySnapshot",
    "CloudBill",
    "Cluster",
    "ClusterPurchase",
    "ClusterState",
    "DailyPollCount",
    "Deployment",
    "ElectricityPrice",
    "EndpointPoll",
    "EndpointPollHourly",
    "ExchangeRate",
    "GpuQuote",
    "HardwareSku",
    "IdempotentRequest",
    "ModelSpec",
    "OutboxMessage",
    "OwnedCosts",
    "Provider",
    "ScheduledRun",
    "WorkerHeartbeat",
    "Workload",
]
