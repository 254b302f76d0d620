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

Bounded by the text, whatever it repeats (issue 29): parsing is a few ``str.find`` scans plus at most
``MAX_READ_LINES`` lines of at most ``MAX_LINE_CHARS``, each pattern linear in its line; the
redaction (``redact_startup_log``, ``redacted_head`` for the head a calibration stores) is linear
too. A 5 MiB log of any shape parses in under 0.3 s of CPU (docs/benchmarks.md, "Calibration").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from functools import lru_cache
from itertools import compress, count
from typing import Any

from .errors import EngineInputError

#: The most text ``parse_startup_log`` reads (5 MiB): a startup log is a few hundred KiB at most.
MAX_LOG_BYTES: int = 5 * 1024 * 1024
#: Longer lines are cut before matching (vLLM's config line is ~6 KB; a pasted JSON blob can be MBs).
MAX_LINE_CHARS: int = 64 * 1024
#: The most lines read in full: lines naming something the parser reads (an engine, a setting, a
#: figure); a startup log has a few hundred, every other line is counted and skipped unread.
MAX_READ_LINES: int = 20_000

#: The dialects this parser reads (``StartupLog.engine``); which serving engine prints which is the
#: registry's (``serving_engines.ServingEngine.startup_log``, listed by ``startup_log_engines()``).
DIALECTS: tuple[str, ...] = ("vllm", "sglang")

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]")
_NUM = r"\d[\d,]*"
_FLOAT = r"\d[\d,]*(?:\.\d+)?"
_VERSION = r"v?(\d++\.\d++[\w.+\-]*+)"
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


# --- rules: (field, trigger, pattern, converter); the first match per field wins unless noted --------
#
# Every rule names its *trigger*: literal text that every match of its pattern contains. A rule's
# pattern only runs on a line holding its trigger, and the lines read at all are the lines holding
# some line-level trigger (``_LINE_TRIGGERS``), found by scanning the whole text once for each of a
# few literals the triggers hold (``_SCAN_LITERALS``; ``str.find``, in C). Each pattern is linear in
# its line: it starts with literal text and runs no ``.*?`` that a repeated prefix could restart (the
# SGLang rules that need "A ... then B" find the first A and search for B after it: ``_Rule.after``).
# So a log costs a few passes plus the lines that name something, whatever its lines hold
# (docs/benchmarks.md, "Calibration").


@dataclass(frozen=True, slots=True)
class _Rule:
    """One field read off a line: ``pattern``'s group 1, converted, where the line holds ``trigger``.
    With ``after``, ``pattern`` is searched from the end of ``after``'s first match only."""

    name: str
    trigger: str
    pattern: re.Pattern[str]
    convert: Callable[[str], Any]
    after: re.Pattern[str] | None = None

    def find(self, text: str) -> str | None:
        """Group 1 of the first match in ``text``, or None (one linear search)."""
        if self.after is None:
            m = self.pattern.search(text)
        else:
            first = self.after.search(text)
            m = self.pattern.search(text, first.end()) if first else None
        return m.group(1) if m else None


def _r(name: str, trigger: str, pattern: str, convert: Callable[[str], Any] = _text, after: str | None = None) -> _Rule:
    return _Rule(name, trigger, re.compile(pattern), convert, re.compile(after) if after else None)


# The config line vLLM prints when its engine starts (V1: "Initializing a V1 LLM engine (v0.10.2)
# with config: model='...', ..."; V0: "Initializing an LLM engine (v0.6.3) with config: ...").
_CONFIG_TRIGGER = "LLM engine ("
_CONFIG_LINE = re.compile(r"Initializing an? (?:V\d )?LLM engine \(" + _VERSION + r"\) with config: (.*)")
_CONFIG_RULES: tuple[_Rule, ...] = (
    _r("model", "model='", r"(?:^|, )model='([^']*)'"),
    _r("served_model_name", ", served_model_name=", r", served_model_name=([^,]+),"),
    _r("dtype", ", dtype=", r", dtype=(?:torch\.)?(\w+)"),
    _r("quantization", ", quantization=", r", quantization=([\w\-]+)"),
    _r("max_model_len", ", max_seq_len=", r", max_seq_len=(\d+)", int),
    _r("tensor_parallel_size", ", tensor_parallel_size=", r", tensor_parallel_size=(\d+)", int),
    _r("pipeline_parallel_size", ", pipeline_parallel_size=", r", pipeline_parallel_size=(\d+)", int),
    _r("data_parallel_size", ", data_parallel_size=", r", data_parallel_size=(\d+)", int),
    _r("decode_context_parallel_size", ", decode_context_parallel_size=", r", decode_context_parallel_size=(\d+)", int),
    _r("kv_cache_dtype", ", kv_cache_dtype=", r", kv_cache_dtype=([\w]+)"),
    _r("prefix_caching", ", enable_prefix_caching=", r", enable_prefix_caching=(True|False)", _bool),
)

# vLLM's "non-default args: {...}" (the command line as parsed), a Python dict repr.
_ARGS_TRIGGER = "non-default args: {"
_ARGS_LINE = re.compile(r"non-default args: (\{.*)")
_ARGS_RULES: tuple[_Rule, ...] = (
    _r("model", "'model': '", r"'model': '([^']*)'"),
    _r("model_tag", "'model_tag': '", r"'model_tag': '([^']*)'"),
    _r("served_model_name", "'served_model_name': ", r"'served_model_name': \[?'([^']*)'"),
    _r("tensor_parallel_size", "'tensor_parallel_size': ", r"'tensor_parallel_size': (\d+)", int),
    _r("pipeline_parallel_size", "'pipeline_parallel_size': ", r"'pipeline_parallel_size': (\d+)", int),
    _r("data_parallel_size", "'data_parallel_size': ", r"'data_parallel_size': (\d+)", int),
    _r(
        "decode_context_parallel_size",
        "'decode_context_parallel_size': ",
        r"'decode_context_parallel_size': (\d+)",
        int,
    ),
    _r("expert_parallel", "'enable_expert_parallel': ", r"'enable_expert_parallel': (True|False)", _bool),
    _r("gpu_memory_utilization", "'gpu_memory_utilization': ", r"'gpu_memory_utilization': ([\d.]+)", float),
    _r("max_model_len", "'max_model_len': ", r"'max_model_len': (\d+)", int),
    _r("kv_cache_dtype", "'kv_cache_dtype': '", r"'kv_cache_dtype': '(\w+)'"),
    _r("block_size_tokens", "'block_size': ", r"'block_size': (\d+)", int),
    _r("quantization", "'quantization': '", r"'quantization': '([\w\-]+)'"),
    _r("dtype", "'dtype': '", r"'dtype': '(\w+)'"),
    _r("prefix_caching", "'enable_prefix_caching': ", r"'enable_prefix_caching': (True|False)", _bool),
)

# SGLang's "server_args=ServerArgs(...)" (a dataclass repr).
_SERVER_ARGS_TRIGGER = "server_args=ServerArgs("
_SERVER_ARGS_LINE = re.compile(r"server_args=ServerArgs\((.*)")
_SERVER_ARGS_RULES: tuple[_Rule, ...] = (
    _r("model", "model_path='", r"(?:^|, )model_path='([^']*)'"),
    _r("served_model_name", ", served_model_name='", r", served_model_name='([^']*)'"),
    _r("dtype", ", dtype='", r", dtype='(\w+)'"),
    _r("quantization", ", quantization='", r", quantization='([\w\-]+)'"),
    _r("kv_cache_dtype", ", kv_cache_dtype='", r", kv_cache_dtype='(\w+)'"),
    _r("max_model_len", ", context_length=", r", context_length=(\d+)", int),
    _r("mem_fraction_static", ", mem_fraction_static=", r", mem_fraction_static=([\d.]+)", float),
    _r("tensor_parallel_size", ", tp_size=", r", tp_size=(\d+)", int),
    _r("pipeline_parallel_size", ", pp_size=", r", pp_size=(\d+)", int),
    _r("data_parallel_size", ", dp_size=", r", dp_size=(\d+)", int),
    _r("block_size_tokens", ", page_size=", r", page_size=(\d+)", int),
)

_SGL_KV_TRIGGER = "KV Cache is allocated. #tokens"
_SGL_KV = r"KV Cache is allocated\. #tokens: [\d,]+, "
_SGL_TOTAL = r"max_total_num_tokens=[\d,]"
_MAMBA = r"Mamba Cache is allocated\."
# One-off lines; matched anywhere in a line (prefixes and timestamps do not matter).
_LINE_RULES: tuple[_Rule, ...] = (
    _r("engine_version", "vLLM API server version ", r"vLLM API server version " + _VERSION),
    _r("architecture", "Resolved architecture: ", r"Resolved architecture: (\w+)"),
    _r("max_model_len", "Using max model len ", r"Using max model len (" + _NUM + r")", _int),
    _r(
        "attention_block_size_tokens",
        "Setting attention block size to ",
        r"Setting attention block size to (" + _NUM + r") tokens",
        _int,
    ),
    _r(
        "mamba_page_padding_percent",
        "Padding mamba page size by ",
        r"Padding mamba page size by (" + _FLOAT + r")%",
        _float,
    ),
    _r("weights_gib", "Model loading took ", r"Model loading took (" + _FLOAT + r") ?GiB", _float),
    _r("weights_gib", "Loading model weights took ", r"Loading model weights took (" + _FLOAT + r") ?GB", _float),
    _r("kv_cache_tokens", "GPU KV cache size: ", r"GPU KV cache size: (" + _NUM + r") tokens", _int),
    _r("num_gpu_blocks", " blocks: ", r"# (?:GPU|cuda|npu) blocks: (" + _NUM + r")", _int),
    _r("num_gpu_blocks", "num_gpu_blocks is: ", r"num_gpu_blocks is: (" + _NUM + r")", _int),
    _r("total_gpu_memory_gib", "total_gpu_memory", r"total_gpu_memory \((" + _FLOAT + r") ?GiB\)", _float),
    _r("total_gpu_memory_gib", "total_gpu_memory", r"total_gpu_memory=(" + _FLOAT + r") ?GiB", _float),
    _r(
        "total_gpu_memory_gib",
        "Free memory on device (",
        r"Free memory on device \(" + _FLOAT + r"/(" + _FLOAT + r") GiB\)",
        _float,
    ),
    _r("total_gpu_memory_gib", "otal GPU memory: ", r"[Tt]otal GPU memory: (" + _FLOAT + r") ?GiB", _float),
    _r(
        "total_gpu_memory_gib",
        "Available memory: ",
        r"Available memory: \d+, total memory: (\d+)",
        lambda b: int(b) / 2**30,
    ),
    _r("gpu_memory_utilization", "gpu_memory_utilization", r"gpu_memory_utilization \(([\d.]+)\)", float),
    _r("gpu_memory_utilization", "gpu_memory_utilization", r"gpu_memory_utilization=([\d.]+)", float),
    _r(
        "gpu_memory_utilization",
        "Desired GPU memory utilization is (",
        r"Desired GPU memory utilization is \(([\d.]+),",
        float,
    ),
    # SGLang
    _r("architecture", "Load weight end. type=", r"Load weight end\. type=(\w+)"),
    _r("max_total_num_tokens", "max_total_num_tokens=", r"max_total_num_tokens=(" + _NUM + r")", _int),
    # "max_total_num_tokens=N, ..., max_running_requests=M": the first M after the first N.
    _r("max_running_requests", "max_total_num_tokens=", r", max_running_requests=(" + _NUM + r")", _int, _SGL_TOTAL),
    _r("max_model_len", "max_total_num_tokens=", r", context_len=(" + _NUM + r")", _int, _SGL_TOTAL),
    _r("kv_pool_tokens", _SGL_KV_TRIGGER, r"KV Cache is allocated\. #tokens: (" + _NUM + r")", _int),
    _r("kv_cache_k_gib", _SGL_KV_TRIGGER, _SGL_KV + r"K size: (" + _FLOAT + r") ?GB", _float),
    _r("kv_cache_v_gib", _SGL_KV_TRIGGER, _SGL_KV + r"K size: [\d.,]+ ?GB, V size: (" + _FLOAT + r") ?GB", _float),
    _r("kv_cache_kv_gib", _SGL_KV_TRIGGER, _SGL_KV + r"KV size: (" + _FLOAT + r") ?GB", _float),
    _r(
        "mamba_cache_slots",
        "Mamba Cache is allocated.",
        _MAMBA + r" max_mamba_cache_size: (" + _NUM + r")",
        _int,
    ),
    _r("mamba_conv_state_gib", "Mamba Cache is allocated.", r"conv_state size: (" + _FLOAT + r") ?GB", _float, _MAMBA),
    _r("mamba_ssm_state_gib", "Mamba Cache is allocated.", r"ssm_state size: (" + _FLOAT + r") ?GB", _float, _MAMBA),
)

# The command that started the server, when the log shows it (``vllm serve M --tensor-parallel-size 4``,
# ``python -m sglang.launch_server --model-path M --tp 4``); read last, only for what the log itself
# does not print. Continuation lines (ending in ``\``) are joined first.
_COMMAND_TRIGGERS = ("vllm", "sglang")
_COMMAND = re.compile(r"(?:\bvllm\s+serve\b|vllm\.entrypoints\.\S+|sglang\.launch_server\b)")
_FLAG = r"(?:\s+|=)('[^']*'|\"[^\"]*\"|[^\s\\]+)"
_CLI_RULES: tuple[_Rule, ...] = (
    _r("model", "vllm", r"\bvllm\s+serve\s+(?!-)(\S+)"),
    _r("model", "--model", r"\s--model(?:-path)?" + _FLAG),
    _r("served_model_name", "--served-model-name", r"\s--served-model-name" + _FLAG),
    _r("tensor_parallel_size", "-t", r"\s(?:--tensor-parallel-size|-tp|--tp-size|--tp)" + _FLAG, int),
    _r("pipeline_parallel_size", "-p", r"\s(?:--pipeline-parallel-size|-pp|--pp-size)" + _FLAG, int),
    _r("data_parallel_size", "-d", r"\s(?:--data-parallel-size|-dp|--dp-size|--dp)" + _FLAG, int),
    _r("max_model_len", "--", r"\s(?:--max-model-len|--context-length)" + _FLAG, int),
    _r("gpu_memory_utilization", "--gpu-memory-utilization", r"\s--gpu-memory-utilization" + _FLAG, float),
    _r("mem_fraction_static", "--mem-fraction-static", r"\s--mem-fraction-static" + _FLAG, float),
    _r("kv_cache_dtype", "--kv-cache-dtype", r"\s--kv-cache-dtype" + _FLAG),
    _r("block_size_tokens", "--", r"\s(?:--block-size|--page-size)" + _FLAG, int),
)
_CLI_FLAGS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("expert_parallel", re.compile(r"\s(?:--enable-expert-parallel|-ep)\b")),
)

_AVAILABLE_TRIGGER = "Available KV cache memory"
_AVAILABLE = re.compile(r"Available KV cache memory: (" + _FLOAT + r") ?GiB")
_CONCURRENCY_TRIGGER = "Maximum concurrency for "
_CONCURRENCY = re.compile(r"Maximum concurrency for (" + _NUM + r") tokens per request: (" + _FLOAT + r") ?x")
#: vLLM's banner is drawn in these block characters.
_BANNER_TRIGGERS = ("█", "▄", "▀")
_BANNER_VERSION = re.compile(r"[█▄▀]\s+version\s+" + _VERSION)
_BANNER_MODEL = re.compile(r"[█▄▀]\s+model\s+(\S+)")
_ARCHITECTURES = "Model architectures ["
_ARCHITECTURES_TAIL = re.compile(r"\] (?:are|is) not supported for now")


def _architectures_list(line: str) -> str | None:
    """What "Model architectures [...] are not supported for now" lists (a linear scan: every
    "Model architectures [" before the same "]" shares its verdict)."""
    start = line.find(_ARCHITECTURES)
    while start >= 0:
        close = line.find("]", start + len(_ARCHITECTURES))
        if close < 0:
            return None
        if _ARCHITECTURES_TAIL.match(line, close):
            return line[start + len(_ARCHITECTURES) : close]
        start = line.find(_ARCHITECTURES, close + 1)
    return None


def _group1(pattern: str) -> Callable[[str], str | None]:
    compiled = re.compile(pattern)
    return lambda line: m.group(1) if (m := compiled.search(line)) else None


#: (trigger, finder of the architecture list), in order: vLLM, SGLang, transformers.
_UNSUPPORTED: tuple[tuple[str, Callable[[str], str | None]], ...] = (
    (_ARCHITECTURES, _architectures_list),
    ("Unsupported architecture", _group1(r"Unsupported architectures?: ([\w, ']+)")),
    (
        "Transformers does not recognize this architecture",
        _group1(r"model type `(\w+)` but Transformers does not recognize this architecture"),
    ),
)
_SGLANG_HINTS = ("sglang", "server_args=ServerArgs", "max_total_num_tokens=", _SGL_KV_TRIGGER)
_VLLM_HINTS = ("vLLM", "vllm", "LLM engine (v", "GPU KV cache size", _AVAILABLE_TRIGGER)

#: Every line-level trigger: a line holding none of them is counted and not read.
_LINE_TRIGGERS: tuple[str, ...] = tuple(
    dict.fromkeys(
        (
            *_COMMAND_TRIGGERS,
            *_SGLANG_HINTS,
            *_VLLM_HINTS,
            _CONFIG_TRIGGER,
            _ARGS_TRIGGER,
            _SERVER_ARGS_TRIGGER,
            _AVAILABLE_TRIGGER,
            _CONCURRENCY_TRIGGER,
            *_BANNER_TRIGGERS,
            *(trigger for trigger, _ in _UNSUPPORTED),
            *(rule.trigger for rule in _LINE_RULES),
        )
    )
)
#: What the text is scanned for (each once, ``str.find``): every line-level trigger holds one of these
#: (tests/engine/test_startup_log_bounded.py), so a line holding none of them holds no trigger. Fewer
#: and shorter than the triggers: a line naming many figures costs one step per literal it holds.
_SCAN_LITERALS: tuple[str, ...] = (
    "vllm", "vLLM", "sglang", "LLM engine (", "args", "memory", "Cache is allocated", "max_total_num_tokens=",
    "GPU KV cache size", "Maximum concurrency for ", *_BANNER_TRIGGERS, "rchitecture", "took ", "Using max model len ",
    "block", "Padding mamba page size by ", "Load weight end",
)  # fmt: skip


def _command_in(line: str) -> bool:
    """Whether the line shows the command that started the server (matched at each ``vllm`` and
    ``sglang`` only: the pattern has no literal start for the regex engine to skip to)."""
    for start in ("vllm", "sglang"):
        at = line.find(start)
        while at >= 0:
            if _COMMAND.match(line, at):
                return True
            at = line.find(start, at + 1)
    return False


def _rank_of(line: str) -> int | None:
    head = line[:200]
    if "TP" not in head and "rank" not in head:
        return None
    m = _RANK.search(head)
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

    def put_all(self, rules: Iterable[_Rule], text: str, rank: int | None = None) -> None:
        values, ranks = self.values, self.rank
        for rule in rules:
            if rule.trigger not in text or (rule.name in values and ranks[rule.name] in (None, 0)):
                continue  # not on this line, or settled: no later line changes it
            found = rule.find(text)
            if found is not None:
                try:
                    self.put(rule.name, rule.convert(found), rank)
                except ValueError:
                    continue


def _unsupported(line: str) -> str | None:
    for trigger, find in _UNSUPPORTED:
        found = find(line) if trigger in line else None
        if found is not None:
            names = [n.strip().strip("'\"") for n in found.split(",")]
            return ", ".join(n for n in names if n) or None
    return None


def _lines_to_read(joined: str, limit: int) -> tuple[list[tuple[int, tuple[str, ...]]], bool]:
    """The first ``limit`` lines holding a scan literal (so every line holding a line-level trigger
    among them), ascending, each with the literals it holds; and whether more such lines were left
    unread. ``joined`` is the lines joined by newlines. One ``str.find`` scan of the text per literal
    (in C), one step per line it finds."""
    found: dict[int, list[str]] = {}
    more = False
    for trigger in _SCAN_LITERALS:
        pos, line, counted, taken = joined.find(trigger), 0, 0, 0
        while pos >= 0:
            if taken == limit:
                more = True
                break
            line += joined.count("\n", counted, pos)
            found.setdefault(line, []).append(trigger)
            taken += 1
            counted = pos
            end = joined.find("\n", pos)
            pos = joined.find(trigger, end + 1) if end >= 0 else -1
    ordered = sorted(found)
    return [(line, tuple(found[line])) for line in ordered[:limit]], more or len(ordered) > limit


@lru_cache(maxsize=256)
def _rules_for(literals: tuple[str, ...]) -> tuple[_Rule, ...]:
    """The line rules (in their order) whose trigger holds one of the scan literals a line holds."""
    return tuple(rule for rule in _LINE_RULES if any(lit in rule.trigger for lit in literals))


def parse_startup_log(text: str) -> StartupLog:
    """Parse a vLLM or SGLang startup log (see the module docstring).

    Raises ``EngineInputError`` (field ``log``) for input that is not text, is over
    ``MAX_LOG_BYTES`` (5 MiB), or in which no line of a known engine's startup can be found.
    Work is linear in the text: one scan per scan literal, then at most ``MAX_READ_LINES`` lines read
    (each cut at ``MAX_LINE_CHARS``).
    """
    if not isinstance(text, str):
        raise EngineInputError.single("log", "Give the log as text.")
    if len(text) > MAX_LOG_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_LOG_BYTES:
        raise EngineInputError.single(
            "log", f"The log is over {MAX_LOG_BYTES // (1024 * 1024)} MiB; paste only the startup (the first few MB)."
        )
    all_lines = text.splitlines()
    long_lines: list[int] = []
    if max(map(len, all_lines), default=0) > MAX_LINE_CHARS:
        long_lines = list(compress(count(), map(MAX_LINE_CHARS.__lt__, map(len, all_lines))))
    for index in long_lines:
        all_lines[index] = all_lines[index][:MAX_LINE_CHARS]
    joined = "\n".join(all_lines)
    if "\x1b" in joined:  # colour codes out (no escape sequence holds a line break)
        joined = _ANSI.sub("", joined)
        all_lines = joined.split("\n")
    to_read, unread = _lines_to_read(joined, MAX_READ_LINES)
    c = _Collector()
    available: list[tuple[int | None, float]] = []
    concurrency: list[tuple[int | None, int, float]] = []
    sglang_hits = vllm_hits = 0
    unsupported: str | None = None
    cli = _Collector()
    consumed = 0  # lines before this one were read as a command's continuation
    for index, literals in to_read:
        if index < consumed:
            continue
        line = all_lines[index]
        if _command_in(line) and not (_CONFIG_TRIGGER in line and _CONFIG_LINE.search(line)):
            if line.rstrip().endswith("\\"):
                consumed = _read_continued(all_lines, index, cli)
            else:
                _read_command(line, cli)
        if any(map(line.__contains__, _SGLANG_HINTS)):
            sglang_hits += 1
        if any(map(line.__contains__, _VLLM_HINTS)):
            vllm_hits += 1
        rank = _rank_of(line)
        if _CONFIG_TRIGGER in line and (m := _CONFIG_LINE.search(line)):
            c.put("engine_version", m.group(1))
            c.put_all(_CONFIG_RULES, m.group(2))
            vllm_hits += 1
            continue
        if _ARGS_TRIGGER in line and (m := _ARGS_LINE.search(line)):
            c.put_all(_ARGS_RULES, m.group(1))
            continue
        if _SERVER_ARGS_TRIGGER in line and (m := _SERVER_ARGS_LINE.search(line)):
            c.put_all(_SERVER_ARGS_RULES, m.group(1))
            sglang_hits += 1
            continue
        if _AVAILABLE_TRIGGER in line and (m := _AVAILABLE.search(line)):
            available.append((rank, _float(m.group(1))))
        if _CONCURRENCY_TRIGGER in line and (m := _CONCURRENCY.search(line)):
            concurrency.append((rank, _int(m.group(1)), _float(m.group(2))))
        if any(block in line for block in _BANNER_TRIGGERS):
            if m := _BANNER_VERSION.search(line):
                c.put("banner_version", m.group(1))
                continue
            if m := _BANNER_MODEL.search(line):
                c.put("banner_model", m.group(1))
                continue
        if unsupported is None and (name := _unsupported(line)):
            unsupported = name
        c.put_all(_rules_for(literals), line, rank)
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
    if unread:
        notes.append(
            f"Only the first {MAX_READ_LINES:,} lines naming an engine, a setting or a figure were read; "
            "paste the startup alone to have all of it read."
        )
    model = v.get("model") or v.get("model_tag") or v.get("banner_model")
    version = v.get("engine_version") or v.get("banner_version")
    if engine == "sglang" and version is None:
        notes.append("SGLang does not print its version at startup; give it with the deployment or the request.")
    chosen_available = _prefer_rank0([(r, a) for r, a in available])
    if available and len({a for _, a in available}) > 1:
        shown = ", ".join(f"{a:g}" for _, a in available[:_NOTE_VALUES])
        if len(available) > _NOTE_VALUES:
            shown += f", ... ({len(available):,} lines)"
        notes.append(
            f"Ranks logged different available KV cache memory ({shown} GiB); "
            "the engine sizes the cache by the smallest."
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
        lines_read=len(all_lines),
        truncated_lines=len(long_lines),
        notes=tuple(notes),
    )


#: Values a note lists at most (the per-rank memory: ``available_kv_cache_gib_ranks`` has them all).
_NOTE_VALUES = 64
#: A command's continuation lines read at most (lines ending in ``\``).
_MAX_CONTINUATION = 200


def _read_continued(lines: list[str], index: int, into: _Collector) -> int:
    """Read the command starting at ``lines[index]`` (ending in ``\\``) with its continuation lines;
    returns the index of the first line after it."""
    command = [lines[index].rstrip().removesuffix("\\")]
    at = index + 1
    while at < len(lines):
        line = lines[at]
        command.append(line.rstrip().removesuffix("\\"))
        at += 1
        if not line.rstrip().endswith("\\") or len(command) > _MAX_CONTINUATION:
            break
    _read_command(" ".join(command), into)
    return at


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
#: Words of an argument name that holds a secret (api_key, hf_token, access_token, secret_key, password,
#: ...): one of them as a whole ``_``-separated part of the name, matched as ``re.I`` matches ASCII
#: letters (the four non-ASCII letters it folds onto them included).
_SECRET_WORDS = frozenset({"apikey", "token", "secret", "password", "passwd", "key"})
_ASCII_FOLD = str.maketrans({"\u017f": "s", "\u212a": "k", "\u0130": "i", "\u0131": "i"})
_CLOSERS = {"[": "]", "'": "'", '"': '"'}
_WORD = re.compile(r"\w")
# Python reprs of the arguments: {'api_key': ['k1', 'k2']} / {'hf_token': 'x'} / ServerArgs(api_key='x')
_QUOTED_NAME = re.compile(r"'([A-Za-z0-9_]++)'\s*+:\s*+(?=[\['\"])", re.I)
_NAME_EQUALS = re.compile(r"\b([A-Za-z0-9_]++)=(?=['\"])", re.I)
# Command lines and environment dumps: --api-key X, --hf-token=X, HF_TOKEN=X, OPENAI_API_KEY=X
_FLAG_NAME = re.compile(r"--[a-z0-9-]*+", re.I)
_FLAG_WORD = re.compile(r"api-key|token|secret|password", re.I)
_ENV_NAME = re.compile(r"\b[A-Z][A-Z0-9_]*+=")
_ENV_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD")
_NONSPACE = re.compile(r"\S+")
# Bare credentials wherever they appear.
_BEARER = re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/=-]+", re.I)
_HF_TOKEN = re.compile(r"\bhf_[A-Za-z0-9]{16,}\b")
_SK_KEY = re.compile(r"\bsk-[A-Za-z0-9_-]*+")
_URL_CREDENTIALS = re.compile(r"(?<![a-z0-9+.-])([a-z0-9+.-]++)://[^\s:/@]++:([^\s@/]++)@", re.I)
_SCHEME_START = re.compile(r"\b[a-z]", re.I)

Edit = tuple[int, int, str]


def _secret_name(name: str) -> bool:
    """Whether an argument name holds a secret (``_SECRET_WORDS``; no empty ``_`` part)."""
    parts = name.translate(_ASCII_FOLD).lower().split("_")
    return all(parts) and not _SECRET_WORDS.isdisjoint(parts)


class _NextChar:
    """The next index of a character at or after a position, for positions that only grow: each
    character's last answer is reused until passed, so a text costs one scan per character."""

    def __init__(self, text: str) -> None:
        self.text, self.last = text, {}

    def find(self, char: str, pos: int) -> int:
        known = self.last.get(char)
        if known is not None and known[0] <= pos and (known[1] < 0 or known[1] >= pos):
            return known[1]
        found = self.text.find(char, pos)
        self.last[char] = (pos, found)
        return found


def _quoted_values(text: str, names: re.Pattern[str], open_ended: bool = False) -> Iterable[Edit]:
    """``'name': <value>`` / ``name=<value>`` with a secret name: the quoted or bracketed value.
    ``open_ended``: ``text`` is the head of a longer text, and a value still open at its end is
    masked to the end (its close may lie beyond)."""
    after, cursor = _NextChar(text), 0
    for m in names.finditer(text):
        if m.start() < cursor or not _secret_name(m.group(1)):
            continue
        close = after.find(_CLOSERS[text[m.end()]], m.end() + 1)
        if close >= 0 or open_ended:
            cursor = close + 1 if close >= 0 else len(text)
            yield m.end(), cursor, f"'{_MASK}'"
            if close < 0:
                return


def _flag_values(text: str) -> Iterable[Edit]:
    """``--<...api-key|token|secret|password...>[ =]<value>``: the value (the first ``--`` of a run
    of flag characters decides for the run)."""
    cursor = 0
    for m in _FLAG_NAME.finditer(text):
        end = m.end()
        if m.start() < cursor or end >= len(text) or text[end] not in " =":
            continue
        value = _NONSPACE.match(text, end + 1)
        if value and _FLAG_WORD.search(text, m.start() + 2, end):
            yield end + 1, value.end(), _MASK
            cursor = value.end()


def _env_values(text: str) -> Iterable[Edit]:
    """``NAME=<value>`` where the upper-case NAME holds TOKEN, KEY, SECRET or PASSWORD after its first letter."""
    cursor = 0
    for m in _ENV_NAME.finditer(text):
        if m.start() < cursor:
            continue
        name = text[m.start() + 1 : m.end() - 1]
        value = _NONSPACE.match(text, m.end())
        if value and any(word in name for word in _ENV_WORDS):
            yield m.end(), value.end(), _MASK
            cursor = value.end()


def _sk_keys(text: str) -> Iterable[Edit]:
    """``sk-`` and 16 or more key characters, up to the last word boundary of the run (the greedy
    ``\bsk-[A-Za-z0-9_-]{16,}\b``, found without backtracking)."""
    for m in _SK_KEY.finditer(text):
        start, end = m.start(), m.end()
        body = text[start + 3 : end]
        if not body:
            continue
        last_is_word = body[-1] != "-"
        if last_is_word != bool(end < len(text) and _WORD.match(text, end)):
            stop = end  # a word boundary right after the run
        else:  # the last change between "-" and word characters inside the run
            stop = start + 3 + (len(body.rstrip("-")) if not last_is_word else body.rfind("-") + 1)
        if stop - start - 3 >= 16:
            yield start, stop, _MASK


def _url_passwords(text: str) -> Iterable[Edit]:
    """``scheme://user:<password>@`` where the scheme starts at a word boundary with a letter."""
    for m in _URL_CREDENTIALS.finditer(text):
        if _SCHEME_START.search(text, m.start(), m.end(1)):
            yield m.start(2), m.end(2), _MASK


def _apply(text: str, edits: Iterable[Edit]) -> str:
    """``text`` with each (start, end, replacement) applied; edits ascending and disjoint."""
    out, at = [], 0
    for start, end, replacement in edits:
        out += (text[at:start], replacement)
        at = end
    out.append(text[at:])
    return "".join(out)


def redact_startup_log(text: str) -> str:
    """``text`` with API keys, tokens, passwords and URL credentials replaced by ``***``.

    vLLM prints its command line back (``non-default args: {..., 'api_key': ['...']}``) and SGLang
    its ``ServerArgs(..., api_key='...')``; a stored or displayed log must not carry them. Linear
    in the text: each rule is one pass without backtracking over what a repeated prefix restarts.
    """
    return _redact(text)


def _redact(text: str, open_ended: bool = False) -> str:
    """The rules in order; a rule whose literal text is nowhere in ``text`` is skipped."""
    if "'" in text:
        text = _apply(text, _quoted_values(text, _QUOTED_NAME, open_ended))
    if "=" in text:
        text = _apply(text, _quoted_values(text, _NAME_EQUALS, open_ended))
    if "--" in text:
        text = _apply(text, _flag_values(text))
    if "=" in text:
        text = _apply(text, _env_values(text))
    if "bearer" in text.lower():
        text = _BEARER.sub(r"\1" + _MASK, text)
    if "hf_" in text:
        text = _HF_TOKEN.sub(_MASK, text)
    if "sk-" in text:
        text = _apply(text, _sk_keys(text))
    if "://" in text:
        text = _apply(text, _url_passwords(text))
    return text


def redacted_head(text: str, chars: int) -> tuple[str, bool]:
    """The first ``chars`` characters of ``text`` with its secrets masked (``redact_startup_log``),
    and whether anything was left out: what a calibration stores.

    Only the head is read, so the work is bounded by ``chars`` whatever the text's length: up to
    ``MAX_LINE_CHARS`` past ``chars``, ending at a line end where there is one (no token but a
    quoted value crosses a line end, and a secret value still open there is masked to the end).
    A text no longer than that is redacted whole, as ``redact_startup_log`` does.
    """
    if len(text) <= chars + MAX_LINE_CHARS:
        out = _redact(text)
        return out[:chars], len(out) > chars
    stop = text.rfind("\n", chars, chars + MAX_LINE_CHARS)
    head = text[: stop + 1 if stop >= 0 else chars + MAX_LINE_CHARS]
    return _redact(head, open_ended=True)[:chars], True
