"""The startup-log parser and the redaction are bounded by the text, not by what it repeats (issue 29).

Behaviour, not time (the 5 MiB worst cases are timed in ``bench/bench_calibration.py``,
docs/benchmarks.md "Calibration"):

* on every real fixture log the parser answers what it answered before it was made linear
  (``tests/fixtures/startup_logs/parsed.json``: ``StartupLog.to_dict()`` of each fixture, recorded
  with the parser as it was at commit 2efc524);
* input built to make the old regexes backtrack (a prefix repeated along a long line, thousands of
  noise lines, a line past ``MAX_LINE_CHARS``) gives the same answer as its short equivalent;
* the redaction masks exactly what the former regexes masked (``_FORMER_SECRETS`` below, the rules as
  they were), on generated text and on the adversarial shapes, and the stored head
  (``redacted_head``) is the redacted log's head without a secret cut open.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.engine import parse_startup_log, redact_startup_log, redacted_head
from planner.engine import startup_log as module

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LOGS = sorted([*(FIXTURES / "startup_logs").glob("*.log"), *(FIXTURES / "sglang_logs").glob("*.log")])
QWEN3_NEXT = FIXTURES / "startup_logs" / "vllm-0.10.2-Qwen3-Next-80B-A3B-Instruct-tp2.log"
SGLANG_QWQ = FIXTURES / "startup_logs" / "sglang-0.4.3.post4-QwQ-32B-tp4.log"


def same_except_counts(a, b) -> dict:
    """Fields of two parses that differ, leaving out how many lines each text had."""
    left, right = a.to_dict(), b.to_dict()
    return {k: (left[k], right[k]) for k in left if left[k] != right[k] and k not in ("lines_read", "truncated_lines")}


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_every_fixture_parses_as_before(path):
    before = json.loads((FIXTURES / "startup_logs" / "parsed.json").read_text())
    assert parse_startup_log(path.read_text(encoding="utf-8")).to_dict() == before[f"{path.parent.name}/{path.name}"]


def test_the_golden_file_covers_every_fixture():
    before = json.loads((FIXTURES / "startup_logs" / "parsed.json").read_text())
    assert set(before) == {f"{p.parent.name}/{p.name}" for p in LOGS}


# --- adversarial input, against its short equivalent ----------------------------------------------------

#: Lines whose prefix the old patterns restarted a ``.*?`` or ``[^\]]*`` scan from at every repeat.
REPEATED = (
    "max_total_num_tokens=1,",  # "max_total_num_tokens=[\d,]+.*?, max_running_requests=" (SGLang)
    "Mamba Cache is allocated.",  # "Mamba Cache is allocated\..*?conv_state size: "
    "Model architectures [",  # "Model architectures \[([^\]]*)\] are not supported"
    "Initializing a V1 LLM engine (v1.1",  # the version's "\d+\.\d+[\w.+\-]*" before "\) with config"
    "GPU KV cache size: 1,",
    "(Worker_TP1 pid=1) ",
    "vllm ",
)


@pytest.mark.parametrize("unit", REPEATED)
def test_a_repeated_prefix_along_a_line_reads_as_twice(unit):
    log = QWEN3_NEXT.read_text(encoding="utf-8")
    long = log + unit * (60_000 // len(unit)) + "\n"
    short = log + unit * 2 + "\n"
    assert same_except_counts(parse_startup_log(long), parse_startup_log(short)) == {}


def test_thousands_of_noise_lines_change_nothing():
    log = SGLANG_QWQ.read_text(encoding="utf-8")
    noise = "INFO 09-12 10:00:00 [loggers.py:1] Avg prompt throughput: 0.0 tokens/s\n" * 30_000
    padded = parse_startup_log(noise + log + noise)
    assert same_except_counts(padded, parse_startup_log(log)) == {}
    assert padded.lines_read == log.count("\n") + 60_000


def test_text_past_the_line_cap_is_not_read():
    cut = module.MAX_LINE_CHARS
    line = "x" * (cut - 10) + "GPU KV cache size: 99 tokens"  # its figure starts inside the cap, ends past it
    log = parse_startup_log("GPU KV cache size: 16 tokens\n" + line + "\n")
    assert (log.kv_cache_tokens, log.truncated_lines) == (16, 1)
    assert parse_startup_log("vllm\n" + line + "\n").kv_cache_tokens is None


def test_colour_codes_are_cut_with_the_line_first():
    cut = module.MAX_LINE_CHARS
    # The escape sequences count toward the cap (as the log was pasted), then are stripped.
    line = "\x1b[0m" * (cut // 4) + "GPU KV cache size: 7 tokens"
    assert parse_startup_log("vllm\n" + line + "\n").kv_cache_tokens is None
    assert parse_startup_log("vllm\n\x1b[0mGPU KV cache\x1b[0m size: 7 tokens\n").kv_cache_tokens == 7


def test_the_sglang_pool_line_reads_the_first_figures_after_its_token_count():
    line = "max_total_num_tokens=46611, chunked_prefill_size=2048, max_running_requests=2049, context_len=131072"
    log = parse_startup_log("sglang\n" + line + ", max_running_requests=7\n")
    assert (log.max_total_num_tokens, log.max_running_requests, log.max_model_len) == (46_611, 2049, 131_072)


def test_only_the_first_lines_naming_something_are_read(monkeypatch):
    monkeypatch.setattr(module, "MAX_READ_LINES", 50)
    head = "vllm\n" * 49 + "GPU KV cache size: 16 tokens\n"
    log = parse_startup_log(head + "GPU KV cache size: 32 tokens\nAvailable KV cache memory: 9 GiB\n")
    assert log.kv_cache_tokens == 16 and log.available_kv_cache_gib is None
    assert any("Only the first 50 lines" in note for note in log.notes)
    assert not any("Only the first" in note for note in parse_startup_log(head).notes)


def test_a_long_run_of_ranks_is_noted_briefly():
    lines = "".join(f"(Worker_TP{i} pid=1) Available KV cache memory: {10 + i % 3} GiB\n" for i in range(500))
    log = parse_startup_log(lines)
    assert len(log.available_kv_cache_gib_ranks) == 500
    (note,) = [n for n in log.notes if "Ranks logged" in n]
    assert "(500 lines)" in note and len(note) < 600


def test_a_command_line_still_reads_its_continuation():
    text = "vllm serve org/m \\\n  --tensor-parallel-size 4 \\\n  --max-model-len 8192\nGPU KV cache size: 1 tokens\n"
    log = parse_startup_log(text)
    assert (log.model, log.tensor_parallel_size, log.max_model_len, log.kv_cache_tokens) == ("org/m", 4, 8192, 1)


# --- redaction ----------------------------------------------------------------------------------------

_NAME = r"(?:[A-Za-z0-9]+_)*(?:api_?key|token|secret|password|passwd|key)(?:_[A-Za-z0-9]+)*"
#: The redaction rules as they were before issue 29 (backtracking regexes): the reference.
_FORMER_SECRETS = (
    (re.compile(r"('(?:" + _NAME + r")'\s*:\s*)(\[[^\]]*\]|'[^']*'|\"[^\"]*\")", re.I), r"\1'***'"),
    (re.compile(r"(\b(?:" + _NAME + r")=)('[^']*'|\"[^\"]*\")", re.I), r"\1'***'"),
    (re.compile(r"(--[a-z0-9-]*(?:api-key|token|secret|password)[a-z0-9-]*[ =])(\S+)", re.I), r"\1***"),
    (re.compile(r"(\b[A-Z][A-Z0-9_]*(?:TOKEN|KEY|SECRET|PASSWORD)[A-Z0-9_]*=)(\S+)"), r"\1***"),
    (re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/=-]+", re.I), r"\1***"),
    (re.compile(r"\bhf_[A-Za-z0-9]{16,}\b"), "***"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}\b"), "***"),
    (re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+@", re.I), r"\1***@"),
)


def former_redaction(text: str) -> str:
    for pattern, replacement in _FORMER_SECRETS:
        text = pattern.sub(replacement, text)
    return text


PIECES = st.sampled_from(
    (
        "'", '"', "[", "]", ":", "=", "-", "--", "_", " ", "\n", "key", "KEY", "api", "api_key", "token", "TOKEN",
        "secret", "SECRET", "password", "PASSWORD", "passwd", "hf_", "sk-", "Bearer", "bearer ", "://", "@", "a", "x",
        "Z", "1", ".", "+", "é", "\u017f", "\u212a", "\u0131", "ß", "HF_TOKEN", "--api-key", "'api_key': ", "api_key=",
        "abcdefghijklmnop", "0123456789", "user:pass@", "http", "\t", "/", "\\",
    )
)  # fmt: skip


@settings(max_examples=3000, deadline=None)
@given(st.lists(PIECES, max_size=40).map("".join))
def test_redaction_masks_what_the_former_rules_masked(text):
    assert redact_startup_log(text) == former_redaction(text)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_redaction_of_every_fixture_is_unchanged(path):
    text = path.read_text(encoding="utf-8")
    assert redact_startup_log(text) == former_redaction(text)


#: (repeated unit, a secret after it): shapes the former rules backtracked over (quadratically).
ADVERSARIAL = (
    ("-", " --api-key abc"),
    ("TOKEN", " X_TOKEN=abc"),
    ("a.", " https://user:hunter2@host"),
    ("'key_", " 'api_key': 'abc'"),
    ("sk-", " sk-0123456789abcdefghij"),
    ("'key': [", " 'token': 'abc'"),
)


@pytest.mark.parametrize(("unit", "secret"), ADVERSARIAL)
def test_adversarial_runs_mask_as_their_short_equivalent(unit, secret):
    long = unit * (40_000 // len(unit)) + secret + "\n"
    short = unit * 3 + secret + "\n"
    masked = redact_startup_log(long)
    assert masked.endswith(former_redaction(short)[len(unit) * 3 :])
    assert "abc" not in masked[-40:] and "hunter2" not in masked and "0123456789abcdefghij" not in masked


def test_the_stored_head_is_the_redacted_logs_head():
    secret = "sk-live-0123456789abcdefghij"
    log = f"non-default args: {{'api_key': ['{secret}']}}\n" + "# padding line\n" * 30_000
    head, cut = redacted_head(log, 256 * 1024)
    assert cut and len(head) == 256 * 1024
    assert head == redact_startup_log(log)[: 256 * 1024] and secret not in head
    short = "GPU KV cache size: 1 tokens --api-key x\n"
    assert redacted_head(short, 256 * 1024) == (redact_startup_log(short), False)


def test_a_secret_open_at_the_cut_is_masked_to_the_end():
    chars = 1000
    log = "x\n" * 400 + "'api_key': ['k-" + "1" * (chars + module.MAX_LINE_CHARS) + "']\n"
    head, cut = redacted_head(log, chars)
    assert cut and "1111" not in head and head.endswith("'api_key': '***'")
    # A token crossing the cut is read whole (the head runs to a line end past it): masked.
    token = "x" * (chars - 5) + " sk-0123456789abcdefghijklmnop\n" + "y\n" * module.MAX_LINE_CHARS
    assert "sk-0" not in redacted_head(token, chars)[0]


def test_every_trigger_is_found_by_the_scan():
    # A line is read only if it holds a scan literal: every rule's trigger must hold one.
    missing = [t for t in module._LINE_TRIGGERS if not any(lit in t for lit in module._SCAN_LITERALS)]
    assert missing == []
