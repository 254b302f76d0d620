"""Step-model terms of issue 13: launch overhead, two-batch overlap, link types, grouped-GEMM tiles.

Each test checks a direction the physics fixes (more launch cost is never faster, overlapping is never
slower than the slowest overlapped term nor than running them one after the other, an NVLink domain is
never slower than the network), over the catalogue's models, layouts and SKUs, not a value of the model.
"""

import itertools

import pytest

from fleet.catalog import reference
from planner.engine.spec import Layout
from planner.engine.throughput.decode import DecodeModel, decode_step, overlapped
from planner.engine.throughput.options import ThroughputOptions, cuda_graph_max_batch
from planner.engine.throughput.prefill import PrefillModel

H100 = reference.accelerator("h100-sxm-80gb")
B200 = reference.accelerator("b200-192gb")
GB300 = reference.accelerator("gb300-288gb")
L40S = reference.accelerator("l40s-48gb")
CASES = (
    (reference.model("llama-3.1-70b"), (Layout(tp=2), Layout(tp=8), Layout(tp=4, pp=2))),
    (reference.model("deepseek-v3"), (Layout(tp=8), Layout(tp=1, dp=16, ep=16), Layout(tp=8, dp=8, ep=64))),
    (reference.model("kimi-k3"), (Layout(tp=16, ep=16), Layout(tp=4, dp=16, ep=64), Layout(tp=8, pp=2))),
    (reference.model("qwen3-next-80b-a3b"), (Layout(tp=2), Layout(tp=4, dp=2, ep=8))),
    (reference.model("gpt-oss-120b"), (Layout(), Layout(tp=4, dp=2, ep=8))),
)
BATCHES = (1, 2, 7, 64, 600, 4096)
CONTEXTS = (1, 2048, 32_768)


def _cases():
    for (model, layouts), acc in itertools.product(CASES, (H100, B200, GB300)):
        for layout in layouts:
            yield model, acc, layout


@pytest.mark.parametrize("graphs", [True, False])
def test_more_launch_overhead_never_lowers_tpot(graphs):
    """TPOT is non-decreasing in the per-kernel launch cost, graphed or eager, and eager is never faster."""
    launches = (0.0, 1e-6, 3e-6, 8e-6, 20e-6)
    for model, acc, layout in _cases():
        for batch, ctx in itertools.product(BATCHES, CONTEXTS):
            times = []
            for k in launches:
                o = ThroughputOptions(kernel_launch_s=k, eager_kernel_launch_s=max(k, 8e-6), cuda_graphs=graphs)
                times.append(DecodeModel(model, acc, layout, options=o).time(batch, ctx))
            assert times == sorted(times), (model.name, acc.name, layout, batch, ctx)
            eager = DecodeModel(model, acc, layout, options=ThroughputOptions(cuda_graphs=False)).time(batch, ctx)
            graph = DecodeModel(model, acc, layout, options=ThroughputOptions(cuda_graph_max_batch=8192)).time(
                batch, ctx
            )
            assert eager >= graph * (1 - 1e-12)


def test_eager_launch_cost_shows_above_the_cuda_graph_capture_size():
    """SGLang 0.5.23's capture default on an 80 GB GPU at tp 2 is 256 sequences: a rank of 257 runs eagerly."""
    assert cuda_graph_max_batch(H100, 2, ThroughputOptions()) == 256
    assert cuda_graph_max_batch(B200, 1, ThroughputOptions()) == 512
    assert cuda_graph_max_batch(L40S, 8, ThroughputOptions()) == 160
    assert cuda_graph_max_batch(H100, 8, ThroughputOptions(cuda_graphs=False)) == 0
    model = reference.model("llama-3.1-70b")
    assert decode_step(model, H100, Layout(tp=2), 256, 1024).cuda_graph
    assert not decode_step(model, H100, Layout(tp=2), 257, 1024).cuda_graph


@pytest.mark.parametrize(("work", "comm"), [(1.0, 0.0), (0.0, 1.0), (3.0, 1.0), (1.0, 3.0), (2.0, 2.0), (1e-6, 5.0)])
def test_overlap_is_between_the_slowest_term_and_the_sum(work, comm):
    assert max(work, comm) <= overlapped(work, comm) <= work + comm


def test_overlap_never_makes_a_step_slower_than_its_slowest_term_nor_than_serial():
    """With two-batch overlap each stage takes at least its slowest term (memory, compute, communication)
    and the step is never slower than the same step with overlap off."""
    for model, acc, layout in _cases():
        on = DecodeModel(model, acc, layout)
        off = DecodeModel(model, acc, layout, options=ThroughputOptions(overlap=False))
        for batch, ctx in itertools.product(BATCHES, CONTEXTS):
            p = on.parts(batch, ctx)
            time, mem, comp, comm = p[:4]
            assert time >= max(mem, comp, comm) - 1e-12
            assert time <= off.time(batch, ctx) * (1 + 1e-12)


def test_nvlink_domain_never_makes_communication_slower_than_the_network():
    """The same layout with the whole replica in one scale-up domain never communicates slower than with
    8-GPU domains joined by the network (decode and prefill, every layout that spans more than 8 GPUs)."""
    for model, acc, layout in _cases():
        if layout.gpus <= 8:
            continue
        big = DecodeModel(model, acc, layout, options=ThroughputOptions(scaleup_domain_gpus=72))
        small = DecodeModel(model, acc, layout, options=ThroughputOptions(scaleup_domain_gpus=8))
        for batch, ctx in itertools.product(BATCHES, CONTEXTS):
            assert big.parts(batch, ctx)[3] <= small.parts(batch, ctx)[3] * (1 + 1e-12)
            assert big.time(batch, ctx) <= small.time(batch, ctx) * (1 + 1e-12)
        assert PrefillModel(big).parts(4096, 0).communication_s <= PrefillModel(small).parts(4096, 0).communication_s


def test_fabric_link_types():
    """Per byte, an all-to-all inside the domain uses the link; across it the network; prefill's per-domain
    forwarding (DeepEP normal kernels) never sends more over the network than one copy per remote expert."""
    from planner.engine.throughput.options import Fabric

    f = Fabric(H100, ThroughputOptions())
    assert f.all_to_all_s_per_byte(8) == pytest.approx(1 / f.link_bw)
    assert f.all_to_all_s_per_byte(64) > f.all_to_all_s_per_byte(8)
    for size, k in itertools.product((16, 32, 64), (1, 4, 8)):
        assert f.all_to_all_s_per_byte(8) <= f.all_to_all_normal_s_per_byte(size, k) <= f.all_to_all_s_per_byte(size)


def test_grouped_gemm_efficiency_grows_with_tokens_per_expert():
    """Tiles of 64 rows: one token per expert computes 64 rows (1/64 useful); from 32 tokens per expert the
    last tile is half empty on average (max(64, m + 32) rows), so the expert GEMMs' effective rate is not flat
    and tends to 1 of ``compute_efficiency``: 64 tokens -> 96/64, 640 -> 672/640."""
    dm = DecodeModel(reference.model("deepseek-v3"), H100, Layout(tp=1, dp=8, ep=8))
    k = dm.k
    assert dm.tile_factor(1, k) == pytest.approx(64)
    assert dm.tile_factor(32, k) == pytest.approx(2)
    assert dm.tile_factor(64, k) == pytest.approx(96 / 64)
    assert dm.tile_factor(640, k) == pytest.approx(672 / 640)
    factors = [dm.tile_factor(m, k) for m in (1, 2, 8, 32, 64, 65, 1000)]
    assert factors == sorted(factors, reverse=True)


def test_kernel_launches_are_the_batch_1_floor():
    """At one request a step costs at least its kernels x 3 us plus the step overhead: a model that reads
    little (gpt-oss-120b, 5.7B active, TP8 on B200: ~0.1 ms of weights) is launch bound, as the seeds say."""
    s = decode_step(reference.model("gpt-oss-120b"), B200, Layout(tp=8), 1, 1536)
    assert s.launch_time_s == pytest.approx(s.kernels_per_step * 3e-6)
    assert s.launch_time_s > 5 * s.memory_time_s
    assert s.overhead_s == pytest.approx(s.launch_time_s + s.step_overhead_s)
    assert s.time_s >= s.launch_time_s + s.memory_time_s


def test_a_linear_layers_state_streams_only_behind_the_last_chunk():
    """Disaggregated serving sends the prompt's KV layer by layer during the whole prefill, but a linear layer's
    recurrent state is final only after the last chunk (docs/throughput.md, "Prefill"). Qwen3-Next at tp 2 on
    H200 with a 2 GB/s network per GPU at the link efficiency 0.7 (2.8 GB/s over the two NICs), a 32,768-token
    prompt in 8,192-token chunks: KV = 12 full layers x 2 x 2 heads x 256 x 2 B x 32,768 = 805,306,368 B
    (0.288 s) hides behind the whole prefill; the 77,266,944 B of state (27.6 ms) only behind the last
    chunk's pass, one stage step at pp 1:
    exposed = max(kv / 48, kv - T x 47/48) + max(state / 48, state - step x 47/48),
    T and step the estimate's own prefill time and step time, 35 us of network latency on the KV."""
    from planner.engine.throughput.prefill import prefill

    h200 = reference.accelerator("h200-141gb")
    options = ThroughputOptions(prefill_chunk_tokens=8192, network_gbps=2.0)
    p = prefill(reference.model("qwen3-next-80b-a3b"), h200, Layout(tp=2), 32_768, options=options)
    assert p.chunks == 4
    rate = 2 * 2.0e9 * 0.7
    kv, state = 805_306_368 / rate + 35e-6, 77_266_944 / rate
    share = 47 / 48
    expected = max(kv / 48, kv - p.time_s * share) + max(state / 48, state - p.step_time_s * share)
    assert p.kv_transfer_bytes == 805_306_368 + 77_266_944
    assert p.kv_transfer_exposed_s == pytest.approx(expected, rel=1e-9)
    streamed_whole = max((kv + state) / 48, kv + state - p.time_s * share)  # the old rule: all of it streams
    assert p.kv_transfer_exposed_s >= streamed_whole
