"""Number formats: bits per stored weight and bytes per cached element.

Pure Python, no Django. Units: bits per weight (float), bytes per element (int or float).

Weight formats carry their block-scale overhead when ``include_scale_overhead`` is true:

* ``mxfp4``: 4-bit E2M1 elements, one shared 8-bit (E8M0) scale per block of 32
  elements: 4 + 8/32 = 4.25 bits (OCP Microscaling Formats spec v1.0, section 5).
* ``nvfp4``: 4-bit E2M1 elements, one FP8 (E4M3) scale per block of 16: 4 + 8/16 = 4.5 bits
  (NVIDIA's NVFP4 format; the extra per-tensor FP32 scale is negligible).
* ``int4``: GPTQ/AWQ-style group-128 quantisation with an fp16 scale and a packed 4-bit
  zero point per group: 4 + (16 + 4)/128 = 4.15625 bits.
* ``int2``: the same group-128 scheme at 2 bits: 2 + (16 + 2)/128 = 2.140625 bits.
* ``fp8``: E4M3 elements with DeepSeek-V3-style 128 x 128 block scales in fp32:
  8 + 32/16384 = 8.001953125 bits.
* ``int8``: per-output-channel fp16 scales, negligible against a 4096-wide row: 8 bits
  plus 16/4096.
* ``bf16`` / ``fp16``: 16 bits, no scales.

Without scale overhead every format is its raw element size (16, 8, 4 or 2 bits): this
is how the seeds' table is drawn (bf16 2 bytes, fp8 1, MXFP4 0.5, 2-bit 0.25).
"""

from __future__ import annotations

#: Raw element size in bits, without any block-scale overhead.
RAW_BITS: dict[str, float] = {
    "bf16": 16.0,
    "fp16": 16.0,
    "fp8": 8.0,
    "int8": 8.0,
    "mxfp4": 4.0,
    "nvfp4": 4.0,
    "int4": 4.0,
    "int2": 2.0,
}

#: Bits per weight including the shared block scales (see the module docstring).
SCALED_BITS: dict[str, float] = {
    "bf16": 16.0,
    "fp16": 16.0,
    "fp8": 8.0 + 32.0 / (128 * 128),
    "int8": 8.0 + 16.0 / 4096,
    "mxfp4": 4.0 + 8.0 / 32,
    "nvfp4": 4.0 + 8.0 / 16,
    "int4": 4.0 + (16.0 + 4.0) / 128,
    "int2": 2.0 + (16.0 + 2.0) / 128,
}

WEIGHT_FORMATS: tuple[str, ...] = tuple(RAW_BITS)

#: Bytes per element of cached activations and recurrent state. ``fp8`` covers both
#: E4M3 and E5M2 (vLLM's ``fp8``, ``fp8_e4m3``, ``fp8_e5m2`` cache dtypes).
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4,
    "bf16": 2,
    "fp16": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "int8": 1,
}

CACHE_DTYPES: tuple[str, ...] = tuple(DTYPE_BYTES)
#: Dtypes a serving engine offers for the KV cache (fp32 is for recurrent state, not KV).
KV_CACHE_DTYPES: tuple[str, ...] = tuple(d for d in DTYPE_BYTES if d != "fp32")
#: The weight format a model is stored in when nothing says otherwise (records, forms, serializers).
DEFAULT_WEIGHT_FORMAT: str = "bf16"
#: The KV cache dtype when nothing says otherwise (deployments, forms, serializers, services).
DEFAULT_KV_CACHE_DTYPE: str = "bf16"


def bits_per_weight(fmt: str, include_scale_overhead: bool = True) -> float:
    """Bits stored per weight in ``fmt``; raises ``KeyError`` for an unknown format."""
    table = SCALED_BITS if include_scale_overhead else RAW_BITS
    return table[fmt]


def dtype_bytes(dtype: str) -> float:
    """Bytes per element of a cache or state ``dtype``; raises ``KeyError`` if unknown."""
    return DTYPE_BYTES[dtype]
