"""vLLM's own KV-cache allocator beside the project's vLLM profile: an oracle harness (issue 25).

For every sample config (``tests/fixtures/hf-configs/*_config.json`` that the project imports) and every
vLLM startup-log case with a config in the repo (``tests/fixtures/startup_logs/``), this script

1. sizes the model with the project's engine (``planner.engine``: ``model_record_from_config`` and
   ``size(engine="vllm", engine_version=RELEASE)`` on the ``--gpu``'s SKU (``GPU_SKUS``: H200 for sm90,
   B200 for sm100, A100 for sm80), at the smallest tp of 1/2/4/8, then
   tp 8 x pp 2/4, that holds one request of the model's full context; a log case takes the log's
   layout and its logged "Available KV cache memory"), and takes the available KV-cache bytes per GPU
   the project computed;
2. hands the same config, layout, dtype, max_model_len and available bytes to a subprocess of a
   scratch venv that has the pinned vLLM release installed from PyPI, which builds vLLM's own
   ``VllmConfig`` (``ModelConfig`` from the config.json, offline), aligns the block size with vLLM's own
   ``Platform.update_block_size_for_backend`` / ``_align_hybrid_block_size`` (platforms/interface.py),
   builds vLLM's own per-layer specs (``FullAttentionSpec``, ``SlidingWindowSpec``, ``MLAAttentionSpec``,
   ``MambaSpec`` with the model class's ``get_mamba_state_shape_from_config`` /
   ``get_mamba_state_dtype_from_config``), and runs vLLM's own allocator
   (``v1/core/kv_cache_planning.py`` ``get_global_kv_cache_groups`` / ``get_kv_cache_configs``,
   ``v1/core/kv_cache_utils.py`` ``generate_scheduler_kv_cache_config`` / ``get_kv_cache_capacity`` /
   ``get_max_concurrency_for_kv_cache_config``) on the CPU;
3. prints both sides' block size, number of blocks, logged tokens and max concurrency per case, marked
   identical or different, and says why for a case it could not run.

What the oracle does not run (no GPU here): the model itself. Which attention layer is full, sliding,
MLA or linear is read from the config as the vLLM model class reads it (``_layer_kinds``); the
attention backend is the one ``platforms/cuda.py`` ``_get_backend_priorities`` puts first on the GPU
chosen with ``--gpu`` (default ``sm90``: H100/H200, as the project's H200 sizing), passed to vLLM's
own block-size code in place of the backends of built layers. A backend class that cannot be imported
without CUDA is replaced by a stand-in declaring the kernel block sizes of its source (said per case).
Gated-DeltaNet layers built on a Hopper would export FlashInfer prefill checkpoints in prefix-caching
"align" mode (``qwen_gdn_linear_attn.py``: 64-token alignment, one more state block); without the
layers that is not seen here, and ``--gdn-flashinfer`` adds it as those layers would.

Usage (from the repo root, with the project's interpreter; the vLLM side runs in its own venv)::

    .venv/bin/python bench/vllm_oracle.py                      # set up the venv if needed, run all cases
    .venv/bin/python bench/vllm_oracle.py --vllm 0.33.0 --venv /work/scratch/vllm-0.33.0
    .venv/bin/python bench/vllm_oracle.py --only Qwen3-32B --only DeepSeek-V3 --json out.json
    .venv/bin/python bench/vllm_oracle.py --markdown           # the table as docs/sizing.md shows it
    .venv/bin/python bench/vllm_oracle.py --no-install         # fail instead of creating the venv

The venv is created outside the project (default ``/work/scratch/vllm-<release>``) with ``pip install
vllm==<release>``; if that fails, ``--no-deps`` plus the pure-python packages the allocator modules
import, and the script says so. Nothing is installed into the project's ``.venv``, and no test runs this.
Exit status: 0 when every case that ran is identical, 1 when one differs, 2 when the oracle cannot start.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "tests" / "fixtures" / "hf-configs"
LOGS = ROOT / "tests" / "fixtures" / "startup_logs"
DEFAULT_RELEASE = "0.33.0"
GIB = 1 << 30

#: Packages the allocator path imports, for the ``--no-deps`` fallback (the full install is preferred).
FALLBACK_DEPS = (
    "torch",
    "transformers",
    "pydantic",
    "msgspec",
    "cloudpickle",
    "psutil",
    "cachetools",
    "regex",
    "typing_extensions",
    "huggingface_hub",
    "numpy",
    "pyzmq",
    "blake3",
    "cbor2",
    "openai",
    "prometheus_client",
    "safetensors",
    "tokenizers",
    "pybase64",
)

#: The vLLM startup logs of tests/fixtures/startup_logs and the config in the repo for the model each ran
#: (None: no config.json of that model in the repo), with the settings the log leaves out.
LOG_CASES: dict[str, dict] = {
    "vllm-0.10.2-Qwen3-235B-A22B-Instruct-2507-FP8-tp8.log": {
        "config": "Qwen--Qwen3-235B-A22B-FP8",
        "why": "Qwen3-235B-A22B-FP8's config: the 2507 release has the same attention (94 layers, 4 KV heads of 128)",
    },
    "vllm-unversioned-Qwen3-235B-A22B-FP8-tp4.log": {"config": "Qwen--Qwen3-235B-A22B-FP8", "max_model_len": 40960},
    "vllm-0.11.1-Kimi-K2-Thinking-tp8.log": {
        "config": "moonshotai--Kimi-K2-Instruct",
        "tp": 8,
        "max_model_len": 131072,
        "why": "Kimi-K2-Instruct's config: K2-Thinking has the same DeepSeek-V3 MLA (61 layers, 512 + 64)",
    },
    "vllm-0.10.2-Qwen3-Next-80B-A3B-Instruct-tp2.log": {"config": None},
    "vllm-0.10.2-llava-v1.6-mistral-7b-hf-tp1.log": {"config": None},
    "vllm-0.11.1-Kimi-Linear-48B-A3B-Instruct-AWQ-tp2.log": {"config": None},
    "vllm-0.13.0-LLaVA-Video-7B-Qwen2-tp1.log": {"config": None, "unsupported": True},
}

#: Attention backends ``platforms/cuda.py`` ``_get_backend_priorities`` tries first, per GPU family,
#: for (MLA, other attention) at a bf16 KV cache.
GPU_BACKENDS = {
    "sm90": ("FLASH_ATTN_MLA", "FLASH_ATTN"),  # H100 / H200 (FA3 ships in the wheel)
    "sm80": ("FLASHMLA", "FLASH_ATTN"),  # A100: FLASH_ATTN_MLA needs SM90; see --mla-backend
    "sm100": ("FLASHINFER_MLA", "FLASHINFER"),  # B200
}


# --- the scratch venv ------------------------------------------------------------------------------


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def installed_release(python: Path) -> str | None:
    if not python.exists():
        return None
    done = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('vllm'))"],
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() or None if done.returncode == 0 else None


def ensure_venv(venv: Path, release: str, install: bool) -> tuple[Path, str]:
    """The venv's python with vllm==release, creating it if asked; ``(python, how it was installed)``."""
    python = venv_python(venv)
    have = installed_release(python)
    if have == release:
        return python, f"vllm {release} already in {venv}"
    if venv.resolve().is_relative_to(ROOT):
        raise SystemExit(f"refusing to install vLLM inside the project ({venv}); give --venv outside {ROOT}")
    if not install:
        raise SystemExit(f"{venv} has vllm {have or 'none'}, not {release}; run without --no-install to set it up")
    venv.parent.mkdir(parents=True, exist_ok=True)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check"]
    print(f"installing vllm=={release} into {venv} (full install: torch and CUDA wheels, several GB) ...", flush=True)
    if subprocess.run([*pip, f"vllm=={release}"]).returncode == 0:
        return python, f"pip install vllm=={release} (full, with its dependencies) into {venv}"
    print("full install failed; falling back to --no-deps plus the allocator's pure-python imports", flush=True)
    subprocess.run([*pip, "--no-deps", f"vllm=={release}"], check=True)
    subprocess.run([*pip, *FALLBACK_DEPS], check=True)
    return python, (
        f"pip install --no-deps vllm=={release} plus {', '.join(FALLBACK_DEPS)} into {venv} (the full install failed)"
    )


# --- the project's side (project interpreter) --------------------------------------------------------


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _quant(path: Path) -> dict | None:
    side = path.with_name(path.name.replace("_config.json", "_hf_quant_config.json"))
    return _load(side) if side.exists() else None


#: The catalogue SKU the project sizes for on each ``--gpu`` (its name tells the vLLM profile the generation).
GPU_SKUS = {"sm90": "h200-141gb", "sm80": "a100-sxm-80gb", "sm100": "b200-192gb"}


def _project_size(model, layout, release: str, max_model_len: int, gib: float | None, gpu: str = "sm90"):
    from fleet.catalog import reference
    from planner.engine import size

    return size(
        model,
        reference.accelerator(GPU_SKUS[gpu]),
        layout=layout,
        context_tokens=max_model_len,
        engine="vllm",
        engine_version=release,
        max_model_len=max_model_len,
        available_kv_cache_gib=gib,
    )


def _project_figures(result) -> dict:
    a = result.allocation
    return {
        "block_size": a.block_size_tokens,
        "num_blocks": a.num_blocks,
        "tokens": a.kv_cache_tokens,
        "concurrency": a.max_concurrency,
        "groups": [f"{g.kind}x{g.layers}" for g in a.groups],
        "page_padding_percent": round(a.page_padding_percent, 2),
    }


def project_cases(release: str, only: list[str], gpu: str = "sm90") -> list[dict]:
    """Every case with the project's figures and what the oracle needs to reproduce the same inputs."""
    from planner.engine import EngineInputError, Layout, ModelArch, model_record_from_config, parse_startup_log

    cases: list[dict] = []
    wanted = [path for path in sorted(CONFIGS.glob("*_config.json")) if not path.name.endswith("_hf_quant_config.json")]
    for path in wanted:
        name = path.name.removesuffix("_config.json")
        if only and not any(o.lower() in name.lower() for o in only):
            continue
        config = _load(path)
        try:
            record = model_record_from_config(config, name=name, quant_config=_quant(path)).record
        except EngineInputError as error:
            cases.append({"name": name, "kind": "config", "skip": f"not imported: {error.errors['config'][0]}"})
            continue
        model = ModelArch.from_record(record)
        length = model.max_context_tokens or 8192
        chosen = None
        for tp, pp in ((1, 1), (2, 1), (4, 1), (8, 1), (8, 2), (8, 4)):
            try:
                r = _project_size(model, Layout(tp=tp, pp=pp), release, length, None, gpu)
            except EngineInputError:
                continue
            if r.fits and r.available_kv_cache_bytes > 0:
                chosen = (tp, pp, r)
                break
        if chosen is None:
            cases.append(
                {
                    "name": name,
                    "kind": "config",
                    "skip": f"no layout up to tp 8 x pp 4 on {GPU_SKUS[gpu]} holds a request",
                }
            )
            continue
        tp, pp, r = chosen
        cases.append(
            {
                "name": name,
                "kind": "config",
                "config": config,
                "tp": tp,
                "pp": pp,
                "dtype": "bfloat16",
                "max_model_len": length,
                "available_bytes": r.available_kv_cache_bytes,
                "project": _project_figures(r),
            }
        )
    for log_name, extra in LOG_CASES.items():
        if only and not any(o.lower() in log_name.lower() for o in only):
            continue
        label = "log " + log_name.removesuffix(".log")
        if extra.get("unsupported"):
            cases.append({"name": label, "kind": "log", "skip": "the log's model class is not in vLLM (it says so)"})
            continue
        if extra["config"] is None:
            cases.append({"name": label, "kind": "log", "skip": "no config.json of this model in the repo"})
            continue
        log = parse_startup_log((LOGS / log_name).read_text(encoding="utf-8"))
        path = CONFIGS / f"{extra['config']}_config.json"
        config = _load(path)
        model = ModelArch.from_record(model_record_from_config(config, name=label, quant_config=_quant(path)).record)
        tp = log.tensor_parallel_size or extra.get("tp", 1)
        pp = log.pipeline_parallel_size or 1
        length = log.max_concurrency_tokens or log.max_model_len or extra.get("max_model_len") or 8192
        gib = log.available_kv_cache_gib
        r = _project_size(model, Layout(tp=tp, pp=pp), release, length, gib, gpu)
        dtype = {"float16": "float16"}.get(log.dtype or "", "bfloat16")
        cases.append(
            {
                "name": label,
                "kind": "log",
                "config": config,
                "tp": tp,
                "pp": pp,
                "dtype": dtype,
                "max_model_len": length,
                "available_bytes": r.available_kv_cache_bytes,
                "project": _project_figures(r),
                "logged": {
                    "release": log.engine_version or "unstated",
                    "tokens": log.kv_cache_tokens,
                    "concurrency": log.max_concurrency,
                    "num_blocks": log.num_gpu_blocks,
                },
                "note": extra.get("why"),
            }
        )
    return cases


# --- vLLM's side (scratch venv; imports nothing of the project) --------------------------------------


def _layer_kinds(model_config, parallel_config) -> list[dict | None]:
    """Each decoder layer's cache as the vLLM model class builds it (None: no cache), read from the config.

    Families (``vllm/model_executor/models/``): ``kimi_linear`` (``linear_attn_config.kda_layers``, 1-based:
    KDA, the rest MLA); ``qwen3_next`` / ``qwen3_5*`` (``layer_types``: ``linear_attention`` GDN, else full);
    ``nemotron_h`` (``hybrid_override_pattern`` / ``layers_block_type``: M Mamba2, * attention); MLA models
    (``ModelConfig.use_mla``); otherwise ``layer_types`` (``sliding_attention`` with ``sliding_window``) or
    ``ModelConfig.get_sliding_window()`` for every layer; Gemma 4 takes each layer's head size and KV heads
    from ``per_layer_config`` (``gemma4.py`` ``Gemma4DecoderLayer``).
    """
    t = model_config.hf_text_config
    n = t.num_hidden_layers
    kv = model_config.get_num_kv_heads(parallel_config)
    head = model_config.get_head_size()
    if head is None:  # a config with "head_dim": null (Mixtral): mixtral.py takes hidden_size // heads
        head = t.hidden_size // t.num_attention_heads
    tp = parallel_config.tensor_parallel_size
    model_type = getattr(t, "model_type", "")
    full = {"kind": "full", "kv_heads": kv, "head_size": head}
    if model_type == "kimi_linear":
        kda = {i - 1 for i in t.linear_attn_config["kda_layers"]}
        return [{"kind": "mamba"} if i in kda else {"kind": "mla", "head_size": head} for i in range(n)]
    layer_types = getattr(t, "layer_types", None)
    if model_type == "nemotron_h":
        pattern = getattr(t, "hybrid_override_pattern", None)
        if pattern is None:
            names = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}
            pattern = "".join(names[x] for x in t.layers_block_type)
        return [{"kind": "mamba"} if c == "M" else dict(full) if c == "*" else None for c in pattern]
    if layer_types and "linear_attention" in layer_types:
        return [
            {"kind": "mamba"} if k == "linear_attention" else dict(full) if k == "full_attention" else None
            for k in layer_types
        ]
    if model_config.use_mla:
        return [{"kind": "mla", "head_size": head} for _ in range(n)]
    # gemma4.py Gemma4DecoderLayer reads per_layer_config (transformers gives every config such a view, empty)
    per_layer = getattr(t, "per_layer_config", None) if model_type.startswith("gemma4") else None
    out: list[dict | None] = []
    window = model_config.get_sliding_window()
    for i in range(n):
        item = dict(full)
        if per_layer is not None:
            item["head_size"] = per_layer[i].head_dim
            item["kv_heads"] = max(1, per_layer[i].num_key_value_heads // tp)
        if layer_types:
            if layer_types[i] == "sliding_attention":
                item = {**item, "kind": "sliding", "window": t.sliding_window}
            elif layer_types[i] not in ("full_attention", "attention"):
                item = None
        elif window:
            item = {**item, "kind": "sliding", "window": window}
        out.append(item)
    return out


def _backend(name: str, notes: list[str]):
    """vLLM's attention backend class ``name``; a stand-in with its source's kernel block sizes when the class
    cannot be imported without CUDA (FLASH_ATTN_MLA: ``backends/mla/flashattn_mla.py`` declares
    ``[MultipleOf(16)]``)."""
    from vllm.v1.attention.backend import AttentionBackend, MultipleOf
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    try:
        return AttentionBackendEnum[name].get_class()
    except Exception as error:  # any import failure on a CPU machine
        declared = {"FLASH_ATTN_MLA": [MultipleOf(16)], "CUTLASS_MLA": [128]}
        if name not in declared:
            raise
        notes.append(f"{name} not importable on CPU ({type(error).__name__}); stand-in with its kernel blocks")

        class StandIn(AttentionBackend):  # type: ignore[misc]
            @staticmethod
            def get_supported_kernel_block_sizes(kv_cache_spec=None):
                return declared[name]

            @staticmethod
            def get_name() -> str:
                return name

            @classmethod
            def is_mla(cls) -> bool:
                return name.endswith("MLA")

        return StandIn


def _oracle_case(case: dict, options: dict) -> dict:
    import torch  # noqa: F401 - vLLM's dtypes
    from vllm.config import CacheConfig, DeviceConfig, ModelConfig, ParallelConfig, SchedulerConfig, VllmConfig
    from vllm.distributed.utils import get_pp_indices
    from vllm.model_executor.layers.attention.attention import _largest_kernel_block_within
    from vllm.model_executor.models import ModelRegistry
    from vllm.platforms.interface import Platform
    from vllm.v1.attention.backends.utils import get_supported_kv_cache_layouts, resolve_kv_cache_layout
    from vllm.v1.core.kv_cache_planning import get_global_kv_cache_groups, get_kv_cache_configs
    from vllm.v1.core.kv_cache_utils import generate_scheduler_kv_cache_config, get_kv_cache_capacity
    from vllm.v1.kv_cache_interface import (
        FullAttentionSpec,
        MambaSpec,
        MLAAttentionSpec,
        SlidingWindowSpec,
        UniformTypeKVCacheSpecs,
    )

    notes: list[str] = []
    config = dict(case["config"])
    if config.pop("quantization_config", None) is not None or (config.get("text_config") or {}).get(
        "quantization_config"
    ):
        (config.get("text_config") or {}).pop("quantization_config", None)
        notes.append("weight quantization_config dropped (the KV cache dtype is given: bf16)")
    folder = tempfile.mkdtemp(prefix="vllm-oracle-")
    Path(folder, "config.json").write_text(json.dumps(config), encoding="utf-8")
    length = case["max_model_len"]
    model_config = ModelConfig(
        model=folder, tokenizer=folder, skip_tokenizer_init=True, max_model_len=length, dtype=case["dtype"]
    )
    parallel = ParallelConfig(tensor_parallel_size=case["tp"], pipeline_parallel_size=case["pp"])
    vllm_config = VllmConfig(
        model_config=model_config,
        cache_config=CacheConfig(cache_dtype="auto"),
        parallel_config=parallel,
        scheduler_config=SchedulerConfig(
            max_num_batched_tokens=options["batch_tokens"],
            max_model_len=length,
            is_encoder_decoder=False,
            async_scheduling=True,
        ),
        device_config=DeviceConfig(device="cpu"),
    )
    # VllmConfig turns the hybrid KV cache manager off where the platform lacks it (this CPU); on CUDA,
    # without a KV connector or chunked local attention, it stays on (config/vllm.py).
    vllm_config.scheduler_config.disable_hybrid_kv_cache_manager = False
    cache = vllm_config.cache_config
    mla_name, attn_name = GPU_BACKENDS[options["gpu"]]
    mla_name = options.get("mla_backend") or mla_name
    backend = _backend(mla_name if model_config.use_mla else attn_name, notes)

    # platforms/interface.py: the backends of the built layers pick the block size and align hybrids.
    original = Platform._find_non_ssm_backends
    Platform._find_non_ssm_backends = classmethod(lambda cls, vc: [backend])  # type: ignore[method-assign]
    try:
        if options.get("gdn_flashinfer") and cache.mamba_cache_mode == "align":
            import vllm.model_executor.layers.mamba.abstract as mamba_abstract

            # FLASHINFER_GDN_CHECKPOINT_ALIGNMENT (v1/attention/backends/gdn_attn.py); imported inside the function
            mamba_abstract.get_mamba_prefill_checkpoint_alignment = lambda vc: 64

        Platform.update_block_size_for_backend(vllm_config)
    finally:
        Platform._find_non_ssm_backends = original  # type: ignore[method-assign]
    block = cache.block_size
    dtype = model_config.dtype

    kinds = _layer_kinds(model_config, parallel)
    mamba = None
    if any(k and k["kind"] == "mamba" for k in kinds):
        model_cls, _ = ModelRegistry.resolve_model_cls(model_config.architecture, model_config=model_config)
        mamba = MambaSpec(
            shapes=tuple(model_cls.get_mamba_state_shape_from_config(vllm_config)),
            dtypes=tuple(model_cls.get_mamba_state_dtype_from_config(vllm_config)),
            block_size=cache.mamba_block_size,
            page_size_padded=cache.mamba_page_size_padded,
            mamba_cache_mode=cache.mamba_cache_mode,
            num_prefill_checkpoint_blocks=1
            if options.get("gdn_flashinfer") and cache.mamba_cache_mode == "align"
            else 0,
        )
    specs: dict[str, object] = {}
    for i, kind in enumerate(kinds):
        if kind is None:
            continue
        name = f"model.layers.{i}.attn"
        if kind["kind"] == "mamba":
            specs[name] = mamba
        elif kind["kind"] == "mla":
            specs[name] = MLAAttentionSpec(
                block_size=block,
                num_kv_heads=1,
                max_tp_shards=1,
                head_size=kind["head_size"],
                dtype=dtype,
                cache_dtype_str="auto",
            )
        elif kind["kind"] == "sliding":
            per_token = SlidingWindowSpec(
                block_size=1,
                num_kv_heads=kind["kv_heads"],
                head_size=kind["head_size"],
                dtype=dtype,
                sliding_window=kind["window"],
            )
            sw_block = _largest_kernel_block_within(
                backend, per_token.real_page_size_bytes, per_token.real_page_size_bytes * block, block, per_token
            )
            specs[name] = SlidingWindowSpec(
                block_size=sw_block,
                num_kv_heads=kind["kv_heads"],
                head_size=kind["head_size"],
                dtype=dtype,
                sliding_window=kind["window"],
            )
        else:
            specs[name] = FullAttentionSpec(
                block_size=block, num_kv_heads=kind["kv_heads"], head_size=kind["head_size"], dtype=dtype
            )
    names = list(specs)
    layers = len(kinds)
    per_worker = []
    for rank in range(case["pp"]):
        start, end = get_pp_indices(layers, rank, case["pp"])
        per_worker.append({n: specs[n] for n in names if start <= int(n.split(".")[2]) < end})
    resolve_kv_cache_layout(
        vllm_config, [[x.name for x in get_supported_kv_cache_layouts([backend])]], list(specs.values())
    )
    groups = get_global_kv_cache_groups(vllm_config, per_worker)
    configs = get_kv_cache_configs(vllm_config, per_worker, [case["available_bytes"]] * case["pp"], groups)
    scheduler = generate_scheduler_kv_cache_config(configs)
    tokens, concurrency = get_kv_cache_capacity(vllm_config, scheduler)
    kinds_out = []
    for group in configs[0].kv_cache_groups:
        spec = group.kv_cache_spec
        first = spec.first_spec if isinstance(spec, UniformTypeKVCacheSpecs) else spec
        label = {"FullAttentionSpec": "full", "MLAAttentionSpec": "mla", "SlidingWindowSpec": "sliding"}.get(
            type(first).__name__, "linear" if isinstance(first, MambaSpec) else type(first).__name__
        )
        kinds_out.append(f"{label}x{len(group.layer_names)}")
    padding = None
    if mamba is not None and cache.mamba_page_size_padded:
        real = mamba.real_page_size_bytes
        padding = round(100 * (cache.mamba_page_size_padded - real) / real, 2)
    return {
        "block_size": block,
        "num_blocks": configs[0].num_blocks,
        "tokens": tokens,
        "concurrency": concurrency,
        "groups": kinds_out,
        "page_padding_percent": padding,
        "backend": backend.get_name(),
        "mamba_cache_mode": cache.mamba_cache_mode if mamba is not None else None,
        "prefix_caching": cache.enable_prefix_caching,
        "layout": cache.kv_cache_layout,
        "notes": notes,
    }


def worker_main() -> None:
    """Read ``{"options", "cases"}`` JSON on stdin, print one JSON object with a result per case."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    payload = json.load(sys.stdin)
    import vllm

    results = {}
    for case in payload["cases"]:
        try:
            results[case["name"]] = _oracle_case(case, payload["options"])
        except Exception as error:  # any failure is the case's reason
            text = str(error).strip()
            message = text.split("Value error, ")[-1] if "Value error, " in text else text
            message = message.splitlines()[0] if message else ""
            results[case["name"]] = {"error": f"{type(error).__name__}: {message}"[:300]}
    print("ORACLE-JSON " + json.dumps({"vllm": vllm.__version__, "results": results}))


# --- the comparison ---------------------------------------------------------------------------------


FIELDS = ("block_size", "num_blocks", "tokens", "concurrency")


def same(a, b, field: str) -> bool:
    if a is None or b is None:
        return False
    if field == "concurrency":
        return math.isclose(a, b, rel_tol=1e-9)
    return a == b


def compare(cases: list[dict], results: dict) -> list[dict]:
    rows = []
    for case in cases:
        row = {"name": case["name"], "kind": case["kind"], "tp": case.get("tp"), "pp": case.get("pp")}
        if "skip" in case:
            row.update(status="not run", why=case["skip"])
            rows.append(row)
            continue
        oracle = results.get(case["name"], {"error": "no result"})
        row.update(project=case["project"], logged=case.get("logged"), note=case.get("note"))
        row["max_model_len"] = case["max_model_len"]
        row["available_bytes"] = case["available_bytes"]
        if "error" in oracle:
            row.update(status="not run", why=f"vLLM: {oracle['error']}")
        else:
            row["vllm"] = oracle
            diffs = [f for f in FIELDS if not same(case["project"][f], oracle[f], f)]
            row.update(status="identical" if not diffs else "different", differs=diffs)
        rows.append(row)
    return rows


def _fmt(value, field: str) -> str:
    if value is None:
        return "-"
    if field == "concurrency":
        return f"{value:.2f}"
    return f"{value:,}"


def table(rows: list[dict], markdown: bool) -> str:
    head = ["case", "tp x pp", "L", "block", "blocks", "tokens", "concurrency", "result"]
    lines = []
    if markdown:
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        if row["status"] == "not run":
            cells = [row["name"], "", "", "", "", "", "", f"not run: {row['why']}"]
        else:
            p, v = row["project"], row["vllm"]
            cells = [row["name"], f"{row['tp']} x {row['pp']}", f"{row['max_model_len']:,}"]
            for field in FIELDS:
                a, b = _fmt(p[field], field), _fmt(v[field], field)
                cells.append(a if a == b and field not in row["differs"] else f"{a} / {b}")
            cells.append(row["status"] + (f" ({', '.join(row['differs'])})" if row["differs"] else ""))
        lines.append("| " + " | ".join(cells) + " |" if markdown else "  ".join(cells))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--vllm", default=DEFAULT_RELEASE, help="the vLLM release to install and compare with")
    parser.add_argument("--venv", type=Path, help="scratch venv (default /work/scratch/vllm-<release>)")
    parser.add_argument("--no-install", action="store_true", help="do not create the venv or pip install")
    parser.add_argument("--only", action="append", default=[], help="cases whose name contains this (repeatable)")
    parser.add_argument("--gpu", choices=sorted(GPU_BACKENDS), default="sm90", help="GPU whose backends pick blocks")
    parser.add_argument("--mla-backend", help="MLA attention backend name (default: the GPU's first choice)")
    parser.add_argument("--gdn-flashinfer", action="store_true", help="GDN layers export FlashInfer checkpoints")
    parser.add_argument("--batch-tokens", type=int, default=8192, help="max_num_batched_tokens (both sides)")
    parser.add_argument("--json", type=Path, help="write every row, with both sides' figures, to this file")
    parser.add_argument("--markdown", action="store_true", help="print the table in Markdown")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker_main()
        return 0
    sys.path.insert(0, str(ROOT))
    venv = args.venv or Path(f"/work/scratch/vllm-{args.vllm}")
    python, how = ensure_venv(venv, args.vllm, not args.no_install)
    started = time.time()
    cases = project_cases(args.vllm, args.only, args.gpu)
    payload = {
        "options": {
            "gpu": args.gpu,
            "mla_backend": args.mla_backend,
            "gdn_flashinfer": args.gdn_flashinfer,
            "batch_tokens": args.batch_tokens,
        },
        "cases": [c for c in cases if "skip" not in c],
    }
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "DJANGO_SETTINGS_MODULE")}
    done = subprocess.run(
        [str(python), str(Path(__file__).resolve()), "--worker"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        cwd=tempfile.gettempdir(),
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("ORACLE-JSON ")), None)
    if line is None:
        print(done.stderr[-4000:], file=sys.stderr)
        print("the vLLM worker printed no result", file=sys.stderr)
        return 2
    out = json.loads(line.removeprefix("ORACLE-JSON "))
    rows = compare(cases, out["results"])
    ran = [r for r in rows if r["status"] != "not run"]
    print(
        f"vLLM {out['vllm']} ({how}) vs fleetcap's vLLM profile at {args.vllm}; {time.strftime('%Y-%m-%d')}; "
        f"GPU {args.gpu}; figures 'project / vLLM' where they differ"
    )
    print(table(rows, args.markdown))
    print(
        f"{sum(r['status'] == 'identical' for r in ran)} identical, {sum(r['status'] == 'different' for r in ran)} "
        f"different, {len(rows) - len(ran)} not run ({time.time() - started:.0f} s)"
    )
    if args.json:
        args.json.write_text(json.dumps({"vllm": out["vllm"], "install": how, "rows": rows}, indent=1) + "\n")
    return 0 if all(r["status"] == "identical" for r in ran) else 1


if __name__ == "__main__":
    raise SystemExit(main())
