"""``make run``'s demo endpoint: the fake vLLM started by ``runstack`` publishes the KV cache blocks
vLLM's allocator gives the demo deployment, so the demo is not flagged out of calibration."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from io import StringIO

import pytest
from django.core.management import call_command

from fleet.management.commands.ensure_demo_fleet import DEMO_DEPLOYMENT, DEMO_MODEL_ID
from fleet.management.commands.runstack import Command as RunStack
from fleet.models import Deployment
from fleet.poll_store import predicted_cache_of
from fleet.poller import run_poll_cycle


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.django_db
def test_the_demo_endpoint_publishes_the_demo_deployments_blocks_and_calibrates():
    port = free_port()
    call_command("load_catalog", stdout=StringIO())
    call_command("ensure_demo_fleet", "--endpoint", f"http://127.0.0.1:{port}", stdout=StringIO())
    deployment = Deployment.objects.get(slug=DEMO_DEPLOYMENT)
    args = RunStack.demo_cache_args()
    blocks, block_size = predicted_cache_of(deployment.sizing(), deployment.dp)["blocks"]
    assert args == ["--num-gpu-blocks", str(blocks), "--block-size", str(block_size)]
    assert blocks > 2_000  # the fake's default, which the demo was flagged against (ratio 0.04)
    cmd = [sys.executable, "-m", "fleet.polling.fakeserver", "--port", str(port), "--model", DEMO_MODEL_ID, *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        run_poll_cycle()
    finally:
        proc.terminate()
        proc.wait(10)
    deployment.refresh_from_db()
    assert deployment.last_status == "up"
    metrics = deployment.last_metrics
    assert metrics["observed_cache_tokens"] == blocks * block_size
    assert deployment.calibration_flagged is False


def test_runstack_tells_every_process_where_the_web_server_listens(monkeypatch):
    """The poller (in the worker) refuses the web server's port on loopback (fleet.egress): every
    process runstack starts gets ``FLEETCAP_BIND`` from its ``--host`` and ``--port``."""
    from fleet.management.commands import runstack

    started: list[tuple[list[str], dict[str, str]]] = []

    class Exited:
        returncode = 0

        def __init__(self, cmd: list[str], env: dict[str, str]) -> None:
            started.append((cmd, env))

        def poll(self) -> int:
            return 0

        def wait(self, timeout: float | None = None) -> int:
            return 0

    monkeypatch.setattr(runstack.subprocess, "Popen", Exited)
    monkeypatch.setattr(runstack.signal, "signal", lambda *args: None)  # not this test process's handlers
    monkeypatch.setattr(RunStack, "demo_cache_args", staticmethod(list))
    RunStack().run_from_argv(["manage.py", "runstack", "--port", "8123", "--demo-endpoint-port", "8100"])
    assert len(started) == 4 and all(env["FLEETCAP_BIND"] == "127.0.0.1:8123" for _, env in started)
