"""The serving-engine registry (planner/engine/serving_engines.py) is the one list of engines.

* the lists derived from it are exactly the ones the app had written out before the registry;
* every metric family and startup-log dialect it names is one the poller and the parser read;
* a fourth engine registered in a test (monkeypatching the registry only) appears in every list the
  engine and the poller read, is sized with its own profile and polled on its own routes.

The Django side (model field, forms, serializers, the poller's stored polls) is in
tests/test_serving_engine_registry_django.py.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

import planner.engine.serving_engines as registry
from fleet.catalog import reference
from fleet.polling import poll_endpoint
from fleet.polling.fakeserver import FakeEngineServer
from fleet.polling.metrics import METRIC_FAMILIES
from planner.engine import (
    EngineAllocation,
    EngineInputError,
    Layout,
    engine_choices,
    engine_names,
    metric_families,
    poll_routes,
    prefix_cache_engines,
    profile_names,
    profile_of,
    serving_engine,
    size,
    startup_log_engines,
)
from planner.engine.startup_log import DIALECTS

LLAMA_70B = reference.model("llama-3.1-70b")
H200 = reference.accelerator("h200-141gb")

#: The fake fourth engine's block size: not vLLM's default (16), so a sizing shows whose profile ran.
FAKE_BLOCK = 48


def _fake_allocate(model, layout, **kwargs) -> EngineAllocation:
    """A profile of its own: vLLM's arithmetic at a fixed block of FAKE_BLOCK tokens, named fakeserve."""
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
    """The registry with FAKE appended: the one thing a new engine changes."""
    monkeypatch.setattr(registry, "SERVING_ENGINES", (*registry.SERVING_ENGINES, FAKE))
    return FAKE


def test_the_lists_are_the_ones_written_out_before_the_registry():
    # fleet/models Deployment.Engine, fleet/polling/client.py KNOWN_ENGINES
    assert engine_names() == ("vllm", "sglang", "llamacpp", "openai")
    assert engine_choices() == [
        ("vllm", "vLLM"),
        ("sglang", "SGLang"),
        ("llamacpp", "llama.cpp"),
        ("openai", "OpenAI-compatible"),
    ]
    assert registry.DEFAULT_ENGINE == "vllm"
    # planner/engine/profiles/common.py ENGINES; fleet/models Deployment.ENGINE_PROFILES
    assert profile_names() == ("generic", "vllm", "sglang")
    assert {name: profile_of(name) for name in (*engine_names(), "unknown")} == {
        "vllm": "vllm",
        "sglang": "sglang",
        "llamacpp": "generic",
        "openai": "generic",
        "unknown": "generic",
    }
    # planner/engine/prefix_cache.py PREFIX_ENGINES; startup_log.py ENGINES / calibrations PROFILED_ENGINES
    assert prefix_cache_engines() == ("vllm", "sglang")
    assert startup_log_engines() == ("vllm", "sglang")
    # fleet/polling/client.py HEALTH_ROUTE, HEALTH_503_MEANS_LOADING, METRICS_ENGINES, OWNED_BY
    routes = poll_routes()
    assert {name: r.health for name, r in routes.items()} == {
        "vllm": "/health",
        "sglang": "/health_generate",
        "llamacpp": "/health",
        "openai": None,
    }
    assert {name for name, r in routes.items() if r.health_503_means_loading} == {"sglang", "llamacpp"}
    assert {name for name, r in routes.items() if r.metrics == "/metrics"} == {"vllm", "sglang", "llamacpp"}
    assert {name for name, r in routes.items() if r.metrics is None} == {"openai"}
    assert {name for name, r in routes.items() if r.metrics_expected} == {"vllm"}  # the one warned about
    assert {owner: name for name, r in routes.items() for owner in r.owned_by} == {
        "vllm": "vllm",
        "sglang": "sglang",
        "llamacpp": "llamacpp",
    }
    assert metric_families() == {"vllm": "vllm", "sglang": "sglang", "llamacpp": "llamacpp"}


def test_every_family_and_dialect_the_registry_names_is_read_and_names_are_unique():
    engines = registry.registered_engines()
    assert len({e.name for e in engines}) == len(engines)
    assert set(metric_families().values()) <= set(METRIC_FAMILIES)
    assert {e.startup_log for e in engines if e.startup_log} <= set(DIALECTS)
    for e in engines:
        if e.profile is not None:
            assert e.profile.newest, e.name


def test_an_unknown_profile_is_an_input_error_naming_the_registry_s_profiles():
    with pytest.raises(EngineInputError) as caught:
        size(LLAMA_70B, H200, gpus=2, engine="llamacpp")
    assert caught.value.errors == {"engine": ["Unknown engine 'llamacpp'; use one of generic, vllm, sglang."]}
    with pytest.raises(EngineInputError, match="generic, vllm, sglang"):
        registry.allocate("nothing", LLAMA_70B, Layout(), available_bytes=1 << 30, max_model_len=1024)


def test_a_fourth_engine_is_one_registry_entry_plus_its_profile(fourth_engine):
    assert engine_names()[-1] == "fakeserve"
    assert engine_choices()[-1] == ("fakeserve", "FakeServe")
    assert profile_names() == ("generic", "vllm", "sglang", "fakeserve")
    assert profile_of("fakeserve") == "fakeserve"
    assert serving_engine("fakeserve") is FAKE
    assert prefix_cache_engines() == ("vllm", "sglang", "fakeserve")
    assert startup_log_engines() == ("vllm", "sglang", "fakeserve")
    assert poll_routes()["fakeserve"] is FAKE.poll
    assert metric_families()["fakeserve"] == "vllm"

    # The sizing engine checks and dispatches on the registry: the fake's own profile runs.
    result = size(LLAMA_70B, H200, gpus=2, engine="fakeserve", max_model_len=8192)
    assert result.allocation.engine == "fakeserve"
    assert result.allocation.block_size_tokens == FAKE_BLOCK
    assert size(LLAMA_70B, H200, gpus=2, engine="vllm", max_model_len=8192).allocation.block_size_tokens == 16


def test_without_the_entry_the_fourth_engine_is_nowhere():
    assert "fakeserve" not in engine_names()
    assert "fakeserve" not in profile_names()
    with pytest.raises(EngineInputError):
        size(LLAMA_70B, H200, gpus=2, engine="fakeserve")


def test_the_poller_dispatches_on_the_registry_s_routes(fourth_engine):
    """An OpenAI-compatible server registered as the fourth engine is asked the fourth engine's health
    and metrics routes (the fake server has neither: 404s, said as warnings); registered as openai it is
    asked the model list only."""
    with FakeEngineServer("openai") as server:
        as_fake = poll_endpoint(server.url, "fakeserve", server.model_id, None, timeout_s=2, engines=poll_routes())
        as_openai = poll_endpoint(server.url, "openai", server.model_id, None, timeout_s=2, engines=poll_routes())
    assert as_fake.status == as_openai.status == "up"
    assert set(as_fake.http_status) == {"models", "health", "metrics"}
    assert as_fake.http_status["health"] == as_fake.http_status["metrics"] == 404
    assert as_fake.metrics_available is False
    assert "GET /health: HTTP 404 (no health route)" in as_fake.warnings
    assert "GET /metrics: HTTP 404 (fakeserve normally serves metrics)" in as_fake.warnings
    assert set(as_openai.http_status) == {"models"}
    assert as_openai.metrics_available is None
