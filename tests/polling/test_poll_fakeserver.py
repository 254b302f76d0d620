"""The fake endpoint itself: realistic changing metrics, clean shutdown, the command line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from fleet.polling.fakeserver import BEHAVIOURS, FakeEngineServer
from fleet.polling.guard import fetch
from fleet.polling.metrics import parse_metrics

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("engine", ["vllm", "vllm-v0", "sglang"])
def test_metrics_have_the_real_shape(engine):
    with FakeEngineServer(engine) as server:
        text = fetch(f"{server.url}/metrics", timeout_s=2).body.decode()
    assert "_total{" in text and "_created{" in text  # prometheus-client's shape, as the engines export
    assert 'le="+Inf"' in text and "# TYPE" in text and "# HELP" in text


def test_counters_grow_and_gauges_move_between_scrapes():
    with FakeEngineServer("vllm", engines=2) as server:
        snaps = [parse_metrics(server.metrics_text()) for _ in range(6)]
    prompts = [s.prompt_tokens for s in snaps]
    assert prompts == sorted(prompts) and len(set(prompts)) == 6
    assert len({s.requests_running for s in snaps}) > 1
    assert snaps[-1].ttft.count > snaps[0].ttft.count


def test_restart_drops_counters_near_zero():
    with FakeEngineServer("sglang") as server:
        before = parse_metrics(server.metrics_text())
        server.set_behaviour("restart")
        after = parse_metrics(server.metrics_text())
    assert after.prompt_tokens < before.prompt_tokens / 5


def test_unknown_engine_or_behaviour_is_refused():
    with pytest.raises(ValueError):
        FakeEngineServer("ollama")
    with pytest.raises(ValueError):
        FakeEngineServer("vllm", behaviour="explode")


def test_stop_does_not_wait_for_hanging_handlers():
    baseline = {t.ident for t in threading.enumerate()}
    server = FakeEngineServer("vllm", behaviour="hang", hang_s=60).start()
    results = []
    clients = [
        threading.Thread(target=lambda: results.append(fetch(f"{server.url}/health", timeout_s=3)), daemon=True)
        for _ in range(3)
    ]
    for client in clients:
        client.start()
    time.sleep(0.2)  # the handlers are now waiting
    start = time.monotonic()
    server.stop()
    assert time.monotonic() - start < 1.0
    for client in clients:
        client.join(3)
    assert len(results) == 3 and all(r.error for r in results)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and [t for t in threading.enumerate() if t.ident not in baseline]:
        time.sleep(0.02)
    assert not [t for t in threading.enumerate() if t.ident not in baseline]


def test_behaviour_can_be_switched_over_http():
    def post(url: str) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, data=b"", method="POST"), timeout=2) as reply:
                return reply.status, reply.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    with FakeEngineServer("llamacpp") as server:
        status, body = post(f"{server.url}/_fake/behaviour?set=loading")
        assert status == 200 and json.loads(body) == {"behaviour": "loading"}
        assert fetch(f"{server.url}/health", timeout_s=2).status == 503
        assert post(f"{server.url}/_fake/behaviour?set=nope")[0] == 400
    assert set(BEHAVIOURS) >= {"ok", "restart", "hang", "slow_body", "huge_body", "redirect", "wrong_model",
                               "unauthorized", "loading", "error_500", "garbage"}  # fmt: skip


def test_command_line_serves_until_terminated():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "fleet.polling.fakeserver", "--engine", "sglang", "--port", "0"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert "fake sglang endpoint on http://127.0.0.1:" in line, (line, proc.stderr.read() if proc.poll() else "")
        url = line.split(" on ", 1)[1].split()[0]
        models = fetch(f"{url}/v1/models", timeout_s=3)
        assert models.ok and json.loads(models.body)["data"][0]["owned_by"] == "sglang"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            assert proc.wait(5) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
