"""The route page: a request class typed into a Django form, the ranking with reasons (HTMX partial),
errors beside the inputs, read access only."""

from __future__ import annotations

import pytest
from django.utils.html import escape
from test_route_api import KEY, fleet  # noqa: F401  (the fixture)

from planner.forms import RouteForm

URL = (
    "/route/?context_tokens=8192&prompt_tokens=4000&output_tokens=300&prefix_reuse_fraction=0.8"
    "&ttft_slo_ms=2000&tpot_slo_ms=50"
)


@pytest.fixture
def viewer(client, make_user):
    client.force_login(make_user("v", "viewer"))
    return client


def _error_beside(html: str, field: str) -> str:
    return html.split(f'id="err-{field}"')[1].split(">", 1)[1].split("</span>")[0]


@pytest.mark.django_db
def test_route_page_ranks_with_reasons(viewer, fleet):  # noqa: F811
    page = viewer.get(URL)
    assert page.status_code == 200 and "HX-Request" in page["Vary"]
    html = page.content.decode()
    assert "<form" in html and 'id="route-best"' in html and "llama-fresh" in html
    assert (
        html.index('data-slug="llama-fresh"')
        < html.index('data-slug="llama-api"')
        < html.index('data-slug="llama-down"')
    )
    assert "Warm prefix: 3200 of 4000 prompt tokens reusable" in html and "Stale: last poll" in html
    assert KEY not in html
    partial = viewer.get(URL, HTTP_HX_REQUEST="true").content.decode()
    assert partial.lstrip().startswith('<section id="route-result"') and "<form" not in partial
    assert partial.count('hx-swap-oob="true"') == len(RouteForm.base_fields)


@pytest.mark.django_db
def test_route_page_starts_from_its_example(viewer, fleet):  # noqa: F811
    html = viewer.get("/route/").content.decode()
    assert 'value="8192"' in html and 'id="route-table"' in html


@pytest.mark.django_db
def test_route_page_errors_sit_beside_their_inputs(viewer, fleet):  # noqa: F811
    bad = viewer.get(URL.replace("prompt_tokens=4000", "prompt_tokens=9000"), HTTP_HX_REQUEST="true")
    assert bad.status_code == 200
    html = bad.content.decode()
    assert "Check the inputs" in html and "prompt + output" in _error_beside(html, "context_tokens")
    assert _error_beside(html, "prompt_tokens") == ""
    typed = viewer.get(URL.replace("output_tokens=300", "output_tokens=banana")).content.decode()
    assert _error_beside(typed, "output_tokens") == "Enter a whole number."


@pytest.mark.django_db
def test_route_page_needs_a_login_and_read_access(client, make_user, fleet):  # noqa: F811
    assert client.get(URL).status_code == 302
    client.force_login(make_user("nobody"))
    assert client.get(URL).status_code == 403


@pytest.mark.django_db
def test_route_page_shows_the_ranking_a_page_at_a_time(viewer, fleet):  # noqa: F811
    """Issue 30: the table drew every deployment of the fleet."""
    from fleet.models import Deployment

    base = fleet["down"]
    Deployment.objects.bulk_create(
        Deployment(slug=f"extra-{i:02d}", cluster=base.cluster, model=base.model, tp=4, last_status="down")
        for i in range(30)
    )
    first = viewer.get(URL)
    html = first.content.decode()
    assert html.count('<tr data-slug="') == 25 and "destinations 1\u201325 of 34" in html
    assert html.index('data-slug="llama-fresh"') < html.index("destinations 1")  # the best is on page 1
    assert 'id="route-best"' in html and "llama-fresh" in html.split('id="route-best"')[1][:200]
    nxt = f"/route/?{escape(first.context['table_query'])}&amp;page=2"  # the inputs, and the page
    assert f'href="{nxt}"' in html and "context_tokens=8192" in nxt and 'hx-target="#route-result"' in html
    second = viewer.get(URL + "&page=2", HTTP_HX_REQUEST="true").content.decode()
    assert second.lstrip().startswith('<section id="route-result"') and second.count('<tr data-slug="') == 9
    ranks = [r.rank for r in viewer.get(URL + "&page=2").context["page"].object_list]
    assert ranks == list(range(26, 35))
    for junk in ("0", "-1", "banana", "9" * 5000):
        assert viewer.get(URL + f"&page={junk}").status_code == 200
    assert viewer.get(URL + "&page=99").context["page"].number == 2  # past the end: the last page
