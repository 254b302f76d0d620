"""A fake LLM serving endpoint (vLLM, SGLang, llama.cpp or plain OpenAI-compatible) for tests and demos.

Stdlib only (``http.server``) plus prometheus-client to render metrics exactly as vLLM and SGLang do
(``_total`` counters, ``_created`` series, histogram buckets). Metrics change between scrapes:
counters grow, histograms fill, running and waiting requests fluctuate.

From Python::

    with FakeEngineServer(engine="vllm") as server:      # 127.0.0.1, ephemeral port
        # engines: every engine's routes (planner.engine.poll_routes(), as the Django poller passes them)
        poll_endpoint(server.url, "vllm", server.model_id, None, timeout_s=0.5, engines=routes)
        server.set_behaviour("hang")

From the shell (``make run`` can start one as a demo endpoint)::

    python -m fleet.polling.fakeserver --engine vllm --port 8100
    curl -X POST 'http://127.0.0.1:8100/_fake/behaviour?set=loading'   # switch behaviour live

Behaviours (:data:`BEHAVIOURS`): ``ok``; ``restart`` (counters start again near zero, then ok);
``hang`` (accepts, never answers until stopped); ``slow_body`` (drips the body a byte at a time);
``huge_body`` (tens of MB, no Content-Length); ``redirect`` (302 to the metadata address);
``wrong_model`` (lists another model); ``unauthorized`` (401 unless the right bearer key);
``loading`` (503 everywhere, as llama.cpp while loading); ``engine_dead`` (models answer, health
fails: 503 on vLLM); ``error_500``; ``garbage`` (unparseable model list and metrics);
``garbage_metrics`` (only the metrics unparseable). FakeEngineHandler threads are daemons and every wait
watches the stop event, so shutting down never blocks on a hanging request.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from http.server import ThreadingHTTPServer
from typing import Any

from .fake_engines import Simulation
from .fake_handler import BEHAVIOURS, DEFAULT_API_KEY, HUGE_BODY_BYTES, FakeEngineHandler, RecordedRequest
from .fake_sglang import SGLANG_ITL_BUCKETS, SGLANG_MAX_TOTAL_TOKENS, SGLANG_TTFT_BUCKETS
from .fake_vllm import VLLM_BLOCK_SIZE, VLLM_GPU_BLOCKS, VLLM_ITL_BUCKETS, VLLM_TTFT_BUCKETS

__all__ = [
    "BEHAVIOURS",
    "DEFAULT_API_KEY",
    "DEFAULT_MODELS",
    "ENGINES",
    "HUGE_BODY_BYTES",
    "SGLANG_ITL_BUCKETS",
    "SGLANG_MAX_TOTAL_TOKENS",
    "SGLANG_TTFT_BUCKETS",
    "VLLM_BLOCK_SIZE",
    "VLLM_GPU_BLOCKS",
    "VLLM_ITL_BUCKETS",
    "VLLM_TTFT_BUCKETS",
    "FakeEngineServer",
    "RecordedRequest",
    "main",
    "models_payload",
]

ENGINES = ("vllm", "vllm-v0", "sglang", "llamacpp", "openai")
DEFAULT_MODELS = {
    "vllm": "meta-llama/Meta-Llama-3-8B-Instruct",
    "vllm-v0": "Qwen/Qwen2.5-Coder-32B-Instruct",
    "sglang": "meta-llama/Llama-3.1-8B-Instruct",
    "llamacpp": "qwen2.5-7b-instruct-q4_k_m.gguf",
    "openai": "fake-model",
}


def models_payload(engine: str, model: str, max_model_len: int | None, created: int) -> dict[str, Any]:
    """The ``/v1/models`` reply of ``engine`` serving ``model`` (``created``: Unix seconds)."""
    entry: dict[str, Any] = {"id": model, "object": "model", "created": created}
    if engine in ("vllm", "vllm-v0"):
        entry.update(
            owned_by="vllm",
            root=model,
            parent=None,
            max_model_len=max_model_len,
            permission=[
                {
                    "id": "modelperm-0",
                    "object": "model_permission",
                    "created": created,
                    "allow_create_engine": False,
                    "allow_sampling": True,
                    "allow_logprobs": True,
                    "allow_search_indices": False,
                    "allow_view": True,
                    "allow_fine_tuning": False,
                    "organization": "*",
                    "group": None,
                    "is_blocking": False,
                }
            ],
        )
    elif engine == "sglang":
        entry.update(owned_by="sglang", root=model, max_model_len=max_model_len)
    elif engine == "llamacpp":
        entry.update(
            owned_by="llamacpp",
            meta={
                "vocab_type": 2,
                "n_vocab": 152064,
                "n_ctx_train": 32768,
                "n_embd": 3584,
                "n_params": 7615616512,
                "size": 4677120000,
            },
        )
    else:
        entry.update(owned_by="system")
    return {"object": "list", "data": [entry]}


class _Server(ThreadingHTTPServer):
    # socketserver listens with a backlog of 5: a poller opening dozens of connections at once
    # would see SYNs dropped and retried a second later, a latency no real engine server has.
    request_queue_size = 1024


class FakeEngineServer:
    """A threaded fake endpoint on ``host`` (default 127.0.0.1), ``port`` 0 meaning ephemeral.

    ``engine``: one of :data:`ENGINES`; ``behaviour``: one of :data:`BEHAVIOURS` (change it live
    with :meth:`set_behaviour`); ``api_key``: when set, ``/v1/*`` needs ``Authorization: Bearer``
    with it (``unauthorized`` behaviour uses :data:`DEFAULT_API_KEY` when None); ``metrics``:
    serve ``/metrics`` (SGLang answers 404 and llama.cpp 501 when off); ``engines``: data-parallel
    engines (vLLM ``engine`` label, SGLang ``dp_rank``); ``tp``: SGLang TP ranks that repeat their
    scheduler's numbers; ``hang_s``/``drip_interval_s``: seconds a ``hang`` waits at most, and
    between two dripped bytes; ``render_cache_s``: seconds one rendered ``/metrics`` page is served
    again before the simulation steps (0: every scrape steps; a benchmark that shares one server
    between many endpoints sets it so the fake's rendering is not what it measures).
    """

    def __init__(
        self,
        engine: str = "vllm",
        *,
        behaviour: str = "ok",
        model_id: str | None = None,
        api_key: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        metrics: bool = True,
        engines: int = 1,
        tp: int = 1,
        max_model_len: int | None = None,
        seed: int = 7,
        hang_s: float = 30.0,
        drip_interval_s: float = 0.05,
        render_cache_s: float = 0.0,
    ) -> None:
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}")
        if behaviour not in BEHAVIOURS:
            raise ValueError(f"behaviour must be one of {', '.join(BEHAVIOURS)}")
        self.engine = engine
        self.model_id = model_id or DEFAULT_MODELS[engine]
        self.api_key = api_key
        self.metrics_enabled = metrics
        self.max_model_len = max_model_len or {"sglang": 32768, "llamacpp": None}.get(engine, 8192)
        self.hang_s = hang_s
        self.drip_interval_s = drip_interval_s
        self.render_cache_s = render_cache_s
        self.requests: list[RecordedRequest] = []
        self._seed = seed
        self._engines, self._tp = engines, tp
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._serving = threading.Event()
        self._sim = Simulation(engine, self.model_id, engines, tp, seed, warm_steps=40)
        self.behaviour = "ok"
        self.set_behaviour(behaviour)
        self._httpd = _Server((host, port), FakeEngineHandler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._httpd.fake = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    def set_cache_config(self, num_gpu_blocks: int, block_size: int) -> None:
        """vLLM only: publish ``cache_config_info`` with ``num_gpu_blocks`` per worker of ``block_size`` tokens."""
        with self._lock:
            self._sim.set_cache_config(num_gpu_blocks, block_size)

    # -- lifecycle ------------------------------------------------------------------------------
    @property
    def host(self) -> str:
        return str(self._httpd.server_address[0])

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The base URL (server root, without ``/v1``)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> FakeEngineServer:
        """Serve in a daemon thread; returns self."""
        if self._thread is None:
            self._serving.set()
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"fakeserver-{self.engine}-{self.port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, release waiting handlers, close the socket. Idempotent."""
        self._stop.set()
        if self._serving.is_set():
            self._httpd.shutdown()  # returns once serve_forever() has left its loop
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
        self._httpd.server_close()

    def serve_forever(self) -> None:
        """Serve in the calling thread until :meth:`stop` (used by the command line)."""
        self._serving.set()
        try:
            self._httpd.serve_forever(poll_interval=0.1)
        finally:
            self._serving.clear()

    def __enter__(self) -> FakeEngineServer:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    # -- behaviour ------------------------------------------------------------------------------
    def set_behaviour(self, behaviour: str) -> None:
        """Switch behaviour; ``restart`` restarts the simulated engine (counters near zero)."""
        if behaviour not in BEHAVIOURS:
            raise ValueError(f"behaviour must be one of {', '.join(BEHAVIOURS)}")
        with self._lock:
            if behaviour == "restart":
                self._seed += 1
                self._sim = Simulation(self.engine, self.model_id, self._engines, self._tp, self._seed, warm_steps=1)
            self.behaviour = behaviour

    @property
    def request_count(self) -> int:
        return len(self.requests)

    def metrics_text(self) -> bytes:
        """Advance the simulation one step and render its ``/metrics`` page (or the page rendered
        less than ``render_cache_s`` ago)."""
        with self._lock:
            return self._sim.render(self.render_cache_s)

    def models_payload(self, model_id: str | None = None) -> dict[str, Any]:
        """The ``/v1/models`` reply in this engine's shape."""
        return models_payload(self.engine, model_id or self.model_id, self.max_model_len, int(self._sim.started))

    def wait_stop(self, seconds: float) -> bool:
        """Wait up to ``seconds`` or until stopped; True when stopped."""
        return self._stop.wait(seconds)


def main(argv: list[str] | None = None) -> int:
    """Command line: serve a fake endpoint until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m fleet.polling.fakeserver", description=__doc__.split("\n")[0])
    parser.add_argument("--engine", choices=ENGINES, default="vllm")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8100, help="0 picks a free port")
    parser.add_argument("--model", default=None, help="served model id (default depends on the engine)")
    parser.add_argument("--behaviour", choices=BEHAVIOURS, default="ok")
    parser.add_argument("--api-key", default=None, help="require this bearer key on /v1/*")
    parser.add_argument("--no-metrics", action="store_true", help="do not serve /metrics")
    parser.add_argument("--engines", type=int, default=1, help="data-parallel engines (vLLM, SGLang)")
    parser.add_argument("--tp", type=int, default=1, help="SGLang TP ranks reporting metrics")
    parser.add_argument("--max-model-len", type=int, default=None)
    parser.add_argument(
        "--num-gpu-blocks",
        type=int,
        default=None,
        help="vLLM: KV cache blocks per engine in cache_config_info (default 2,000)",
    )
    parser.add_argument("--block-size", type=int, default=16, help="vLLM: tokens per block (with --num-gpu-blocks)")
    args = parser.parse_args(argv)
    server = FakeEngineServer(
        args.engine,
        behaviour=args.behaviour,
        model_id=args.model,
        api_key=args.api_key,
        host=args.host,
        port=args.port,
        metrics=not args.no_metrics,
        engines=args.engines,
        tp=args.tp,
        max_model_len=args.max_model_len,
    )
    if args.num_gpu_blocks is not None and args.engine == "vllm":
        server.set_cache_config(args.num_gpu_blocks, args.block_size)

    def stop(_signum: int, _frame: Any) -> None:
        threading.Thread(target=server.stop, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    print(
        f"fake {args.engine} endpoint on {server.url} serving {server.model_id!r} (behaviour {server.behaviour})",
        flush=True,
    )
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
