"""Record pickers (issue 30, ``fleet.pickers``): the forms that pick a deployment, cluster or workload take
its slug in a text input (an unknown one is an error beside it, never a 500) and clean to what the
``<select>`` gave; ``/pick/<kind>/`` suggests at most 20 of them to users who may read them."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission

from fleet.forms import DeploymentForm
from fleet.models import Cluster, Deployment, Workload
from fleet.pickers import SUGGESTIONS
from planner.forms import PlanForm, RentVsApiForm, WhatIfForm
from planner.models import Plan

# --- the forms ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_forms_clean_a_known_slug_to_what_the_select_gave(chat_served):
    whatif = WhatIfForm({"model": "llama-3.1-70b", "sku": "h100-sxm-80gb", "deployment": " llama "})
    assert whatif.is_valid(), whatif.errors
    assert whatif.cleaned_data["deployment"] == "llama" and whatif.to_request().deployment == "llama"
    rent = RentVsApiForm({"workload": "chat", "deployment": "llama", "api_price": "llama-api"})
    assert rent.is_valid(), rent.errors
    assert (rent.cleaned_data["workload"], rent.cleaned_data["deployment"]) == ("chat", "llama")
    plan = PlanForm({"model": "llama-3.1-70b", "workload": "chat"})
    assert plan.is_valid(), plan.errors
    assert plan.to_request().workload == "chat"
    # Blank is still "none" where it was optional.
    blank = RentVsApiForm(
        {"workload": "", "deployment": "", "gpus": "8", "sku": "h100-sxm-80gb", "api_price": "llama-api"}
    )
    assert blank.is_valid(), blank.errors
    assert (blank.cleaned_data["workload"], blank.cleaned_data["deployment"]) == ("", "")


@pytest.mark.django_db
def test_the_forms_refuse_an_unknown_slug_beside_the_input(chat_served):
    assert WhatIfForm({"model": "llama-3.1-70b", "sku": "h100-sxm-80gb", "deployment": "nope"}).errors == {
        "deployment": ["No deployment named 'nope'."]
    }
    rent = RentVsApiForm({"workload": "Chat", "deployment": "llama", "api_price": "llama-api"})
    assert rent.errors == {"workload": ["No workload named 'Chat'."]}  # a name is not a slug
    assert PlanForm({"model": "llama-3.1-70b", "workload": ""}).errors == {"workload": ["This field is required."]}
    # Text no slug can be is refused unqueried, the message cut short; past what the input takes, said so.
    long = WhatIfForm({"model": "llama-3.1-70b", "sku": "h100-sxm-80gb", "deployment": "x" * 80})
    assert long.errors == {"deployment": [f"No deployment named '{'x' * 40}…'."]}
    huge = WhatIfForm({"model": "llama-3.1-70b", "sku": "h100-sxm-80gb", "deployment": "x" * 100_000})
    assert huge.errors == {"deployment": ["Ensure this value has at most 100 characters (it has 100000)."]}


@pytest.mark.django_db
def test_the_pages_show_the_error_and_keep_what_was_typed(chat_served, client, make_user):
    client.force_login(make_user("a", "admin"))
    r = client.get("/what-if/?model=llama-3.1-70b&sku=h100-sxm-80gb&deployment=nope")
    assert r.status_code == 200 and "No deployment named &#x27;nope&#x27;." in r.content.decode()
    assert 'name="deployment" id="id_deployment" value="nope"' in r.content.decode()
    r = client.get("/rent-vs-api/?workload=chat&deployment=nope&api_price=llama-api")
    assert r.status_code == 200 and "No deployment named &#x27;nope&#x27;." in r.content.decode()
    assert "Check the inputs" in r.content.decode()
    r = client.post("/plans/start/", {"model": "llama-3.1-70b", "workload": "nope"})
    assert r.status_code == 400 and "No workload named &#x27;nope&#x27;." in r.content.decode()
    assert not Plan.objects.exists()


@pytest.mark.django_db
def test_a_what_if_started_from_a_deployment_shows_it(chat_served, client, make_user):
    client.force_login(make_user("v", "viewer"))
    html = client.get("/what-if/?model=llama-3.1-70b&sku=h100-sxm-80gb&deployment=llama").content.decode()
    assert 'name="deployment" id="id_deployment" value="llama"' in html
    assert 'aria-controls="id_deployment-options"' in html and 'hx-get="/pick/deployments/"' in html
    assert '<div class="pick-options" id="id_deployment-options" data-pick-for="id_deployment"></div>' in html
    assert "No deployment named" not in html and "Check the inputs" not in html


@pytest.mark.django_db
def test_the_deployment_form_picks_its_cluster_and_workload_by_slug(chat_served, client, make_user):
    workload, deployment, _price = chat_served
    form = DeploymentForm(instance=deployment)
    html = str(form["cluster"]) + str(form["workload"])
    assert 'value="c"' in html and 'value="chat"' in html and "<option" not in html  # the initial pks, shown as slugs
    data = {
        "slug": "llama-2", "cluster": "c", "model": deployment.model.pk, "workload": "chat", "replicas": 1, "tp": 4,
        "pp": 1, "dp": 1, "ep": 1, "engine": "vllm", "kv_cache_dtype": "fp8", "gpu_memory_utilization": 0.9,
        "poll_interval_s": 15,
    }  # fmt: skip
    bound = DeploymentForm(data)
    assert bound.is_valid(), bound.errors
    assert bound.cleaned_data["cluster"] == deployment.cluster and bound.cleaned_data["workload"] == workload
    assert DeploymentForm({**data, "workload": ""}).is_valid()
    assert DeploymentForm({**data, "cluster": "nope"}).errors["cluster"] == ["No cluster named 'nope'."]
    client.force_login(make_user("p", "platform"))
    r = client.post("/deployments/new/", {**data, "cluster": str(deployment.cluster.pk)})
    assert r.status_code == 400 and "No cluster named &#x27;" in r.content.decode()
    assert client.post("/deployments/new/", data).status_code == 302
    assert Deployment.objects.get(slug="llama-2").workload == workload
    # The cluster page's "Add a deployment" prefills its cluster.
    assert f'href="/deployments/new/?cluster={deployment.cluster.slug}"' in client.get("/clusters/c/").content.decode()
    assert 'name="cluster" id="id_cluster" value="c"' in client.get("/deployments/new/?cluster=c").content.decode()


# --- the suggestions endpoint ------------------------------------------------------------------


@pytest.fixture
def fleet(chat_served):
    """30 more clusters with a deployment each, and 30 more workloads (besides chat's)."""
    _workload, deployment, _price = chat_served
    clusters = Cluster.objects.bulk_create(
        Cluster(slug=f"pool-{i:02d}", name=f"Pool {i:02d}", sku=deployment.cluster.sku, nodes=1,
                provider=deployment.cluster.provider, team="search" if i % 2 else "ads")
        for i in range(30)
    )  # fmt: skip
    Deployment.objects.bulk_create(
        Deployment(slug=f"serve-{c.slug}", cluster=c, model=deployment.model, tp=4) for c in clusters
    )
    Workload.objects.bulk_create(
        Workload(slug=f"wl-{i:02d}", name=f"Batch job {i:02d}", team="data", requests_per_day=1, mean_prompt_tokens=1,
                 mean_output_tokens=1, p95_context_tokens=1, peak_concurrency=1, ttft_slo_ms=1, tpot_slo_ms=1)
        for i in range(30)
    )  # fmt: skip


def _values(response) -> list[str]:
    import re

    return re.findall(r'<button type="button" data-pick="([^"]*)">', response.content.decode())


@pytest.mark.django_db
def test_suggestions_need_a_login_and_the_records_view_permission(fleet, client, make_user):
    for kind in ("deployments", "clusters", "workloads"):
        r = client.get(f"/pick/{kind}/?q=a")
        assert r.status_code == 302 and r["Location"].startswith("/accounts/login/"), kind
    client.force_login(make_user("nobody"))  # in no group: reads nothing
    assert client.get("/pick/deployments/?q=a").status_code == 403
    # A role that may read workloads but not deployments.
    group = Group.objects.create(name="workload-readers")
    group.permissions.add(Permission.objects.get(codename="view_workload"))
    reader = make_user("reader")
    reader.groups.add(group)
    client.force_login(reader)
    assert client.get("/pick/deployments/?q=a").status_code == 403
    assert client.get("/pick/clusters/?q=a").status_code == 403
    assert _values(client.get("/pick/workloads/?q=chat")) == ["chat"]
    client.force_login(make_user("v", "viewer"))
    assert client.get("/pick/deployments/?q=a").status_code == 200
    assert client.get("/pick/nope/").status_code == 404


@pytest.mark.django_db
def test_suggestions_match_slugs_and_names_and_are_at_most_twenty(fleet, client, make_user):
    client.force_login(make_user("v", "viewer"))
    everything = _values(client.get("/pick/deployments/"))
    assert len(everything) == SUGGESTIONS == 20 and everything == sorted(everything)
    assert _values(client.get("/pick/deployments/?q=pool-0")) == [f"serve-pool-0{i}" for i in range(10)]
    # By the model's or the cluster's name, every word somewhere, any case.
    assert len(_values(client.get("/pick/deployments/?q=llama"))) == 20
    assert _values(client.get("/pick/deployments/?q=POOL 07")) == ["serve-pool-07"]
    assert _values(client.get("/pick/deployments/?q=C")) == ["llama", *[f"serve-pool-{i:02d}" for i in range(19)]]
    # Slugs starting with the text come first.
    assert _values(client.get("/pick/deployments/?q=llam"))[0] == "llama"
    assert _values(client.get("/pick/workloads/?q=batch JOB 12")) == ["wl-12"]
    assert _values(client.get("/pick/clusters/?q=search pool 0")) == [f"pool-0{i}" for i in (1, 3, 5, 7, 9)]
    assert _values(client.get("/pick/workloads/?q=nothing-like-it")) == []
    # What an htmx input sends: its own value under its field's name.
    assert _values(client.get("/pick/deployments/?deployment=pool-07")) == ["serve-pool-07"]
    labels = client.get("/pick/deployments/?q=llama").content.decode()
    assert '<code>llama</code> <span class="muted">Llama-3.1-70B-Instruct on C</span>' in labels
    assert "20 deployments (the first 20: type more to narrow them)" in labels
    assert "10 deployments</p>" in client.get("/pick/deployments/?q=pool-0").content.decode()
    assert "No workload matches." in client.get("/pick/workloads/?q=nothing-like-it").content.decode()


@pytest.mark.django_db
def test_a_search_is_bounded_and_checked(fleet, client, make_user):
    client.force_login(make_user("v", "viewer"))
    r = client.get("/pick/deployments/", {"q": "x" * 101})
    assert r.status_code == 400 and "at most 100 characters" in r.content.decode()
    assert client.get("/pick/deployments/", {"q": "x" * 100}).status_code == 200
    assert client.get("/pick/deployments/?q=%00").status_code == 400
    assert _values(client.get("/pick/deployments/?q=%25")) == []  # LIKE's wildcards are text
    assert _values(client.get("/pick/deployments/?q=_")) == []
