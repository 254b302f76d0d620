"""Issue 28, "Roles": no page offers a control its reader cannot use. Every page (tests/page_walk.py, the
records of tests/test_page_fuzz.py) is rendered as each role; every control found on it (a form posting,
an HTMX request that writes, a link to an add, edit, delete, import, upload or cancel page) is then used as
that role, an empty request in a savepoint rolled back after it, and must not be refused: whatever the
target view's permission check is, the role holds it (a 400 for the empty form is fine: it got past it)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest
from django.db import transaction
from page_walk import Control, html_pages, read
from test_page_fuzz import fast_password_hashing, quiet_refusals, world  # noqa: F401 (fixtures)

ROLES = ("viewer", "finance", "platform", "admin")
#: Controls every logged-in user may press whatever their role, and that the walk must not press (logging
#: out would end the walk): they need no permission (tests/test_permissions_matrix.py, API tokens).
NO_PERMISSION = ("/accounts/logout/", "/logout/")


def refused(client: Any, control: Control) -> int | None:
    """The status when ``client`` is refused ``control`` (403, or sent to log in), else None."""
    with transaction.atomic():
        if control.method == "GET":
            response = client.get(control.target)
        else:
            response = client.generic(control.method, control.target, headers={"HX-Request": "true"})
        transaction.set_rollback(True)
    if response.status_code == 403:
        return 403
    if response.status_code == 302 and "/login" in response.get("Location", ""):
        return 302
    return None


def own_path(target: str) -> str | None:
    """A control's target as a path of this site (None: another site's, or one the walk leaves alone)."""
    parts = urlsplit(target)
    if parts.netloc or not parts.path.startswith("/") or parts.path.startswith(NO_PERMISSION):
        return None
    return target


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
def test_every_control_a_page_offers_is_one_its_role_may_use(world: Any, role: str) -> None:  # noqa: F811
    client = world.clients[role]
    offered: dict[tuple[str, str], str] = {}
    for _page, path, html in html_pages(client, world.keys):
        for control in read(html, path).controls:
            target = own_path(control.target)
            if target is not None:
                offered.setdefault((control.method, target), f"{path}: {control.kind} {control.text!r}")
    assert offered, role
    problems = []
    for (method, target), where in sorted(offered.items()):
        status = refused(client, Control("", method, target, ""))
        if status is not None:
            problems.append(f"{where} -> {method} {target}: {status}")
    assert not problems, f"{role} is offered what it may not do:\n" + "\n".join(problems)


def test_the_reader_finds_posting_forms_writing_htmx_and_action_links() -> None:
    html = (
        '<form method="post" action="/x/delete/"><button>Delete</button></form>'
        '<form method="get"><button>Show</button></form>'
        '<button hx-post="/rent-vs-api/recompute/">Recompute</button>'
        '<a href="/quotes/3/edit/?next=/">Edit</a><a href="/quotes/">Quotes</a>'
        '<form hx-post="/prefix-cache/" method="post"><button>Analyse</button></form>'
    )
    found = [(c.kind, c.method, c.target) for c in read(html, "/here/").controls]
    assert found == [
        ("form", "POST", "/x/delete/"),
        ("hx", "POST", "/rent-vs-api/recompute/"),
        ("link", "GET", "/quotes/3/edit/?next=/"),
        ("form", "POST", "/prefix-cache/"),
    ]
