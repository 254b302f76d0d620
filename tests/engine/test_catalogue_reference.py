"""The catalogue read without a database (fleet/catalog/reference.py) and the engine's record constructors
(``Accelerator.from_record``, ``ModelArch.from_record``)."""

import pytest

from fleet.catalog import reference
from planner.engine import Accelerator, EngineInputError, LayerGroup, ModelArch, size


def test_every_catalogue_row_builds_an_engine_input():
    skus, models = reference.sku_records(), reference.model_records()
    assert len(skus) == 12 and len(models) == 11  # fleet/catalog/README.md
    for row in skus:
        acc = reference.accelerator(row["slug"])
        assert (acc.name, acc.hbm_gb, acc.gpus_per_node) == (row["name"], row["hbm_gb"], row["gpus_per_node"])
    for row in models:
        model = reference.model(row["slug"])
        assert (model.name, model.total_params, model.num_layers) == (
            row["name"],
            row["total_params"],
            sum(g["count"] for g in row["layer_groups"]),
        )


def test_built_inputs_are_shared_and_rows_are_copies():
    assert reference.model("kimi-k3") is reference.model("kimi-k3")  # one object: the sizing memo hits
    row = reference.model_record("kimi-k3")
    row["total_params"] = 1
    assert reference.model_record("kimi-k3")["total_params"] == 2_779_481_795_168
    reference.sku_records()[0]["hbm_gb"] = 1
    assert reference.sku_records()[0]["hbm_gb"] == 80


def test_unknown_slug_names_the_known_ones():
    with pytest.raises(KeyError, match="h100-sxm-80gb"):
        reference.accelerator("h100")
    with pytest.raises(KeyError, match="kimi-k3"):
        reference.model("kimi-k4")


def test_accelerator_from_record_maps_the_catalogue_fields():
    """H100 SXM datasheet (2023) as the catalogue states it: 80 GB, 3.35 TB/s, dense BF16 989.4 / FP8 1,978.9
    TFLOPS (half the sparse figures), no FP4, NVLink 900 GB/s, 8 per HGX board, one NVSwitch domain of 8;
    the driver reports 79.18 GiB to vLLM (round(79.18 x 2^30) = 85,018,877,624 B)."""
    row = reference.sku_record("h100-sxm-80gb")
    assert Accelerator.from_record(row) == Accelerator(
        name="NVIDIA H100 SXM 80GB",
        hbm_gb=80,
        hbm_bandwidth_tbps=3.35,
        bf16_tflops=989.4,
        fp8_tflops=1978.9,
        fp4_tflops=None,
        interconnect_gbps=900,
        gpus_per_node=8,
        scaleup_domain_gpus=8,
        hbm_bytes_reported=85_018_877_624,
    )


def test_model_from_record_takes_a_django_shaped_row():
    """A ModelSpec's field values: extra keys (id, slug, source, timestamps) are ignored, a blank
    expert_weight_format means "same as weight_format"."""
    row = {
        **reference.model_record("llama-3.1-70b"),
        "id": 7,
        "expert_weight_format": "",
        "created_at": None,
        "updated_at": None,
    }
    model = ModelArch.from_record(row)
    assert model == ModelArch(
        name="Llama-3.1-70B-Instruct",
        total_params=70_553_706_496,
        active_params=70_553_706_496,
        layer_groups=(LayerGroup(kind="full", count=80, kv_heads=8, head_dim=128),),
        weight_format="bf16",
        expert_weight_format=None,
        expert_params=None,
        hidden_size=8192,
        vocab_size=128256,
        max_context_tokens=131_072,
        attention_heads=64,
    )


def test_k3_from_its_published_config():
    """DESIGN.md: MXFP4 routed experts; attention, shared experts, dense MLP, embeddings, lm_head bf16;
    69 KDA (96 x 128, conv 4) + 24 MLA (512 + 64) layers, 1,048,576 positions."""
    k3 = reference.model("kimi-k3")
    assert (k3.weight_format, k3.expert_weight_format) == ("bf16", "mxfp4")
    assert (k3.n_routed_experts, k3.n_active_experts, k3.n_shared_experts) == (896, 16, 2)
    assert [(g.kind, g.count) for g in k3.layer_groups] == [("linear", 69), ("mla", 24)]
    assert k3.max_context_tokens == 1_048_576 and k3.hidden_size == 7168
    # KDA layers; the state dtype is left to the serving engine (fp32 in vLLM's kda_state_dtype and SGLang)
    assert (k3.layer_groups[0].variant, k3.layer_groups[0].state_dtype) == ("kda", None)
    assert "bf16" in " ".join(reference.model_record("kimi-k3")["assumptions"])


def test_record_errors_are_keyed_by_field():
    row = reference.model_record("gpt-oss-120b")
    bad = {**row, "weight_format": "fp6", "total_params": "many", "layer_groups": [{"kind": "full", "count": 2}]}
    with pytest.raises(EngineInputError) as exc:
        ModelArch.from_record(bad)
    assert {"weight_format", "total_params", "layer_groups.0.kv_heads", "layer_groups.0.head_dim"} <= set(
        exc.value.errors
    )
    with pytest.raises(EngineInputError) as exc:
        ModelArch.from_record({**row, "expert_params": row["total_params"] + 1})
    assert set(exc.value.errors) == {"expert_params"}
    with pytest.raises(EngineInputError) as exc:
        ModelArch.from_record({"slug": "x"})
    assert set(exc.value.errors) == {"name", "total_params", "active_params", "layer_groups"}
    sku = reference.sku_record("a100-sxm-80gb")
    with pytest.raises(EngineInputError) as exc:
        Accelerator.from_record({**sku, "hbm_gb": 0, "bf16_tflops": -1, "gpus_per_node": 0, "fp8_tflops": "x"})
    assert set(exc.value.errors) == {"hbm_gb", "bf16_tflops", "gpus_per_node", "fp8_tflops"}


def test_catalogue_models_size_on_catalogue_skus():
    """A smoke check of the whole chain: catalogue row -> engine input -> size()."""
    r = size(reference.model("gpt-oss-120b"), reference.accelerator("h100-sxm-80gb"), context_tokens=8192)
    assert r.fits and r.hbm_bytes == 80 * 10**9
