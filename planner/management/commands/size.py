"""``manage.py size``: the sizing API from the shell (same validation, same numbers)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from fleet.errors import FIELD_ERRORS, describe
from planner.engine import DEFAULT_STATE_POOL_RATIO, GENERIC, profile_names
from planner.sizing import SizingRequest, size_layout
from planner.templatetags.reading import bytes_text  # the pages' one byte formatter (binary units)


class Command(BaseCommand):
    help = "Memory envelopes and admission capacity of a model on a SKU (mirrors POST /api/v1/sizing/)."

    def add_arguments(self, parser):
        parser.add_argument("--model", help="Model slug, e.g. kimi-k3 (default: the deployment's)")
        parser.add_argument("--sku", help="SKU slug, e.g. h200-141gb (default: the deployment's)")
        parser.add_argument("--deployment", help="Deployment slug: the defaults of every option left out")
        for name in ("gpus", "tp", "pp", "dp", "ep", "context-tokens", "max-model-len", "block-size-tokens"):
            parser.add_argument(f"--{name}", type=int)
        parser.add_argument(
            "--engine", choices=profile_names(), help=f"Whose allocator to reproduce (default {GENERIC})"
        )
        parser.add_argument("--engine-version", help="The engine release, e.g. 0.11.0")
        parser.add_argument("--available-kv-cache-gib", type=float, help="KV memory per GPU as the engine logs it")
        parser.add_argument("--weight-format")
        parser.add_argument("--no-scale-overhead", action="store_true", help="Raw element sizes (the seeds' table).")
        parser.add_argument("--kv-cache-dtype")
        parser.add_argument("--gpu-memory-utilization", type=float)
        parser.add_argument("--runtime-reserve-gib", type=float)
        parser.add_argument("--pool", default="unified", choices=["unified", "split"])
        parser.add_argument("--state-pool-ratio", type=float, default=DEFAULT_STATE_POOL_RATIO)
        parser.add_argument("--json", action="store_true", help="Print the API's JSON response.")

    def handle(self, *args, **o):
        fields = (
            *("model", "sku", "deployment", "gpus", "tp", "pp", "dp", "ep", "context_tokens", "weight_format"),
            *("runtime_reserve_gib", "kv_cache_dtype", "gpu_memory_utilization", "engine", "engine_version"),
            *("max_model_len", "block_size_tokens", "available_kv_cache_gib"),
        )
        request = SizingRequest(
            include_scale_overhead=not o["no_scale_overhead"],
            pool=o["pool"],
            state_pool_ratio=o["state_pool_ratio"],
            **{key: o[key] for key in fields if o.get(key) is not None},
        )
        try:
            result = size_layout(request).result
        except FIELD_ERRORS as exc:
            raise CommandError(describe(exc)) from exc
        if o["json"]:
            self.stdout.write(json.dumps(result.to_dict(), indent=2))
            return
        self._print(result)

    def _print(self, r) -> None:
        w = self.stdout.write
        lay = r.layout
        w(
            f"{r.model} on {r.gpus} x {r.accelerator}: {r.replicas} replica(s) of tp={lay.tp} pp={lay.pp} "
            f"dp={lay.dp} ep={lay.ep}"
        )
        w(
            f"  weights (one copy)         {bytes_text(r.weights_bytes)}  ({r.weight_format}, "
            f"experts {r.expert_weight_format}); at least {r.min_gpus_for_weights} GPUs for weights alone"
        )
        w("  per GPU:")
        w(f"    GPU memory               {bytes_text(r.gpu_memory_bytes)}  (as the driver reports it)")
        w(f"    usable (x {r.gpu_memory_utilization})        {bytes_text(r.usable_bytes)}")
        w(f"    weights                  {bytes_text(r.weights_bytes_per_gpu)}")
        w(f"    runtime reserve          {bytes_text(r.runtime_bytes)}")
        w(f"    cache budget             {bytes_text(r.cache_bytes)}")
        w(f"  KV per token               {r.kv_bytes_per_token:,} B  ({r.kv_bytes_per_token_per_gpu:,} B per GPU)")
        w(f"  state per sequence         {r.state_bytes_per_sequence:,} B")
        w(f"  KV per sequence @ {r.context_tokens:,}  {bytes_text(r.kv_bytes_per_sequence)}")
        if r.fits:
            w(
                self.style.SUCCESS(
                    f"  fits: {r.max_concurrent_sequences:,} concurrent sequences at {r.context_tokens:,} tokens "
                    f"({r.pool} pool; unified {r.max_concurrent_sequences_unified:,}, "
                    f"split {r.max_concurrent_sequences_split:,})"
                )
            )
        else:
            w(self.style.ERROR(f"  does not fit: {bytes_text(r.deficit_bytes)} short per GPU"))
        a = r.allocation
        if a is not None:
            w(f"  {a.engine} {a.engine_version} (per GPU): block {a.block_size_tokens:,} tokens")
            w(f"    blocks                   {a.num_blocks:,}")
            w(f"    logged KV cache size     {a.kv_cache_tokens:,} tokens")
            w(f"    maximum concurrency      {a.max_concurrency:.2f}x at {a.max_model_len:,} tokens")
            if a.state_page_bytes:
                w(f"    state page               {a.state_page_bytes:,} B, padded {a.page_padding_percent:.2f}%")
        w("  assumptions:")
        for a in r.assumptions:
            w(f"    - {a}")
