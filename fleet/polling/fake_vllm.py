"""vLLM's side of the fake server's simulation: its bucket layouts, metric families and load step.

A mixin of :class:`fleet.polling.fake_engines.Simulation` (which holds the registry, the random
generator, the model name and the engine count); V1 and V0 (``vllm-v0``) differ in labels and names.
"""

from __future__ import annotations

import math
import random

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# vLLM's V1 bucket layouts (vllm/v1/metrics/loggers.py).
VLLM_TTFT_BUCKETS = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
    160.0, 640.0, 2560.0,
)  # fmt: skip
VLLM_ITL_BUCKETS = (
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
)  # fmt: skip

VLLM_BLOCK_SIZE = 16
VLLM_GPU_BLOCKS = 2000  # per engine: 32,000 tokens of KV cache


class VllmSimulation:
    """vLLM's metric families (V1, or V0 when ``v1`` is False) and one step of their load."""

    registry: CollectorRegistry
    _page: bytes | None
    rng: random.Random
    model: str
    engines: int

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
        self.set_cache_config(VLLM_GPU_BLOCKS, VLLM_BLOCK_SIZE)

    def set_cache_config(self, num_gpu_blocks: int, block_size: int) -> None:
        """Publish ``cache_config_info`` with these blocks per worker and tokens per block (from the next page)."""
        self._page = None
        self.g_info.clear()
        for e in range(self.engines if self.v1 else 1):
            values = [str(block_size), "auto", "True", "0.9", str(num_gpu_blocks)]
            self.g_info.labels(*values, *([str(e)] if self.v1 else [])).set(1)

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
