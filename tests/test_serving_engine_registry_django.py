"""The serving-engine registry seen from Django: the deployment record's field, the page forms, the
API serializers, the size command and the poller all take their engines from it.

The current lists are exactly the ones written out before the registry; a fourth engine registered in
the test (monkeypatching the registry only, with its own profile) is in every one of them, is
validated, sized with its profile, and polled on its routes. The pure side is in
tests/engine/test_serving_engine_registry.py.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from django.core.exceptions import ValidationError

import planner.engine.serving_engines as registry
from fleet.api.serializers import DeploymentSerializer
from fleet.forms import DeploymentForm
from fleet.models import Deployment, EndpointPoll, ModelSpec
from fleet.poller import _poll_kwargs, poll_deployment
from fleet.polling.fakeserver import FakeEngineServer
from planner.api.prefix_cache import PrefixCacheRequestSerializer
from planner.api.sizing import SizingRequestSerializer, SizingResponseSerializer
from planner.forms import PrefixCacheForm, WhatIfForm
from planner.management.commands.size import Command as SizeCommand

BEFORE_ENGINES = [("vllm", "vLLM"), ("sglang", "SGLang"), ("llamacpp", "llama.cpp"), ("openai", "OpenAI-compatible")]
BEFORE_PROFILES = ["generic", "vllm", "sglang"]
BEFORE_PREFIX = ["vllm", "sglang"]
FAKE_BLOCK = 48


def _fake_allocate(model, layout, **kwargs):
    kwargs["block_size_tokens"] = FAKE_BLOCK
    return replace(registry.VLLM_PROFILE.allocate(model, layout, **kwargs), engine="fakeserve")


FAKE = registry.ServingEngine(
    "fakeserve",
    "FakeServe",
    profile=registry.AllocatorProfile("fakeserve", "1.0.0", _fake_allocate),
    poll=registry.PollRoutes(health="/health", metrics="/metrics", metrics_expected=True, owned_by=("fakeserve",)),
    metric_family="vllm",
    startup_log="vllm",
    prefix_cache=True,
)


@pytest.fixture
def fourth_engine(monkeypatch):
    monkeypatch.setattr(registry, "SERVING_ENGINES", (*registry.SERVING_ENGINES, FAKE))
    return FAKE


def _lists() -> dict[str, list]:
    """Every list of engines the Django side offers, read as a request would read it."""
    size_parser = SizeCommand().create_parser("manage.py", "size")
    (size_engine,) = [a for a in size_parser._actions if a.dest == "engine"]
    return {
        "model field": list(Deployment._meta.get_field("engine").choices),
        "deployment form": list(DeploymentForm.base_fields["engine"].choices),
        "deployment serializer": list(DeploymentSerializer().fields["engine"].choices.items()),
        "what-if form": [name for name, _ in WhatIfForm.base_fields["engine"].choices],
        "prefix-cache form": [name for name, _ in PrefixCacheForm.base_fields["engine"].choices],
        "sizing serializer": list(SizingRequestSerializer().fields["engine"].choices),
        "sizing response": list(SizingResponseSerializer().fields["engine"].choices),
        "prefix-cache serializer": list(PrefixCacheRequestSerializer().fields["engine"].choices),
        "size command": list(size_engine.choices),
        "poller routes": list(_poll_kwargs()["engines"]),
    }


def test_every_list_is_the_one_written_out_before_the_registry():
    assert _lists() == {
        "model field": BEFORE_ENGINES,
        "deployment form": BEFORE_ENGINES,
        "deployment serializer": BEFORE_ENGINES,
        "what-if form": BEFORE_PROFILES,
        "prefix-cache form": BEFORE_PREFIX,
        "sizing serializer": BEFORE_PROFILES,
        "sizing response": BEFORE_PROFILES,
        "prefix-cache serializer": BEFORE_PREFIX,
        "size command": BEFORE_PROFILES,
        "poller routes": [name for name, _ in BEFORE_ENGINES],
    }
    field = Deployment._meta.get_field("engine")
    assert field.default == "vllm" and field.max_length == 10
    assert all(len(name) <= field.max_length for name in registry.engine_names())
    assert Deployment._meta.get_field("kv_cache_dtype").default == "bf16"
    assert Deployment._meta.get_field("gpu_memory_utilization").default == 0.9
    assert ModelSpec._meta.get_field("weight_format").default == "bf16"
    assert WhatIfForm.base_fields["engine"].initial == "generic"
    assert PrefixCacheForm.base_fields["engine"].initial == "vllm"
    assert WhatIfForm.base_fields["kv_cache_dtype"].initial == "bf16"
    assert WhatIfForm.base_fields["gpu_memory_utilization"].widget.attrs["placeholder"] == "0.9"
    assert SizingRequestSerializer().fields["gpu_memory_utilization"].help_text == "Default 0.9."
    assert SizingRequestSerializer().fields["kv_cache_dtype"].help_text == "Default bf16."
    # The migration state is the registry's list: no migration until the registry changes.
    _name, path, _args, kwargs = Deployment._meta.get_field("engine").deconstruct()
    assert path == "django.db.models.CharField" and kwargs["choices"] == BEFORE_ENGINES


def test_a_fourth_engine_appears_in_every_list(fourth_engine):
    lists = _lists()
    for name in ("model field", "deployment form", "deployment serializer"):
        assert lists[name] == [*BEFORE_ENGINES, ("fakeserve", "FakeServe")], name
    for name in ("what-if form", "sizing serializer", "sizing response", "size command"):
        assert lists[name] == [*BEFORE_PROFILES, "fakeserve"], name
    for name in ("prefix-cache form", "prefix-cache serializer"):
        assert lists[name] == [*BEFORE_PREFIX, "fakeserve"], name
    assert lists["poller routes"] == [*(name for name, _ in BEFORE_ENGINES), "fakeserve"]


def test_a_fourth_engine_is_accepted_where_an_engine_is_validated(fourth_engine):
    field = Deployment._meta.get_field("engine")
    assert field.clean("fakeserve", None) == "fakeserve"
    assert Deployment(engine="fakeserve").get_engine_display() == "FakeServe"
    assert Deployment(engine="fakeserve").engine_profile == "fakeserve"
    assert WhatIfForm.base_fields["engine"].clean("fakeserve") == "fakeserve"
    assert PrefixCacheForm.base_fields["engine"].clean("fakeserve") == "fakeserve"
    assert DeploymentSerializer().fields["engine"].run_validation("fakeserve") == "fakeserve"
    request = SizingRequestSerializer(data={"model": "m", "sku": "s", "engine": "fakeserve"})
    assert request.is_valid(), request.errors


def test_without_the_entry_the_fourth_engine_is_refused():
    with pytest.raises(ValidationError):
        Deployment._meta.get_field("engine").clean("fakeserve", None)
    request = SizingRequestSerializer(data={"model": "m", "sku": "s", "engine": "fakeserve"})
    assert not request.is_valid() and "engine" in request.errors


@pytest.mark.django_db
def test_a_fourth_engine_deployment_is_sized_with_its_profile_and_polled_on_its_routes(
    fourth_engine, cluster, llama70b
):
    with FakeEngineServer("openai") as server:
        d = Deployment(slug="fake", cluster=cluster, model=llama70b, tp=4, engine="fakeserve",
                       base_url=server.url, served_model_id=server.model_id)  # fmt: skip
        d.full_clean()
        d.save()
        assert d.sizing().allocation.engine == "fakeserve"
        assert d.sizing().allocation.block_size_tokens == FAKE_BLOCK
        poll_deployment(d)
    (poll,) = EndpointPoll.objects.filter(deployment=d)
    assert poll.status == "up"
    assert set(poll.outcome["http_status"]) == {"models", "health", "metrics"}
    assert poll.outcome["http_status"]["metrics"] == 404
