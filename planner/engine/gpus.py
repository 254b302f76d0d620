"""A GPU's generation from its name: the one rule every engine model that depends on the GPU generation
reads (the vLLM profile's attention backends, the throughput model's Blackwell grouped-GEMM efficiency).

The engine's ``Accelerator`` carries figures (memory, bandwidth, TFLOPS), not an architecture; the name is
what a SKU record, a startup log and vLLM itself (``platforms/cuda.py`` reads the device name beside the
compute capability) agree on. Pure Python, no Django.
"""

from __future__ import annotations

import re

#: GPU generations by device name (lower case), as ``platforms/cuda.py`` tells them by compute capability:
#: ``sm90`` Hopper (9.0), ``sm100`` data-centre Blackwell (10.x: B200, GB200, B300, GB300), ``sm120``
#: workstation Blackwell (12.x), ``sm8x`` Ampere / Ada (8.x). First match wins.
GPU_GENERATIONS: tuple[tuple[str, str], ...] = (
    ("sm100", r"\bg?b(?:100|200|300)\b"),
    ("sm90", r"\bg?h(?:100|200|800|20)\b"),
    ("sm120", r"\brtx\s*(?:pro\s*\d{4}\s*blackwell|50\d0)\b"),
    ("sm8x", r"\b(?:a100|a800|a10g?|a30|a40|a6000|l40s?|l4|rtx\s*(?:30|40)\d0)\b"),
)
#: Labels of the generations, for the assumptions.
GPU_LABELS: dict[str, str] = {
    "sm90": "Hopper, SM 9.x",
    "sm100": "Blackwell, SM 10.x",
    "sm120": "Blackwell workstation, SM 12.x",
    "sm8x": "Ampere / Ada, SM 8.x",
}


def gpu_generation(device_name: str | None) -> tuple[str, str]:
    """``(generation, why)`` of the GPU named ``device_name`` (``GPU_GENERATIONS``); Hopper when it is not named
    or not recognised (an AMD GPU's ROCm backends are not modelled), and ``why`` says so."""
    name = (device_name or "").lower()
    for generation, pattern in GPU_GENERATIONS:
        if re.search(pattern, name):
            return generation, f"{device_name}: {GPU_LABELS[generation]}"
    if not name:
        return "sm90", "no GPU named: Hopper (SM 9.x) assumed"
    return "sm90", f"{device_name}: generation not recognised (ROCm or another CUDA GPU): Hopper's (SM 9.x) assumed"


def is_datacentre_blackwell(device_name: str | None) -> bool:
    """Whether the GPU named ``device_name`` is a data-centre Blackwell (SM 10.x: B200, GB200, B300, GB300)."""
    return gpu_generation(device_name)[0] == "sm100"
