"""One matrix product on an NVIDIA GPU, as the GPU kernel model prices it (core/estimate/gpu_kernels.py,
docs/sizing.md §4c): its output cut into tiles that run in waves over the SMs, each at the SM's
share of the peak × the efficiency a large product reaches, split-K over idle SMs, never faster than
moving its operands, plus a fixed time per product. A whole pass's products are priced as arrays by
the same rules in core/estimate/gpu_step.py."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from core.estimate.gpu_kernels import GpuFigures

TILE = 128  # cuBLAS/cuDNN CTA tile edge for tensor-core GEMMs (CUTLASS default 128 × 128)
# cuBLAS covers an output side shorter than a tile with a smaller tile (CUTLASS's and cuBLAS's
# kernels come with edges of 16 to 256), whose products per operand loaded are fewer: a tm × tn tile
# loads tm + tn operands per step along k for tm · tn products, so it runs at (its reuse / a full
# tile's)^TILE_REUSE_EXPONENT of a full tile's rate. The exponent is TrainRig's least-squares fit on a
# seeded half of DeepBench's skinny matrix products (V100, T4; fp32 and fp16; benchmarks/
# accuracy_deepbench.py --fit), held out on the other half (docs/accuracy.md, "Single kernels").
# cuDNN's convolutions and recurrent layers keep the full tile their efficiencies were fitted with.
TILE_MIN = 16
TILE_REUSE_EXPONENT = 0.6
# A matrix product's fixed time on top of its tiles' arithmetic or its operands' traffic, inside the
# kernel's own duration (CUPTI's, launch latency excluded): the prologue that fills its load pipeline,
# the epilogue that writes its last tiles and the tail of its last wave.
# TrainRig's least-squares fit on a seeded half (187 shapes) of OpenXLA's published GEMM table for
# an H100 (bf16, 256–4,096 a side, batches 1–4: resources/published/xla_gemm_perf_table.json), with
# the efficiencies of core/estimate/gpu_kernels.py unchanged; held out on the other half, on TF32, on
# the B200 and on the network-level checks (docs/accuracy.md, "Matrix products of every size").
GEMM_FIXED_S = 5e-6


def gemm_s(
    m: float,
    n: float,
    k: float,
    peak: float,
    gpu: GpuFigures,
    elem_bytes: int,
    eff: float,
    skinny_tiles: bool = False,
) -> float:
    """Seconds of one GEMM (m × k) · (k × n): tiles of TILE × TILE (with ``skinny_tiles``, as cuBLAS
    runs a linear layer: a side shorter than TILE in a tile of ``tile_edge``, at ``tile_rate`` of a
    full tile's rate) in ⌈tiles / SMs⌉ waves, each tile at the SM's share of ``peak`` × ``eff``;
    split-K over idle SMs when tiles are fewer than SMs and the reduction is long; at least its
    operands' bytes at the bandwidth; plus GEMM_FIXED_S."""
    if m <= 0 or n <= 0 or k <= 0:
        return 0.0
    tm, tn = (tile_edge(m), tile_edge(n)) if skinny_tiles else (TILE, TILE)
    tiles = math.ceil(m / tm) * math.ceil(n / tn)
    splits = 1
    if tiles < gpu.sms and k >= 2 * 256:
        splits = max(1, min(gpu.sms // tiles, int(k // 256)))
    waves = math.ceil(tiles * splits / gpu.sms)
    per_tile = 2.0 * tm * tn * (k / splits)
    compute = waves * per_tile / (peak / gpu.sms * eff * tile_rate(tm, tn))
    traffic = (m * k + k * n + m * n) * elem_bytes / gpu.bandwidth
    return max(compute, traffic) + GEMM_FIXED_S


def tile_edge(side: Any) -> Any:
    """The edge of the tile cuBLAS covers an output side with: TILE, or for a shorter side the power
    of two at or above it, at least TILE_MIN (numbers or numpy arrays)."""
    return np.minimum(TILE, np.maximum(TILE_MIN, 2.0 ** np.ceil(np.log2(np.maximum(side, 1.0)))))


def tile_rate(tm: Any, tn: Any) -> Any:
    """The share of a full tile's rate a tm × tn tile runs at: (its products per operand loaded over
    a TILE × TILE tile's)^TILE_REUSE_EXPONENT; 1 for a full tile."""
    return ((tm * tn / (tm + tn)) / (TILE / 2)) ** TILE_REUSE_EXPONENT


def waves(m: float, n: float, sms: int) -> int:
    """Waves of TILE × TILE tiles of an m × n output over ``sms`` SMs (no split-K)."""
    return math.ceil(math.ceil(m / TILE) * math.ceil(n / TILE) / sms)


def gemm_array(
    m: np.ndarray,
    n: np.ndarray,
    k: np.ndarray,
    peak: float | np.ndarray,
    gpu: GpuFigures,
    nbytes: int,
    eff: np.ndarray,
    skinny: np.ndarray | bool = False,
) -> np.ndarray:
    """gemm_s over arrays of shapes (the same tiles, waves, split-K, traffic and fixed time;
    ``skinny``: where cuBLAS covers a short side with a smaller tile, as for a linear layer)."""
    tm = np.where(skinny, tile_edge(m), TILE)
    tn = np.where(skinny, tile_edge(n), TILE)
    tiles = np.ceil(m / tm) * np.ceil(n / tn)
    split_ok = (tiles < gpu.sms) & (k >= 2 * 256)
    splits = np.where(split_ok, np.maximum(1, np.minimum(gpu.sms // np.maximum(tiles, 1), np.floor(k / 256))), 1)
    waves = np.ceil(tiles * splits / gpu.sms)
    compute = waves * 2.0 * tm * tn * (k / splits) / (peak / gpu.sms * eff * tile_rate(tm, tn))
    traffic = (m * k + k * n + m * n) * nbytes / gpu.bandwidth
    return np.where((m > 0) & (n > 0) & (k > 0), np.maximum(compute, traffic) + GEMM_FIXED_S, 0.0)
