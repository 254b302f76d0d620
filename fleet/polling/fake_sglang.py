"""SGLang's side of the fake server's simulation: its bucket layouts, metric families and load step.

A mixin of :class:`fleet.polling.fake_engines.Simulation` (which holds the registry, the random
generator, the model name, the data-parallel engine count and the TP ranks).
"""

from __future__ import annotations

import math
import random

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# SGLang's default bucket layouts (metrics/collector.py).
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


SGLANG_MAX_TOTAL_TOKENS = 120_000  # per data-parallel rank


class SglangSimulation:
    """SGLang's metric families (scheduler gauges per rank, token counters) and one step of their load."""

    registry: CollectorRegistry
    rng: random.Random
    model: str
    engines: int
    tp: int

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
