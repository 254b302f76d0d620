"""API tokens people manage themselves (issue 27): made and revoked on /account/tokens/ and at
/api/v1/tokens/, the key shown once and stored hashed, refused when expired or revoked (401), a read
token refused on writes (403), last use noted at most once a minute; admins see and revoke everybody's,
others only their own; service accounts from the shell; Bearer and Token; /metrics."""

from __future__ import annotations

import hashlib
import importlib
from datetime import timedelta
from io import StringIO

import pytest
from api_keys import api_key
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from fleet.models import ApiToken
from fleet.tokens import create_token

pytestmark = pytest.mark.django_db

URL = "/api/v1/tokens/"
PAGE = "/account/tokens/"


def bearer(key: str, scheme: str = "Bearer") -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"{scheme} {key}")
    return client


def row_text(token: ApiToken) -> str:
    """Every column of the token's row, as stored."""
    values = ApiToken.objects.filter(pk=token.pk).values().get()
    return " ".join(str(v) for v in values.values())


@pytest.fixture
def alice(make_user):
    return make_user("alice", "platform")


@pytest.fixture
def admin_user(make_user):
    return make_user("boss", "admin")


# --- creating, listing and the key shown once -------------------------------------------------------------


def test_the_api_creates_a_token_whose_key_is_shown_once_and_stored_hashed(alice):
    api = APIClient()
    api.force_login(alice)
    r = api.post(URL, {"name": "ci deploys", "scope": "write", "expires_in_days": 90}, format="json")
    assert r.status_code == 201, r.json()
    body = r.json()
    key = body["key"]
    assert key.startswith("fct_") and len(key) > 40 and r["Cache-Control"] == "no-store"
    assert body["name"] == "ci deploys" and body["scope"] == "write" and body["state"] == "active"
    token = ApiToken.objects.get(pk=body["id"])
    assert key not in row_text(token) and key[4:] not in row_text(token)
    assert token.digest == hashlib.sha256(key.encode()).hexdigest()
    assert timedelta(days=89, hours=23) < token.expires - timezone.now() <= timedelta(days=90)
    listed = api.get(URL).json()
    assert [t["name"] for t in listed["results"]] == ["ci deploys"] and key not in str(listed)
    assert "key" not in listed["results"][0] and key not in str(api.get(f"{URL}{token.pk}/").json())
    # The key works, as the user, with the user's permissions.
    assert bearer(key).get("/api/v1/clusters/").status_code == 200


def test_the_page_creates_a_token_and_shows_its_key_once(client, alice):
    client.force_login(alice)
    page = client.get(PAGE)
    assert page.status_code == 200 and 'href="/account/tokens/"' in page.content.decode()  # the user menu
    r = client.post(PAGE, {"name": "grafana", "scope": "read", "expires_in_days": "30"})
    assert r.status_code == 200 and r["Cache-Control"] == "no-store"
    token = ApiToken.objects.get(user=alice)
    html = r.content.decode()
    key = html.split('id="new-token-key"')[0].rsplit('value="', 1)[1].split('"')[0]
    assert key.startswith("fct_") and "not shown again" in html
    assert hashlib.sha256(key.encode()).hexdigest() == token.digest and key not in row_text(token)
    again = client.get(PAGE).content.decode()
    assert key not in again and "grafana" in again and "never" in again  # listed, last used never
    assert token.scope == "read" and bearer(key).get("/api/v1/skus/").status_code == 200


def test_the_page_takes_a_date_and_refuses_one_past_the_maximum(client, alice, settings):
    settings.API_TOKEN_MAX_DAYS = 60
    client.force_login(alice)
    page = client.get(PAGE).content.decode()
    assert 'value="30"' in page and 'value="90"' not in page and 'value="365"' not in page
    late = timezone.localdate() + timedelta(days=61)
    r = client.post(PAGE, {"name": "x", "scope": "read", "expires_in_days": "date", "expires_on": late.isoformat()})
    assert r.status_code == 400 and "at most 60 days" in r.content.decode() and not ApiToken.objects.exists()
    on = timezone.localdate() + timedelta(days=10)
    r = client.post(PAGE, {"name": "x", "scope": "read", "expires_in_days": "date", "expires_on": on.isoformat()})
    assert r.status_code == 200
    assert timezone.localtime(ApiToken.objects.get().expires).date() == on + timedelta(days=1)


def test_the_api_refuses_an_expiry_past_the_maximum(alice, settings):
    settings.API_TOKEN_MAX_DAYS = 30
    api = APIClient()
    api.force_login(alice)
    r = api.post(URL, {"name": "x", "expires_in_days": 31}, format="json")
    assert r.status_code == 400 and "expires_in_days" in r.json()
    r = api.post(URL, {"name": "x"}, format="json")
    assert r.status_code == 400 and "expires_in_days" in r.json()


# --- refusals ------------------------------------------------------------------------------------------------


def test_an_expired_token_is_refused_with_401_saying_so(alice):
    new = create_token(alice, name="old", scope="read", days=30)
    ApiToken.objects.filter(pk=new.token.pk).update(expires=timezone.now() - timedelta(seconds=1))
    r = bearer(new.key).get("/api/v1/clusters/")
    assert r.status_code == 401 and "expired" in r.json()["detail"] and r["WWW-Authenticate"] == "Bearer"


def test_a_revoked_token_is_refused_with_401_saying_so(alice):
    key = api_key(alice)
    api = bearer(key)
    token = ApiToken.objects.get(user=alice)
    assert api.delete(f"{URL}{token.pk}/").status_code == 204  # revoking itself: a write token may
    r = api.get("/api/v1/clusters/")
    assert r.status_code == 401 and "revoked" in r.json()["detail"]
    assert ApiToken.objects.get(pk=token.pk).state == "revoked"  # kept, listed as revoked
    assert bearer("fct_" + "x" * 43).get("/api/v1/clusters/").status_code == 401


def test_a_read_token_is_refused_on_a_write_with_403_naming_its_scope(alice):
    api = bearer(api_key(alice, scope="read"))
    assert api.get("/api/v1/clusters/").status_code == 200
    r = api.post("/api/v1/skus/", {}, format="json")
    assert r.status_code == 403 and "scope is 'read'" in r.json()["detail"]
    # Nor may it make a write token for itself.
    r = api.post(URL, {"name": "escalate", "scope": "write", "expires_in_days": 30}, format="json")
    assert r.status_code == 403 and ApiToken.objects.filter(user=alice).count() == 1
    # A write token may make another (a script's bootstrap after a session made the first).
    r = bearer(api_key(alice, scope="write")).post(URL, {"name": "next", "expires_in_days": 30}, format="json")
    assert r.status_code == 201 and r.json()["scope"] == "read"


def test_revoking_on_the_page_needs_post_and_csrf(alice):
    new = create_token(alice, name="mine", scope="read", days=30)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(alice)
    assert browser.get(f"{PAGE}{new.token.pk}/revoke/").status_code == 405
    assert browser.post(f"{PAGE}{new.token.pk}/revoke/").status_code == 403  # no CSRF token
    page = browser.get(PAGE)
    csrf = page.cookies["csrftoken"].value
    r = browser.post(f"{PAGE}{new.token.pk}/revoke/", {"csrfmiddlewaretoken": csrf})
    assert r.status_code == 302 and ApiToken.objects.get(pk=new.token.pk).revoked_at is not None
    assert "revoked" in browser.get(PAGE).content.decode()
    assert bearer(new.key).get("/api/v1/skus/").status_code == 401


# --- last used -----------------------------------------------------------------------------------------------


def test_last_used_is_noted_at_most_once_a_minute(alice):
    new = create_token(alice, name="poller", scope="read", days=30)
    api = bearer(new.key)
    assert api.get("/api/v1/skus/").status_code == 200
    first = ApiToken.objects.get(pk=new.token.pk).last_used
    assert first is not None and timezone.now() - first < timedelta(seconds=5)
    with CaptureQueriesContext(connection) as queries:
        assert api.get("/api/v1/skus/").status_code == 200
    assert not [q for q in queries if "UPDATE" in q["sql"] and "fleet_apitoken" in q["sql"]]
    assert ApiToken.objects.get(pk=new.token.pk).last_used == first
    ApiToken.objects.filter(pk=new.token.pk).update(last_used=first - timedelta(seconds=61))
    assert api.get("/api/v1/skus/").status_code == 200
    assert ApiToken.objects.get(pk=new.token.pk).last_used > first


# --- who sees and revokes whose ------------------------------------------------------------------------------


def test_an_admin_lists_and_revokes_another_users_tokens(alice, admin_user, make_user):
    theirs = create_token(alice, name="alice's", scope="write", days=30)
    create_token(make_user("carol", "viewer"), name="carol's", scope="read", days=30)
    api = APIClient()
    api.force_login(admin_user)
    assert {t["name"] for t in api.get(URL).json()["results"]} == {"alice's", "carol's"}
    only = api.get(URL, {"user": "alice"}).json()["results"]
    assert [(t["name"], t["user"]) for t in only] == [("alice's", "alice")]
    assert api.delete(f"{URL}{theirs.token.pk}/").status_code == 204
    token = ApiToken.objects.get(pk=theirs.token.pk)
    assert token.revoked_by == admin_user and bearer(theirs.key).get("/api/v1/skus/").status_code == 401
    # The page: everybody's, filtered by user, with revoke buttons.
    browser = Client()
    browser.force_login(admin_user)
    html = browser.get(PAGE, {"user": "carol"}).content.decode()
    assert "carol&#x27;s" in html and "alice&#x27;s" not in html and "Every user" in html
    carols = ApiToken.objects.get(user__username="carol")
    assert browser.post(f"{PAGE}{carols.pk}/revoke/").status_code == 302
    assert ApiToken.objects.get(pk=carols.pk).revoked_by == admin_user


def test_a_user_neither_sees_nor_revokes_another_users_tokens(alice, make_user):
    theirs = create_token(make_user("carol", "viewer"), name="carol's", scope="read", days=30)
    mine = api_key(alice)
    api = bearer(mine)
    assert [t["name"] for t in api.get(URL).json()["results"]] == ["tests"]
    assert api.get(URL, {"user": "carol"}).json()["results"][0]["user"] == "alice"  # the filter is admins'
    assert api.get(f"{URL}{theirs.token.pk}/").status_code == 404
    assert api.delete(f"{URL}{theirs.token.pk}/").status_code == 404
    browser = Client()
    browser.force_login(alice)
    assert "carol" not in browser.get(PAGE, {"user": "carol"}).content.decode()
    assert browser.post(f"{PAGE}{theirs.token.pk}/revoke/").status_code == 404
    assert ApiToken.objects.get(pk=theirs.token.pk).revoked_at is None


def test_anonymous_requests_are_refused(client):
    assert APIClient().get(URL).status_code == 401
    assert client.get(PAGE).status_code == 302


# --- schemes and /metrics ------------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["Bearer", "Token", "bearer"])
def test_both_schemes_take_the_same_token(alice, scheme):
    assert bearer(api_key(alice, scope="read"), scheme).get("/api/v1/skus/").status_code == 200


def test_metrics_takes_a_new_read_token(make_user):
    key = api_key(make_user("prom", "viewer"), scope="read")
    r = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert r.status_code == 200 and r["Content-Type"].startswith("text/plain")
    revoked = create_token(make_user("prom2", "viewer"), name="x", scope="read", days=30)
    ApiToken.objects.filter(pk=revoked.token.pk).update(revoked_at=timezone.now())
    assert Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {revoked.key}").status_code == 401


# --- service accounts ----------------------------------------------------------------------------------------


def test_a_service_account_has_no_password_its_role_and_a_working_token():
    out, err = StringIO(), StringIO()
    call_command(
        "create_service_account", "grafana-bot", "--role", "viewer", "--token-days", "30", stdout=out, stderr=err
    )
    key = out.getvalue().strip()
    user = User.objects.get(username="grafana-bot")
    assert not user.has_usable_password() and list(user.groups.values_list("name", flat=True)) == ["viewer"]
    token = ApiToken.objects.get(user=user)
    assert token.scope == "read" and key not in row_text(token) and "shown this once" in err.getvalue()
    api = bearer(key)
    assert api.get("/api/v1/clusters/").status_code == 200
    assert api.post("/api/v1/skus/", {}, format="json").status_code == 403
    assert not user.check_password("")


def test_a_write_service_account_writes_what_its_role_may():
    out = StringIO()
    call_command(
        "create_service_account", "deployer", "--role", "platform", "--scope", "write", stdout=out, stderr=StringIO()
    )
    api = bearer(out.getvalue().strip())
    assert api.post("/api/v1/skus/", {}, format="json").status_code == 400  # past auth and permissions: the body
    assert api.post("/api/v1/gpu-quotes/", {}, format="json").status_code == 403  # finance's


def test_the_service_account_command_refuses_a_taken_name_and_a_long_expiry(make_user, settings):
    make_user("taken")
    with pytest.raises(CommandError, match="exists already"):
        call_command("create_service_account", "taken", "--role", "viewer", stdout=StringIO(), stderr=StringIO())
    settings.API_TOKEN_MAX_DAYS = 30
    with pytest.raises(CommandError, match="1 to 30 days"):
        call_command(
            "create_service_account",
            "new",
            "--role",
            "viewer",
            "--token-days",
            "90",
            stdout=StringIO(),
            stderr=StringIO(),
        )
    assert not User.objects.filter(username="new").exists()  # all or nothing


# --- DRF's plaintext tokens, migrated -----------------------------------------------------------------------


def test_drf_plaintext_tokens_become_hashed_tokens_that_still_work(alice):
    """0026_api_tokens: an ``authtoken_token`` table left by DRF's authtoken app is read, hashed and emptied."""
    from django.apps import apps

    migration = importlib.import_module("fleet.migrations.0026_api_tokens")
    old_key = "0123456789abcdef0123456789abcdef01234567"
    with connection.cursor() as cursor:
        # the column type DRF's own table has (a Django DateTimeField: timestamptz on PostgreSQL)
        created = connection.data_types["DateTimeField"]
        cursor.execute(f"CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, created {created}, user_id int)")
        cursor.execute("INSERT INTO authtoken_token VALUES (%s, %s, %s)", [old_key, timezone.now(), alice.pk])

    class Editor:
        pass

    editor = Editor()
    editor.connection = connection
    migration.hash_drf_tokens(apps, editor)
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM authtoken_token")
        assert cursor.fetchone()[0] == 0
    token = ApiToken.objects.get(user=alice)
    assert token.scope == "write" and old_key not in row_text(token)
    assert bearer(old_key, "Token").get("/api/v1/clusters/").status_code == 200
