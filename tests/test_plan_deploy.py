"""From plan to deployment (planner/deploy.py, POST /api/v1/plans/{id}/deploy/) and the launch command of a
deployment (GET /api/v1/deployments/{slug}/launch/, planner/engine/launch.py).

K3 for the coding agent on H200s (tests/conftest.py ``catalog_and_agent``), searched up to 4 nodes: the
ranked configurations register on a 4-node H200 cluster with their own layout, replicas and KV cache
dtype; the deployment's launch command carries exactly those (flag by flag), and refusals name why.
"""

from __future__ import annotations

import pytest

from fleet.models import Cluster, Deployment, HardwareSku, Provider
from planner import plans as plan_service
from planner.engine import OUTCOMES

PLANS = "/api/v1/plans/"


@pytest.fixture
def plan(platform_api, catalog_and_agent):
    body = {"model": "kimi-k3", "workload": "agent", "skus": ["h200-141gb"], "max_nodes": 4, "modes": ["aggregated"]}
    r = platform_api.post(PLANS, body, format="json")
    assert r.status_code == 202, r.json()
    done = plan_service.execute_plan(r.json()["id"])
    assert done.status == "done" and done.result["top"], done.error
    sku = HardwareSku.objects.get(slug="h200-141gb")
    Cluster.objects.create(
        slug="h200s", name="H200s", sku=sku, nodes=4, provider=Provider.objects.ensure("acme"), team="ml"
    )
    return done


@pytest.mark.django_db
def test_register_the_best_layout_and_get_its_launch_command(platform_api, plan):
    best = plan.result["top"][0]
    ranking = platform_api.get(f"{PLANS}{plan.pk}/").json()["ranking"]
    assert ranking[0]["rank"] == 1 and ranking[0]["sku"] == best["sku"]
    assert ranking[0]["why"].startswith(f"{OUTCOMES['best']}: ") and ranking[0]["outcome"] == "best"
    assert all(row["why"] for row in ranking)
    r = platform_api.post(
        f"{PLANS}{plan.pk}/deploy/", {"rank": 1, "cluster": "h200s", "slug": "k3-best"}, format="json"
    )
    assert r.status_code == 201, r.json()
    d = Deployment.objects.get(slug="k3-best")
    layout = best["decode"]["layout"]
    assert (d.tp, d.pp, d.dp, d.ep) == tuple(layout.get(k) or 1 for k in ("tp", "pp", "dp", "ep"))
    assert d.replicas == best["decode"]["replicas"] and d.kv_cache_dtype == best["kv_cache_dtype"]
    assert d.workload.slug == "agent" and d.model.slug == "kimi-k3" and d.engine == "vllm"
    assert d.max_model_len == d.workload.p95_context_tokens
    launch = r.json()["launch"]
    assert launch == platform_api.get("/api/v1/deployments/k3-best/launch/").json()
    argv = launch["argv"]
    assert argv[:3] == ["vllm", "serve", d.model.hf_model_id]
    assert argv[argv.index("--tensor-parallel-size") + 1] == str(d.tp)
    assert argv[argv.index("--pipeline-parallel-size") + 1] == str(d.pp)
    assert argv[argv.index("--max-model-len") + 1] == str(d.max_model_len)
    assert argv[argv.index("--gpu-memory-utilization") + 1] == f"{d.gpu_memory_utilization:g}"
    assert ("--enable-expert-parallel" in argv) == (d.ep > 1)
    assert f'nvidia.com/gpu: "{min(d.gpus_per_replica, 8)}"' in launch["kubernetes"]
    assert all(f["source"].startswith("vllm 0.33.0 ") for f in launch["flags"])
    sglang = platform_api.get("/api/v1/deployments/k3-best/launch/?launch_engine=sglang").json()
    assert sglang["argv"][:3] == ["python", "-m", "sglang.launch_server"]
    assert sglang["argv"][sglang["argv"].index("--tp-size") + 1] == str(d.tp * d.dp)


@pytest.mark.django_db
def test_refusals_say_why(platform_api, viewer_api, plan):
    url = f"{PLANS}{plan.pk}/deploy/"
    r = platform_api.post(url, {"rank": 999, "cluster": "h200s", "slug": "x"}, format="json")
    assert r.status_code == 400 and r.json()["rank"][0].startswith("Pick a rank from 1 to")
    r = platform_api.post(url, {"rank": 1, "cluster": "nope", "slug": "x"}, format="json")
    assert r.status_code == 400 and r.json()["cluster"] == ["No cluster nope."]
    h100 = HardwareSku.objects.get(slug="h100-sxm-80gb")
    Cluster.objects.create(
        slug="h100s", name="H100s", sku=h100, nodes=2, provider=Provider.objects.ensure("acme"), team="ml"
    )
    r = platform_api.post(url, {"rank": 1, "cluster": "h100s", "slug": "x"}, format="json")
    assert r.status_code == 400 and "this layout is for h200-141gb (h200s)" in r.json()["cluster"][0]
    assert viewer_api.post(url, {"rank": 1, "cluster": "h200s", "slug": "x"}, format="json").status_code == 403
    assert not Deployment.objects.filter(slug="x").exists()
