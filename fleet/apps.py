from django.apps import AppConfig


class FleetConfig(AppConfig):
    name = "fleet"
    verbose_name = "Fleet inventory and live state"

    def ready(self) -> None:
        from fleet import audit, permission_cache, rate_limits  # noqa: F401 (rate_limits: its system check)
        from fleet.models import (
            ApiPrice,
            Cluster,
            ClusterPurchase,
            Deployment,
            ElectricityPrice,
            ExchangeRate,
            GpuQuote,
            HardwareSku,
            ModelSpec,
            OwnedCosts,
            Provider,
            Workload,
        )

        # The audit trail (fleet/audit.py): every create, update and delete of these records.
        owned = (OwnedCosts, ClusterPurchase, ElectricityPrice)
        for model in (HardwareSku, Cluster, ModelSpec, Workload, GpuQuote, ApiPrice, Provider, ExchangeRate, *owned):
            audit.register(model)
        # The poller's live state and leases change every poll: never recorded (and written by raw
        # UPDATEs); the API key only as set or not.
        audit.register(Deployment, exclude=Deployment.LIVE_FIELDS, secrets=["api_key_encrypted"])
        # Who holds which permission changed: the cached permission sets are stale.
        permission_cache.connect()
