"""Who may read and write what over the API: anonymous refused, viewer read-only, each role its
records (Django model permissions on the role groups; tests/test_permissions_matrix.py has every
route)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient
from test_api_crud import SKU, WORKLOAD

LISTS = ["skus", "clusters", "deployments", "gpu-quotes", "api-prices", "models", "workloads"]


@pytest.mark.django_db
@pytest.mark.parametrize("name", LISTS)
def test_anonymous_is_refused(name):
    r = APIClient().get(f"/api/v1/{name}/")
    assert r.status_code in (401, 403)
    assert r.status_code == 401  # token auth comes first, so DRF answers with a challenge
    assert r["WWW-Authenticate"].startswith("Bearer")  # Token works too (fleet.api.authentication)


@pytest.mark.django_db
@pytest.mark.parametrize("name", LISTS)
def test_viewer_reads_everything(viewer_api, name):
    assert viewer_api.get(f"/api/v1/{name}/").status_code == 200


@pytest.mark.django_db
def test_viewer_cannot_write(viewer_api, sku, cluster):
    assert viewer_api.post("/api/v1/skus/", SKU, format="json").status_code == 403
    assert viewer_api.patch(f"/api/v1/clusters/{cluster.slug}/", {"nodes": 2}, format="json").status_code == 403
    assert viewer_api.delete(f"/api/v1/clusters/{cluster.slug}/").status_code == 403
    assert viewer_api.post("/api/v1/workloads/", WORKLOAD, format="json").status_code == 403
    quote = {"sku": sku.slug, "provider": "p", "usd_per_gpu_hour": "2.5", "quoted_on": "2026-07-17"}
    assert viewer_api.post("/api/v1/gpu-quotes/", quote, format="json").status_code == 403
    cluster.refresh_from_db()
    assert cluster.nodes == 4


@pytest.mark.django_db
@pytest.mark.parametrize("name", LISTS)
def test_user_without_role_can_neither_read_nor_write(client_for, name):
    api = client_for(None)
    assert api.get(f"/api/v1/{name}/").status_code == 403  # reads need view_<model> too
    assert api.post("/api/v1/skus/", SKU, format="json").status_code == 403


@pytest.mark.django_db
def test_a_permission_granted_to_one_user_works_without_a_role(client_for, sku):
    """Nothing looks at group names: a permission given directly to a user is honoured."""
    from django.contrib.auth.models import Permission

    api = client_for(None)
    api.user.user_permissions.add(Permission.objects.get(codename="view_hardwaresku"))
    assert api.get("/api/v1/skus/").status_code == 200
    assert api.get("/api/v1/clusters/").status_code == 403


@pytest.mark.django_db
def test_finance_writes_prices_not_inventory(finance_api, sku):
    assert finance_api.post("/api/v1/providers/", {"name": "p"}, format="json").status_code == 201
    assert finance_api.post("/api/v1/skus/", SKU, format="json").status_code == 403
    quote = {"sku": sku.slug, "provider": "p", "usd_per_gpu_hour": "2.5", "quoted_on": "2026-07-17"}
    assert finance_api.post("/api/v1/gpu-quotes/", quote, format="json").status_code == 201


@pytest.mark.django_db
def test_platform_writes_inventory_not_prices(platform_api, sku):
    assert platform_api.post("/api/v1/skus/", SKU, format="json").status_code == 201
    quote = {"sku": sku.slug, "provider": "p", "usd_per_gpu_hour": "2.5", "quoted_on": "2026-07-17"}
    assert platform_api.post("/api/v1/gpu-quotes/", quote, format="json").status_code == 403


@pytest.mark.django_db
def test_admin_role_and_superuser_write_everything(client_for, make_user, sku):
    admin_api = client_for("admin")
    assert admin_api.post("/api/v1/skus/", SKU, format="json").status_code == 201
    root = make_user("root", None, is_superuser=True)
    api = APIClient()
    api.force_authenticate(root)
    assert admin_api.post("/api/v1/providers/", {"name": "p"}, format="json").status_code == 201
    quote = {"sku": sku.slug, "provider": "p", "usd_per_gpu_hour": "2.5", "quoted_on": "2026-07-17"}
    assert api.post("/api/v1/gpu-quotes/", quote, format="json").status_code == 201


@pytest.mark.django_db
def test_session_auth_needs_csrf_for_writes(client, make_user):
    user = make_user("p", "platform")
    api = APIClient(enforce_csrf_checks=True)
    api.force_login(user)
    assert api.get("/api/v1/skus/").status_code == 200
    assert api.post("/api/v1/skus/", SKU, format="json").status_code == 403
