"""The GPU kernel model over a whole pass (docs/sizing.md §4c): a graph's matrix products as arrays
built once per op list, priced in one call (core.estimate.gemm.gemm_array: the same tiles, waves,
split-K and traffic as gemm_s), its recurrent layers and attention one by one, and its elementwise
kernels by the bytes they move. The what-if loop re-times the same graph at other batches,
precisions and GPUs, so the arrays are cached per op list."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from core.estimate import gpu_kernels
from core.estimate.gemm import gemm_array
from core.estimate.gpu_attention import attention_op_s, unfused_attention_s
from core.estimate.gpu_convs import hopper_3x3, hopper_conv_passes, hopper_fp32_conv, hopper_priced
from core.estimate.gpu_kernels import (
    FP8_GEMM_EFFICIENCY,
    KERNEL_FLOOR_S,
    aligned_efficiency,
    conv_efficiency,
    conv_search,
    cudnn_precision,
    figures,
    matmul_efficiency,
    matmul_peak,
    matrix_op_s,
    nchw_transpose_s,
    nchw_transposes,
    winograd,
)
from core.estimate.gpu_memory import (
    KERNELS_PER_KIND,
    autocast_cast_s,
    batchnorm_channel_s,
    bias_reduce_s,
    cudnn_batchnorm_s,
    gamma_beta_s,
    maxpool_s,
    native_batch_norm,
)
from core.estimate.gpu_rnn import rnn_op_s
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
    kernel_area: np.ndarray  # a convolution's kernel height × width (0 for a linear layer)
    winograd_shape: np.ndarray  # a square, stride-1, undilated, ungrouped convolution
    io_elems: np.ndarray  # input + output elements per sample
    bias_elems: np.ndarray  # output elements per sample whose gradient a bias sums over the rows (0: none)
    projections: np.ndarray  # matrix-product calls of each op (a reduction, a cast each)
    # layer norms: where, rows per sample, features, whether their tensors are fp32 under autocast
    layer_norm_at: np.ndarray
    layer_norm_rows: np.ndarray
    layer_norm_width: np.ndarray
    layer_norm_fp32: np.ndarray
    # BatchNorm2d: where, rows (pixels) per sample, channels
    batch_norm_at: np.ndarray
    batch_norm_rows: np.ndarray
    batch_norm_channels: np.ndarray
    unshaped: tuple[OpWork, ...]  # matrix ops without a GEMM shape (traced models), priced one by one
    # recurrent layers and attention, priced once per distinct op (a transformer's blocks repeat one), with
    # where each sits
    others: tuple[tuple[OpWork, np.ndarray], ...]
    elementwise: tuple[tuple[str, np.ndarray], ...]  # per kind: elements per sample of each of its ops
    elementwise_fp32: tuple[np.ndarray, ...]  # per kind: whether each of its ops moves fp32 under autocast
    # autocast's casts of fp32 inputs to half precision: elements per sample (× the calls casting them),
    # where, and whether the op reads the network's input (no gradient to cast back)
    cast_elems: np.ndarray
    cast_at: np.ndarray
    cast_first: np.ndarray
    cast_kernels: np.ndarray
    # where each of the above sits in the op list (forward order): the per-op device times of pass_kernels
    shaped_at: np.ndarray
    unshaped_at: tuple[int, ...]
    elementwise_at: tuple[np.ndarray, ...]
    matmul_weights: float  # elements of the matrix weights autocast copies to half precision
    weight_ops: int  # ops holding matrix weights (one cast kernel each)


_MATRIX_CACHE: dict[int, tuple[Sequence[OpWork], _MatrixOps]] = {}


def _matrix_ops(ops: Sequence[OpWork]) -> _MatrixOps:
    hit = _MATRIX_CACHE.get(id(ops))
    if hit is not None and hit[0] is ops:
        return hit[1]

    def matrix(o: OpWork) -> bool:
        return bool(o.rate) and not o.rnn and o.name != "sdpa"

    def has_shape(o: OpWork) -> bool:
        return bool(o.gemm_k and o.gemm_n and o.gemm_rows)

    shaped_at = [i for i, o in enumerate(ops) if matrix(o) and has_shape(o)]
    shaped = [ops[i] for i in shaped_at]
    unshaped_at = tuple(i for i, o in enumerate(ops) if matrix(o) and not has_shape(o))
    others: dict[OpWork, list[int]] = {}
    for i, o in enumerate(ops):
        if o.rnn or o.name == "sdpa":
            others.setdefault(o, []).append(i)
    kinds: dict[str, tuple[list[float], list[int], list[bool]]] = {}
    for i, o in enumerate(ops):
        for kind, elems in o.elementwise:
            row = kinds.setdefault(kind, ([], [], []))
            row[0].append(elems)
            row[1].append(i)
            row[2].append(o.fp32_io)
    cast_at = [i for i, o in enumerate(ops) if o.input_casts]
    layer_norm_at = [i for i, o in enumerate(ops) if o.norm_width and o.name != "batchnorm2d"]
    batch_norm_at = [i for i, o in enumerate(ops) if o.norm_width and o.name == "batchnorm2d"]

    def per_row(at: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """(rows per sample, width) of the norms at ``at``."""
        width = np.array([ops[i].norm_width for i in at], dtype=float)
        return np.array([ops[i].out_elems for i in at], dtype=float) / width, width

    layer_norm_rows, layer_norm_width = per_row(layer_norm_at)
    batch_norm_rows, batch_norm_channels = per_row(batch_norm_at)
    built = _MatrixOps(
        rows=np.array([o.gemm_rows for o in shaped], dtype=float),
        n=np.array([o.gemm_n for o in shaped], dtype=float),
        k=np.array([o.gemm_k for o in shaped], dtype=float),
        first=np.array([o.first for o in shaped], dtype=bool),
        conv=np.array([o.rate == "conv" and not o.pointwise for o in shaped], dtype=bool),
        is_conv=np.array([o.rate == "conv" for o in shaped], dtype=bool),
        kernel_area=np.array([o.kernel_area if o.rate == "conv" else 0 for o in shaped], dtype=int),
        winograd_shape=np.array([o.rate == "conv" and o.winograd_shape for o in shaped], dtype=bool),
        io_elems=np.array([o.in_elems + o.out_elems for o in shaped], dtype=float),
        bias_elems=np.array([o.out_elems if o.bias else 0.0 for o in shaped], dtype=float),
        projections=np.array([o.projections for o in shaped], dtype=float),
        layer_norm_at=np.array(layer_norm_at, dtype=int),
        layer_norm_rows=layer_norm_rows,
        layer_norm_width=layer_norm_width,
        layer_norm_fp32=np.array([ops[i].fp32_io for i in layer_norm_at], dtype=bool),
        batch_norm_at=np.array(batch_norm_at, dtype=int),
        batch_norm_rows=batch_norm_rows,
        batch_norm_channels=batch_norm_channels,
        unshaped=tuple(ops[i] for i in unshaped_at),
        others=tuple((o, np.array(at, dtype=int)) for o, at in others.items()),
        elementwise=tuple((kind, np.array(v[0], dtype=float)) for kind, v in kinds.items()),
        elementwise_fp32=tuple(np.array(v[2], dtype=bool) for v in kinds.values()),
        cast_elems=np.array([ops[i].in_elems * ops[i].input_casts for i in cast_at], dtype=float),
        cast_at=np.array(cast_at, dtype=int),
        cast_first=np.array([ops[i].first for i in cast_at], dtype=bool),
        cast_kernels=np.array([ops[i].input_casts for i in cast_at], dtype=float),
        matmul_weights=float(sum(o.gemm_k * o.gemm_n for o in ops if o.gemm_k))
        + float(
            sum(o.rnn[0] * (4 if o.name == "lstm" else 3) * o.rnn[1] * (o.rnn[1] + o.rnn[2]) for o in ops if o.rnn)
        ),
        weight_ops=sum(1 for o in ops if o.rate),
        shaped_at=np.array(shaped_at, dtype=int),
        unshaped_at=unshaped_at,
        elementwise_at=tuple(np.array(v[1], dtype=int) for v in kinds.values()),
    )
    if len(_MATRIX_CACHE) > 256:
        _MATRIX_CACHE.clear()
    _MATRIX_CACHE[id(ops)] = (ops, built)
    return built


# The forward's share of a kernel's forward-and-backward seconds where the model prices them
# together (elementwise kernels, NCHW transposes, recurrent layers, attention): backward reads and
# writes about twice what forward does (an input gradient from the output gradient and what forward
# saved; two GEMMs per matrix product). Only the order of the step's work depends on it (where the
# host's dispatch leaves the device waiting, core/estimate/host.py device_wait), not its sum.
FORWARD_SHARE = 1 / 3


@dataclass(frozen=True)
class PassKernels:
    """A pass's kernels on the GPU: the sums of matrix products (and attention) and memory-bound
    kernels, and each op's device seconds in forward and in backward (forward order)."""

    compute: float
    memory: float
    forward: np.ndarray
    backward: np.ndarray


def pass_kernels(
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
    cudnn_benchmark: bool = False,
    autocast: bool = True,
    fp32_accesses: Mapping[str, float] | None = None,
    host_speed: float = 1.0,
) -> PassKernels:
    """The forward and backward kernels at batch ``b``, op by op: the same prices as matrix_op_s,
    rnn_op_s, attention_op_s and elementwise_s, over arrays built once per op list; convolutions and
    recurrent layers in ``cudnn_precision`` (TF32 for fp32 where cuDNN may use it). A matrix product's
    forward GEMM is its forward (again in backward under full checkpointing), its two gradient GEMMs
    its backward; the rest splits FORWARD_SHARE : 1 − FORWARD_SHARE. ``cudnn_benchmark``: convolutions
    as cuDNN's algorithm search runs them where conv_search says. ``autocast``: half-precision mixed
    precision runs under torch.autocast (the weights fp32, training.precision_layout "autocast"): the
    tensors the graph keeps in fp32 move 4 bytes an element (at ``fp32_accesses`` where a kind's kernels
    move other accesses on fp32 tensors: an op variant's), and each matrix product casts an fp32 input to
    half and its gradient back (autocast_cast_s). ``host_speed``: the host's, for the launch chain of a
    recurrent layer's time steps."""
    gpu = figures(device, measured)
    nbytes = 2 if precision in ("fp16_mixed", "bf16_mixed") else 4
    mo = _matrix_ops(ops)
    count_ops = len(ops)
    fwd_s, bwd_s = np.zeros(count_ops), np.zeros(count_ops)
    comp_f, comp_b = np.zeros(count_ops), np.zeros(count_ops)  # the matrix-product (compute) part

    def add(to_f: np.ndarray, to_b: np.ndarray, at: Any, seconds: Any) -> None:
        if isinstance(at, (int, np.integer)):  # one op (most calls): plain indexing, not ufunc.at's
            to_f[at] += seconds * FORWARD_SHARE
            to_b[at] += seconds * (1 - FORWARD_SHARE)
            return
        np.add.at(to_f, at, seconds * FORWARD_SHARE)
        np.add.at(to_b, at, seconds * (1 - FORWARD_SHARE))

    peak, mbytes = matmul_peak(precision, gpu)
    base = matmul_efficiency(precision, gpu)
    cudnn = cudnn_precision(precision, gpu, cudnn_tf32)
    conv_base = matmul_efficiency(cudnn, gpu)
    eff = np.where(mo.conv, conv_efficiency(cudnn, gpu), np.where(mo.is_conv, conv_base, base))
    # in fp32 with cuDNN's TF32: linear layers on CUDA cores, convolutions on TF32 tensor cores (a scalar
    # peak otherwise)
    peaks = np.tile(np.where(mo.is_conv, matmul_peak(cudnn, gpu)[0], peak), 3) if cudnn != precision else peak
    if fp8 and gpu.fp8 and peak == gpu.half:
        # linear layers on fp8 tensor cores (convolutions stay in half precision): the fp8 peak as a
        # share of the half-precision one, so one array call times both
        eff = np.where(mo.is_conv, eff, eff * FP8_GEMM_EFFICIENCY * gpu.fp8 / gpu.half)
    m = mo.rows * b
    count = len(m)
    if count:  # linear layers missing the 16 bytes Hopper's fast kernels need (cuDNN pads convolutions)
        eff = np.where(mo.is_conv, eff, aligned_efficiency(eff, np.stack((m, mo.n, mo.k)), precision, gpu))
    k, tiles = mo.k, ~mo.is_conv  # tiles fitted to the output's sides: cuBLAS's, and cuDNN's search
    if conv_search(cudnn, gpu, cudnn_benchmark):
        eff = np.where(mo.is_conv, conv_base * gpu_kernels.CONV_SEARCH_EFFICIENCY, eff)
        k = np.where(winograd(mo.kernel_area, mo.winograd_shape, gpu), mo.k / gpu_kernels.WINOGRAD_SPEEDUP, mo.k)
        tiles = np.ones(count, dtype=bool)
    # forward, input gradient and weight gradient GEMMs of every op in one array call
    three = gemm_array(
        np.concatenate((m, m, mo.n)),
        np.concatenate((mo.n, k, k)),
        np.concatenate((k, mo.n, m)),
        peaks,
        gpu,
        mbytes,
        np.concatenate((eff, eff, eff)),
        np.tile(tiles, 3),
    )
    if count and mo.is_conv.any() and hopper_fp32_conv(cudnn, gpu):  # Hopper's cuDNN 9, search or not
        fits = hopper_3x3(mo.kernel_area, mo.winograd_shape)  # 3 × 3 stride 1, the layers measured
        passes = hopper_conv_passes(m, mo.n, mo.k, mo.rows, mo.io_elems, fits, b, gpu, np.full(count, conv_base))
        priced = mo.is_conv & hopper_priced(mo.kernel_area, mo.winograd_shape)  # 3 × 3 stride 1 and 1 × 1
        three = np.where(np.tile(priced, 3), passes, three)
    fwd, dgrad, wgrad = three[:count], three[count : 2 * count], three[2 * count :]
    comp_f[mo.shaped_at] += fwd
    comp_b[mo.shaped_at] += fwd * (1 if checkpointing else 0) + wgrad + np.where(mo.first, 0.0, dgrad)
    # a bias's gradient: a reduction kernel a call reading the output gradient (in the activations' dtype);
    # a linear layer's sums rows below the streaming rate (bias_reduce_s); a convolution's is priced by its
    # bytes (channels_last ones run the linear layers' kernel, between the two prices: benchmarks/
    # row_reductions.py)
    biased = mo.bias_elems > 0
    if biased.any():
        floor = mo.projections[biased] * KERNEL_FLOOR_S
        reduce = np.maximum(mo.bias_elems[biased] * b * nbytes / gpu.bandwidth, floor)
        if not compile_model:  # Inductor writes its own reductions
            rows, calls = mo.rows[biased] * b, mo.projections[biased]
            columns = bias_reduce_s(rows, mo.n[biased] / calls, calls, nbytes, gpu)
            reduce = np.where(mo.is_conv[biased], reduce, columns)
        bwd_s[mo.shaped_at[biased]] += reduce
    transposed = nchw_transposes(cudnn, gpu, memory_format)
    if transposed:
        paying = mo.is_conv if transposed == "all" else mo.conv
        moved = nchw_transpose_s(mo.io_elems * b, mo.is_conv & ~mo.conv, mbytes, gpu)
        add(comp_f, comp_b, mo.shaped_at[paying], moved[paying])
    for i, op in zip(mo.unshaped_at, mo.unshaped, strict=True):
        add(
            comp_f,
            comp_b,
            i,
            matrix_op_s(op, b, precision, gpu, checkpointing, memory_format, cudnn_tf32, cudnn_benchmark),
        )
    for op, at in mo.others:  # one price for the ops of each repeated block, added where each sits
        i = int(at[0]) if len(at) == 1 else at
        if op.rnn:
            add(comp_f, comp_b, i, rnn_op_s(op, b, precision, gpu, cudnn_tf32, host_speed))
        elif attention in ("math", "eager") and op.scores:
            matmuls, scores = unfused_attention_s(op, b, precision, gpu, checkpointing, attention, autocast)
            add(comp_f, comp_b, i, matmuls)
            add(fwd_s, bwd_s, i, scores)
        else:
            add(comp_f, comp_b, i, attention_op_s(op, b, precision, gpu, checkpointing, attention))
    mixed = autocast and nbytes == 2
    wide = fp32_accesses or {}
    for (kind, elems), at, fp32 in zip(mo.elementwise, mo.elementwise_at, mo.elementwise_fp32, strict=True):
        per_element = element_accesses[kind] * nbytes
        if mixed:
            per_element = np.where(fp32, wide.get(kind, element_accesses[kind]) * 4, per_element)
        moved = per_element * elems * b / gpu.bandwidth
        if compile_model:
            add(fwd_s, bwd_s, at, moved * 0.5)
        else:
            if kind == "maxpool":  # its kernels' index arithmetic, not their bytes, paces them
                moved = np.maximum(moved, maxpool_s(elems * b, memory_format, gpu))
            add(fwd_s, bwd_s, at, np.maximum(moved, KERNELS_PER_KIND.get(kind, 2) * KERNEL_FLOOR_S))
    # norms whose kernels run on few SMs (Inductor writes its own under compile)
    if len(mo.layer_norm_at) and not compile_model:  # the weight gradient's blocks of 32 features
        norm_bytes = np.where(mo.layer_norm_fp32 & mixed, 4, nbytes)
        bwd_s[mo.layer_norm_at] += gamma_beta_s(mo.layer_norm_rows * b, mo.layer_norm_width, norm_bytes, gpu)
    if len(mo.batch_norm_at) and not compile_model and memory_format != "channels_last":  # a block a channel
        rows, channels = mo.batch_norm_rows * b, mo.batch_norm_channels
        if native_batch_norm(precision, memory_format):
            add(fwd_s, bwd_s, mo.batch_norm_at, batchnorm_channel_s(rows, channels, gpu))
        else:  # cuDNN's kernels: what they take beyond the bytes the elementwise price above streams
            streamed = element_accesses["batchnorm"] * nbytes * rows * channels / gpu.bandwidth
            extra = np.maximum(0.0, cudnn_batchnorm_s(rows, channels, gpu) - streamed)
            add(fwd_s, bwd_s, mo.batch_norm_at, extra)
    if mixed and len(mo.cast_at):  # one cast a call forward, one back for the input's gradient
        cast = autocast_cast_s(mo.cast_elems * b, gpu, compile_model, mo.cast_kernels)
        fwd_s[mo.cast_at] += cast
        bwd_s[mo.cast_at] += np.where(mo.cast_first, 0.0, cast)
    compute = float(comp_f.sum() + comp_b.sum())
    memory = float(fwd_s.sum() + bwd_s.sum())
    return PassKernels(compute, memory, comp_f + fwd_s, comp_b + bwd_s)


def matrix_weights(ops: Sequence[OpWork]) -> tuple[float, int]:
    """(matrix weight elements autocast casts each step, ops holding them), once per op list."""
    mo = _matrix_ops(ops)
    return mo.matmul_weights, mo.weight_ops
