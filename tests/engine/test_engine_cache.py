"""Per-token KV cache by layer group, checked against published configs and the engines' rules."""

import pytest

from fleet.catalog import reference
from planner.engine.errors import EngineInputError
from planner.engine.sizing.kv_cache import group_bytes_per_token, kv_bytes_per_sequence, kv_bytes_per_token, kv_geometry
from planner.engine.spec import LayerGroup, ModelArch, parse_layer_groups
from planner.engine.units import GIB, KIB

DEEPSEEK_V3 = reference.model("deepseek-v3")
GPT_OSS_120B = reference.model("gpt-oss-120b")
KIMI_K3 = reference.model("kimi-k3")
LLAMA_31_70B = reference.model("llama-3.1-70b")

#: The seeds' worked example: 64 full-attention layers, 8 KV heads of 128, fp8.
SEED_EXAMPLE = ModelArch(
    name="seed example",
    total_params=0,
    active_params=0,
    layer_groups=(LayerGroup(kind="full", count=64, kv_heads=8, head_dim=128),),
)


def test_seed_worked_example_bytes_per_token():
    """2 x 64 x 8 x 128 x 1 = 131,072 bytes = 128 KiB per token."""
    assert kv_bytes_per_token(SEED_EXAMPLE, "fp8") == 131_072 == 128 * KIB


@pytest.mark.parametrize(
    ("tokens", "gib"),
    [(8192, 1), (32768, 4), (131072, 16), (1048576, 128)],
)
def test_seed_worked_example_per_user(tokens, gib):
    """8k / 32k / 128k / 1M context = 1 / 4 / 16 / 128 GiB per user."""
    assert kv_bytes_per_sequence(SEED_EXAMPLE, tokens, "fp8") == gib * GIB


def test_llama_31_70b():
    """Llama-3.1-70B (meta-llama/Llama-3.1-70B config.json: num_hidden_layers 80,
    num_key_value_heads 8, hidden_size 8192 / num_attention_heads 64 = head_dim 128), bf16:

        2 x 80 x 8 x 128 x 2 = 327,680 B/token

    vLLM allocates exactly this (get_num_kv_heads = 8 at tp 1; page = 2 x heads x dim x bytes).
    """
    groups = parse_layer_groups([{"kind": "full", "count": 80, "kv_heads": 8, "head_dim": 128}])
    assert groups == LLAMA_31_70B.layer_groups
    assert kv_bytes_per_token(LLAMA_31_70B, "bf16") == 327_680


def test_deepseek_v3_mla():
    """DeepSeek-V3 (deepseek-ai/DeepSeek-V3 config.json: num_hidden_layers 61, kv_lora_rank 512,
    qk_rope_head_dim 64), bf16. SGLang's get_cell_size_per_token for MLA:
    (kv_lora_rank + qk_rope_head_dim) x num_layers x kv_size = (512 + 64) x 61 x 2 = 70,272 B/token.
    """
    assert kv_bytes_per_token(DEEPSEEK_V3, "bf16") == 70_272
    assert kv_bytes_per_token(DEEPSEEK_V3, "fp8") == 35_136


def test_gpt_oss_120b_sliding_and_full():
    """gpt-oss-120b (openai/gpt-oss-120b config.json: num_hidden_layers 36, layer_types alternating
    sliding_attention / full_attention, sliding_window 128, num_key_value_heads 8, head_dim 64), bf16.

    Per layer and token: 2 x 8 x 64 x 2 = 2,048 B. 18 full layers grow with the context
    (36,864 B/token); 18 sliding layers never hold more than 128 tokens (vLLM's hybrid
    allocator gives sliding-window layers their own window-bounded blocks). At 8,192 tokens:
    36,864 x 8,192 + 36,864 x 128 = 306,708,480 B.
    """
    g = kv_geometry(GPT_OSS_120B, "bf16")
    assert g.unbounded_bytes_per_token == 36_864
    assert g.windowed == ((36_864, 128),)
    assert g.bytes_per_token == 73_728
    assert g.bytes_per_sequence(8192) == 306_708_480
    assert g.bytes_per_sequence(100) == 73_728 * 100


def test_kimi_k3_mla_bytes_per_token():
    """K3: 24 MLA layers x (512 + 64) = 13,824 elements per token: 27,648 B in bf16, 13,824 B in fp8.
    The 69 KDA layers add nothing per token."""
    assert kv_bytes_per_token(KIMI_K3, "bf16") == 24 * 576 * 2 == 27_648
    assert kv_bytes_per_token(KIMI_K3, "fp8") == 13_824


def test_heads_split_by_tp_down_to_one_then_replicated():
    """vLLM get_num_kv_heads: max(1, kv_heads // tp)."""
    full = LayerGroup(kind="full", count=1, kv_heads=8, head_dim=128)
    assert [group_bytes_per_token(full, 2, tp) for tp in (1, 2, 4, 8, 16, 32)] == [
        4096,
        2048,
        1024,
        512,
        512,
        512,
    ]


def test_mla_is_replicated_on_every_tp_rank():
    for tp in (1, 2, 8, 32):
        assert kv_bytes_per_token(DEEPSEEK_V3, "bf16", tp=tp) == 70_272


def test_layers_split_by_pp_busiest_stage():
    """61 layers over 4 stages: the busiest holds 16."""
    assert kv_bytes_per_token(DEEPSEEK_V3, "bf16", pp=4) == 16 * 576 * 2
    assert kv_bytes_per_token(LLAMA_31_70B, "bf16", tp=8, pp=2) == 40 * 2 * 1 * 128 * 2


def test_unknown_kv_dtype_is_a_field_error():
    with pytest.raises(EngineInputError) as exc:
        kv_bytes_per_token(LLAMA_31_70B, "fp4x")
    assert set(exc.value.errors) == {"kv_cache_dtype"}


def _positioned(full: list[int], sliding: list[int], stack: int, **extra) -> list[dict]:
    return [
        {"kind": "full", "count": len(full), "kv_heads": 8, "head_dim": 128, "layers": full, "decoder_layers": stack},
        {"kind": "sliding", "count": len(sliding), "kv_heads": 8, "head_dim": 128, "window": 4096,
         "layers": sliding, "decoder_layers": stack, **extra},
    ]  # fmt: skip


def test_layer_positions_parse_and_round_trip():
    """A group may give its layers' 0-based positions in the decoder stack and the stack's length (layers
    without a cache included): they parse to ``layers`` / ``decoder_layers`` and ``to_dict`` writes them back."""
    raw = _positioned([1, 3], [0, 2, 5], 6)
    groups = parse_layer_groups(raw)
    assert groups[0].layers == (1, 3) and groups[1].decoder_layers == 6
    assert [g.to_dict() for g in groups] == raw
    # Without positions nothing changes (an even split between pipeline stages is assumed).
    assert parse_layer_groups([{"kind": "full", "count": 4, "kv_heads": 8, "head_dim": 128}])[0].layers == ()


@pytest.mark.parametrize(
    ("raw", "path", "words"),
    [
        (
            [
                _positioned([1, 3], [0, 2], 4)[0],
                {"kind": "sliding", "count": 2, "kv_heads": 8, "head_dim": 128, "window": 4096},
            ],
            "layer_groups",
            "every layer group or for none",
        ),
        (_positioned([1, 3], [0, 2], 4, decoder_layers=5), "layer_groups", "same decoder_layers"),
        (_positioned([1, 3], [0, 2], 3), "layer_groups.0.decoder_layers", "from the 4 layers"),
        (_positioned([1, 3], [0, 2, 4], 6, count=2), "layer_groups.1.layers", "count is 2"),
        (_positioned([1, 9], [0, 2], 4), "layer_groups.0.layers", "from 0 to 3"),
        (_positioned([3, 1], [0, 2], 4), "layer_groups.0.layers", "ascending"),
        (_positioned([1, 3], [0, 3], 4), "layer_groups.1.layers", "another layer group's"),
        (_positioned([1, True], [0, 2], 4), "layer_groups.0.layers", "whole numbers"),
        (_positioned([1, 3], [0, 2], 0), "layer_groups.0.decoder_layers", "from 1 to"),
    ],
)
def test_layer_positions_are_validated(raw, path, words):
    with pytest.raises(EngineInputError) as exc:
        parse_layer_groups(raw)
    assert path in exc.value.errors and words in " ".join(exc.value.errors[path])


def test_layer_positions_are_bounded():
    """At most MAX_LAYERS positions in a group (and in a model: they are as many as the counts)."""
    from planner.engine.limits import MAX_LAYERS

    too_many = [{"kind": "full", "count": 2, "kv_heads": 8, "head_dim": 128, "layers": list(range(MAX_LAYERS + 1)),
                 "decoder_layers": MAX_LAYERS}]  # fmt: skip
    with pytest.raises(EngineInputError) as exc:
        parse_layer_groups(too_many)
    assert "at most" in exc.value.errors["layer_groups.0.layers"][0]
