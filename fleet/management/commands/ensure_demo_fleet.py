"""``manage.py ensure_demo_fleet``: a demo workload, cluster and deployment for a fresh machine.

The deployment points at the fake vLLM endpoint ``make run`` starts beside the app
(``python -m fleet.polling.fakeserver``), so the dashboard shows live data with no GPU anywhere.
Idempotent; it only upserts its own slugs.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from fleet.audit import AuditedCommandMixin
from fleet.models import Cluster, Deployment, HardwareSku, ModelSpec, Provider, Workload

DEMO_MODEL_ID = "meta-llama/Llama-3.1-70B-Instruct"
#: The demo deployment ``make run`` registers and its fake vLLM endpoint serves (``runstack``).
DEMO_DEPLOYMENT = "demo-llama-70b"
#: The demo cluster's provider: the catalogue holds its public H100 list price.
DEMO_PROVIDER = "Lambda"


class Command(AuditedCommandMixin, BaseCommand):
    help = "Create the demo workload, cluster and deployment (pointed at the fake endpoint of make run)."

    def add_arguments(self, parser):
        parser.add_argument("--endpoint", default="http://127.0.0.1:8100", help="Base URL of the fake endpoint")

    def handle(self, *args, **options):
        try:
            sku = HardwareSku.objects.get(slug="h100-sxm-80gb")
            model = ModelSpec.objects.get(slug="llama-3.1-70b")
        except (HardwareSku.DoesNotExist, ModelSpec.DoesNotExist) as exc:
            raise CommandError("Load the catalogue first: python manage.py load_catalog") from exc
        workload, _ = Workload.objects.update_or_create(
            slug="coding-agent",
            defaults={
                "name": "Coding agent",
                "team": "dev-tools",
                "requests_per_day": 200_000,
                "mean_prompt_tokens": 12_000,
                "mean_output_tokens": 600,
                "p95_context_tokens": 64_000,
                "prefix_cache_hit_rate": 0.9,
                "peak_concurrency": 256,
                "ttft_slo_ms": 2000,
                "tpot_slo_ms": 50,
            },
        )
        # Priced at Lambda's public H100 list price (the catalogue's): a provider's price, never the
        # seeds' 2.50 assumption (which is in force nowhere).
        provider = Provider.objects.ensure(DEMO_PROVIDER, Provider.Kind.NEO_CLOUD)
        cluster = Cluster.objects.filter(slug="demo-h100").select_related("provider").first()
        if cluster is None:
            cluster = Cluster(
                slug="demo-h100",
                name="Demo H100 node",
                sku=sku,
                nodes=1,
                provider=provider,
                region="local",
                team="platform",
            )
            cluster.save(effective_from=timezone.now().date().replace(day=1))
        elif cluster.provider.name == "seed-assumption":  # a demo made before providers were records
            cluster.provider = provider
            cluster.save(effective_from=timezone.now().date().replace(day=1))
        deployment, _ = Deployment.objects.update_or_create(
            slug=DEMO_DEPLOYMENT,
            defaults={
                "cluster": cluster,
                "model": model,
                "workload": workload,
                "replicas": 2,
                "tp": 4,
                "engine": "vllm",
                "base_url": options["endpoint"],
                "served_model_id": DEMO_MODEL_ID,
                "kv_cache_dtype": "fp8",
                "max_model_len": 32768,
                "poll_interval_s": 5,
                "enabled": True,
            },
        )
        self.stdout.write(f"Demo fleet: cluster {cluster.slug}, deployment {deployment.slug} -> {options['endpoint']}")
