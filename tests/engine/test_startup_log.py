"""``parse_startup_log`` on real startup logs (tests/fixtures/startup_logs, sources in each file's
first line and in that folder's README) and on the shapes real logs take.

Every expected value is read off the log text and written out here, next to the line it comes
from; nothing is compared with the parser's own output.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.engine import MAX_LOG_BYTES, EngineInputError, StartupLog, parse_startup_log

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "startup_logs"


def parsed(name: str) -> StartupLog:
    return parse_startup_log((FIXTURES / name).read_text(encoding="utf-8"))


def test_every_fixture_names_its_source_and_parses():
    logs = sorted(FIXTURES.glob("*.log"))
    assert len(logs) >= 4
    for path in logs:
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# source: "), path.name
        engine = path.name.split("-", 1)[0]
        assert parse_startup_log(path.read_text(encoding="utf-8")).engine == engine, path.name


def test_vllm_qwen3_next_tp2_hybrid():
    log = parsed("vllm-0.10.2-Qwen3-Next-80B-A3B-Instruct-tp2.log")
    assert log.engine == "vllm"
    # "Initializing a V1 LLM engine (v0.10.2) with config: model='/data/models/Qwen3-Next-80B-A3B-Instruct'"
    assert log.engine_version == "0.10.2"
    assert log.model == "/data/models/Qwen3-Next-80B-A3B-Instruct"
    assert log.served_model_name == "/data/models/Qwen3-Next-80B-A3B-Instruct"
    assert log.architecture == "Qwen3NextForCausalLM"
    # "... dtype=torch.bfloat16, max_seq_len=262144, ... tensor_parallel_size=2, pipeline_parallel_size=1,
    #  data_parallel_size=1, ... quantization=None, ... kv_cache_dtype=auto"
    assert (log.tensor_parallel_size, log.pipeline_parallel_size, log.data_parallel_size) == (2, 1, 1)
    assert log.dtype == "bfloat16"
    assert log.quantization is None
    assert log.max_model_len == 262144
    assert log.kv_cache_dtype == "auto"
    assert log.prefix_caching is False  # "enable_prefix_caching=False"
    # "Setting attention block size to 544 tokens ..." / "Padding mamba page size by 1.49% ..."
    assert log.attention_block_size_tokens == 544
    assert log.mamba_page_padding_percent == pytest.approx(1.49)
    assert log.block_size_tokens is None  # no --block-size given
    assert log.weights_gib == pytest.approx(74.2812)  # "Model loading took 74.2812 GiB"
    # Both ranks: "Available KV cache memory: 44.59 GiB"; the engine line twice.
    assert log.available_kv_cache_gib == pytest.approx(44.59)
    assert log.available_kv_cache_gib_ranks == (44.59, 44.59)
    assert log.kv_cache_tokens == 973_760  # "GPU KV cache size: 973,760 tokens"
    assert log.max_concurrency_tokens == 262_144  # "Maximum concurrency for 262,144 tokens per request: 14.77x"
    assert log.max_concurrency == pytest.approx(14.77)
    # "Free memory on device (139.21/139.81 GiB) on startup. Desired GPU memory utilization is (0.9, ..."
    assert log.total_gpu_memory_gib == pytest.approx(139.81)
    assert log.gpu_memory_utilization == pytest.approx(0.9)
    assert log.num_gpu_blocks == 7162  # "vllm cache_config_info with initialization after num_gpu_blocks is: 7162"
    assert log.unsupported_architecture is None and log.unsupported_message is None


def test_vllm_qwen3_235b_tp8_takes_rank_0_and_the_first_engine_line():
    log = parsed("vllm-0.10.2-Qwen3-235B-A22B-Instruct-2507-FP8-tp8.log")
    assert (log.engine, log.engine_version) == ("vllm", "0.10.2")
    assert log.model == "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8"
    assert log.architecture == "Qwen3MoeForCausalLM"
    assert log.tensor_parallel_size == 8
    assert log.expert_parallel is True  # "'enable_expert_parallel': True"
    assert log.quantization == "fp8"
    assert log.max_model_len == 32768  # "'max_model_len': 32768" / "max_seq_len=32768"
    assert log.prefix_caching is True
    # "(Worker_TP0_EP0 pid=2078) ... Available KV cache memory: 10.68 GiB" is the fourth such line:
    # rank 0 wins over the ranks logged before it; every rank's figure is kept in order.
    assert log.available_kv_cache_gib == pytest.approx(10.68)
    assert log.available_kv_cache_gib_ranks == (10.64, 10.64, 10.65, 10.68, 10.68, 10.64, 10.64, 10.65)
    assert any("different available KV cache memory" in note for note in log.notes)
    # The engine printed one "GPU KV cache size" per worker; the first is 238,208 tokens at 7.27x.
    assert log.kv_cache_tokens == 238_208
    assert (log.max_concurrency_tokens, log.max_concurrency) == (32_768, pytest.approx(7.27))
    # "Free memory on device (43.93/44.42 GiB) on startup. Desired GPU memory utilization is (0.9, ..."
    assert log.total_gpu_memory_gib == pytest.approx(44.42)
    assert log.gpu_memory_utilization == pytest.approx(0.9)
    assert log.weights_gib == pytest.approx(27.7183)


def test_sglang_qwq_32b_tp4():
    log = parsed("sglang-0.4.3.post4-QwQ-32B-tp4.log")
    assert log.engine == "sglang"
    assert log.engine_version is None  # SGLang prints no version; the fixture's page pins 0.4.3.post4
    assert any("SGLang does not print its version" in note for note in log.notes)
    # "server_args=ServerArgs(model_path='/home/model/Qwen/QwQ-32B', ... dtype='auto', kv_cache_dtype='auto',
    #  ... mem_fraction_static=0.85, ... tp_size=4, ... dp_size=1"
    assert log.model == "/home/model/Qwen/QwQ-32B"
    assert log.served_model_name == "/home/model/Qwen/QwQ-32B"
    assert log.kv_cache_dtype == "auto"
    assert log.mem_fraction_static == pytest.approx(0.85)
    assert (log.tensor_parallel_size, log.data_parallel_size) == (4, 1)
    assert log.architecture == "Qwen2ForCausalLM"  # "Load weight end. type=Qwen2ForCausalLM"
    # "[... TP0] KV Cache is allocated. #tokens: 46611, K size: 1.42 GB, V size: 1.42 GB"
    assert (log.kv_cache_k_gib, log.kv_cache_v_gib) == (pytest.approx(1.42), pytest.approx(1.42))
    assert log.kv_cache_gib == pytest.approx(2.84)
    # "max_total_num_tokens=46611, chunked_prefill_size=2048, max_prefill_tokens=16384,
    #  max_running_requests=2049, context_len=131072"
    assert log.max_total_num_tokens == 46_611
    assert log.max_running_requests == 2049
    assert log.max_model_len == 131_072
    assert log.available_kv_cache_gib is None and log.kv_cache_tokens is None  # vLLM's lines only


def test_vllm_llava_mistral_7b_tp1_fp16():
    log = parsed("vllm-0.10.2-llava-v1.6-mistral-7b-hf-tp1.log")
    assert (log.engine, log.engine_version, log.model) == ("vllm", "0.10.2", "llava-hf/llava-v1.6-mistral-7b-hf")
    assert log.architecture == "LlavaNextForConditionalGeneration"
    assert (log.dtype, log.kv_cache_dtype, log.tensor_parallel_size, log.max_model_len) == ("float16", "auto", 1, 4096)
    assert log.weights_gib == pytest.approx(14.0786)  # "Model loading took 14.0786 GiB"
    assert log.available_kv_cache_gib == pytest.approx(55.15)  # "Available KV cache memory: 55.15 GiB"
    assert log.kv_cache_tokens == 451_744  # "GPU KV cache size: 451,744 tokens"
    assert (log.max_concurrency_tokens, log.max_concurrency) == (4096, pytest.approx(110.29))
    assert log.total_gpu_memory_gib == pytest.approx(79.19)  # "Free memory on device (78.66/79.19 GiB)"
    assert log.gpu_memory_utilization == pytest.approx(0.9)  # "Desired GPU memory utilization is (0.9, ..."


def test_a_quoted_launch_command_fills_what_the_log_does_not_print():
    vllm = parsed("vllm-unversioned-Qwen3-235B-A22B-FP8-tp4.log")
    # "vllm serve /path/to/Qwen3-235B-A22B-FP8 \" ... "--tensor-parallel-size 4 \" (continuation lines)
    assert (vllm.engine, vllm.engine_version) == ("vllm", None)
    assert (vllm.model, vllm.tensor_parallel_size) == ("/path/to/Qwen3-235B-A22B-FP8", 4)
    assert (vllm.available_kv_cache_gib, vllm.kv_cache_tokens) == (pytest.approx(8.11), 178_880)
    sglang = parsed("sglang-unversioned-Qwen3-235B-A22B-FP8-tp4.log")
    # "python3 -m sglang.launch_server --model /path/to/Qwen3-235B-A22B-FP8 --tp 4 ... --mem-fraction-static 0.93"
    assert sglang.engine == "sglang"
    assert (sglang.model, sglang.tensor_parallel_size) == ("/path/to/Qwen3-235B-A22B-FP8", 4)
    assert sglang.mem_fraction_static == pytest.approx(0.93)
    # "KV Cache is allocated. #tokens: 367404, K size: 8.23 GB, V size: 8.23 GB"
    assert sglang.kv_pool_tokens == 367_404 and sglang.max_total_num_tokens is None
    assert sglang.kv_cache_gib == pytest.approx(16.46)


def test_the_log_wins_over_the_command_line():
    text = (
        "vllm serve org/model --tensor-parallel-size 8 --max-model-len 4096\n"
        "INFO [core.py:76] Initializing a V1 LLM engine (v0.11.0) with config: model='org/model', "
        "max_seq_len=8192, tensor_parallel_size=4, kv_cache_dtype=auto\n"
    )
    log = parse_startup_log(text)
    assert (log.tensor_parallel_size, log.max_model_len, log.engine_version) == (4, 8192, "0.11.0")


def test_unsupported_architecture_says_the_runtime_is_older():
    log = parsed("vllm-0.13.0-LLaVA-Video-7B-Qwen2-tp1.log")
    # "Value error, Model architectures ['LlavaQwenForCausalLM'] are not supported for now."
    assert log.unsupported_architecture == "LlavaQwenForCausalLM"
    assert "older than the model" in log.unsupported_message
    assert "LlavaQwenForCausalLM" in log.unsupported_message
    # "non-default args: {... 'max_model_len': 8192, 'gpu_memory_utilization': 0.6, ...,
    #  'model': '.../LLaVA-Video-7B-Qwen2'}"
    assert log.model.endswith("/LLaVA-Video-7B-Qwen2")
    assert (log.max_model_len, log.gpu_memory_utilization) == (8192, pytest.approx(0.6))
    assert log.available_kv_cache_gib is None and log.kv_cache_tokens is None


# --- shapes of real logs, one line each ---------------------------------------------------------------


def test_ansi_colours_and_process_prefixes_do_not_matter():
    text = (
        "\x1b[1;36m(EngineCore_DP0 pid=4242)\x1b[0;0m \x1b[32mINFO\x1b[0m 09-12 10:00:00 [kv_cache_utils.py:1028] "
        "GPU KV cache size: 1,234,560 tokens\n"
        "(VllmWorker TP0 pid=17) INFO 09-12 10:00:00 [gpu_worker.py:298] Available KV cache memory: 41.87 GiB\n"
        "(APIServer pid=1) INFO 09-12 10:00:00 kv_cache_utils.py:1032] "
        "Maximum concurrency for 32,768 tokens per request: 37.68x\n"
    )
    log = parse_startup_log(text)
    assert log.engine == "vllm"
    assert log.kv_cache_tokens == 1_234_560
    assert log.available_kv_cache_gib == pytest.approx(41.87)
    assert (log.max_concurrency_tokens, log.max_concurrency) == (32_768, pytest.approx(37.68))


def test_collector_timestamps_and_windows_line_ends():
    text = (
        "2026-05-01 22:45:52.944 | (EngineCore pid=187) INFO 05-01 20:45:52 [gpu_worker.py:436] "
        "Available KV cache memory: 34.3 GiB\r\n"
        "2026-05-01 22:45:53.001 | (EngineCore pid=187) INFO 05-01 20:45:53 [kv_cache_utils.py:1291] "
        "GPU KV cache size: 950,864 tokens\r\n"
    )
    log = parse_startup_log(text)
    assert log.available_kv_cache_gib == pytest.approx(34.3)
    assert log.kv_cache_tokens == 950_864


def test_rank_zero_wins_over_an_earlier_rank():
    text = (
        "(Worker_TP1_EP1 pid=2) INFO [gpu_worker.py:298] Available KV cache memory: 10.64 GiB\n"
        "(Worker_TP0_EP0 pid=1) INFO [gpu_worker.py:298] Available KV cache memory: 10.68 GiB\n"
        "(Worker_TP10 pid=3) INFO [gpu_worker.py:298] Available KV cache memory: 10.60 GiB\n"
    )
    log = parse_startup_log(text)
    assert log.available_kv_cache_gib == pytest.approx(10.68)
    assert log.available_kv_cache_gib_ranks == (10.64, 10.68, 10.60)


def test_one_line_with_tokens_and_concurrency():
    text = (
        "INFO [kv_cache_utils.py:1869] GPU KV cache size: 588,913 tokens, "
        "Maximum concurrency for 32,768 tokens per request: 17.97x\n"
    )
    log = parse_startup_log(text)
    assert log.kv_cache_tokens == 588_913
    assert log.max_concurrency == pytest.approx(17.97)


def test_banner_version_and_model_and_v0_memory_line():
    text = (
        "(APIServer pid=1) INFO 05-14 08:20:13 [utils.py:299]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.20.2\n"
        "(APIServer pid=1) INFO 05-14 08:20:13 [utils.py:299]   █▄█▀ █     █     █     █  "
        "model   RedHatAI/Qwen3.6-35B-A3B-NVFP4\n"
        "INFO 02-26 09:54:05 worker.py:267] the current vLLM instance can use total_gpu_memory (8.00GiB) x "
        "gpu_memory_utilization (0.70) = 5.60GiB\n"
        "INFO 02-26 09:54:05 executor_base.py:111] # cuda blocks: 0, # CPU blocks: 4681\n"
    )
    log = parse_startup_log(text)
    assert log.engine_version == "0.20.2"
    assert log.model == "RedHatAI/Qwen3.6-35B-A3B-NVFP4"
    assert log.total_gpu_memory_gib == pytest.approx(8.0)
    assert log.gpu_memory_utilization == pytest.approx(0.7)
    assert log.num_gpu_blocks == 0


def test_sglang_hybrid_mamba_and_mla_lines():
    text = (
        "[2026-09-09 11:57:18] Mamba Cache is allocated. max_mamba_cache_size: 48, "
        "conv_state size: 0.09GB, ssm_state size: 6.46GB\n"
        "[2026-09-09 11:57:18] KV Cache is allocated. #tokens: 2618868, K size: 19.98 GB, V size: 19.98 GB\n"
        "[2026-09-09 11:57:27] max_total_num_tokens=2618868, chunked_prefill_size=-1, "
        "max_prefill_tokens=16384, max_running_requests=48, context_len=16384, available_gpu_mem=13.38 GB\n"
    )
    log = parse_startup_log(text)
    assert log.engine == "sglang"
    assert (log.mamba_cache_slots, log.mamba_conv_state_gib, log.mamba_ssm_state_gib) == (48, 0.09, 6.46)
    assert log.max_total_num_tokens == 2_618_868
    assert (log.max_running_requests, log.max_model_len) == (48, 16384)
    mla = parse_startup_log("[2025-01-01 00:00:00 TP0] KV Cache is allocated. #tokens: 120576, KV size: 7.9 GB\n")
    assert mla.kv_cache_gib == pytest.approx(7.9)


def test_other_unsupported_messages():
    sglang = parse_startup_log("ValueError: Unsupported architectures: LlavaQwenForCausalLM\n")
    assert sglang.unsupported_architecture == "LlavaQwenForCausalLM"
    hf = parse_startup_log(
        "The checkpoint you are trying to load has model type `qwen3_next` but Transformers does not "
        "recognize this architecture.\n"
    )
    assert hf.unsupported_architecture == "qwen3_next"


def test_input_that_is_not_a_log_is_refused():
    with pytest.raises(EngineInputError) as exc:
        parse_startup_log("hello, world\n")
    assert "log" in exc.value.errors
    with pytest.raises(EngineInputError):
        parse_startup_log(b"GPU KV cache size: 1 tokens")  # type: ignore[arg-type]


def test_the_size_cap_is_stated():
    with pytest.raises(EngineInputError) as exc:
        parse_startup_log("x" * (MAX_LOG_BYTES + 1))
    assert "5 MiB" in exc.value.errors["log"][0]


def test_very_long_lines_are_cut_not_fatal():
    text = "non-default args: {'model': 'a/b', 'x': '" + "y" * 200_000 + "'}\nGPU KV cache size: 16 tokens\n"
    log = parse_startup_log(text)
    assert log.truncated_lines == 1
    assert log.model == "a/b"
    assert log.kv_cache_tokens == 16


def test_to_dict_is_json_ready():
    import json

    data = parsed("vllm-0.10.2-Qwen3-Next-80B-A3B-Instruct-tp2.log").to_dict()
    assert json.loads(json.dumps(data))["available_kv_cache_gib_ranks"] == [44.59, 44.59]
    assert data["unsupported_message"] is None
