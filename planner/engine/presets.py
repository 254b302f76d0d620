"""Reference architectures and SKUs from published configs, for seeding, tests and benchmarks.

Each preset cites where its numbers come from. Parameter counts are the model cards' totals;
``expert_params`` (routed experts, all layers) is derived from the config as
``MoE layers x routed experts x 3 x expert input width x moe_intermediate_size`` (gate, up and
down projections; biases and scales ignored). Pure Python, no Django.
"""

from __future__ import annotations

from .spec import Accelerator, LayerGroup, ModelArch

# --- accelerators: vendors' nominal HBM in decimal GB (the seeds' table) ---------------------
H100_80GB = Accelerator(name="H100 80GB", hbm_gb=80, hbm_bandwidth_tbps=3.35, bf16_tflops=989, fp8_tflops=1979)
H200_141GB = Accelerator(name="H200 141GB", hbm_gb=141, hbm_bandwidth_tbps=4.8, bf16_tflops=989, fp8_tflops=1979)
B200_192GB = Accelerator(name="B200 192GB", hbm_gb=192, hbm_bandwidth_tbps=8.0, bf16_tflops=2250, fp8_tflops=4500)
GB300_288GB = Accelerator(name="GB300 288GB", hbm_gb=288, hbm_bandwidth_tbps=8.0, bf16_tflops=2500, fp8_tflops=5000)
ACCELERATORS: tuple[Accelerator, ...] = (H100_80GB, H200_141GB, B200_192GB, GB300_288GB)

# --- Kimi K3 (shared/DESIGN.md: config.json text_config as shipped in aiconfigurator) ---------
# 93 layers: 69 KDA (96 heads x 128, conv 4, fp32 state) + 24 MLA (every 4th and the last;
# kv_lora_rank 512, qk_rope_head_dim 64). MoE on 92 layers: 896 routed experts working in a
# 3584-dim latent space, expert intermediate 3072 -> 92 x 896 x 3 x 3584 x 3072 parameters.
KIMI_K3 = ModelArch(
    name="Kimi K3",
    total_params=2_800_000_000_000,
    active_params=104_000_000_000,
    layer_groups=(
        LayerGroup(kind="linear", count=69, key_heads=96, value_heads=96, key_dim=128, value_dim=128, conv_kernel=4),
        LayerGroup(kind="mla", count=24, kv_lora_rank=512, qk_rope_head_dim=64),
    ),
    weight_format="bf16",
    expert_weight_format="mxfp4",
    expert_params=92 * 896 * 3 * 3584 * 3072,
    n_routed_experts=896,
    n_active_experts=16,
    n_shared_experts=2,
    hidden_size=7168,
    vocab_size=163840,
    max_context_tokens=1_048_576,
    attention_heads=96,
)

# --- DeepSeek-V3 (huggingface.co/deepseek-ai/DeepSeek-V3 config.json) ------------------------
# 61 MLA layers (kv_lora_rank 512, qk_rope_head_dim 64), first 3 dense, 58 MoE layers of 256
# routed experts (hidden 7168, moe_intermediate_size 2048), 128 heads, 163,840 positions.
DEEPSEEK_V3 = ModelArch(
    name="DeepSeek-V3",
    total_params=671_000_000_000,
    active_params=37_000_000_000,
    layer_groups=(LayerGroup(kind="mla", count=61, kv_lora_rank=512, qk_rope_head_dim=64),),
    weight_format="fp8",
    expert_params=58 * 256 * 3 * 7168 * 2048,
    n_routed_experts=256,
    n_active_experts=8,
    n_shared_experts=1,
    hidden_size=7168,
    vocab_size=129280,
    max_context_tokens=163_840,
    attention_heads=128,
)

# --- Llama-3.1-70B (huggingface.co/meta-llama/Llama-3.1-70B config.json) ---------------------
# 80 layers, 64 query heads, 8 KV heads, hidden 8192 (head_dim 128), 131,072 positions.
LLAMA_31_70B = ModelArch(
    name="Llama-3.1-70B",
    total_params=70_553_706_496,
    active_params=70_553_706_496,
    layer_groups=(LayerGroup(kind="full", count=80, kv_heads=8, head_dim=128),),
    weight_format="bf16",
    hidden_size=8192,
    vocab_size=128256,
    max_context_tokens=131_072,
    attention_heads=64,
)

# --- gpt-oss-120b (huggingface.co/openai/gpt-oss-120b config.json) ---------------------------
# 36 layers alternating sliding (window 128) and full attention, 64 query heads, 8 KV heads of
# 64, 128 experts (top 4) of hidden 2880 -> gate_up 2880 x 5760 + down 2880 x 2880 per expert;
# MXFP4 experts, attention/router/embeddings/lm_head in bf16 (quantization_config).
GPT_OSS_120B = ModelArch(
    name="gpt-oss-120b",
    total_params=116_830_000_000,
    active_params=5_130_000_000,
    layer_groups=(
        LayerGroup(kind="sliding", count=18, kv_heads=8, head_dim=64, window=128),
        LayerGroup(kind="full", count=18, kv_heads=8, head_dim=64),
    ),
    weight_format="bf16",
    expert_weight_format="mxfp4",
    expert_params=36 * 128 * 3 * 2880 * 2880,
    n_routed_experts=128,
    n_active_experts=4,
    hidden_size=2880,
    vocab_size=201088,
    max_context_tokens=131_072,
    attention_heads=64,
)

# --- Qwen3-Next-80B-A3B (huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct config.json) ---------
# 48 layers, full_attention_interval 4 -> 12 full (2 KV heads x 256) + 36 gated DeltaNet
# (16 key heads x 128, 32 value heads x 128, conv kernel 4); 512 experts of 2048 x 512.
QWEN3_NEXT_80B = ModelArch(
    name="Qwen3-Next-80B-A3B",
    total_params=80_000_000_000,
    active_params=3_000_000_000,
    layer_groups=(
        LayerGroup(kind="linear", count=36, key_heads=16, value_heads=32, key_dim=128, value_dim=128, conv_kernel=4),
        LayerGroup(kind="full", count=12, kv_heads=2, head_dim=256),
    ),
    weight_format="bf16",
    expert_params=48 * 512 * 3 * 2048 * 512,
    n_routed_experts=512,
    n_active_experts=10,
    n_shared_experts=1,
    hidden_size=2048,
    vocab_size=151936,
    max_context_tokens=262_144,
    attention_heads=16,
)

# --- Kimi-Linear-48B-A3B (huggingface.co/moonshotai/Kimi-Linear-48B-A3B-Instruct config.json) -
# 27 layers: 20 KDA (32 heads x 128, conv 4) + 7 MLA (layers 4, 8, ..., 24, 27; kv_lora_rank
# 512, qk_rope_head_dim 64); 26 MoE layers of 256 experts of 2304 x 1024.
KIMI_LINEAR_48B = ModelArch(
    name="Kimi-Linear-48B-A3B",
    total_params=48_000_000_000,
    active_params=3_000_000_000,
    layer_groups=(
        LayerGroup(kind="linear", count=20, key_heads=32, value_heads=32, key_dim=128, value_dim=128, conv_kernel=4),
        LayerGroup(kind="mla", count=7, kv_lora_rank=512, qk_rope_head_dim=64),
    ),
    weight_format="bf16",
    expert_params=26 * 256 * 3 * 2304 * 1024,
    n_routed_experts=256,
    n_active_experts=8,
    n_shared_experts=1,
    hidden_size=2304,
    vocab_size=163840,
    max_context_tokens=1_048_576,
    attention_heads=32,
)

MODELS: tuple[ModelArch, ...] = (KIMI_K3, DEEPSEEK_V3, LLAMA_31_70B, GPT_OSS_120B, QWEN3_NEXT_80B, KIMI_LINEAR_48B)
