"""Refusals that help: a layout that does not fit names the smallest layouts that would on its cluster
(fleet/registration.py ``fitting_layouts``), over the layouts the layout search enumerates, sized by the
deployment's own rule; the form offers each as a one-click fill."""

from __future__ import annotations

import pytest

from fleet.models import Deployment
from fleet.registration import fitting_layouts


@pytest.mark.django_db
def test_a_refused_layout_names_the_smallest_that_fit(platform_api, cluster, kimi_k3):
    """K3 (bf16 with MXFP4 experts, ~1.56 TB of weights) on 32 H100s of 80 GB at 128K context: tp 1 x dp 32
    holds the whole attention on each GPU and does not fit; the suggestions fit, fewest GPUs first, and the
    first one registers."""
    base = {"slug": "d", "cluster": cluster.slug, "model": kimi_k3.slug, "engine": "vllm", "max_model_len": 131072}
    r = platform_api.post("/api/v1/deployments/", {**base, "tp": 1, "dp": 32, "ep": 32}, format="json")
    assert r.status_code == 400
    message = r.json()["tp"][0]
    assert message.startswith("This layout does not fit") and "Smallest layouts that fit on this cluster: " in message
    trial = Deployment(cluster=cluster, model=kimi_k3, engine="vllm", max_model_len=131072, tp=1, dp=32, ep=32)
    found = fitting_layouts(trial)
    assert 1 <= len(found) <= 3
    assert [lay.gpus for lay in found] == sorted(lay.gpus for lay in found)
    assert all(lay.gpus <= cluster.total_gpus for lay in found)
    first = found[0]
    body = {**base, "tp": first.tp, "pp": first.pp, "dp": first.dp, "ep": first.ep}
    ok = platform_api.post("/api/v1/deployments/", body, format="json")
    assert ok.status_code == 201, ok.json()


@pytest.mark.django_db
def test_the_form_offers_each_as_one_click(client, make_user, cluster, kimi_k3):
    client.force_login(make_user("platform", "platform"))
    data = {
        "slug": "d", "cluster": cluster.slug, "model": kimi_k3.pk, "engine": "vllm", "max_model_len": 131072,
        "replicas": 1, "tp": 1, "pp": 1, "dp": 32, "ep": 32, "kv_cache_dtype": "bf16", "gpu_memory_utilization": 0.9,
        "poll_interval_s": 15,
    }  # fmt: skip
    r = client.post("/deployments/new/", data)
    assert r.status_code == 400
    page = r.content.decode()
    assert 'id="fitting-layouts"' in page and "data-fill=" in page and "&quot;id_tp&quot;" in page
    assert not Deployment.objects.exists()
