"""Read a serving engine's startup log: what it was asked to do and what it allocated.

``parse_startup_log(text)`` takes the text a vLLM (V1) or SGLang server printed while starting and
returns a :class:`StartupLog`: the engine and its version, the model, the parallel layout, the
memory settings, and the figures the engine logged about its KV cache (available memory per GPU,
tokens, blocks, concurrency at the maximum length). Pure Python, no Django; nothing is looked up.

Robust to what real logs carry: ANSI colour codes, process prefixes (``(EngineCore_DP0 pid=...)``,
``(APIServer pid=...)``, ``(VllmWorker TP0 pid=...)``, ``(Worker_TP1_EP1 pid=...)``), both
``INFO 09-12 10:00:00 [file.py:123]`` and ``INFO 09-12 10:00:00 file.py:123]`` styles, SGLang's
``[2025-03-08 12:29:21 TP0]``, timestamps a log collector put in front, and numbers with thousands
separators. A figure every rank repeats is read from rank 0 when the line names its rank, else from
the first line that carries it (``*_ranks`` keep every value seen, in order).

Units: memory in GiB as the engines print it (vLLM's "GiB"; SGLang's "GB" is also 2**30 bytes),
token counts in tokens, fractions as fractions, the mamba page padding in percent.

A log of a runtime older than the model ends with "Model architectures [...] are not supported for
now" (vLLM), "Unsupported architectures: ..." (SGLang) or transformers' "does not recognize this
architecture": ``unsupported_architecture`` names the architecture and ``unsupported_message``
says what it means.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from .errors import EngineInputError

#: The most text ``parse_startup_log`` reads (5 MiB): a startup log is a few hundred KiB at most.
MAX_LOG_BYTES: int = 5 * 1024 * 1024
#: Longer lines are cut before matching (vLLM's config line is ~6 KB; a pasted JSON blob can be MBs).
MAX_LINE_CHARS: int = 64 * 1024

#: The dialects this parser reads (``StartupLog.engine``); which serving engine prints which is the
#: registry's (``serving_engines.ServingEngine.startup_log``, listed by ``startup_log_engines()``).
DIALECTS: tuple[str, ...] = ("vllm", "sglang")

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]")
_NUM = r"\d[\d,]*"
_FLOAT = r"\d[\d,]*(?:\.\d+)?"
_VERSION = r"v?(\d+\.\d+[\w.+\-]*)"
# Rank named on a line: vLLM's worker prefixes, SGLang's "[... TP0]" / "[... DP1 TP3 EP3]".
_RANK = re.compile(r"(?<![A-Za-z])TP(\d+)(?!\d)|\brank[ =](\d+)\b")


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def _float(text: str) -> float:
    return float(text.replace(",", ""))


def _bool(text: str) -> bool:
    return text.strip().lower() == "true"


def _text(text: str) -> str:
    return text.strip().strip("'\"")


@dataclass(frozen=True)
class StartupLog:
    """What one startup log says. ``None``: the log does not say it.

    Memory figures are per GPU (one rank) in GiB; ``kv_cache_tokens`` and ``max_concurrency`` are
    the engine's own arithmetic (vLLM: tokens for one KV-cache group, requests of
    ``max_concurrency_tokens`` tokens that fit); ``max_total_num_tokens`` is SGLang's token pool and
    ``kv_pool_tokens`` the "#tokens" of its "KV Cache is allocated" line (the same figure, printed earlier).
    """

    engine: str | None = None
    engine_version: str | None = None
    model: str | None = None
    served_model_name: str | None = None
    architecture: str | None = None
    dtype: str | None = None
    quantization: str | None = None
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    data_parallel_size: int | None = None
    decode_context_parallel_size: int | None = None
    expert_parallel: bool | None = None
    gpu_memory_utilization: float | None = None
    mem_fraction_static: float | None = None
    max_model_len: int | None = None
    kv_cache_dtype: str | None = None
    block_size_tokens: int | None = None
    attention_block_size_tokens: int | None = None
    mamba_page_padding_percent: float | None = None
    prefix_caching: bool | None = None
    total_gpu_memory_gib: float | None = None
    weights_gib: float | None = None
    available_kv_cache_gib: float | None = None
    available_kv_cache_gib_ranks: tuple[float, ...] = ()
    kv_cache_tokens: int | None = None
    num_gpu_blocks: int | None = None
    max_concurrency: float | None = None
    max_concurrency_tokens: int | None = None
    max_total_num_tokens: int | None = None
    kv_pool_tokens: int | None = None
    max_running_requests: int | None = None
    kv_cache_k_gib: float | None = None
    kv_cache_v_gib: float | None = None
    kv_cache_kv_gib: float | None = None
    mamba_cache_slots: int | None = None
    mamba_conv_state_gib: float | None = None
    mamba_ssm_state_gib: float | None = None
    unsupported_architecture: str | None = None
    lines_read: int = 0
    truncated_lines: int = 0
    notes: tuple[str, ...] = field(default=())

    @property
    def unsupported_message(self) -> str | None:
        """What an "architecture not supported" failure means, or ``None`` when the log has none."""
        if not self.unsupported_architecture:
            return None
        runtime = f"{self.engine} {self.engine_version}" if self.engine and self.engine_version else "the runtime"
        return (
            f"The model's architecture {self.unsupported_architecture} is not supported by {runtime}: "
            "the runtime is older than the model. Upgrade the engine to a release that supports it."
        )

    @property
    def kv_cache_gib(self) -> float | None:
        """SGLang: the KV pool it allocated per GPU (K + V, or MLA's one "KV size", GiB); vLLM logs
        ``available_kv_cache_gib`` instead."""
        if self.kv_cache_kv_gib is not None:
            return self.kv_cache_kv_gib
        if self.kv_cache_k_gib is None or self.kv_cache_v_gib is None:
            return None
        return self.kv_cache_k_gib + self.kv_cache_v_gib

    def to_dict(self) -> dict[str, Any]:
        """Every field (tuples as lists) plus ``unsupported_message``; JSON-ready."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = list(value) if isinstance(value, tuple) else value
        out["unsupported_message"] = self.unsupported_message
        return out


# --- rules: (field, pattern, converter); the first match per field wins unless noted -----------

Rule = tuple[str, re.Pattern[str], Callable[[str], Any]]


def _r(name: str, pattern: str, convert: Callable[[str], Any] = _text) -> Rule:
    return (name, re.compile(pattern), convert)


# The config line vLLM prints when its engine starts (V1: "Initializing a V1 LLM engine (v0.10.2)
# with config: model='...', ..."; V0: "Initializing an LLM engine (v0.6.3) with config: ...").
_CONFIG_LINE = re.compile(r"Initializing an? (?:V\d )?LLM engine \(" + _VERSION + r"\) with config: (.*)")
_CONFIG_RULES: tuple[Rule, ...] = (
    _r("model", r"(?:^|, )model='([^']*)'"),
    _r("served_model_name", r", served_model_name=([^,]+),"),
    _r("dtype", r", dtype=(?:torch\.)?(\w+)"),
    _r("quantization", r", quantization=([\w\-]+)"),
    _r("max_model_len", r", max_seq_len=(\d+)", int),
    _r("tensor_parallel_size", r", tensor_parallel_size=(\d+)", int),
    _r("pipeline_parallel_size", r", pipeline_parallel_size=(\d+)", int),
    _r("data_parallel_size", r", data_parallel_size=(\d+)", int),
    _r("decode_context_parallel_size", r", decode_context_parallel_size=(\d+)", int),
    _r("kv_cache_dtype", r", kv_cache_dtype=([\w]+)"),
    _r("prefix_caching", r", enable_prefix_caching=(True|False)", _bool),
)

# vLLM's "non-default args: {...}" (the command line as parsed), a Python dict repr.
_ARGS_LINE = re.compile(r"non-default args: (\{.*)")
_ARGS_RULES: tuple[Rule, ...] = (
    _r("model", r"'model': '([^']*)'"),
    _r("model_tag", r"'model_tag': '([^']*)'"),
    _r("served_model_name", r"'served_model_name': \[?'([^']*)'"),
    _r("tensor_parallel_size", r"'tensor_parallel_size': (\d+)", int),
    _r("pipeline_parallel_size", r"'pipeline_parallel_size': (\d+)", int),
    _r("data_parallel_size", r"'data_parallel_size': (\d+)", int),
    _r("decode_context_parallel_size", r"'decode_context_parallel_size': (\d+)", int),
    _r("expert_parallel", r"'enable_expert_parallel': (True|False)", _bool),
    _r("gpu_memory_utilization", r"'gpu_memory_utilization': ([\d.]+)", float),
    _r("max_model_len", r"'max_model_len': (\d+)", int),
    _r("kv_cache_dtype", r"'kv_cache_dtype': '(\w+)'"),
    _r("block_size_tokens", r"'block_size': (\d+)", int),
    _r("quantization", r"'quantization': '([\w\-]+)'"),
    _r("dtype", r"'dtype': '(\w+)'"),
    _r("prefix_caching", r"'enable_prefix_caching': (True|False)", _bool),
)

# SGLang's "server_args=ServerArgs(...)" (a dataclass repr).
_SERVER_ARGS_LINE = re.compile(r"server_args=ServerArgs\((.*)")
_SERVER_ARGS_RULES: tuple[Rule, ...] = (
    _r("model", r"(?:^|, )model_path='([^']*)'"),
    _r("served_model_name", r", served_model_name='([^']*)'"),
    _r("dtype", r", dtype='(\w+)'"),
    _r("quantization", r", quantization='([\w\-]+)'"),
    _r("kv_cache_dtype", r", kv_cache_dtype='(\w+)'"),
    _r("max_model_len", r", context_length=(\d+)", int),
    _r("mem_fraction_static", r", mem_fraction_static=([\d.]+)", float),
    _r("tensor_parallel_size", r", tp_size=(\d+)", int),
    _r("pipeline_parallel_size", r", pp_size=(\d+)", int),
    _r("data_parallel_size", r", dp_size=(\d+)", int),
    _r("block_size_tokens", r", page_size=(\d+)", int),
)

_SGL_KV = r"KV Cache is allocated\. #tokens: [\d,]+, "
# One-off lines; matched anywhere in a line (prefixes and timestamps do not matter).
_LINE_RULES: tuple[Rule, ...] = (
    _r("engine_version", r"vLLM API server version " + _VERSION),
    _r("architecture", r"Resolved architecture: (\w+)"),
    _r("max_model_len", r"Using max model len (" + _NUM + r")", _int),
    _r("attention_block_size_tokens", r"Setting attention block size to (" + _NUM + r") tokens", _int),
    _r("mamba_page_padding_percent", r"Padding mamba page size by (" + _FLOAT + r")%", _float),
    _r("weights_gib", r"Model loading took (" + _FLOAT + r") ?GiB", _float),
    _r("weights_gib", r"Loading model weights took (" + _FLOAT + r") ?GB", _float),
    _r("kv_cache_tokens", r"GPU KV cache size: (" + _NUM + r") tokens", _int),
    _r("num_gpu_blocks", r"# (?:GPU|cuda|npu) blocks: (" + _NUM + r")", _int),
    _r("num_gpu_blocks", r"num_gpu_blocks is: (" + _NUM + r")", _int),
    _r("total_gpu_memory_gib", r"total_gpu_memory \((" + _FLOAT + r") ?GiB\)", _float),
    _r("total_gpu_memory_gib", r"total_gpu_memory=(" + _FLOAT + r") ?GiB", _float),
    _r("total_gpu_memory_gib", r"Free memory on device \(" + _FLOAT + r"/(" + _FLOAT + r") GiB\)", _float),
    _r("total_gpu_memory_gib", r"[Tt]otal GPU memory: (" + _FLOAT + r") ?GiB", _float),
    _r("total_gpu_memory_gib", r"Available memory: \d+, total memory: (\d+)", lambda b: int(b) / 2**30),
    _r("gpu_memory_utilization", r"gpu_memory_utilization \(([\d.]+)\)", float),
    _r("gpu_memory_utilization", r"gpu_memory_utilization=([\d.]+)", float),
    _r("gpu_memory_utilization", r"Desired GPU memory utilization is \(([\d.]+),", float),
    # SGLang
    _r("architecture", r"Load weight end\. type=(\w+)"),
    _r("max_total_num_tokens", r"max_total_num_tokens=(" + _NUM + r")", _int),
    _r("max_running_requests", r"max_total_num_tokens=[\d,]+.*?, max_running_requests=(" + _NUM + r")", _int),
    _r("max_model_len", r"max_total_num_tokens=[\d,]+.*?, context_len=(" + _NUM + r")", _int),
    _r("kv_pool_tokens", r"KV Cache is allocated\. #tokens: (" + _NUM + r")", _int),
    _r("kv_cache_k_gib", _SGL_KV + r"K size: (" + _FLOAT + r") ?GB", _float),
    _r("kv_cache_v_gib", _SGL_KV + r"K size: [\d.,]+ ?GB, V size: (" + _FLOAT + r") ?GB", _float),
    _r("kv_cache_kv_gib", _SGL_KV + r"KV size: (" + _FLOAT + r") ?GB", _float),
    _r("mamba_cache_slots", r"Mamba Cache is allocated\. max_mamba_cache_size: (" + _NUM + r")", _int),
    _r("mamba_conv_state_gib", r"Mamba Cache is allocated\..*?conv_state size: (" + _FLOAT + r") ?GB", _float),
    _r("mamba_ssm_state_gib", r"Mamba Cache is allocated\..*?ssm_state size: (" + _FLOAT + r") ?GB", _float),
)

# The command that started the server, when the log shows it (``vllm serve M --tensor-parallel-size 4``,
# ``python -m sglang.launch_server --model-path M --tp 4``); read last, only for what the log itself
# does not print. Continuation lines (ending in ``\``) are joined first.
_COMMAND = re.compile(r"(?:\bvllm\s+serve\b|vllm\.entrypoints\.\S+|sglang\.launch_server\b)")
_FLAG = r"(?:\s+|=)('[^']*'|\"[^\"]*\"|[^\s\\]+)"
_CLI_RULES: tuple[Rule, ...] = (
    _r("model", r"\bvllm\s+serve\s+(?!-)(\S+)"),
    _r("model", r"\s--model(?:-path)?" + _FLAG),
    _r("served_model_name", r"\s--served-model-name" + _FLAG),
    _r("tensor_parallel_size", r"\s(?:--tensor-parallel-size|-tp|--tp-size|--tp)" + _FLAG, int),
    _r("pipeline_parallel_size", r"\s(?:--pipeline-parallel-size|-pp|--pp-size)" + _FLAG, int),
    _r("data_parallel_size", r"\s(?:--data-parallel-size|-dp|--dp-size|--dp)" + _FLAG, int),
    _r("max_model_len", r"\s(?:--max-model-len|--context-length)" + _FLAG, int),
    _r("gpu_memory_utilization", r"\s--gpu-memory-utilization" + _FLAG, float),
    _r("mem_fraction_static", r"\s--mem-fraction-static" + _FLAG, float),
    _r("kv_cache_dtype", r"\s--kv-cache-dtype" + _FLAG),
    _r("block_size_tokens", r"\s(?:--block-size|--page-size)" + _FLAG, int),
)
_CLI_FLAGS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("expert_parallel", re.compile(r"\s(?:--enable-expert-parallel|-ep)\b")),
)

_AVAILABLE = re.compile(r"Available KV cache memory: (" + _FLOAT + r") ?GiB")
_CONCURRENCY = re.compile(r"Maximum concurrency for (" + _NUM + r") tokens per request: (" + _FLOAT + r") ?x")
_BANNER_VERSION = re.compile(r"[█▄▀]\s+version\s+" + _VERSION)
_BANNER_MODEL = re.compile(r"[█▄▀]\s+model\s+(\S+)")
_UNSUPPORTED = (
    re.compile(r"Model architectures \[([^\]]*)\] (?:are|is) not supported for now"),
    re.compile(r"Unsupported architectures?: ([\w, ']+)"),
    re.compile(r"model type `(\w+)` but Transformers does not recognize this architecture"),
)
_SGLANG_HINT = re.compile(r"sglang|server_args=ServerArgs|max_total_num_tokens=|KV Cache is allocated\. #tokens")
_VLLM_HINT = re.compile(r"vLLM|vllm|LLM engine \(v|GPU KV cache size|Available KV cache memory")


def _rank_of(line: str) -> int | None:
    m = _RANK.search(line[:200])
    if not m:
        return None
    return int(m.group(1) if m.group(1) is not None else m.group(2))


class _Collector:
    """First value per field, with rank 0 preferred over an earlier line of another rank."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.rank: dict[str, int | None] = {}

    def put(self, name: str, value: Any, rank: int | None = None) -> None:
        if name not in self.values or (rank == 0 and self.rank[name] not in (None, 0)):
            self.values[name], self.rank[name] = value, rank

    def put_all(self, rules: Iterable[Rule], text: str, rank: int | None = None) -> None:
        for name, pattern, convert in rules:
            m = pattern.search(text)
            if m:
                try:
                    self.put(name, convert(m.group(1)), rank)
                except ValueError:
                    continue


def _unsupported(line: str) -> str | None:
    for pattern in _UNSUPPORTED:
        m = pattern.search(line)
        if m:
            names = [n.strip().strip("'\"") for n in m.group(1).split(",")]
            return ", ".join(n for n in names if n) or None
    return None


def parse_startup_log(text: str) -> StartupLog:
    """Parse a vLLM or SGLang startup log (see the module docstring).

    Raises ``EngineInputError`` (field ``log``) for input that is not text, is over
    ``MAX_LOG_BYTES`` (5 MiB), or in which no line of a known engine's startup can be found.
    """
    if not isinstance(text, str):
        raise EngineInputError.single("log", "Give the log as text.")
    if len(text) > MAX_LOG_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_LOG_BYTES:
        raise EngineInputError.single(
            "log", f"The log is over {MAX_LOG_BYTES // (1024 * 1024)} MiB; paste only the startup (the first few MB)."
        )
    c = _Collector()
    available: list[tuple[int | None, float]] = []
    concurrency: list[tuple[int | None, int, float]] = []
    sglang_hits = vllm_hits = lines = truncated = 0
    unsupported: str | None = None
    command: list[str] = []
    cli = _Collector()
    for raw in text.splitlines():
        lines += 1
        if len(raw) > MAX_LINE_CHARS:
            raw, truncated = raw[:MAX_LINE_CHARS], truncated + 1
        line = _ANSI.sub("", raw).replace("\r", "")
        if command:
            command.append(line.rstrip().removesuffix("\\"))
            if not line.rstrip().endswith("\\") or len(command) > 200:
                _read_command(" ".join(command), cli)
                command = []
            continue
        if _COMMAND.search(line) and not _CONFIG_LINE.search(line):
            if line.rstrip().endswith("\\"):
                command = [line.rstrip().removesuffix("\\")]
            else:
                _read_command(line, cli)
        if not line.strip():
            continue
        if _SGLANG_HINT.search(line):
            sglang_hits += 1
        if _VLLM_HINT.search(line):
            vllm_hits += 1
        rank = _rank_of(line)
        if m := _CONFIG_LINE.search(line):
            c.put("engine_version", m.group(1))
            c.put_all(_CONFIG_RULES, m.group(2))
            vllm_hits += 1
            continue
        if m := _ARGS_LINE.search(line):
            c.put_all(_ARGS_RULES, m.group(1))
            continue
        if m := _SERVER_ARGS_LINE.search(line):
            c.put_all(_SERVER_ARGS_RULES, m.group(1))
            sglang_hits += 1
            continue
        if m := _AVAILABLE.search(line):
            available.append((rank, _float(m.group(1))))
        if m := _CONCURRENCY.search(line):
            concurrency.append((rank, _int(m.group(1)), _float(m.group(2))))
        if m := _BANNER_VERSION.search(line):
            c.put("banner_version", m.group(1))
            continue
        if m := _BANNER_MODEL.search(line):
            c.put("banner_model", m.group(1))
            continue
        if unsupported is None and (name := _unsupported(line)):
            unsupported = name
        c.put_all(_LINE_RULES, line, rank)
    if command:
        _read_command(" ".join(command), cli)
    v = c.values
    for name, value in cli.values.items():
        if not name.startswith("_"):
            v.setdefault(name, value)
    if "sglang" in cli.values.get("_engine", ""):
        sglang_hits += 1
    if sglang_hits > vllm_hits:
        engine: str | None = "sglang"
    elif vllm_hits:
        engine = "vllm"
    else:
        engine = None
    if engine is None and unsupported is None and not v:
        raise EngineInputError.single(
            "log", "No line of a vLLM or SGLang startup was found; paste the server's log from its first line."
        )
    notes: list[str] = []
    model = v.get("model") or v.get("model_tag") or v.get("banner_model")
    version = v.get("engine_version") or v.get("banner_version")
    if engine == "sglang" and version is None:
        notes.append("SGLang does not print its version at startup; give it with the deployment or the request.")
    chosen_available = _prefer_rank0([(r, a) for r, a in available])
    if available and len({a for _, a in available}) > 1:
        notes.append(
            "Ranks logged different available KV cache memory ("
            + ", ".join(f"{a:g}" for _, a in available)
            + " GiB); the engine sizes the cache by the smallest."
        )
    chosen_concurrency = _prefer_rank0([(r, (t, x)) for r, t, x in concurrency])
    return StartupLog(
        engine=engine,
        engine_version=version,
        model=model,
        served_model_name=v.get("served_model_name"),
        architecture=v.get("architecture"),
        dtype=v.get("dtype"),
        quantization=v.get("quantization") if v.get("quantization") not in ("None", "none") else None,
        tensor_parallel_size=v.get("tensor_parallel_size"),
        pipeline_parallel_size=v.get("pipeline_parallel_size"),
        data_parallel_size=v.get("data_parallel_size"),
        decode_context_parallel_size=v.get("decode_context_parallel_size"),
        expert_parallel=v.get("expert_parallel"),
        gpu_memory_utilization=v.get("gpu_memory_utilization"),
        mem_fraction_static=v.get("mem_fraction_static"),
        max_model_len=v.get("max_model_len"),
        kv_cache_dtype=v.get("kv_cache_dtype"),
        block_size_tokens=v.get("block_size_tokens"),
        attention_block_size_tokens=v.get("attention_block_size_tokens"),
        mamba_page_padding_percent=v.get("mamba_page_padding_percent"),
        prefix_caching=v.get("prefix_caching"),
        total_gpu_memory_gib=v.get("total_gpu_memory_gib"),
        weights_gib=v.get("weights_gib"),
        available_kv_cache_gib=chosen_available,
        available_kv_cache_gib_ranks=tuple(a for _, a in available),
        kv_cache_tokens=v.get("kv_cache_tokens"),
        num_gpu_blocks=v.get("num_gpu_blocks"),
        max_concurrency=chosen_concurrency[1] if chosen_concurrency else None,
        max_concurrency_tokens=chosen_concurrency[0] if chosen_concurrency else None,
        max_total_num_tokens=v.get("max_total_num_tokens"),
        kv_pool_tokens=v.get("kv_pool_tokens"),
        max_running_requests=v.get("max_running_requests"),
        kv_cache_k_gib=v.get("kv_cache_k_gib"),
        kv_cache_v_gib=v.get("kv_cache_v_gib"),
        kv_cache_kv_gib=v.get("kv_cache_kv_gib"),
        mamba_cache_slots=v.get("mamba_cache_slots"),
        mamba_conv_state_gib=v.get("mamba_conv_state_gib"),
        mamba_ssm_state_gib=v.get("mamba_ssm_state_gib"),
        unsupported_architecture=unsupported,
        lines_read=lines,
        truncated_lines=truncated,
        notes=tuple(notes),
    )


def _read_command(command: str, into: _Collector) -> None:
    """The flags of the command that started the server (lowest priority: see ``_CLI_RULES``)."""
    into.put("_engine", "sglang" if "sglang" in command else "vllm")
    into.put_all(_CLI_RULES, " " + command)
    for name, pattern in _CLI_FLAGS:
        if pattern.search(" " + command):
            into.put(name, True)


def _prefer_rank0(values: list[tuple[int | None, Any]]) -> Any:
    """The value logged by rank 0 if a line names it, else the first one logged."""
    for rank, value in values:
        if rank == 0:
            return value
    return values[0][1] if values else None


# --- secrets ----------------------------------------------------------------------------------------

_MASK = "***"
#: An argument name that holds a secret: api_key, hf_token, access_token, secret_key, password, ...
_SECRET_NAME = r"(?:[A-Za-z0-9]+_)*(?:api_?key|token|secret|password|passwd|key)(?:_[A-Za-z0-9]+)*"  # noqa: S105
_SECRETS: tuple[tuple[re.Pattern[str], str], ...] = (
    # Python reprs of the arguments: {'api_key': ['k1', 'k2']} / {'hf_token': 'x'} / ServerArgs(api_key='x')
    (re.compile(r"('(?:" + _SECRET_NAME + r")'\s*:\s*)(\[[^\]]*\]|'[^']*'|\"[^\"]*\")", re.I), r"\1'" + _MASK + "'"),
    (re.compile(r"(\b(?:" + _SECRET_NAME + r")=)('[^']*'|\"[^\"]*\")", re.I), r"\1'" + _MASK + "'"),
    # Command lines and environment dumps: --api-key X, --hf-token=X, HF_TOKEN=X, OPENAI_API_KEY=X
    (re.compile(r"(--[a-z0-9-]*(?:api-key|token|secret|password)[a-z0-9-]*[ =])(\S+)", re.I), r"\1" + _MASK),
    (re.compile(r"(\b[A-Z][A-Z0-9_]*(?:TOKEN|KEY|SECRET|PASSWORD)[A-Z0-9_]*=)(\S+)"), r"\1" + _MASK),
    # Bare credentials wherever they appear.
    (re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/=-]+", re.I), r"\1" + _MASK),
    (re.compile(r"\bhf_[A-Za-z0-9]{16,}\b"), _MASK),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}\b"), _MASK),
    (re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+@", re.I), r"\1" + _MASK + "@"),
)


def redact_startup_log(text: str) -> str:
    """``text`` with API keys, tokens, passwords and URL credentials replaced by ``***``.

    vLLM prints its command line back (``non-default args: {..., 'api_key': ['...']}``) and SGLang
    its ``ServerArgs(..., api_key='...')``; a stored or displayed log must not carry them.
    """
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text
