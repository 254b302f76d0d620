"""Per-sequence state of linear-attention layers, from published configs, computed by hand.

Formula (SGLang configs/mamba_utils.py, ``mamba_cache_per_req``), per linear layer:
recurrent ``value_heads x value_dim x key_dim`` in fp32 (``mamba_ssm_dtype`` default float32)
plus convolution ``(kernel - 1) x (2 x key_heads x key_dim + value_heads x value_dim)`` in bf16
(``SGLANG_MAMBA_CONV_DTYPE`` default bfloat16).
"""

from fleet.catalog import reference
from planner.engine.sizing.kv_cache import kv_bytes_per_token
from planner.engine.sizing.state import (
    conv_state_bytes,
    layer_state_bytes,
    recurrent_state_bytes,
    state_bytes_per_sequence,
)
from planner.engine.spec import parse_layer_groups

KIMI_K3 = reference.model("kimi-k3")
KIMI_LINEAR_48B = reference.model("kimi-linear-48b-a3b")
QWEN3_NEXT_80B = reference.model("qwen3-next-80b-a3b")


def test_kimi_k3_state_by_hand():
    """K3 (DESIGN.md config): 69 KDA layers, 96 heads x 128 key/value dim, conv kernel 4, fp32 state.

    recurrent: 96 x 128 x 128 x 4 B = 6,291,456 B per layer
    conv:      3 x (2 x 96 x 128 + 96 x 128) x 2 B = 3 x 36,864 x 2 = 221,184 B per layer
    per layer 6,512,640 B; x 69 layers = 449,372,160 B (about 428.6 MiB) per sequence.
    """
    kda = KIMI_K3.layer_groups[0]
    assert recurrent_state_bytes(kda) == 6_291_456
    assert conv_state_bytes(kda) == 221_184
    assert layer_state_bytes(kda) == 6_512_640
    assert state_bytes_per_sequence(KIMI_K3) == 449_372_160


def test_kimi_k3_mla_per_token_by_hand():
    """24 MLA layers x (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 B (bf16) = 27,648 B per token."""
    assert kv_bytes_per_token(KIMI_K3, "bf16") == 27_648


def test_kimi_k3_state_split_by_tp():
    """tp 8: 12 heads per rank, so the state per GPU is an eighth: 56,171,520 B."""
    assert state_bytes_per_sequence(KIMI_K3, tp=8) == 449_372_160 // 8 == 56_171_520


def test_qwen3_next_80b_a3b():
    """Qwen3-Next-80B-A3B (Qwen/Qwen3-Next-80B-A3B-Instruct config.json: num_hidden_layers 48,
    full_attention_interval 4, linear_num_key_heads 16, linear_num_value_heads 32,
    linear_key_head_dim 128, linear_value_head_dim 128, linear_conv_kernel_dim 4,
    num_key_value_heads 2, head_dim 256). 36 gated-DeltaNet layers + 12 full-attention layers.

    SGLang Mamba2StateShape: temporal (32, 128, 128) fp32 = 2,097,152 B; conv
    (4096 + 2 x 16 x 128 = 8192 channels, kernel - 1 = 3) bf16 = 49,152 B.
    Per layer 2,146,304 B; x 36 = 77,266,944 B per sequence.
    Full attention: 12 x 2 x 2 x 256 x 2 B = 24,576 B per token in bf16.
    """
    groups = parse_layer_groups(
        [
            {
                "kind": "linear",
                "count": 36,
                "key_heads": 16,
                "value_heads": 32,
                "key_dim": 128,
                "value_dim": 128,
                "conv_kernel": 4,
                "variant": "gated_deltanet",
            },
            {"kind": "full", "count": 12, "kv_heads": 2, "head_dim": 256},
        ]
    )
    assert groups == QWEN3_NEXT_80B.layer_groups
    assert layer_state_bytes(groups[0]) == 2_146_304
    assert state_bytes_per_sequence(QWEN3_NEXT_80B) == 77_266_944
    assert kv_bytes_per_token(QWEN3_NEXT_80B, "bf16") == 24_576


def test_qwen3_next_state_split_by_tp():
    """tp 4: 8 value heads, 4 key heads per rank: (8 x 128 x 128 x 4 + 3 x 2048 x 2) x 36 = 19,316,736 B."""
    assert state_bytes_per_sequence(QWEN3_NEXT_80B, tp=4) == 19_316_736 == 77_266_944 // 4


def test_kimi_linear_48b_a3b():
    """Kimi-Linear-48B-A3B (moonshotai/Kimi-Linear-48B-A3B-Instruct config.json: num_hidden_layers 27,
    linear_attn_config num_heads 32, head_dim 128, short_conv_kernel_size 4, full_attn_layers
    [4, 8, 12, 16, 20, 24, 27] -> 20 KDA + 7 MLA; kv_lora_rank 512, qk_rope_head_dim 64).

    SGLang KimiLinearStateShape: temporal (32, 128, 128) fp32 = 2,097,152 B; conv
    (3, 4096 + 2 x 4096) bf16 = 73,728 B. Per layer 2,170,880 B; x 20 = 43,417,600 B per sequence.
    MLA: 7 x 576 x 2 B = 8,064 B per token in bf16.
    """
    assert state_bytes_per_sequence(KIMI_LINEAR_48B) == 43_417_600
    assert kv_bytes_per_token(KIMI_LINEAR_48B, "bf16") == 8_064


def test_state_dtype_is_configurable():
    bf16_state = parse_layer_groups(
        [
            {
                "kind": "linear",
                "count": 1,
                "key_heads": 4,
                "value_heads": 4,
                "key_dim": 64,
                "value_dim": 64,
                "conv_kernel": 4,
                "state_dtype": "bf16",
            }
        ]
    )[0]
    assert recurrent_state_bytes(bf16_state) == 4 * 64 * 64 * 2


def test_models_without_linear_layers_have_no_state():
    assert state_bytes_per_sequence(reference.model("deepseek-v3")) == 0
