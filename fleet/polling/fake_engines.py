"""The fake server's simulated engine: evolving load, rendered as that engine's ``/metrics`` page.

vLLM's and SGLang's metric families live in :mod:`fleet.polling.fake_vllm` and
:mod:`fleet.polling.fake_sglang` (prometheus-client registries); llama.cpp writes its page by hand,
here. The OpenAI-compatible flavour has no metrics.
"""

from __future__ import annotations

import random
import time

from prometheus_client import CollectorRegistry, generate_latest

from .fake_sglang import SglangSimulation
from .fake_vllm import VllmSimulation


class Simulation(VllmSimulation, SglangSimulation):
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
        self._page: bytes | None = None
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

    def render(self, cache_s: float = 0.0) -> bytes:
        """Advance one step per second since the last scrape (at least one, at most 120), render.

        ``cache_s``: serve the page rendered less than that many seconds ago again, unchanged.
        """
        now = time.monotonic()
        if self._page is not None and now - self.last_render < cache_s:
            return self._page
        for _ in range(min(max(int(now - self.last_render), 1), 120)):
            self.step()
        self.last_render = now
        self._page = self._render_llamacpp() if self.engine == "llamacpp" else generate_latest(self.registry)
        return self._page
