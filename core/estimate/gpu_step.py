"""The GPU kernel model over a whole pass (docs/sizing.md §4c): a graph's matrix products as arrays
built once per op list, priced in one call (the same tiles, waves, split-K and traffic as
core.estimate.gpu_kernels.gemm_s), its recurrent layers and attention one by one, and its elementwise
kernels by the bytes they move. The what-if loop re-times the same graph at other batches,
precisions and GPUs, so the arrays are cached per op list."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from core.estimate.gpu_kernels import (
    FP8_GEMM_EFFICIENCY,
    GEMM_FIXED_S,
    KERNEL_FLOOR_S,
    KERNELS_PER_KIND,
    NCHW_TRANSPOSE_ACCESSES,
    TILE,
    GpuFigures,
    attention_op_s,
    conv_efficiency,
    cudnn_precision,
    figures,
    matmul_efficiency,
    matmul_peak,
    matrix_op_s,
    nchw_transposes,
    rnn_op_s,
    unfused_attention_s,
)
from core.hardware.catalogue import DeviceSpec

if TYPE_CHECKING:
    from core.estimate.op_work import OpWork


@dataclass(frozen=True)
class _MatrixOps:
    """A graph's linear layers and convolutions as arrays, built once per op list (the what-if loop
    re-times the same graph at other batches, precisions and GPUs)."""

    rows: np.ndarray  # forward GEMM rows per sample
    n: np.ndarray
    k: np.ndarray
    first: np.ndarray  # reads the network's input: no input gradient
    conv: np.ndarray  # a convolution larger than 1 × 1 (cuDNN's efficiency)
    is_conv: np.ndarray  # any convolution (NCHW transposes in half precision; ``conv`` in TF32)
    io_elems: np.ndarray  # input + output elements per sample
    unshaped: tuple[OpWork, ...]  # matrix ops without a GEMM shape (traced models), priced one by one
    others: tuple[OpWork, ...]  # recurrent layers and attention, priced one by one
    elementwise: tuple[tuple[str, np.ndarray], ...]  # per kind: elements per sample of each of its ops
    matmul_weights: float  # elements of the matrix weights autocast copies to half precision
    weight_ops: int  # ops holding matrix weights (one cast kernel each)


_MATRIX_CACHE: dict[int, tuple[Sequence[OpWork], _MatrixOps]] = {}


def _matrix_ops(ops: Sequence[OpWork]) -> _MatrixOps:
    hit = _MATRIX_CACHE.get(id(ops))
    if hit is not None and hit[0] is ops:
        return hit[1]
    shaped = [o for o in ops if o.rate and not o.rnn and o.name != "sdpa" and o.gemm_k and o.gemm_n and o.gemm_rows]
    unshaped = [
        o for o in ops if o.rate and not o.rnn and o.name != "sdpa" and not (o.gemm_k and o.gemm_n and o.gemm_rows)
    ]
    kinds: dict[str, list[float]] = {}
    for o in ops:
        for kind, elems in o.elementwise:
            kinds.setdefault(kind, []).append(elems)
    built = _MatrixOps(
        rows=np.array([o.gemm_rows for o in shaped], dtype=float),
        n=np.array([o.gemm_n for o in shaped], dtype=float),
        k=np.array([o.gemm_k for o in shaped], dtype=float),
        first=np.array([o.first for o in shaped], dtype=bool),
        conv=np.array([o.rate == "conv" and not o.pointwise for o in shaped], dtype=bool),
        is_conv=np.array([o.rate == "conv" for o in shaped], dtype=bool),
        io_elems=np.array([o.in_elems + o.out_elems for o in shaped], dtype=float),
        unshaped=tuple(unshaped),
        others=tuple(o for o in ops if o.rnn or o.name == "sdpa"),
        elementwise=tuple((kind, np.array(v, dtype=float)) for kind, v in kinds.items()),
        matmul_weights=float(sum(o.gemm_k * o.gemm_n for o in ops if o.gemm_k))
        + float(
            sum(o.rnn[0] * (4 if o.name == "lstm" else 3) * o.rnn[1] * (o.rnn[1] + o.rnn[2]) for o in ops if o.rnn)
        ),
        weight_ops=sum(1 for o in ops if o.rate),
    )
    if len(_MATRIX_CACHE) > 256:
        _MATRIX_CACHE.clear()
    _MATRIX_CACHE[id(ops)] = (ops, built)
    return built


def _gemm_array(
    m: np.ndarray,
    n: np.ndarray,
    k: np.ndarray,
    peak: float | np.ndarray,
    gpu: GpuFigures,
    nbytes: int,
    eff: np.ndarray,
) -> np.ndarray:
    """gemm_s over arrays of shapes (the same tiles, waves, split-K, traffic and fixed time)."""
    tiles = np.ceil(m / TILE) * np.ceil(n / TILE)
    split_ok = (tiles < gpu.sms) & (k >= 2 * 256)
    splits = np.where(split_ok, np.maximum(1, np.minimum(gpu.sms // np.maximum(tiles, 1), np.floor(k / 256))), 1)
    waves = np.ceil(tiles * splits / gpu.sms)
    compute = waves * 2.0 * TILE * TILE * (k / splits) / (peak / gpu.sms * eff)
    traffic = (m * k + k * n + m * n) * nbytes / gpu.bandwidth
    return np.where((m > 0) & (n > 0) & (k > 0), np.maximum(compute, traffic) + GEMM_FIXED_S, 0.0)


def step_kernels(
    ops: Sequence[OpWork],
    b: int,
    device: DeviceSpec,
    precision: str,
    checkpointing: bool,
    memory_format: str,
    compile_model: bool,
    element_accesses: dict[str, float],
    measured: Mapping[str, Any] | None = None,
    fp8: bool = False,
    attention: str = "auto",
    cudnn_tf32: bool = False,
) -> tuple[float, float]:
    """Seconds of the forward and backward kernels at batch ``b``: (matrix products and attention,
    memory-bound kernels). The same sums as matrix_op_s, rnn_op_s, attention_op_s and
    elementwise_s op by op, over arrays built once per op list; convolutions and recurrent layers
    in ``cudnn_precision`` (TF32 for fp32 where cuDNN may use it)."""
    gpu = figures(device, measured)
    nbytes = 2 if precision in ("fp16_mixed", "bf16_mixed") else 4
    mo = _matrix_ops(ops)
    peak, mbytes = matmul_peak(precision, gpu)
    base = matmul_efficiency(precision, gpu)
    cudnn = cudnn_precision(precision, gpu, cudnn_tf32)
    conv_base = matmul_efficiency(cudnn, gpu)
    eff = np.where(mo.conv, conv_efficiency(cudnn, gpu), np.where(mo.is_conv, conv_base, base))
    # in fp32 with cuDNN's TF32: linear layers on CUDA cores, convolutions on TF32 tensor cores (a scalar
    # peak otherwise, so the sums stay those recorded to the last bit)
    peaks = np.tile(np.where(mo.is_conv, matmul_peak(cudnn, gpu)[0], peak), 3) if cudnn != precision else peak
    if fp8 and gpu.fp8 and peak == gpu.half:
        # linear layers on fp8 tensor cores (convolutions stay in half precision): the fp8 peak as a
        # share of the half-precision one, so one array call times both
        eff = np.where(mo.is_conv, eff, eff * FP8_GEMM_EFFICIENCY * gpu.fp8 / gpu.half)
    m = mo.rows * b
    count = len(m)
    # forward, input gradient and weight gradient GEMMs of every op in one array call
    three = _gemm_array(
        np.concatenate((m, m, mo.n)),
        np.concatenate((mo.n, mo.k, mo.k)),
        np.concatenate((mo.k, mo.n, m)),
        peaks,
        gpu,
        mbytes,
        np.concatenate((eff, eff, eff)),
    )
    fwd, dgrad, wgrad = three[:count], three[count : 2 * count], three[2 * count :]
    seconds = fwd * (2 if checkpointing else 1) + wgrad + np.where(mo.first, 0.0, dgrad)
    compute = float(seconds.sum())
    transposed = nchw_transposes(cudnn, gpu, memory_format)
    if transposed:
        paying = mo.is_conv if transposed == "all" else mo.conv
        compute += NCHW_TRANSPOSE_ACCESSES * float(mo.io_elems[paying].sum()) * b * mbytes / gpu.bandwidth
    memory = 0.0
    compute += sum(matrix_op_s(op, b, precision, gpu, checkpointing, memory_format, cudnn_tf32) for op in mo.unshaped)
    for op in mo.others:
        if op.rnn:
            compute += rnn_op_s(op, b, precision, gpu, cudnn_tf32)
        elif attention in ("math", "eager") and op.scores:
            matmuls, scores = unfused_attention_s(op, b, precision, gpu, checkpointing, attention)
            compute += matmuls
            memory += scores
        else:
            compute += attention_op_s(op, b, precision, gpu, checkpointing)
    for kind, elems in mo.elementwise:
        moved = element_accesses[kind] * nbytes * elems * b / gpu.bandwidth
        if compile_model:
            memory += float(moved.sum()) * 0.5
        else:
            memory += float(np.maximum(moved, KERNELS_PER_KIND.get(kind, 2) * KERNEL_FLOOR_S).sum())
    return compute, memory


def matrix_weights(ops: Sequence[OpWork]) -> tuple[float, int]:
    """(matrix weight elements autocast casts each step, ops holding them), once per op list."""
    mo = _matrix_ops(ops)
    return mo.matmul_weights, mo.weight_ops
