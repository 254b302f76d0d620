"""The plan page's "Register as deployment" and the deployment page's launch command (planner/views/plans.py,
templates/planner/plan_deploy.html, templates/fleet/_launch.html)."""

from __future__ import annotations

import pytest

from fleet.models import Cluster, Deployment, HardwareSku, Provider
from planner import plans as plan_service
from planner.models import Plan


@pytest.fixture
def plan(catalog_and_agent, make_user):
    body = {"model": "kimi-k3", "workload": "agent", "skus": ("h200-141gb",), "max_nodes": 4, "modes": ("aggregated",)}
    created = plan_service.create_plan(plan_service.PlanRequest(**body), None)
    done = plan_service.execute_plan(str(created.pk))
    assert done.status == Plan.Status.DONE and len(done.result["top"]) >= 2
    sku = HardwareSku.objects.get(slug="h200-141gb")
    Cluster.objects.create(
        slug="h200s", name="H200s", sku=sku, nodes=4, provider=Provider.objects.ensure("acme"), team="ml"
    )
    return done


@pytest.mark.django_db
def test_register_the_second_layout_from_the_plan_page(client, make_user, plan):
    client.force_login(make_user("platform", "platform"))
    page = client.get(f"/plans/{plan.pk}/").content.decode()
    assert f'href="/plans/{plan.pk}/deploy/?rank=2"' in page
    form = client.get(f"/plans/{plan.pk}/deploy/?rank=2")
    assert form.status_code == 200 and 'value="kimi-k3-h200-141gb-2"' in form.content.decode()
    r = client.post(
        f"/plans/{plan.pk}/deploy/",
        {"rank": 2, "cluster": "h200s", "slug": "k3-second", "engine": "sglang", "max_model_len": ""},
    )
    assert r.status_code == 302 and r["Location"] == "/deployments/k3-second/"
    second = plan.result["top"][1]
    d = Deployment.objects.get(slug="k3-second")
    assert (d.engine, d.replicas, d.tp) == ("sglang", second["decode"]["replicas"], second["decode"]["layout"]["tp"])
    page = client.get("/deployments/k3-second/").content.decode()
    assert "python -m sglang.launch_server --model-path moonshotai/Kimi-K3" in page
    assert 'data-copy="launch-command"' in page and "nvidia.com/gpu" in page


@pytest.mark.django_db
def test_bad_input_stays_on_the_form_and_a_viewer_is_refused(client, make_user, plan):
    client.force_login(make_user("platform", "platform"))
    r = client.post(
        f"/plans/{plan.pk}/deploy/", {"rank": 1, "cluster": "h200s", "slug": "Not A Slug", "engine": "vllm"}
    )
    assert r.status_code == 400 and "slug" in r.context["form"].errors
    assert not Deployment.objects.exists()
    client.force_login(make_user("viewer", "viewer"))
    assert client.get(f"/plans/{plan.pk}/deploy/?rank=1").status_code == 403
    assert 'class="button register-layout"' not in client.get(f"/plans/{plan.pk}/").content.decode()
