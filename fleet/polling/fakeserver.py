"""A fake LLM serving endpoint (vLLM, SGLang, llama.cpp or plain OpenAI-compatible) for tests and demos.

Stdlib only (``http.server``) plus prometheus-client to render metrics exactly as vLLM and SGLang do
(``_total`` counters, ``_created`` series, histogram buckets). Metrics change between scrapes:
counters grow, histograms fill, running and waiting requests fluctuate.

From Python::

    with FakeEngineServer(engine="vllm") as server:      # 127.0.0.1, ephemeral port
        poll_endpoint(server.url, "vllm", server.model_id, None, timeout_s=0.5)
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
``garbage_metrics`` (only the metrics unparseable). Handler threads are daemons and every wait
watches the stop event, so shutting down never blocks on a hanging request.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import random
import signal
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

ENGINES = ("vllm", "vllm-v0", "sglang", "llamacpp", "openai")
BEHAVIOURS = (
    "ok",
    "restart",
    "hang",
    "slow_body",
    "huge_body",
    "redirect",
    "wrong_model",
    "unauthorized",
    "loading",
    "engine_dead",
    "error_500",
    "garbage",
    "garbage_metrics",
)
DEFAULT_MODELS = {
    "vllm": "meta-llama/Meta-Llama-3-8B-Instruct",
    "vllm-v0": "Qwen/Qwen2.5-Coder-32B-Instruct",
    "sglang": "meta-llama/Llama-3.1-8B-Instruct",
    "llamacpp": "qwen2.5-7b-instruct-q4_k_m.gguf",
    "openai": "fake-model",
}
DEFAULT_API_KEY = "fake-key"

# vLLM's V1 bucket layouts (vllm/v1/metrics/loggers.py) and SGLang's defaults (metrics/collector.py).
VLLM_TTFT_BUCKETS = (
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
    160.0,
    640.0,
    2560.0,
)
VLLM_ITL_BUCKETS = (
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.4,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
)
SGLANG_TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
SGLANG_ITL_BUCKETS = (
    0.002,
    0.004,
    0.006,
    0.008,
    0.010,
    0.015,
    0.020,
    0.025,
    0.030,
    0.035,
    0.040,
    0.060,
    0.080,
    0.100,
    0.200,
    0.400,
    0.600,
    0.800,
    1.000,
    2.000,
    4.000,
    6.000,
    8.000,
)

VLLM_BLOCK_SIZE = 16
VLLM_GPU_BLOCKS = 2000  # per engine: 32,000 tokens of KV cache
SGLANG_MAX_TOTAL_TOKENS = 120_000  # per data-parallel rank
HUGE_BODY_BYTES = 40 * 1024 * 1024


@dataclass(frozen=True)
class RecordedRequest:
    """What the fake server saw of one request (never the key itself)."""

    method: str
    path: str
    host: str
    has_authorization: bool


class _Simulation:
    """An engine's evolving load, rendered as that engine's ``/metrics`` page.

    Each ``render()`` advances the simulation by one step, so two scrapes always differ.
    """

    def __init__(self, engine: str, model: str, engines: int, tp: int, seed: int, warm_steps: int) -> None:
        self.engine = engine
        self.model = model
        self.engines = max(1, engines)
        self.tp = max(1, tp)
        self.rng = random.Random(seed)  # noqa: S311 - simulated load, not security
        self.started = time.time()
        self.last_render = time.monotonic()
        self.registry = CollectorRegistry()
        self.llama = {
            "prompt_tokens_total": 0.0,
            "prompt_seconds_total": 0.0,
            "tokens_predicted_total": 0.0,
            "tokens_predicted_seconds_total": 0.0,
            "n_decode_total": 0.0,
        }
        self.llama_gauges: dict[str, float] = {}
        if engine in ("vllm", "vllm-v0"):
            self._build_vllm(v1=engine == "vllm")
        elif engine == "sglang":
            self._build_sglang()
        for _ in range(warm_steps):
            self.step()

    # -- vLLM ---------------------------------------------------------------------------------
    def _build_vllm(self, v1: bool) -> None:
        reg = self.registry
        labels = ["engine", "model_name"] if v1 else ["model_name"]
        self.v1 = v1
        self.g_start = Gauge(
            "process_start_time_seconds", "Start time of the process since unix epoch in seconds.", registry=reg
        )
        self.g_start.set(self.started)
        self.g_running = Gauge(
            "vllm:num_requests_running", "Number of requests in model execution batches.", labels, registry=reg
        )
        self.g_waiting = Gauge(
            "vllm:num_requests_waiting", "Number of requests waiting to be processed.", labels, registry=reg
        )
        self.g_usage_old = Gauge(
            "vllm:gpu_cache_usage_perc",
            "GPU KV-cache usage. 1 means 100 percent usage."
            + (" DEPRECATED: Use vllm:kv_cache_usage_perc instead." if v1 else ""),
            labels,
            registry=reg,
        )
        self.c_queries_old = Counter(
            "vllm:gpu_prefix_cache_queries",
            "GPU prefix cache queries, in terms of number of queried tokens." + (" DEPRECATED" if v1 else ""),
            labels,
            registry=reg,
        )
        self.c_hits_old = Counter(
            "vllm:gpu_prefix_cache_hits",
            "GPU prefix cache hits, in terms of number of cached tokens." + (" DEPRECATED" if v1 else ""),
            labels,
            registry=reg,
        )
        if v1:
            self.g_usage = Gauge(
                "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", labels, registry=reg
            )
            self.c_queries = Counter(
                "vllm:prefix_cache_queries",
                "Prefix cache queries, in terms of number of queried tokens.",
                labels,
                registry=reg,
            )
            self.c_hits = Counter(
                "vllm:prefix_cache_hits",
                "Prefix cache hits, in terms of number of cached tokens.",
                labels,
                registry=reg,
            )
        self.c_preempt = Counter(
            "vllm:num_preemptions", "Cumulative number of preemption from the engine.", labels, registry=reg
        )
        self.c_prompt = Counter("vllm:prompt_tokens", "Number of prefill tokens processed.", labels, registry=reg)
        self.c_gen = Counter("vllm:generation_tokens", "Number of generation tokens processed.", labels, registry=reg)
        self.c_success = Counter(
            "vllm:request_success",
            "Count of successfully processed requests.",
            [*labels, "finished_reason"],
            registry=reg,
        )
        self.h_ttft = Histogram(
            "vllm:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            labels,
            buckets=VLLM_TTFT_BUCKETS,
            registry=reg,
        )
        self.h_tpot = Histogram(
            "vllm:time_per_output_token_seconds",
            "Histogram of time per output token in seconds."
            + (" DEPRECATED: Use vllm:inter_token_latency_seconds instead." if v1 else ""),
            labels,
            buckets=VLLM_ITL_BUCKETS,
            registry=reg,
        )
        if v1:
            self.h_itl = Histogram(
                "vllm:inter_token_latency_seconds",
                "Histogram of inter-token latency in seconds.",
                labels,
                buckets=VLLM_ITL_BUCKETS,
                registry=reg,
            )
        info_labels = ["block_size", "cache_dtype", "enable_prefix_caching", "gpu_memory_utilization", "num_gpu_blocks"]
        self.g_info = Gauge(
            "vllm:cache_config_info",
            "Information of the LLMEngine CacheConfig",
            [*info_labels, "engine"] if v1 else info_labels,
            registry=reg,
        )
        for e in range(self.engines if v1 else 1):
            values = [str(VLLM_BLOCK_SIZE), "auto", "True", "0.9", str(VLLM_GPU_BLOCKS)]
            self.g_info.labels(*values, *([str(e)] if v1 else [])).set(1)

    def _vllm_labels(self, e: int) -> dict[str, str]:
        return {"model_name": self.model, "engine": str(e)} if self.v1 else {"model_name": self.model}

    def _step_vllm(self) -> None:
        rng = self.rng
        for e in range(self.engines if self.v1 else 1):
            lb = self._vllm_labels(e)
            running = rng.randint(0, 24)
            self.g_running.labels(**lb).set(running)
            self.g_waiting.labels(**lb).set(max(0, rng.randint(-12, 8)))
            usage = min(1.0, running * 0.035 + rng.random() * 0.05)
            self.g_usage_old.labels(**lb).set(usage)
            if self.v1:
                self.g_usage.labels(**lb).set(usage)
            for _ in range(rng.randint(2, 10)):
                prompt, gen = rng.randint(200, 4000), rng.randint(30, 600)
                hit = VLLM_BLOCK_SIZE * int(prompt * rng.uniform(0.1, 0.8) / VLLM_BLOCK_SIZE)
                self.c_prompt.labels(**lb).inc(prompt)
                self.c_gen.labels(**lb).inc(gen)
                for counter, value in ((self.c_queries_old, prompt), (self.c_hits_old, hit)):
                    counter.labels(**lb).inc(value)
                if self.v1:
                    self.c_queries.labels(**lb).inc(prompt)
                    self.c_hits.labels(**lb).inc(hit)
                self.c_success.labels(**lb, finished_reason=rng.choice(("stop", "stop", "length"))).inc()
                self.h_ttft.labels(**lb).observe(rng.lognormvariate(math.log(0.08 + prompt / 50_000), 0.5))
                for _ in range(min(gen, 30)):
                    itl = rng.lognormvariate(math.log(0.03), 0.3)
                    self.h_tpot.labels(**lb).observe(itl)
                    if self.v1:
                        self.h_itl.labels(**lb).observe(itl)
            if rng.random() < 0.15:
                self.c_preempt.labels(**lb).inc(rng.randint(1, 3))

    # -- SGLang -------------------------------------------------------------------------------
    def _build_sglang(self) -> None:
        reg = self.registry
        sched = ["engine_type", "model_name", "pp_rank", "tp_rank"] + (["dp_rank"] if self.engines > 1 else [])
        tok = ["model_name"]
        self.g_running = Gauge("sglang:num_running_reqs", "The number of running requests.", sched, registry=reg)
        self.g_used = Gauge("sglang:num_used_tokens", "The number of used tokens.", sched, registry=reg)
        self.g_usage = Gauge("sglang:token_usage", "The token usage.", sched, registry=reg)
        self.g_gen = Gauge("sglang:gen_throughput", "The generation throughput (token/s).", sched, registry=reg)
        self.g_queue = Gauge(
            "sglang:num_queue_reqs", "The number of requests in the waiting queue.", sched, registry=reg
        )
        self.g_hit = Gauge("sglang:cache_hit_rate", "The prefix cache hit rate.", sched, registry=reg)
        self.g_max = Gauge(
            "sglang:max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.", sched, registry=reg
        )
        self.c_retract = Counter(
            "sglang:num_retracted_requests", "Total number of retracted requests.", sched, registry=reg
        )
        self.c_prompt = Counter("sglang:prompt_tokens", "Number of prefill tokens processed.", tok, registry=reg)
        self.c_gen = Counter("sglang:generation_tokens", "Number of generation tokens processed.", tok, registry=reg)
        self.c_cached = Counter("sglang:cached_tokens", "Number of cached prompt tokens.", tok, registry=reg)
        self.c_requests = Counter("sglang:num_requests", "Number of requests processed.", tok, registry=reg)
        self.h_ttft = Histogram(
            "sglang:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            tok,
            buckets=SGLANG_TTFT_BUCKETS,
            registry=reg,
        )
        self.h_itl = Histogram(
            "sglang:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.",
            tok,
            buckets=SGLANG_ITL_BUCKETS,
            registry=reg,
        )

    def _step_sglang(self) -> None:
        rng = self.rng
        for dp in range(self.engines):
            running = rng.randint(0, 32)
            waiting = max(0, rng.randint(-20, 10))
            used = min(SGLANG_MAX_TOTAL_TOKENS, running * rng.randint(500, 3000))
            retracted = rng.randint(1, 2) if rng.random() < 0.1 else 0
            for tp in range(self.tp):  # every TP rank of a scheduler repeats its numbers
                lb = {"engine_type": "unified", "model_name": self.model, "pp_rank": "0", "tp_rank": str(tp)}
                if self.engines > 1:
                    lb["dp_rank"] = str(dp)
                self.g_running.labels(**lb).set(running)
                self.g_queue.labels(**lb).set(waiting)
                self.g_used.labels(**lb).set(used)
                self.g_usage.labels(**lb).set(round(used / SGLANG_MAX_TOTAL_TOKENS, 2))
                self.g_gen.labels(**lb).set(running * rng.uniform(20, 40))
                self.g_hit.labels(**lb).set(rng.uniform(0.0, 0.6))
                self.g_max.labels(**lb).set(SGLANG_MAX_TOTAL_TOKENS)
                if retracted:
                    self.c_retract.labels(**lb).inc(retracted)
            for _ in range(rng.randint(2, 10)):
                prompt, gen = rng.randint(200, 4000), rng.randint(30, 600)
                lb = {"model_name": self.model}
                self.c_prompt.labels(**lb).inc(prompt)
                self.c_gen.labels(**lb).inc(gen)
                self.c_cached.labels(**lb).inc(int(prompt * rng.uniform(0.1, 0.7)))
                self.c_requests.labels(**lb).inc()
                self.h_ttft.labels(**lb).observe(rng.lognormvariate(math.log(0.1 + prompt / 40_000), 0.5))
                for _ in range(min(gen, 30)):
                    self.h_itl.labels(**lb).observe(rng.lognormvariate(math.log(0.025), 0.3))

    # -- llama.cpp ------------------------------------------------------------------------------
    def _step_llamacpp(self) -> None:
        rng = self.rng
        for _ in range(rng.randint(1, 4)):
            prompt, gen = rng.randint(100, 2000), rng.randint(20, 400)
            prompt_s, gen_s = prompt / rng.uniform(800, 1500), gen / rng.uniform(20, 60)
            self.llama["prompt_tokens_total"] += prompt
            self.llama["prompt_seconds_total"] += prompt_s
            self.llama["tokens_predicted_total"] += gen
            self.llama["tokens_predicted_seconds_total"] += gen_s
            self.llama["n_decode_total"] += gen
            self.llama_gauges["prompt_tokens_seconds"] = prompt / prompt_s
            self.llama_gauges["predicted_tokens_seconds"] = gen / gen_s
        processing = rng.randint(0, 4)
        self.llama_gauges["requests_processing"] = processing
        self.llama_gauges["requests_deferred"] = max(0, rng.randint(-3, 3))
        self.llama_gauges["kv_cache_tokens"] = processing * rng.randint(200, 2000)
        self.llama_gauges["kv_cache_usage_ratio"] = min(1.0, self.llama_gauges["kv_cache_tokens"] / 16384)
        self.llama_gauges["n_busy_slots_per_decode"] = max(1.0, processing)

    def _render_llamacpp(self) -> bytes:
        # llama.cpp writes its page by hand (tools/server/server.cpp): HELP, TYPE, one unlabelled
        # sample per metric, numbers printed by a C++ stream (6 significant digits).
        helps = {
            "prompt_tokens_total": "Number of prompt tokens processed.",
            "prompt_seconds_total": "Prompt process time",
            "tokens_predicted_total": "Number of generation tokens processed.",
            "tokens_predicted_seconds_total": "Predict process time",
            "n_decode_total": "Total number of llama_decode() calls",
            "n_busy_slots_per_decode": "Average number of busy slots per llama_decode() call",
            "prompt_tokens_seconds": "Average prompt throughput in tokens/s.",
            "predicted_tokens_seconds": "Average generation throughput in tokens/s.",
            "kv_cache_usage_ratio": "KV-cache usage. 1 means 100 percent usage.",
            "kv_cache_tokens": "KV-cache tokens.",
            "requests_processing": "Number of requests processing.",
            "requests_deferred": "Number of requests deferred.",
        }
        lines = []
        for kind, source in (("counter", self.llama), ("gauge", self.llama_gauges)):
            for name, value in source.items():
                lines += [
                    f"# HELP llamacpp:{name} {helps[name]}",
                    f"# TYPE llamacpp:{name} {kind}",
                    f"llamacpp:{name} {value:g}",
                ]
        return ("\n".join(lines) + "\n").encode()

    # -- common ---------------------------------------------------------------------------------
    def step(self) -> None:
        if self.engine in ("vllm", "vllm-v0"):
            self._step_vllm()
        elif self.engine == "sglang":
            self._step_sglang()
        elif self.engine == "llamacpp":
            self._step_llamacpp()

    def render(self) -> bytes:
        """Advance one step per second since the last scrape (at least one, at most 120), render."""
        now = time.monotonic()
        for _ in range(min(max(int(now - self.last_render), 1), 120)):
            self.step()
        self.last_render = now
        if self.engine == "llamacpp":
            return self._render_llamacpp()
        return generate_latest(self.registry)


class FakeEngineServer:
    """A threaded fake endpoint on ``host`` (default 127.0.0.1), ``port`` 0 meaning ephemeral.

    ``engine``: one of :data:`ENGINES`; ``behaviour``: one of :data:`BEHAVIOURS` (change it live
    with :meth:`set_behaviour`); ``api_key``: when set, ``/v1/*`` needs ``Authorization: Bearer``
    with it (``unauthorized`` behaviour uses :data:`DEFAULT_API_KEY` when None); ``metrics``:
    serve ``/metrics`` (SGLang answers 404 and llama.cpp 501 when off); ``engines``: data-parallel
    engines (vLLM ``engine`` label, SGLang ``dp_rank``); ``tp``: SGLang TP ranks that repeat their
    scheduler's numbers; ``hang_s``/``drip_interval_s``: seconds a ``hang`` waits at most, and
    between two dripped bytes.
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
        self.requests: list[RecordedRequest] = []
        self._seed = seed
        self._engines, self._tp = engines, tp
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._serving = threading.Event()
        self._sim = _Simulation(engine, self.model_id, engines, tp, seed, warm_steps=40)
        self.behaviour = "ok"
        self.set_behaviour(behaviour)
        self._httpd = ThreadingHTTPServer((host, port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._httpd.fake = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

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
                self._sim = _Simulation(self.engine, self.model_id, self._engines, self._tp, self._seed, warm_steps=1)
            self.behaviour = behaviour

    @property
    def request_count(self) -> int:
        return len(self.requests)

    def metrics_text(self) -> bytes:
        """Advance the simulation one step and render its ``/metrics`` page."""
        with self._lock:
            return self._sim.render()

    def models_payload(self, model_id: str | None = None) -> dict[str, Any]:
        """The ``/v1/models`` reply in this engine's shape."""
        model = model_id or self.model_id
        created = int(self._sim.started)
        entry: dict[str, Any] = {"id": model, "object": "model", "created": created}
        if self.engine in ("vllm", "vllm-v0"):
            entry.update(
                owned_by="vllm",
                root=model,
                parent=None,
                max_model_len=self.max_model_len,
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
        elif self.engine == "sglang":
            entry.update(owned_by="sglang", root=model, max_model_len=self.max_model_len)
        elif self.engine == "llamacpp":
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

    def wait_stop(self, seconds: float) -> bool:
        """Wait up to ``seconds`` or until stopped; True when stopped."""
        return self._stop.wait(seconds)


class _Handler(BaseHTTPRequestHandler):
    server_version = "fake-engine/1"
    timeout = 10  # seconds: a client that stops reading cannot pin a handler thread forever

    @property
    def fake(self) -> FakeEngineServer:
        return self.server.fake  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests and demos do not want a line per request on stderr."""

    # -- responses ------------------------------------------------------------------------------
    def _send(self, status: int, body: bytes, content_type: str = "application/json", **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(body)

    def _json(self, status: int, payload: Any, **headers: str) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json", **headers)

    def _error(self, status: int, message: str, kind: str) -> None:
        self._json(status, {"error": {"code": status, "message": message, "type": kind}})

    def _drip(self, body: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body) * 50))
        self.end_headers()
        try:
            for i in range(len(body) * 50):
                if self.fake.wait_stop(self.fake.drip_interval_s):
                    return
                self.wfile.write(body[i % len(body) : i % len(body) + 1])
                self.wfile.flush()
        except OSError:
            return

    def _huge(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Connection", "close")
        self.end_headers()  # no Content-Length: the body ends when the connection closes
        chunk = b"# padding " + b"x" * (64 * 1024 - 11) + b"\n"
        try:
            for _ in range(HUGE_BODY_BYTES // len(chunk)):
                if self.fake._stop.is_set():
                    return
                self.wfile.write(chunk)
        except OSError:
            return

    # -- routing ----------------------------------------------------------------------------------
    def do_POST(self) -> None:
        parts = urlsplit(self.path)
        if parts.path == "/_fake/behaviour":
            wanted = parse_qs(parts.query).get("set", [""])[0]
            try:
                self.fake.set_behaviour(wanted)
            except ValueError as exc:
                return self._json(400, {"error": str(exc), "behaviours": list(BEHAVIOURS)})
            return self._json(200, {"behaviour": self.fake.behaviour})
        return self._error(404, "Not Found", "not_found_error")

    def do_GET(self) -> None:
        fake = self.fake
        path = urlsplit(self.path).path
        auth = self.headers.get("Authorization", "")
        fake.requests.append(RecordedRequest("GET", path, self.headers.get("Host", ""), bool(auth)))
        if path == "/_fake/behaviour":
            return self._json(200, {"behaviour": fake.behaviour, "behaviours": list(BEHAVIOURS)})
        behaviour = fake.behaviour
        route = self._route(path)
        if route is None:
            return self._error(404, "Not Found", "not_found_error")
        content_type = "text/plain; version=0.0.4; charset=utf-8" if route == "metrics" else "application/json"

        if behaviour == "hang":
            fake.wait_stop(fake.hang_s)  # never answers within any sane timeout; released by stop()
            return
        if behaviour == "slow_body":
            return self._drip(self._body(route, path) or b"{}", content_type)
        if behaviour == "huge_body":
            return self._huge(content_type)
        if behaviour == "redirect":
            return self._send(302, b"", "text/plain", Location="http://169.254.169.254/latest/meta-data/")
        if behaviour == "error_500":
            return self._send(500, b"Internal Server Error", "text/plain")
        if behaviour == "loading":
            return self._error(503, "Loading model", "unavailable_error")
        if route == "models" and (fake.api_key or behaviour == "unauthorized"):
            expected = fake.api_key or DEFAULT_API_KEY
            if auth != f"Bearer {expected}":
                return self._error(401, "Unauthorized", "authentication_error")
        if behaviour == "engine_dead" and route == "health":
            return self._send(503 if fake.engine.startswith("vllm") else 500, b"", "text/plain")
        if behaviour == "garbage" and route in ("models", "metrics"):
            return self._send(200, b"<html><body>Welcome to nginx!</body></html>", "text/html")
        if behaviour == "garbage_metrics" and route == "metrics":
            return self._send(200, b"vllm:num_requests_running{model_name= 3 {{{\n", content_type)
        if route == "metrics" and not fake.metrics_enabled:
            if fake.engine == "llamacpp":
                return self._error(
                    501,
                    "This server does not support metrics endpoint. Start it with `--metrics`",
                    "not_supported_error",
                )
            return self._error(404, "Not Found", "not_found_error")
        body = self._body(route, path)
        if body is None:
            return self._error(404, "Not Found", "not_found_error")
        return self._send(200, body, content_type)

    def _route(self, path: str) -> str | None:
        engine = self.fake.engine
        if path == "/v1/models":
            return "models"
        if path == "/metrics" and engine != "openai":
            return "metrics"
        if (engine in ("vllm", "vllm-v0", "sglang") and path == "/health") or (
            engine == "sglang" and path == "/health_generate"
        ):
            return "health"
        if engine == "llamacpp" and path in ("/health", "/v1/health"):
            return "health"
        if engine in ("vllm", "vllm-v0") and path == "/version":
            return "version"
        if engine == "llamacpp" and path == "/props":
            return "props"
        return None

    def _body(self, route: str, path: str) -> bytes | None:
        fake = self.fake
        if route == "models":
            other = "some-org/another-model" if fake.behaviour == "wrong_model" else None
            return json.dumps(fake.models_payload(other)).encode()
        if route == "metrics":
            return fake.metrics_text()
        if route == "health":
            return b'{"status":"ok"}' if fake.engine == "llamacpp" else b""
        if route == "version":
            return b'{"version":"0.10.1"}'
        if route == "props":
            return json.dumps(
                {
                    "default_generation_settings": {"n_ctx": 16384},
                    "total_slots": 4,
                    "model_path": f"/models/{fake.model_id}",
                }
            ).encode()
        return None


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
