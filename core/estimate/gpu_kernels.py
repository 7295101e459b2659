"""The device side of a training step on an NVIDIA GPU: the time its kernels take, op by op, from
what the kernels do and the GPU's datasheet figures (docs/sizing.md §4c). The host's side — the
framework issuing those kernels — is priced in core/estimate/timing.py.

* Matrix products (linear layers, convolutions as implicit GEMMs, recurrent layers; one product in
  core/estimate/gemm.py): each GEMM is cut into 128 × 128 output tiles (a linear layer's side under
  128 into a smaller one), the tiles run in waves over the SMs (⌈tiles / SMs⌉ waves; a
  GEMM of SMs + 1 tiles takes two waves), each tile at the SM's share of the datasheet peak for
  the precision × the efficiency a large GEMM reaches (set on the H100 SXM; for another GPU scaled
  by the share of its peak its published PyTorch matmuls reach, ``published_efficiency``); small
  reductions run split-K. A GEMM never beats moving its operands at the bandwidth reached, and
  each takes ``gemm.GEMM_FIXED_S`` more (pipeline fill, epilogue, tail); no other kernel takes less than
  ``KERNEL_FLOOR_S``. Forward, input gradient and weight gradient are three GEMMs.
* Precision: ``fp32`` is IEEE fp32 on CUDA cores (TF32 off for matmuls and cuDNN, as TrainRig's
  recorded steps ran; PyTorch's default turns TF32 on for convolutions only); ``tf32`` everything on
  TF32 tensor cores; mixed precision on FP16/BF16 tensor cores.
* Memory format: in half precision or TF32, cuDNN's tensor-core convolutions work on NHWC, so an
  NCHW (``contiguous``) network pays layout transposes of each convolution's input and output in
  forward and backward and slower kernels (in TF32 the spatial convolutions only: ``nchw_transposes``);
  ``channels_last`` does not, nor do GPUs of compute capability 8.6 and 8.9
  (``NCHW_NATIVE_CAPABILITIES``: what the published GeForce throughputs show).
* Elementwise ops, norms, pooling, the loss, autocast's casts and the optimizer: the bytes their
  kernels move at the bandwidth reached (core/estimate/gpu_memory.py); ``compile`` fuses each chain of
  elementwise ops into its neighbour so its bytes are moved once.
* Attention (``F.scaled_dot_product_attention``, and unfused attention): core/estimate/gpu_attention.py.
* LSTM/GRU (cuDNN): core/estimate/gpu_rnn.py (the algorithm PyTorch picks, the call's fixed cost, the
  input projections of all time steps as one GEMM, then the time steps one after another).
* Autocast copies the matrix weights to half precision every step (and their gradients back);
  GradScaler (fp16) unscales and checks every gradient for inf/NaN (gpu_memory.py).
* The optimizer: PyTorch's foreach implementations (multi-tensor apply): the bytes of its states
  at the bandwidth reached (gpu_memory.FOREACH_ACCESSES fp32 words per parameter).

Constants are datasheet figures, published measurements (named with them) or TrainRig estimates
checked on the recorded H100 steps (docs/accuracy.md, "GPU kernel model").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from core.estimate.gemm import gemm_s
from core.estimate.gpu_convs import (
    HOPPER_FP32_CONV_EFFICIENCY,
    hopper_3x3,
    hopper_conv_passes,
    hopper_fp32_conv,
    hopper_priced,
)
from core.estimate.published_rates import matmul_factors
from core.hardware.catalogue import DeviceSpec

if TYPE_CHECKING:
    from core.estimate.op_work import OpWork

# Fraction of the datasheet dense peak a large GEMM reaches: TrainRig estimates — cuBLAS on big
# square problems, e.g. about 0.7–0.8 of the H100 SXM's 989 TFLOPS (clock drops under the 700 W
# limit); checked on the recorded H100 steps (docs/accuracy.md).
GEMM_EFFICIENCY = {"tensor": 0.72, "cuda": 0.80}
# cuDNN convolutions reach less than a GEMM of the same size (im2col tiles, filter edges), on tensor
# cores and on CUDA cores (fp32 without TF32, the heuristics' kernel without cudnn.benchmark):
# TrainRig estimates fitted on the recorded ResNet-50 steps (channels_last fp16 54.3 ms, fp32 at
# batch 32 44.5 ms, docs/accuracy.md).
CONV_EFFICIENCY = {"tensor": 0.80, "cuda": 0.42}
# With cudnn.benchmark (the workload's training.cudnn_benchmark) cuDNN times its algorithms for each
# shape and keeps the fastest; on CUDA cores (IEEE fp32) that is far from the heuristics' pick.
# DeepBench's fp32 convolutions (cudnnFindConvolution*Algorithm, V100 and T4: implicit GEMMs at 55–85 %
# of the FP32 peak, small output-channel counts in small tiles, 3 × 3 and 5 × 5 stride-1 layers on
# Winograd or FFT kernels "faster than the peak") are priced as GEMMs in tiles fitted to their sides
# (as cuBLAS's) at CONV_SEARCH_EFFICIENCY of a GEMM's efficiency, and a Winograd-eligible layer's
# reduction (k) shortened WINOGRAD_SPEEDUP times (F(4×4, 3×3) does 4 × fewer multiplications before its
# transforms). The three (which kernel areas, 0.30–1.00 by 0.02, 1.0–4.0 by 0.1) are TrainRig's least
# mean squared log error on a seeded half (seed 2026) of the 188 published layers plus that on a seeded
# half of a lent H200's IEEE fp32 convolutional steps, held out on the other halves and on Lambda's V100 fp32
# ResNet-50 (benchmarks/accuracy_deepbench.py --fit-conv, docs/accuracy.md). On Hopper the 3 × 3 stride-1
# and 1 × 1 layers are priced by core/estimate/gpu_convs.py instead (measured on an H100, search or not),
# so the H200's steps now speak here for their 5 × 5, 7 × 7 and strided layers only: refitted so, 5 × 5
# layers joined the 3 × 3 ones (cuDNN's non-fused Winograd takes both; not on Hopper: winograd()), the
# efficiency went 0.86 → 0.88 and the speed-up 2.2 → 2.0.
# Tensor-core precisions keep the efficiencies above, fitted on steps that ran with the benchmark on.
CONV_SEARCH_EFFICIENCY = 0.88
WINOGRAD_SPEEDUP = 2.0
WINOGRAD_KERNEL_AREAS = (9, 25)  # 3 × 3 and 5 × 5 (square, stride 1, undilated, ungrouped: graph.Op.winograd_shape)
# Hopper's and Blackwell's fast matrix-product kernels (wgmma fed by the tensor memory accelerator:
# cuBLAS's nvjet family) need each operand's rows to start on 16 bytes. A dimension of a half-precision
# product that is not a multiple of 8 elements (of 4 in TF32) sends cuBLAS to Turing-era CUTLASS
# kernels (cutlass_75_tensorop_*_align1/2/4) that load 2, 4 or 8 bytes at a time: GPT-2's tied head
# over its 50,257-word vocabulary ran three such kernels at 95–148 TFLOP/s on an H200, 15 of the
# step's 44 ms (tests/fixtures/profiles/h200-gpt2-bf16-b8.profile.json). The share of the tensor
# peak they reach, by that alignment in bytes: fitted on a seeded half of DeepBench's misaligned shapes
# timed on that H200, reported on the other half and on the GPT-2 steps (benchmarks/h200_kernels.py).
MISALIGNED_EFFICIENCY = {2: 0.11, 4: 0.26, 8: 0.24}
# Special-function unit throughput (exp2, rcp, rsqrt, …) per SM per clock on compute capability 5.x–9.0:
# 16 (NVIDIA CUDA C++ Programming Guide, "Arithmetic Instructions" throughput table). Flash attention's
# softmax runs its exponentials there, beside the tensor cores (core/estimate/gpu_attention.py).
SFU_OPS_PER_SM_CLOCK = 16
# Fraction of the datasheet bandwidth streaming kernels reach (STREAM-like copies reach 80–90 % of
# HBM/GDDR peak; TrainRig estimate).
BANDWIDTH_EFFICIENCY = 0.80
# The shortest a kernel takes on the device, launch gap included (TrainRig estimate: a few µs for an
# empty kernel on recent NVIDIA GPUs).
KERNEL_FLOOR_S = 3e-6
# NCHW convolutions in half precision / TF32: cuDNN's kernels run on NHWC, so it transposes a layer's
# tensors there and back (nchwToNhwcKernel, nhwcToNchwKernel). Profiled on a lent H100 and H200
# (2026-11-26), the transposes' time follows the SMs and their clock, not the bandwidth: ResNet-50 fp16 at
# batch 256 spent 12.9 ms in them on the H100 and 13.4 ms on the H200 (1.43 × its bandwidth, the same
# SMs and clock). Priced at NCHW_TRANSPOSE_ELEMENTS_PER_CLOCK elements per SM per clock, counted over
# each spatial convolution's input and output elements and NCHW_TRANSPOSE_POINTWISE_SHARE of a 1 × 1
# one's (cuDNN runs most of those as GEMMs in place); fitted on the profiles' NCHW CNNs
# (benchmarks/cnn_kernels.py --fit). Before (until 2026-11-26, an eighth session) they were 9.5 accesses
# an element at the bandwidth, fitted on ResNet-50's NCHW/channels_last step pair, which had taken up the
# slow batch norm of cuDNN's NCHW kernels too (gpu_memory.cudnn_batchnorm_s: 41.6 of the 93.9 ms).
NCHW_TRANSPOSE_ELEMENTS_PER_CLOCK = 0.65
NCHW_TRANSPOSE_POINTWISE_SHARE = 1 / 3
# where a GPU's clock is not known: the same price as bytes at the H100 SXM's bandwidth (2 bytes an element)
NCHW_TRANSPOSE_ACCESSES = 7.9
# GPUs that run NCHW half-precision convolutions without that penalty: compute capability 8.6 and 8.9
# (GA10x Ampere and AD10x Ada: the GeForce, RTX workstation and A10/L4/L40 cards). TrainRig
# assumption set on the published ResNet-50 fp16 NCHW throughputs of the RTX 3090 and 4090 (−35 and
# −41 % with the transposes, −3 and −2 % without; docs/accuracy.md) and held out on the A10, RTX A6000
# and RTX 6000 Ada (−26 … −34 % with, +11 … +25 % without); the A100 (8.0) and H100 (9.0) pay it
# (−2 and +3 % with, +61 and +76 % without). Volta and Turing (7.x) are not known: they keep it.
NCHW_NATIVE_CAPABILITIES = ("8.6", "8.9")
# TF32 GEMMs reach a lower share of their peak than FP16/BF16 ones: the share of GEMM_EFFICIENCY
# ["tensor"] they reach. TrainRig estimate, the least-squares fit of the published BERT-base TF32
# throughputs of the H100 SXM and the RTX 3090 (+16 and −14 % at 0.7; 0.8 while the 3090 was priced
# from its datasheet peak, before its published matmul rates), held out on BERT-large and on the
# other six GPUs (docs/accuracy.md, "TF32"). Every GPU of the Lambda tables runs BERT in TF32 at
# 1.85–2.2 × its fp16 step, where equal shares of the peaks give 1.6–1.8 ×.
TF32_GEMM_EFFICIENCY = 0.70
# the exponent of sustained clock against power: dynamic power ∝ f·V² with V rising with f in the
# DVFS range (≈ f³), so a GPU held at a power limit P below its TDP sustains a clock, and so a
# matrix rate, ∝ (P / TDP)^(1/3) (device entry "power_limit_w"; torchtitan's H100s ran at 500 W)
POWER_CLOCK_EXPONENT = 1 / 3
# fp8 GEMMs (Transformer Engine, torchao float8) reach a lower share of their peak than bf16 ones:
# the scaling and casts around them (TrainRig estimate)
FP8_GEMM_EFFICIENCY = 0.85  # the memory-efficient kernel on CUDA cores (TrainRig estimate)


@dataclass(frozen=True)
class GpuFigures:
    """What the kernel model needs of a GPU, from its datasheet."""

    sms: int
    fp32: float  # FLOP/s on CUDA cores
    tf32: float  # FLOP/s on TF32 tensor cores (fp32 where there are none)
    half: float  # FLOP/s on FP16/BF16 tensor cores (fp32 where there are none)
    bandwidth: float  # bytes/s reached by streaming kernels
    hopper: bool
    # the fraction of the peak a large GEMM reaches on tensor cores and on CUDA cores: GEMM_EFFICIENCY,
    # or what `calibrate` measured for the GPU's class (its largest layer's rate over the peak)
    eff_tensor: float = GEMM_EFFICIENCY["tensor"]
    eff_cuda: float = GEMM_EFFICIENCY["cuda"]
    eff_tf32: float | None = None  # TF32's share of its peak, measured by `calibrate` (None: estimated)
    eff_fp16: float | None = None  # FP16's where published apart from BF16's (None: eff_tensor)
    fp8: float = 0.0  # FLOP/s on FP8 tensor cores (0: none)
    nchw_native: bool = False  # NCHW half-precision convolutions without cuDNN's layout transposes
    tf32_cores: bool = False  # TF32 runs on tensor cores (Ampere and later), even where its peak is FP32's
    clock: float = 0.0  # the SM clock sustained, Hz (the boost clock at the power limit; 0: unknown)
    capability: str = ""  # CUDA compute capability, "9.0" ("": unknown)

    @property
    def sfu(self) -> float:
        """Special-function operations a second (exp, rcp): SFU_OPS_PER_SM_CLOCK × SMs × clock."""
        return SFU_OPS_PER_SM_CLOCK * self.sms * self.clock

    def gemm_efficiency(self, tensor_cores: bool) -> float:
        return self.eff_tensor if tensor_cores else self.eff_cuda

    def tensor_cores(self, precision: str) -> bool:
        """Whether matrix products in ``precision`` run on tensor cores: TF32 where the GPU has
        TF32 (a GeForce Ada card's TF32 peak equals its FP32 one, yet runs on tensor cores), FP16/
        BF16 where their peak is above FP32's."""
        if precision == "tf32":
            return self.tf32_cores
        return precision in ("fp16_mixed", "bf16_mixed") and self.half > self.fp32


def published_efficiency(device: DeviceSpec) -> dict[str, float]:
    """The efficiencies of ``device`` from published PyTorch matmul measurements
    (core/estimate/published_rates.py): GEMM_EFFICIENCY (set on the reference card, the H100 SXM) ×
    how many times the reference's share of its peak the device's large matmuls reach, per precision
    ("fp32"; "fp16"; "tensor" from BF16 where it runs natively, else FP16; "tf32" as
    TF32_GEMM_EFFICIENCY of the tensor cores'), at most 1; empty where nothing is published."""
    f = matmul_factors(device)
    tensor, cuda = GEMM_EFFICIENCY["tensor"], GEMM_EFFICIENCY["cuda"]
    bases = {"fp32": cuda, "fp16": tensor, "tensor": tensor, "tf32": tensor * TF32_GEMM_EFFICIENCY}
    half = f.get("bf16") or f.get("fp16")
    factors = {**f, **({"tensor": half} if half else {})}
    return {k: min(bases[k] * v, 1.0) for k, v in factors.items() if k in bases}


def matmul_rate(device: DeviceSpec, precision: str) -> float:
    """FLOP/s a large matrix product reaches on ``device`` in ``precision`` as the kernel model prices
    it (its peak × ``matmul_efficiency``, published matmul figures and all)."""
    gpu = figures(device)
    return matmul_peak(precision, gpu)[0] * matmul_efficiency(precision, gpu)


def hopper_class(device: DeviceSpec) -> bool:
    """Whether ``device`` is a Hopper or Blackwell GPU (its catalogue architecture): the fast kernels'
    16-byte alignment, and IEEE fp32 convolutions priced as cuDNN 9 runs them (gpu_convs.py)."""
    arch = str(device.extra.get("architecture", "")).lower()
    return "hopper" in arch or "blackwell" in arch


def nchw_native(device: DeviceSpec) -> bool:
    """Whether ``device`` runs NCHW half-precision convolutions without cuDNN's layout transposes
    (NCHW_NATIVE_CAPABILITIES)."""
    return str(device.extra.get("compute_capability", "")) in NCHW_NATIVE_CAPABILITIES


def figures(device: DeviceSpec, measured: Mapping[str, Any] | None = None) -> GpuFigures:
    """The datasheet figures of ``device``; SMs from the catalogue, else CUDA cores / 128 (Ampere
    GA10x, Ada, Hopper, Blackwell; 64 on Volta, Turing and A100 give twice the SMs — an upper
    bound that only matters for wave quantisation). ``measured``: a calibration's efficiencies of
    the device's class ("fp32", "tensor", "tf32"), which replace GEMM_EFFICIENCY and
    TF32_GEMM_EFFICIENCY; where it has none, published measurements of the device's matmuls do
    (``published_efficiency``)."""
    calibrated = measured and any(k in measured for k in ("tensor", "fp32", "tf32"))
    # this machine's own measurement of its class replaces the published figures whole
    m = dict(measured) if calibrated else {**published_efficiency(device), **(measured or {})}
    sms = device.sm_count or max(1, round((device.cuda_cores or 128 * 80) / 128))
    clock = power_factor(device)
    return GpuFigures(
        sms=sms,
        fp32=device.fp32_flops * clock,
        tf32=(device.tf32_flops or device.fp32_flops) * clock,
        half=(device.half_flops or device.fp32_flops) * clock,
        fp8=(device.fp8_flops or 0.0) * clock,
        bandwidth=(device.bandwidth or 50e9) * BANDWIDTH_EFFICIENCY,
        hopper=hopper_class(device),
        eff_tensor=float(m.get("tensor", GEMM_EFFICIENCY["tensor"])),
        eff_cuda=float(m.get("fp32", GEMM_EFFICIENCY["cuda"])),
        eff_tf32=float(m["tf32"]) if m.get("tf32") else None,
        eff_fp16=float(m["fp16"]) if m.get("fp16") else None,
        nchw_native=nchw_native(device),
        tf32_cores=bool(device.tf32_flops),
        clock=_clock_hz(device) * clock,
        capability=str(device.extra.get("compute_capability", "")),
    )


def _clock_hz(device: DeviceSpec) -> float:
    """The boost clock from the catalogue, else from the FP32 rate (2 FLOPs per CUDA core per clock)."""
    if device.clock_hz:
        return float(device.clock_hz)
    return device.fp32_flops / (2 * device.cuda_cores) if device.cuda_cores else 0.0


def power_factor(device: DeviceSpec) -> float:
    """The share of its datasheet rates a GPU held at ``power_limit_w`` below its TDP sustains:
    (limit / TDP)^(1/3); 1.0 without a limit."""
    limit = device.extra.get("power_limit_w")
    if not limit or not device.tdp_w or float(limit) >= device.tdp_w:
        return 1.0
    return (float(limit) / device.tdp_w) ** POWER_CLOCK_EXPONENT


@lru_cache(maxsize=4096)
def _gemm_shape(op: OpWork) -> tuple[float, float, float] | None:
    """(rows per sample, n, k) of an op's forward GEMM, or None when its shape is unknown."""
    if op.gemm_k and op.gemm_n and op.gemm_rows:
        return float(op.gemm_rows), float(op.gemm_n), float(op.gemm_k)
    return None


def matmul_peak(precision: str, gpu: GpuFigures) -> tuple[float, int]:
    """The peak matrix products run at and their operands' bytes per element, for TrainRig's
    precisions: fp32 is IEEE fp32 on CUDA cores (matmuls and convolutions with TF32 off), tf32 TF32
    tensor cores, mixed precision FP16/BF16 tensor cores."""
    if precision in ("fp16_mixed", "bf16_mixed"):
        return gpu.half, 2
    if precision == "tf32":
        return gpu.tf32, 4
    return gpu.fp32, 4


def alignment_bytes(dims: Any, nbytes: int) -> Any:
    """The bytes every row of a product with these dimensions (m, n, k) is aligned to, at most 16:
    the largest power of two dividing each dimension, times the element's bytes; over arrays of
    products as well (``dims`` of shape (3, products))."""
    d = np.asarray(dims, dtype=np.int64)
    return np.minimum(16, nbytes * (d & -d)).min(axis=0)


def aligned_efficiency(eff: Any, dims: Any, precision: str, gpu: GpuFigures) -> Any:
    """``eff`` for products of these dimensions (one, or arrays as alignment_bytes takes them): at
    most MISALIGNED_EFFICIENCY on a Hopper or Blackwell tensor core where a dimension misses the
    16-byte alignment its fast kernels need."""
    if not gpu.hopper or not gpu.tensor_cores(precision):
        return eff
    align = alignment_bytes(dims, matmul_peak(precision, gpu)[1])
    share = np.array([MISALIGNED_EFFICIENCY.get(a, 1.0) for a in range(17)])[align]
    return np.where(align >= 16, eff, np.minimum(eff, share))


def matmul_efficiency(precision: str, gpu: GpuFigures) -> float:
    """The share of ``matmul_peak`` a large GEMM reaches in ``precision``: the GPU's tensor-core or
    CUDA-core efficiency; TF32 what `calibrate` measured for it, else TF32_GEMM_EFFICIENCY of the
    tensor cores' one."""
    tensor_cores = gpu.tensor_cores(precision)
    if precision == "tf32" and tensor_cores:
        tf32 = gpu.eff_tf32 if gpu.eff_tf32 else gpu.gemm_efficiency(True) * TF32_GEMM_EFFICIENCY
        # never slower than the same product on CUDA cores (a GeForce card's datasheet TF32 peak is its
        # FP32 one; cuBLAS and cuDNN keep the faster kernel)
        return max(tf32, gpu.eff_cuda * gpu.fp32 / gpu.tf32)
    if precision == "fp16_mixed" and tensor_cores and gpu.eff_fp16:
        return gpu.eff_fp16
    return gpu.gemm_efficiency(tensor_cores)


def cudnn_precision(precision: str, gpu: GpuFigures, cudnn_tf32: bool) -> str:
    """The precision cuDNN's convolutions and recurrent layers run in: TF32 for an fp32 workload on a
    GPU with TF32 when ``cudnn_tf32`` (the workload's training.cudnn_tf32: PyTorch's default
    ``torch.backends.cudnn.allow_tf32 = True``; TrainRig prices IEEE fp32 unless told, as its recorded
    fp32 steps ran); matrix products outside cuDNN stay IEEE fp32 either way
    (``torch.backends.cuda.matmul.allow_tf32`` False by default); else ``precision``."""
    return "tf32" if precision == "fp32" and cudnn_tf32 and gpu.tf32_cores else precision


def conv_efficiency(precision: str, gpu: GpuFigures) -> float:
    """The share of ``matmul_peak`` a cuDNN convolution (not 1 × 1) reaches: the GEMMs' efficiency ×
    CONV_EFFICIENCY."""
    return matmul_efficiency(precision, gpu) * CONV_EFFICIENCY["tensor" if gpu.tensor_cores(precision) else "cuda"]


def conv_search(precision: str, gpu: GpuFigures, cudnn_benchmark: bool) -> bool:
    """Whether cuDNN's algorithm search prices the convolutions: with ``cudnn_benchmark`` (the
    workload's training.cudnn_benchmark) on CUDA cores (``precision`` as cudnn_precision gives it); on
    Hopper always, whose cuDNN 9 heuristics pick what its search finds (a lent H100 timed 102 IEEE fp32
    convolutions of every kind both ways; core/estimate/gpu_convs.py)."""
    return (bool(cudnn_benchmark) or gpu.hopper) and not gpu.tensor_cores(precision)


def winograd(kernel_area: Any, square_unit: Any, gpu: GpuFigures) -> Any:
    """Whether convolutions (one, or arrays of them) are those cuDNN's search runs on Winograd kernels:
    WINOGRAD_KERNEL_AREAS among the square, stride-1, undilated and ungrouped ones (``square_unit``:
    graph.Op.winograd_shape); on Hopper 3 × 3 only (core/estimate/gpu_convs.py prices those): its cuDNN 9
    ran 5 × 5 layers slower than Winograd (random CNNs with two of them −27 … −45 % so priced, on the
    H200 and the H100), where cuDNN 7.6 on DeepBench's V100 and T4 ran them on Winograd or FFT."""
    areas = (9,) if gpu.hopper else WINOGRAD_KERNEL_AREAS
    return np.isin(np.asarray(kernel_area), areas) & np.asarray(square_unit, dtype=bool)


def nchw_transposes(precision: str, gpu: GpuFigures, memory_format: str) -> str:
    """Which convolutions of an NCHW network pay cuDNN's layout transposes: "all" in half precision
    (NCHW_TRANSPOSE_ACCESSES was fitted charged on every convolution), "spatial" in TF32 (a 1 × 1
    convolution over NCHW is per image the GEMM W·X of a (C × H·W) input, which runs in place; the
    3 × 3 and 7 × 7 ones run on NHWC), "" in channels_last, in IEEE fp32 (CUDA-core kernels on
    NCHW) and on the GPUs of NCHW_NATIVE_CAPABILITIES."""
    if memory_format == "channels_last" or not gpu.tensor_cores(precision) or gpu.nchw_native:
        return ""
    return "spatial" if precision == "tf32" else "all"


def matrix_op_s(
    op: OpWork,
    b: int,
    precision: str,
    gpu: GpuFigures,
    checkpointing: bool,
    memory_format: str,
    cudnn_tf32: bool = False,
    cudnn_benchmark: bool = False,
) -> float:
    """Seconds of a linear layer's or convolution's forward and backward GEMMs at batch ``b`` (a
    convolution in ``cudnn_precision``, as cuDNN's algorithm search runs it where conv_search says)."""
    conv = op.rate == "conv"
    if conv:
        precision = cudnn_precision(precision, gpu, cudnn_tf32)
    search = conv and conv_search(precision, gpu, cudnn_benchmark)
    peak, nbytes = matmul_peak(precision, gpu)
    eff = conv_efficiency(precision, gpu) if conv and not op.pointwise else matmul_efficiency(precision, gpu)
    if search:
        eff = matmul_efficiency(precision, gpu) * CONV_SEARCH_EFFICIENCY
    shape = _gemm_shape(op)
    passes = (2 if op.first else 3) + (1 if checkpointing else 0)
    if shape is None:  # a traced op: FLOPs only
        if conv and hopper_fp32_conv(precision, gpu):  # its kernel unknown: Hopper's implicit GEMM (gpu_convs.py)
            eff = matmul_efficiency(precision, gpu) * HOPPER_FP32_CONV_EFFICIENCY
        return passes * op.flops * b / (peak * eff)
    rows, n, k = shape
    m = rows * b
    if not conv:  # cuDNN pads a convolution's channels itself
        eff = float(aligned_efficiency(eff, (m, n, k), precision, gpu))
    if conv and hopper_fp32_conv(precision, gpu) and hopper_priced(op.kernel_area, op.winograd_shape):
        # as Hopper's cuDNN 9 runs the layer, search or not (gpu_convs.py)
        fits = bool(hopper_3x3(op.kernel_area, op.winograd_shape))
        one = [np.array([float(v)]) for v in (m, n, k, rows, op.in_elems + op.out_elems)]
        eff_cuda = np.array([matmul_efficiency(precision, gpu)])
        fwd, dgrad, wgrad = (float(v) for v in hopper_conv_passes(*one, np.array([fits]), b, gpu, eff_cuda))
        return fwd * (2 if checkpointing else 1) + wgrad + (0.0 if op.first else dgrad)
    if search and winograd(op.kernel_area, op.winograd_shape, gpu):
        k /= WINOGRAD_SPEEDUP
    tiles = not conv or search  # tiles fitted to the output's sides (cuBLAS, cuDNN's search)
    fwd = gemm_s(m, n, k, peak, gpu, nbytes, eff, tiles)
    dgrad = gemm_s(m, k, n, peak, gpu, nbytes, eff, tiles)
    wgrad = gemm_s(n, k, m, peak, gpu, nbytes, eff, tiles)
    seconds = fwd * (2 if checkpointing else 1) + wgrad + (0.0 if op.first else dgrad)
    transposed = nchw_transposes(precision, gpu, memory_format)
    if conv and (transposed == "all" or (transposed == "spatial" and not op.pointwise)):
        seconds += float(nchw_transpose_s((op.in_elems + op.out_elems) * b, op.pointwise, nbytes, gpu))
    return seconds


def nchw_transpose_s(io_elems: Any, pointwise: Any, nbytes: int, gpu: GpuFigures) -> Any:
    """Seconds of cuDNN's NCHW ↔ NHWC transposes for convolutions of ``io_elems`` input and output
    elements (arrays or numbers; ``pointwise``: 1 × 1, of which NCHW_TRANSPOSE_POINTWISE_SHARE pays)."""
    elems = np.asarray(io_elems, dtype=float) * np.where(pointwise, NCHW_TRANSPOSE_POINTWISE_SHARE, 1.0)
    if gpu.clock <= 0:
        return NCHW_TRANSPOSE_ACCESSES * elems * nbytes / gpu.bandwidth
    return elems / (NCHW_TRANSPOSE_ELEMENTS_PER_CLOCK * gpu.sms * gpu.clock)
