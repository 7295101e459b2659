"""IEEE fp32 3 × 3 and 1 × 1 convolutions as Hopper's cuDNN runs them (PyTorch 2.11, cuDNN 9): one price
with or without ``cudnn.benchmark``, each pass the faster of an implicit GEMM and Winograd with its
transforms.

A lent H100 SXM timed 68 shapes of 3 × 3 stride-1 convolutions in IEEE fp32 (TF32 off), forward and
both gradients, with cuDNN's algorithm search on and off (benchmarks/fp32_convs.py,
tests/fixtures/gpu/h100-fp32-convs-2026-11-26c.jsonl): the 29 device-bound ones (≥ 1 ms) took 0.98–1.14 ×
as long with the search as without, so cuDNN 9's heuristics already pick what the search finds on
Hopper. Priced as the search on V100/T4 (DeepBench's CONV_SEARCH_EFFICIENCY and WINOGRAD_SPEEDUP), 1 of
the 29 was within 25 % (median −45 %); by the heuristics' efficiency (CONV_EFFICIENCY["cuda"]), none
(median +139 %). Here each of the three passes costs the faster of
- cuDNN's implicit GEMM, in tiles fitted to the output's sides, at HOPPER_FP32_CONV_EFFICIENCY of a
  GEMM's efficiency on CUDA cores, and
- Winograd F(4×4, 3×3): its batched products do HOPPER_WINOGRAD_SPEEDUP × fewer multiplications over
  outputs padded to 4 × 4 tiles, plus its input and output transforms' traffic
  (WINOGRAD_TRANSFORM_ACCESSES per element).
Priced so: 3 × 3 stride-1 layers (hopper_3x3), the layers fitted on, and 1 × 1 layers, the same
implicit GEMM without Winograd (34 more layers timed on the lease, never fitted on: ResNet-50's 1 × 1
ones at batch 32 7 of 8 within 25 %). 5 × 5, 7 × 7 and strided layers (cuDNN's FFT and other kernels)
keep the search's price (gpu_kernels.CONV_SEARCH_EFFICIENCY), which on Hopper applies with or without
cudnn.benchmark (gpu_kernels.conv_search): those ran alike both ways too. Other GPUs keep gpu_kernels'
prices (fitted on DeepBench's V100 and T4, cuDNN 7). The two constants are TrainRig's least mean
squared log error on a seeded half (seed 2026) of the 29 device-bound shapes, held out on the other half
and on every lent GPU's suite (docs/accuracy.md, "IEEE fp32 3 × 3 convolutions on Hopper").
``GpuFigures.hopper`` covers Blackwell too, priced alike unmeasured."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from core.estimate.gemm import gemm_array

if TYPE_CHECKING:
    from core.estimate.gpu_kernels import GpuFigures

# an implicit GEMM's share of a GEMM's efficiency on CUDA cores (0.30–1.00 by 0.02), and Winograd's
# reduction in multiplications (1.0–4.0 by 0.1; F(4×4, 3×3) does 36 per 16 outputs where a direct
# 3 × 3 does 144: 4 at most): fitted as the module docstring says
HOPPER_FP32_CONV_EFFICIENCY = 0.34
HOPPER_WINOGRAD_SPEEDUP = 4.0
# Winograd's transforms move, per element of a pass's input and output, the element read and its
# 36 / 16 transformed values written (or read back and the result written): 1 + 2.25 each
WINOGRAD_TRANSFORM_ACCESSES = 3.25
WINOGRAD_TILE = 4  # F(4×4, 3×3)'s output tile side


def hopper_3x3(kernel_area: Any, square_unit: Any) -> Any:
    """Whether convolutions (one, or arrays of them) are the 3 × 3 stride-1 layers measured: square,
    stride 1, undilated, ungrouped (graph.Op.winograd_shape) — F(4×4, 3×3)'s."""
    return (np.asarray(kernel_area) == 9) & np.asarray(square_unit, dtype=bool)


def hopper_priced(kernel_area: Any, square_unit: Any) -> Any:
    """Whether convolutions are priced here on Hopper: 3 × 3 stride-1 layers (hopper_3x3) and 1 × 1 ones,
    the same implicit GEMM without Winograd (the lease's 1 × 1 layers of ResNet-50 at batch 32: −19 … +40 %,
    never fitted on). The rest — strided, 7 × 7, 5 × 5 — keep the search's price (gpu_kernels.conv_search,
    on Hopper with or without cudnn.benchmark): their 20 timed on the lease ran at 14–61 TFLOP/s, neither
    the implicit GEMM's 18 nor one other rate."""
    area = np.asarray(kernel_area)
    return hopper_3x3(area, square_unit) | (area == 1)


def hopper_fp32_conv(precision: str, gpu: GpuFigures) -> bool:
    """Whether convolutions in ``precision`` (as cuDNN runs it) are priced here: IEEE fp32 on a Hopper
    GPU's CUDA cores, whether or not the workload turns on cudnn.benchmark."""
    return gpu.hopper and not gpu.tensor_cores(precision)


def hopper_conv_passes(
    m: np.ndarray,
    n: np.ndarray,
    k: np.ndarray,
    rows: np.ndarray,
    io_elems: np.ndarray,
    winograd_ok: np.ndarray,
    b: int,
    gpu: GpuFigures,
    eff: np.ndarray,
) -> np.ndarray:
    """Seconds of the forward, input-gradient and weight-gradient passes of IEEE fp32 convolutions on
    Hopper, concatenated as gemm_array's three shapes are (forward (m, n, k), input gradient (m, k, n),
    weight gradient (n, k, m); ``m`` the batch's output positions, ``rows`` one sample's, ``io_elems``
    one sample's input and output elements, ``eff`` a GEMM's efficiency on CUDA cores): the implicit
    GEMM's, or where ``winograd_ok`` the faster of it and Winograd's."""
    e = np.tile(eff * HOPPER_FP32_CONV_EFFICIENCY, 3)
    direct = gemm_array(
        np.concatenate((m, m, n)), np.concatenate((n, k, k)), np.concatenate((k, n, m)), gpu.fp32, gpu, 4, e, True
    )
    side = np.sqrt(np.maximum(rows, 1.0))
    pad = (np.ceil(side / WINOGRAD_TILE) * WINOGRAD_TILE) ** 2 / np.maximum(rows, 1.0)  # outputs in whole tiles
    mw, kw = m * pad, k / HOPPER_WINOGRAD_SPEEDUP
    shapes = (np.concatenate((mw, mw, n)), np.concatenate((n, kw, kw)), np.concatenate((kw, n, mw)))
    transforms = WINOGRAD_TRANSFORM_ACCESSES * pad * io_elems * b * 4 / gpu.bandwidth
    winograd = gemm_array(*shapes, gpu.fp32, gpu, 4, e, True) + np.tile(transforms, 3)
    return np.where(np.tile(winograd_ok, 3), np.minimum(direct, winograd), direct)
