"""A GB300 NVL72 rack is one 72-GPU NVLink domain, not 4-GPU trays joined by the network.

The catalogue carries each SKU's scale-up domain (``scaleup_domain_gpus``: 8 for an HGX or MI300X
platform, 72 for GB300 NVL72, per the vendors' platform pages cited in ``skus.json``), and every
path into the throughput model takes it from the accelerator, so no caller has to pass it.

External anchor: on the same layout and batch a GB300 has more HBM bandwidth (8 TB/s against the
H200's 4.8 TB/s, datasheets) and NVLink 5 at twice the H200's per-GPU link bandwidth, so a decode
step at tp 8 cannot be slower on GB300 than on H200. Before the domain was carried, tp 8 on GB300
crossed the network between trays and came out slower, which is what the second test shows.
"""

from __future__ import annotations

import pytest

from fleet.catalog import reference
from planner.engine import Layout, ThroughputOptions
from planner.engine.throughput.decode import decode_step

CASES = [(slug, batch) for slug in ("llama-3.1-70b", "deepseek-v3", "qwen3-235b-a22b") for batch in (1, 64)]


def test_the_catalogue_gives_each_sku_its_scaleup_domain():
    assert reference.accelerator("gb300-288gb").scaleup_domain == 72
    assert reference.accelerator("gb300-288gb").gpus_per_node == 4  # a tray
    assert reference.accelerator("h200-141gb").scaleup_domain == 8
    assert reference.accelerator("mi300x-192gb").scaleup_domain == 8
    assert reference.accelerator("rtx-4090-24gb").scaleup_domain == 1


@pytest.mark.parametrize(("slug", "batch"), CASES)
def test_gb300_nvl72_tp8_is_not_slower_per_token_than_h200_tp8(slug, batch):
    model = reference.model(slug)
    h200 = decode_step(model, reference.accelerator("h200-141gb"), Layout(tp=8), batch, 8192)
    gb300 = decode_step(model, reference.accelerator("gb300-288gb"), Layout(tp=8), batch, 8192)
    assert gb300.time_s <= h200.time_s


@pytest.mark.parametrize(("slug", "batch"), CASES)
def test_as_four_gpu_islands_tp8_would_cross_the_network(slug, batch):
    """The old modelling (the tray as the domain) is still there as an override, and is slower."""
    model, gb300 = reference.model(slug), reference.accelerator("gb300-288gb")
    rack = decode_step(model, gb300, Layout(tp=8), batch, 8192)
    trays = decode_step(model, gb300, Layout(tp=8), batch, 8192, options=ThroughputOptions(scaleup_domain_gpus=4))
    assert trays.time_s > rack.time_s
