"""Endpoint API keys under several encryption keys (MultiFernet): the newest encrypts, any decrypts,
``rotate_endpoint_keys`` re-encrypts, and a key nothing decrypts is an error the poller records as a
misconfigured poll (without a request, without the key anywhere)."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from fleet import crypto
from fleet.models import Deployment, EndpointPoll
from fleet.poller import poll_deployment, run_poll_cycle
from fleet.polling.fakeserver import FakeEngineServer

SECRET = "sk-rotate-me-0123456789"


def test_the_newest_key_encrypts_and_any_decrypts(settings):
    settings.FIELD_ENCRYPTION_KEYS = ["old-material"]
    under_old = crypto.encrypt(SECRET)
    settings.FIELD_ENCRYPTION_KEYS = ["new-material", "old-material"]
    under_new = crypto.encrypt(SECRET)
    assert crypto.decrypt(under_old) == crypto.decrypt(under_new) == SECRET
    settings.FIELD_ENCRYPTION_KEYS = ["new-material"]
    assert crypto.decrypt(under_new) == SECRET
    with pytest.raises(crypto.UndecryptableSecret) as caught:
        crypto.decrypt(under_old)
    assert SECRET not in str(caught.value) and under_old not in str(caught.value)


def test_the_old_single_key_and_the_secret_key_still_decrypt(settings):
    settings.FIELD_ENCRYPTION_KEYS, settings.FIELD_ENCRYPTION_KEY = [], ""
    from_secret_key = crypto.encrypt(SECRET)  # what was stored before any key was set
    settings.FIELD_ENCRYPTION_KEY = "single-material"
    from_single = crypto.encrypt(SECRET)
    settings.FIELD_ENCRYPTION_KEYS = ["newest"]
    assert crypto.key_materials() == ["newest", "single-material", settings.SECRET_KEY]
    assert crypto.decrypt(from_secret_key) == crypto.decrypt(from_single) == SECRET
    rotated = crypto.rotate(from_secret_key)
    settings.FIELD_ENCRYPTION_KEY, settings.SECRET_KEY = "", "another-secret-key-" + "x" * 40
    assert crypto.decrypt(rotated) == SECRET  # only "newest" is left that can open it


def test_empty_stays_empty(settings):
    assert crypto.encrypt("") == "" and crypto.decrypt("") == "" and crypto.rotate("") == ""


@pytest.mark.django_db
def test_rotate_endpoint_keys_re_encrypts_with_the_newest_and_names_what_it_cannot(settings, deployment, capsys):
    settings.FIELD_ENCRYPTION_KEYS = ["old-material"]
    deployment.set_api_key(SECRET)
    deployment.save()
    other = Deployment.objects.create(
        slug="lost",
        cluster=deployment.cluster,
        model=deployment.model,
        tp=8,
        dp=4,
        ep=32,
        api_key_encrypted="gAAAAA-not-a-token-of-ours",
    )
    Deployment.objects.create(slug="keyless", cluster=deployment.cluster, model=deployment.model, tp=8, dp=4, ep=32)
    settings.FIELD_ENCRYPTION_KEYS = ["new-material", "old-material"]
    with pytest.raises(CommandError, match="lost") as caught:
        call_command("rotate_endpoint_keys")
    out = capsys.readouterr().out
    assert "re-encrypted 1 " in out
    for text in (out, str(caught.value)):
        assert SECRET not in text and "new-material" not in text and "old-material" not in text
    settings.FIELD_ENCRYPTION_KEYS = ["new-material"]  # the old key can go now
    assert Deployment.objects.get(pk=deployment.pk).decrypted_api_key() == SECRET
    assert Deployment.objects.get(pk=other.pk).api_key_encrypted == "gAAAAA-not-a-token-of-ours"  # left alone
    assert Deployment.objects.get(slug="keyless").api_key_encrypted == ""


@pytest.mark.django_db
def test_rotate_endpoint_keys_is_quiet_and_idempotent_when_all_is_readable(deployment, capsys):
    call_command("rotate_endpoint_keys")
    call_command("rotate_endpoint_keys")
    assert Deployment.objects.get(pk=deployment.pk).decrypted_api_key() == "sk-secret-do-not-leak-0123456789"


@pytest.mark.django_db
def test_the_poller_records_an_undecryptable_key_as_misconfigured(settings, cluster, llama70b, caplog, platform_api):
    settings.FIELD_ENCRYPTION_KEYS = ["lost-material"]
    with FakeEngineServer("vllm", api_key=SECRET) as server:
        ds = []
        for slug in ("now", "cycle", "fine"):
            d = Deployment(
                slug=slug,
                cluster=cluster,
                model=llama70b,
                tp=4,
                engine="vllm",
                base_url=server.url,
                served_model_id=server.model_id,
            )
            d.set_api_key(SECRET)
            d.save()
            ds.append(d)
        settings.FIELD_ENCRYPTION_KEYS = ["replacement-material"]  # the first two keys cannot be read now
        Deployment.objects.filter(slug="fine").update(api_key_encrypted=crypto.encrypt(SECRET))
        poll = poll_deployment(Deployment.objects.get(slug="now"))
        report = run_poll_cycle(Deployment.objects.filter(slug__in=["cycle", "fine"]).order_by("slug"))
    assert poll.status == "misconfigured" and "cannot be decrypted; re-enter it" in poll.reason
    assert report.polled == 2 and report.failed == 0
    by_slug = {d.slug: d for d in Deployment.objects.all()}
    assert by_slug["now"].last_status == by_slug["cycle"].last_status == "misconfigured"
    assert by_slug["fine"].last_status == "up"  # the readable key was sent; the others did not stop it
    cycle_poll = EndpointPoll.objects.get(deployment__slug="cycle")
    assert cycle_poll.reason == "stored API key cannot be decrypted; re-enter it" and cycle_poll.latency_ms is None
    assert cycle_poll.outcome["latencies_s"] == {}  # no request was made without the key
    shown = platform_api.get("/api/v1/deployments/cycle/polls/").content.decode()
    shown += platform_api.get("/api/v1/deployments/cycle/").content.decode()
    stored = json.dumps(list(EndpointPoll.objects.values("reason", "outcome")))
    for text in (shown, stored, caplog.text):
        assert SECRET not in text and "lost-material" not in text
