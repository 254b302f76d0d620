"""poll_endpoint() against the fake server: every failure mode ends in the right status, quickly,
with no thread left behind, no secret anywhere, and the next poll unaffected."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from pathlib import Path

import pytest

from fleet.polling.client import PollOutcome, PollStatus, _http_status, _parse_models, poll_endpoint
from fleet.polling.fakeserver import DEFAULT_API_KEY, FakeEngineServer
from fleet.polling.guard import FetchResult
from planner.engine import poll_routes

#: Every engine's routes, as the Django poller passes them (the serving-engine registry's).
ROUTES = poll_routes()

#: Healthy requests get a generous budget (a loaded 2-core CI machine is slow); tests of hangs and
#: deadlines use HANG_TIMEOUT and check the poll ends soon after it.
TIMEOUT = 3.0
HANG_TIMEOUT = 0.5
#: Slack allowed past the timeout before a poll counts as delayed (thread scheduling under load).
SLACK = 1.0
SECRET = "sk-fleet-SECRET-77e1d0"


@pytest.fixture
def make_server():
    """Start fake servers; on teardown stop them and check that no thread outlives them."""
    baseline = {t.ident for t in threading.enumerate()}
    servers: list[FakeEngineServer] = []

    def start(engine: str = "vllm", **kwargs) -> FakeEngineServer:
        server = FakeEngineServer(engine, **kwargs).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
    deadline = time.monotonic() + 3
    leftover: list[threading.Thread] = []
    while time.monotonic() < deadline:
        leftover = [t for t in threading.enumerate() if t.ident not in baseline]
        if not leftover:
            break
        time.sleep(0.02)
    assert not leftover, leftover


def poll(server: FakeEngineServer, engine: str | None = None, api_key: str | None = None, **kwargs) -> PollOutcome:
    kwargs.setdefault("timeout_s", TIMEOUT)
    engine = engine or ("vllm" if server.engine.startswith("vllm") else server.engine)
    model = kwargs.pop("model", server.model_id)
    return poll_endpoint(server.url, engine, model, api_key, engines=ROUTES, **kwargs)


def strict_json(outcome: PollOutcome) -> str:
    return json.dumps(outcome.to_dict(), allow_nan=False)


# -- healthy endpoints ----------------------------------------------------------------------------


def test_vllm_up_with_metrics_and_rates(make_server):
    server = make_server("vllm", engines=2)
    first = poll(server)
    assert first.status == PollStatus.UP, first.reason
    assert first.detected_engine == "vllm"
    assert first.model_ids == [server.model_id]
    assert first.max_model_len == 8192
    assert set(first.latencies_s) == {"models", "health", "metrics"}
    assert all(0 < v < TIMEOUT for v in first.latencies_s.values())
    assert first.http_status == {"models": 200, "health": 200, "metrics": 200}
    assert first.metrics_available is True
    assert first.snapshot.engine == "vllm" and first.snapshot.shards == 2
    assert first.snapshot.cache_capacity_tokens == 64_000
    assert first.derived.first_scrape

    time.sleep(0.05)
    second = poll(server, prev_snapshot=first.snapshot)
    d = second.derived
    assert not d.first_scrape and not d.counter_reset and d.interval_s > 0
    assert d.prompt_tokens_per_s > 0 and d.generation_tokens_per_s > 0
    assert 0 <= d.prefix_cache_hit_rate <= 1
    assert 0 < d.ttft_p50_s <= d.ttft_p95_s
    assert 0 < d.itl_p50_s <= d.itl_p95_s
    assert second.snapshot.prompt_tokens > first.snapshot.prompt_tokens
    strict_json(second)


def test_vllm_old_names(make_server):
    server = make_server("vllm-v0")
    outcome = poll(server)
    assert outcome.status == PollStatus.UP
    assert outcome.snapshot.sources["kv_cache_usage"] == "vllm:gpu_cache_usage_perc"
    assert outcome.snapshot.sources["itl"] == "vllm:time_per_output_token_seconds"


def test_sglang_up(make_server):
    server = make_server("sglang", tp=2)
    outcome = poll(server)
    assert outcome.status == PollStatus.UP, outcome.reason
    assert outcome.detected_engine == "sglang" and outcome.max_model_len == 32768
    assert server.requests[1].path == "/health_generate"
    assert outcome.snapshot.shards == 1  # two TP ranks, one scheduler
    assert outcome.snapshot.cache_capacity_tokens == 120_000


def test_llamacpp_up(make_server):
    server = make_server("llamacpp")
    outcome = poll(server)
    assert outcome.status == PollStatus.UP, outcome.reason
    assert outcome.detected_engine == "llamacpp"
    assert outcome.max_model_len is None  # llama.cpp's /v1/models has n_ctx_train only
    assert outcome.snapshot.sources["requests_running"] == "llamacpp:requests_processing"


@pytest.mark.parametrize(("engine", "code"), [("sglang", 404), ("llamacpp", 501)])
def test_metrics_not_enabled_is_not_an_error(make_server, engine, code):
    server = make_server(engine, metrics=False)
    outcome = poll(server)
    assert outcome.status == PollStatus.UP
    assert outcome.metrics_available is False and outcome.http_status["metrics"] == code
    assert outcome.snapshot is None and outcome.warnings == []


def test_openai_compatible_has_no_health_or_metrics(make_server):
    server = make_server("openai")
    outcome = poll(server, engine="openai")
    assert outcome.status == PollStatus.UP
    assert set(outcome.latencies_s) == {"models"} and outcome.metrics_available is None


def test_detected_engine_chooses_the_routes(make_server):
    server = make_server("sglang")
    outcome = poll(server, engine="vllm")
    assert outcome.status == PollStatus.UP
    assert outcome.detected_engine == "sglang"
    assert any("registered as vllm" in w for w in outcome.warnings)


def test_base_url_with_v1_is_tolerated(make_server):
    server = make_server("vllm")
    outcome = poll_endpoint(server.url + "/v1/", "vllm", server.model_id, None, timeout_s=TIMEOUT, engines=ROUTES)
    assert outcome.status == PollStatus.UP and outcome.base_url == server.url
    assert any("/v1" in w for w in outcome.warnings)


def test_an_empty_served_model_id_is_misconfigured_whatever_the_endpoint_lists(make_server):
    """Issue 15: a blank id accepted any listed model, so a K3 deployment polling a Llama endpoint
    showed green "up" with another model's figures."""
    server = make_server("vllm")
    outcome = poll(server, model="")
    assert outcome.status == PollStatus.MISCONFIGURED
    assert "no served model id is registered" in outcome.reason and server.model_id in outcome.reason


# -- failure modes ------------------------------------------------------------------------------


def test_restart_reports_counter_reset(make_server):
    server = make_server("vllm")
    first = poll(server)
    server.set_behaviour("restart")
    second = poll(server, prev_snapshot=first.snapshot)
    assert second.status == PollStatus.UP
    assert second.derived.counter_reset is True
    assert second.snapshot.prompt_tokens < first.snapshot.prompt_tokens
    assert second.derived.prompt_tokens_per_s >= 0 and second.derived.generation_tokens_per_s >= 0
    assert any("restarted" in w for w in second.warnings)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "llamacpp"])
def test_hang_is_down_quickly_and_the_next_poll_recovers(make_server, engine):
    server = make_server(engine, behaviour="hang")
    start = time.monotonic()
    outcome = poll(server, timeout_s=HANG_TIMEOUT)
    assert time.monotonic() - start < HANG_TIMEOUT + SLACK
    assert outcome.status == PollStatus.DOWN and "no response" in outcome.reason
    server.set_behaviour("ok")
    assert poll(server).status == PollStatus.UP


def test_slow_body_is_down_at_the_deadline(make_server):
    server = make_server("vllm", behaviour="slow_body")
    start = time.monotonic()
    outcome = poll(server, timeout_s=HANG_TIMEOUT)
    assert time.monotonic() - start < HANG_TIMEOUT + SLACK
    assert outcome.status == PollStatus.DOWN and "deadline" in outcome.reason


def test_huge_body_is_an_error(make_server):
    server = make_server("vllm", behaviour="huge_body")
    outcome = poll(server, max_bytes=1_000_000, timeout_s=3)
    assert outcome.status == PollStatus.ERROR and "cap" in outcome.reason


def test_redirect_is_an_error_and_not_followed(make_server):
    server = make_server("vllm", behaviour="redirect")
    outcome = poll(server)
    assert outcome.status == PollStatus.ERROR and "not followed" in outcome.reason
    assert server.request_count == 1


def test_wrong_model_is_misconfigured(make_server):
    server = make_server("vllm", behaviour="wrong_model")
    outcome = poll(server)
    assert outcome.status == PollStatus.MISCONFIGURED
    assert server.model_id in outcome.reason and "some-org/another-model" in outcome.reason
    assert outcome.model_ids == ["some-org/another-model"]
    assert outcome.snapshot is not None  # metrics are still collected


@pytest.mark.parametrize("key", [None, "wrong-key"])
def test_unauthorized(make_server, key):
    server = make_server("vllm", behaviour="unauthorized")
    outcome = poll(server, api_key=key)
    assert outcome.status == PollStatus.UNAUTHORIZED and "401" in outcome.reason


def test_right_key_is_sent_as_bearer(make_server):
    server = make_server("vllm", behaviour="unauthorized")
    assert poll(server, api_key=DEFAULT_API_KEY).status == PollStatus.UP


@pytest.mark.parametrize("engine", ["vllm", "sglang", "llamacpp"])
def test_loading(make_server, engine):
    server = make_server(engine, behaviour="loading")
    outcome = poll(server)
    assert outcome.status == PollStatus.LOADING and "503" in outcome.reason


def test_connection_refused_is_loading():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    outcome = poll_endpoint(f"http://127.0.0.1:{port}", "vllm", "m", None, timeout_s=TIMEOUT, engines=ROUTES)
    assert outcome.status == PollStatus.LOADING and "refused" in outcome.reason


@pytest.mark.parametrize("engine", ["vllm", "sglang", "llamacpp"])
def test_dead_engine_is_down(make_server, engine):
    """The model list answers but health fails: vLLM says 503 when its engine died, others 500."""
    server = make_server(engine, behaviour="engine_dead")
    outcome = poll(server)
    assert outcome.status == PollStatus.DOWN, outcome.reason
    assert outcome.http_status["models"] == 200


@pytest.mark.parametrize(
    ("engine", "route", "code", "status"),
    [
        ("vllm", "health", 503, PollStatus.DOWN),  # vLLM: EngineDeadError
        ("sglang", "health", 503, PollStatus.LOADING),  # /health_generate while starting
        ("llamacpp", "health", 503, PollStatus.LOADING),  # "Loading model"
        ("vllm", "models", 503, PollStatus.LOADING),
        ("vllm", "models", 502, PollStatus.DOWN),
        ("vllm", "metrics", 403, PollStatus.UNAUTHORIZED),
        ("vllm", "models", 404, PollStatus.MISCONFIGURED),
        ("vllm", "models", 418, PollStatus.ERROR),
    ],
)
def test_http_status_rules(engine, route, code, status):
    result = FetchResult(url="http://x", status=code, body=b"", elapsed_s=0.01)
    assert _http_status(result, "GET", ROUTES[engine], route).status == status


def test_error_500_is_down(make_server):
    server = make_server("vllm", behaviour="error_500")
    outcome = poll(server)
    assert outcome.status == PollStatus.DOWN and "500" in outcome.reason


def test_garbage_is_an_error_with_the_reason(make_server):
    server = make_server("vllm", behaviour="garbage")
    outcome = poll(server)
    assert outcome.status == PollStatus.ERROR and "unparseable" in outcome.reason and "not JSON" in outcome.reason


def test_garbage_metrics_is_an_error(make_server):
    server = make_server("vllm", behaviour="garbage_metrics")
    outcome = poll(server)
    assert outcome.status == PollStatus.ERROR and "/metrics" in outcome.reason
    assert outcome.model_ids == [server.model_id]


def test_refused_address_is_an_error():
    outcome = poll_endpoint("http://169.254.169.254", "vllm", "m", None, timeout_s=TIMEOUT, engines=ROUTES)
    assert outcome.status == PollStatus.ERROR and "always refused" in outcome.reason


def test_allowed_networks_are_honoured(make_server):
    server = make_server("vllm")
    outcome = poll(server, allowed_networks=["10.0.0.0/8"])
    assert outcome.status == PollStatus.ERROR and "outside the allowed networks" in outcome.reason
    assert server.request_count == 0


# -- secrets and storage ------------------------------------------------------------------------

BEHAVIOURS = ["ok", "hang", "slow_body", "huge_body", "redirect", "wrong_model", "unauthorized", "loading",
              "engine_dead", "error_500", "garbage", "garbage_metrics"]  # fmt: skip


def test_api_key_never_in_outcome_or_logs(make_server, caplog):
    caplog.set_level(logging.DEBUG)
    server = make_server("vllm", api_key=SECRET)
    for behaviour in BEHAVIOURS:
        server.set_behaviour(behaviour)
        outcome = poll(server, api_key=SECRET, timeout_s=0.3, max_bytes=200_000)
        assert SECRET not in strict_json(outcome), behaviour
        assert SECRET not in repr(outcome), behaviour
    server.set_behaviour("ok")
    assert poll(server, api_key=SECRET).status == PollStatus.UP
    assert poll(server, api_key="not-the-key").status == PollStatus.UNAUTHORIZED
    assert SECRET not in caplog.text


def test_credentials_in_the_base_url_are_refused_and_not_stored():
    outcome = poll_endpoint(f"http://admin:{SECRET}@127.0.0.1:9/", "vllm", "m", None, timeout_s=TIMEOUT, engines=ROUTES)
    assert outcome.status == PollStatus.ERROR and "credentials" in outcome.reason
    assert SECRET not in strict_json(outcome) and outcome.base_url == "http://127.0.0.1:9"


def test_outcome_round_trips_for_the_next_poll(make_server):
    server = make_server("vllm")
    stored = json.loads(strict_json(poll(server)))
    assert stored["status"] == "up" and isinstance(stored["snapshot"]["ttft"]["buckets"], list)
    previous = PollOutcome.from_dict(stored)
    assert previous.status == PollStatus.UP
    time.sleep(0.02)
    nxt = poll(server, prev_snapshot=previous.snapshot)
    assert nxt.derived.first_scrape is False and nxt.derived.prompt_tokens_per_s > 0


def test_real_vllm_model_list_shape():
    """GET /v1/models as vLLM answers it (fixture source: vllm issue 5959 and protocol.py)."""
    raw = (Path(__file__).parent / "fixtures" / "vllm-models.json").read_text()
    body = "\n".join(line for line in raw.splitlines() if not line.startswith("#")).encode()
    entries = _parse_models(body)
    assert [e["id"] for e in entries] == ["meta-llama/Meta-Llama-3-8B-Instruct"]
    assert entries[0]["owned_by"] == "vllm" and entries[0]["max_model_len"] == 8192
