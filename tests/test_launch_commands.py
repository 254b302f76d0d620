"""Launch commands (planner/engine/launch.py) against each engine release's own argument parser.

tests/fixtures/engine_flags holds every option string the parser of `vllm serve` (vLLM 0.33.0:
vllm/entrypoints/cli/serve.py -> vllm/entrypoints/common/cli_args.py make_arg_parser -> EngineArgs.add_cli_args)
and of `python -m sglang.launch_server` (SGLang 0.5.23: ServerArgs.add_cli_args) accepts, read by building
those parsers from the release wheels (bench/engine_flags.py; each fixture's "how" and "source" say how). Every
flag a command uses must be one of them, every value with choices one the release accepts, and the commands
below are held flag by flag.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from planner.engine import KV_CACHE_DTYPES, EngineInputError, LaunchRequest, Layout, launch_command, launch_engines

FLAGS = Path(__file__).parent / "fixtures" / "engine_flags"
PARSERS = {
    "vllm": json.loads((FLAGS / "vllm-0.33.0.json").read_text()),
    "sglang": json.loads((FLAGS / "sglang-0.5.23.json").read_text()),
}
#: The values each release takes for --kv-cache-dtype: vLLM's parser takes any string and its CacheConfig
#: checks it (the fixture's values_accepted_by_CacheConfig); SGLang's parser has choices.
KV_VALUES = {
    "vllm": set(PARSERS["vllm"]["details"]["--kv-cache-dtype"]["values_accepted_by_CacheConfig"]),
    "sglang": set(PARSERS["sglang"]["details"]["--kv-cache-dtype"]["choices"]),
}
K3 = "moonshotai/Kimi-K3"
LAYOUTS = [Layout(tp=8, pp=2), Layout(tp=1, dp=8, ep=8), Layout(tp=4, dp=2, ep=8), Layout(tp=8, ep=8), Layout()]
CACHE = [d for d in KV_CACHE_DTYPES if d != "int8"]  # neither engine has an int8 KV cache


def command(engine: str, layout: Layout, **kw):
    return launch_command(engine, LaunchRequest(K3, layout, **kw))


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda lay: f"tp{lay.tp}-pp{lay.pp}-dp{lay.dp}-ep{lay.ep}")
@pytest.mark.parametrize("kv", CACHE)
@pytest.mark.parametrize("prefix", [None, True, False])
def test_every_flag_is_one_the_release_parser_accepts(engine, layout, kv, prefix):
    c = command(
        engine, layout, kv_cache_dtype=kv, max_model_len=131072, gpu_memory_utilization=0.9, block_size_tokens=64,
        enable_prefix_caching=prefix, served_model_name="k3",
    )  # fmt: skip
    accepted = set(PARSERS[engine]["options"])
    assert c.release == PARSERS[engine]["release"]
    for flag in c.flags:
        assert flag.option in accepted, (engine, flag.option)
        assert flag.source.startswith(f"{engine} {c.release} "), flag.source
    kv_value = dict(zip(c.argv, c.argv[1:], strict=False))["--kv-cache-dtype"]
    assert kv_value in KV_VALUES[engine]
    assert shlex.split(c.shell) == list(c.argv)


def test_k3_on_16_h200_with_vllm_flag_by_flag():
    """K3 on 16 H200s as tp 8 x pp 2 with EP (the experts over a stage's 8 GPUs), fp8 KV, 128K context."""
    c = command(
        "vllm", Layout(tp=8, pp=2, ep=8), kv_cache_dtype="fp8", max_model_len=131072, gpu_memory_utilization=0.9
    )
    assert c.argv == (
        "vllm", "serve", K3,
        "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2", "--enable-expert-parallel",
        "--kv-cache-dtype", "fp8", "--max-model-len", "131072", "--gpu-memory-utilization", "0.9",
        "--host", "0.0.0.0", "--port", "8000",
    )  # fmt: skip
    assert c.pods_per_replica == 2 and 'nvidia.com/gpu: "8"' in c.kubernetes
    assert "LeaderWorkerSet group of size 2" in c.kubernetes
    assert any("16 GPUs, 2 nodes of 8" in n for n in c.notes)


def test_dp_attention_with_sglang_flag_by_flag():
    """DeepSeek-style DP attention on 8 GPUs: SGLang 0.5.23 runs attention DP inside the TP group, so the TP group
    is tp x dp = 8 GPUs with 8 attention groups (--attn-dp-size) and EP 8; the world is tp x pp = 8 GPUs (its
    compute_world_size: dp replicas x tp x pp, attention DP adds none), not tp x ep."""
    c = command("sglang", Layout(tp=1, dp=8, ep=8), kv_cache_dtype="bf16", enable_prefix_caching=False)
    assert c.argv == (
        "python", "-m", "sglang.launch_server", "--model-path", K3,
        "--tp-size", "8", "--attn-dp-size", "8", "--ep-size", "8", "--kv-cache-dtype", "bf16",
        "--disable-radix-cache", "--host", "0.0.0.0", "--port", "30000",
    )  # fmt: skip
    assert c.pods_per_replica == 1 and 'nvidia.com/gpu: "8"' in c.kubernetes


def test_the_seeds_commands_are_the_one_gpu_case():
    """The seeds' model-card commands (`vllm serve "moonshotai/Kimi-K3"`; `python3 -m sglang.launch_server
    --model-path "moonshotai/Kimi-K3" --host 0.0.0.0 --port 30000`) are what one GPU with no settings gives,
    with the parallel flags the seeds ask to add."""
    vllm = command("vllm", Layout()).argv
    assert vllm[:3] == ("vllm", "serve", K3) and "--tensor-parallel-size" in vllm
    sglang = command("sglang", Layout()).shell
    assert f"--model-path {K3}" in sglang and "--host 0.0.0.0 --port 30000" in sglang


def test_what_vllm_cannot_say_is_said_and_unknown_engines_refused():
    c = command("vllm", Layout(tp=8, ep=4))  # expert TP 2: vLLM's EP is tp x dp
    assert any("has no vLLM flag" in n for n in c.notes)
    assert set(launch_engines()) == {"vllm", "sglang"}
    with pytest.raises(EngineInputError) as caught:
        command("llamacpp", Layout())
    assert "engine" in caught.value.errors
    with pytest.raises(EngineInputError):
        command("vllm", Layout(), kv_cache_dtype="int8")
