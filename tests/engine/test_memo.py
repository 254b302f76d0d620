"""The engine's memo of whole results: what it keeps, what it shares, what it never does.

``size()`` and ``estimate()`` memoise per model (planner/engine/sizing/memo.py); a gateway asking
ever new request classes must not push out the sizings every class reuses, and an estimate's own
decode step and prefill must be the public ``decode_step()`` and ``prefill()`` at the same inputs.
"""

from dataclasses import replace

from fleet.catalog import reference
from planner.engine import Layout, estimate, size
from planner.engine.sizing import memo
from planner.engine.throughput.decode import decode_step
from planner.engine.throughput.prefill import prefill


def test_new_estimates_do_not_evict_the_sizings_they_reuse(monkeypatch):
    model, gpu = reference.model("llama-3.1-70b"), reference.accelerator("h100-sxm-80gb")
    layout = Layout(tp=4)
    monkeypatch.setattr(memo, "MAX_RESULTS", 8)
    sized = size(model, gpu, layout=layout, context_tokens=8192)
    for prompt in range(1000, 1040):  # 40 new classes: five times the bound of the estimate memo
        estimate(model, gpu, layout, prompt_tokens=prompt, output_tokens=100, context_tokens=8192)
    assert size(model, gpu, layout=layout, context_tokens=8192) is sized
    kept = memo.model_constants(model)._results
    assert len(kept["estimate"]) <= 8


def test_equal_inputs_of_other_types_are_kept_apart():
    model, gpu = reference.model("llama-3.1-70b"), reference.accelerator("h100-sxm-80gb")
    as_int = size(model, gpu, layout=Layout(tp=4), gpu_memory_utilization=1)
    as_float = size(model, gpu, layout=Layout(tp=4), gpu_memory_utilization=1.0)
    assert as_int is not as_float  # 1 == 1.0, but a caller's int is its own input


def test_an_unhashable_input_is_answered_unmemoised():
    model, gpu = reference.model("llama-3.1-70b"), reference.accelerator("h100-sxm-80gb")
    try:
        size(model, gpu, layout=Layout(tp=4), context_tokens=[8192])
    except Exception as exc:  # refused by the engine's own validation, not by the memo's hashing
        assert type(exc).__name__ == "EngineInputError", exc
    else:
        raise AssertionError("a list of tokens must be refused")


def test_an_estimates_step_and_prefill_are_the_public_ones():
    model, gpu = reference.model("qwen3-next-80b-a3b"), reference.accelerator("h100-sxm-80gb")
    layout = Layout(tp=2)
    result = estimate(model, gpu, layout, prompt_tokens=3000, output_tokens=400, prefix_cache_hit_rate=0.5, batch=12)
    step = decode_step(model, gpu, layout, 12, 3000 + 400 // 2)
    pre = prefill(model, gpu, layout, 3000, cached_tokens=1500)
    assert result.decode == step
    assert result.prefill == pre
    assert result.decode.assumptions == step.assumptions and step.assumptions  # built once, shared


def test_accelerator_checks_are_fresh_dicts():
    from planner.engine.spec import accelerator_errors

    gpu = reference.accelerator("h100-sxm-80gb")
    broken = replace(gpu, hbm_bandwidth_tbps=0.0)
    first = accelerator_errors(broken, speed=True)
    first["extra"] = ["a caller's own"]
    again = accelerator_errors(broken, speed=True)
    assert "extra" not in again and "hbm_bandwidth_tbps" in again
    assert accelerator_errors(gpu, speed=True) == {}
