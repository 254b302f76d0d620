"""fleet 0018: free-text providers become Provider records (issue 24), on a database that holds rows
written before: names grouped whatever their case, the seeds' 'seed-assumption' quotes left with no
provider (an assumption), the clusters' dated states pointing at the same records."""

from __future__ import annotations

from datetime import date

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("fleet", "0017_daily_polls_left_out")]
AFTER = [("fleet", "0018_providers")]


@pytest.mark.django_db(transaction=True)
def test_free_text_providers_become_records_and_the_seeds_quote_an_assumption():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    Sku = old.get_model("fleet", "HardwareSku")
    Cluster = old.get_model("fleet", "Cluster")
    ClusterState = old.get_model("fleet", "ClusterState")
    GpuQuote = old.get_model("fleet", "GpuQuote")
    sku = Sku.objects.create(
        slug="h200", name="H200", vendor="NVIDIA", hbm_gb=141, hbm_bandwidth_tbps=4.8, bf16_tflops=989,
        interconnect_gbps=900, gpus_per_node=8,
    )  # fmt: skip
    for slug, provider in (("a", "CoreWeave"), ("b", "coreweave "), ("c", "seed-assumption")):
        cluster = Cluster.objects.create(slug=slug, name=slug, sku=sku, nodes=1, gpus_per_node=8,
                                         provider=provider, team="t")  # fmt: skip
        ClusterState.objects.create(cluster=cluster, effective_from=date(2026, 7, 1), sku=sku, nodes=1,
                                    gpus_per_node=8, hours_per_day=24, status="active", team="t",
                                    provider=provider)  # fmt: skip
    seeds = GpuQuote.objects.create(sku=sku, provider="seed-assumption", usd_per_gpu_hour="2.50",
                                    quoted_on=date(2026, 7, 17))  # fmt: skip
    listed = GpuQuote.objects.create(sku=sku, provider="COREWEAVE", usd_per_gpu_hour="6.305",
                                     quoted_on=date(2026, 9, 20), list_price=True)  # fmt: skip

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps
    Provider = new.get_model("fleet", "Provider")
    Cluster = new.get_model("fleet", "Cluster")
    ClusterState = new.get_model("fleet", "ClusterState")
    GpuQuote = new.get_model("fleet", "GpuQuote")
    names = dict(Provider.objects.values_list("name", "kind"))
    assert names == {"CoreWeave": "neo-cloud", "seed-assumption": "cloud"}  # one CoreWeave, whatever the case
    coreweave = Provider.objects.get(name="CoreWeave")
    assert {c.slug: c.provider_id for c in Cluster.objects.all()} == {
        "a": coreweave.pk, "b": coreweave.pk, "c": Provider.objects.get(name="seed-assumption").pk,
    }  # fmt: skip
    assert {s.cluster.slug: s.provider_id for s in ClusterState.objects.select_related("cluster")} == {
        c.slug: c.provider_id for c in Cluster.objects.all()
    }
    assert GpuQuote.objects.get(pk=seeds.pk).provider_id is None  # an assumption: never in force
    assert GpuQuote.objects.get(pk=listed.pk).provider_id == coreweave.pk
    # And back: the text is restored (the assumption as the seeds' name).
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    quotes = dict(old.get_model("fleet", "GpuQuote").objects.values_list("pk", "provider"))
    assert quotes == {seeds.pk: "seed-assumption", listed.pk: "CoreWeave"}
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
